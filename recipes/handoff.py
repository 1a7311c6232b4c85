"""What one step hands the steps after it (wizard/README.md, "step protocol"), so that no step imports another:

- each step's outputs as a small dataclass (``ModelChoice`` … ``Chat``), read with ``ctx.result(Kind)``: the
  engine checks the reading step ``requires`` that step and builds the record from the session file;
- shared facts about the chosen model: ``trusted(ctx)`` (the user said yes to the model's own code) and
  ``metadata_dir(ctx)`` (the folder of its small files).
"""
from __future__ import annotations

import re

from recipes.base import Ctx, Msg, StepError, msg

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from recipes.training.backup import HUBS, AdapterBackup
from recipes.training.spec import TrainerJob, TrainingSpec


def trusted(ctx: Ctx) -> bool:
    """Whether the user said yes to running the model's own code (select_model's ``trust_remote_code``)."""
    return ctx.result(ModelChoice).trust_remote_code


def metadata_dir(ctx: Ctx) -> Path:
    """Where the model's small files are: select_model's metadata folder (a v4 session's downloaded model, set by its
    migration), else — that folder gone — fetched again (:func:`recipes.hub.snapshot.fetch_metadata`).

    Raises:
        StepError: as :func:`recipes.hub.snapshot.fetch`; "hub.no_local_model" when a local model's folder has no
            config.json (any more).
    """
    sel = ctx.result(ModelChoice)
    if sel.meta_dir and (Path(sel.meta_dir) / "config.json").is_file():
        return Path(sel.meta_dir)
    if sel.source == "local" and not (Path(str(sel.local_path)) / "config.json").is_file():
        raise StepError("hub.no_local_model", path=str(sel.local_path))
    from recipes.hub import snapshot

    return snapshot.fetch_metadata(ctx.home, ctx.progress, sel.to_dict())[0]


# -- the steps' outputs ---------------------------------------------------------------------------------------------
H = TypeVar("H", bound="Handoff")


def _fits(value, hint) -> bool:
    """Whether a JSON value has the type ``hint`` (str, int, float, bool, dict, list, a record, X | None)."""
    if hint is typing.Any:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    base = typing.get_origin(hint) or hint
    if dataclasses.is_dataclass(base):
        sub = typing.get_type_hints(base)
        return isinstance(value, dict) and all(_fits(value[f.name], sub[f.name]) for f in dataclasses.fields(base)
                                                if f.name in value)
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, base)


def _record_type(hint) -> type | None:
    """The dataclass a field holds (``Gpu``, ``DataChoice``, ``AdapterBackup | None`` → AdapterBackup), or None."""
    for h in typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,):
        if isinstance(h, type) and dataclasses.is_dataclass(h):
            return h
    return None


def shown(value) -> str:
    """A session file's value as JSON spells it (null, true, "x"), cut at 40 characters."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _type_name(hint) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(h) for h in typing.get_args(hint))
    if dataclasses.is_dataclass(hint):
        return "an object"
    return {type(None): "null", dict: "an object", list: "a list", str: "a text", int: "an integer",
            float: "a number", bool: "true/false"}.get(typing.get_origin(hint) or hint, getattr(hint, "__name__", str(hint)))



@dataclass
class Handoff:
    """One step's outputs as the steps after it read them (``ctx.result(Kind)``; wizard/engine.py).

    The session file keeps them as a JSON object (to_dict: every field); from_dict reads one back: absent fields
    take their defaults (a step still running has recorded only some), keys this version does not know are left
    out, a nested record is read as its own type. The session file is input from outside: :meth:`problem` says what
    in it does not have its field's type (the session refuses to load it, wizard/session.py).
    """

    STEP: ClassVar[str] = ""
    # what a done step has always recorded (a done record without them was edited by hand: refused at load, or a
    # resume would call the outputs "gone" and run the step again over work that is there)
    DONE_FIELDS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def done_problem(cls, d: dict) -> str | None:
        """The fields a done record must hold that ``d`` lacks (absent, null or empty), as ``"adapter_dir, method"``;
        None when it holds them all."""
        missing = [f for f in cls.DONE_FIELDS if d.get(f) in (None, "", {}, [])]
        return ", ".join(missing) or None

    @classmethod
    def problem(cls, d: dict) -> str | None:
        """The first field of ``d`` whose value does not have the field's type, as ``"gpu is 'x', not Gpu"``;
        None when every one does (absent and unknown keys are fine)."""
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in d and not _fits(d[f.name], hints[f.name]):
                inner, value = _record_type(hints[f.name]), d[f.name]
                if inner is not None and isinstance(value, dict):  # the record's own field that is wrong
                    sub = typing.get_type_hints(inner)
                    bad = next(g for g in dataclasses.fields(inner) if g.name in value
                               and not _fits(value[g.name], sub[g.name]))
                    return f"{f.name}.{bad.name} is {shown(value[bad.name])}, not {_type_name(sub[bad.name])}"
                return f"{f.name} is {shown(value)}, not {_type_name(hints[f.name])}"
        return cls._inner_problem(d)

    @classmethod
    def _inner_problem(cls, d: dict) -> str | None:
        """What is wrong inside a field whose type says only "an object" or "a list" (a record may say more)."""
        return None

    @classmethod
    def from_dict(cls: type[H], d: dict | None) -> H:
        hints = typing.get_type_hints(cls)
        kw = {}
        src = d or {}
        for f in dataclasses.fields(cls):
            if f.name not in src:
                continue
            value = src[f.name]
            kind = _record_type(hints[f.name])
            if kind is not None and isinstance(value, dict):
                value = kind(**{k: v for k, v in value.items() if k in {x.name for x in dataclasses.fields(kind)}})
            kw[f.name] = value
        return cls(**kw)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class ModelChoice(Handoff):
    """select_model: which model, from where, and its config.json."""

    STEP: ClassVar[str] = "select_model"
    source: str = ""                   # hf | modelscope | local | endpoint
    endpoint: str | None = None        # the hub's URL (hf, modelscope)
    repo_id: str | None = None
    local_path: str | None = None      # source "local": the folder
    revision: str = "main"
    architecture: str | None = None
    model_type: str | None = None
    config: dict | None = None         # config.json as the hub serves it (untrusted input)
    trust_remote_code: bool = False    # the user said yes to the model's own code
    meta_dir: str | None = None        # the folder of its small files (config, tokenizer, chat template)
    commit: str | None = None
    custom_code: dict | None = None    # what the yes covers: {"classes", "commit", "files": [{path, sha256}]}
    endpoint_url: str | None = None    # source "endpoint": an OpenAI-compatible URL
    served_model: str | None = None    # … and the model it serves

    @property
    def name(self) -> str | None:
        return self.repo_id or self.local_path

    @property
    def max_position(self) -> int | None:
        """config.json's max_position_embeddings (None when absent or not a number)."""
        try:
            return int((self.config or {}).get("max_position_embeddings") or 0) or None
        except (TypeError, ValueError):
            return None


@dataclass
class Gpu:
    """The GPU the memory step sized for (memory_gib: GiB per GPU as nvidia-smi reports it)."""

    name: str = ""
    memory_gib: float = 0.0
    detected: bool = False
    count: int = 1


@dataclass
class MemoryEvaluation(Handoff):
    """evaluate_memory: the target GPU, the model's shape and the estimates per method (or per serving format)."""

    STEP: ClassVar[str] = "evaluate_memory"
    gpu: Gpu = field(default_factory=Gpu)
    gpus_detected: list = field(default_factory=list)
    shape: dict | None = None          # recipes.memory.model.shape_dict
    seq_len_assumed: int | None = None
    micro_batch_assumed: int | None = None
    estimates: list = field(default_factory=list)
    recommended: dict = field(default_factory=dict)  # {"method", "activation_checkpointing"} or {"format"}
    approximate: list = field(default_factory=list)
    serving: dict | None = None        # the deploy task's view: per weight format

    @classmethod
    def _inner_problem(cls, d: dict) -> str | None:
        from recipes.memory import model as memory

        if d.get("shape") is None:
            return None
        try:
            shape = memory.shape_from_dict(d["shape"])
        except (TypeError, ValueError, KeyError, AttributeError):
            return "shape is not a model shape"
        if not all(isinstance(getattr(shape, k), int) and not isinstance(getattr(shape, k), bool)
                   for k in ("n_params", "hidden", "layers", "heads", "intermediate", "vocab")):
            return "shape has a count that is not an integer"
        return None

    def model_shape(self):
        """The shape as recipes.memory.model.Shape, or None before the step ran."""
        from recipes.memory import model as memory

        return memory.shape_from_dict(self.shape) if self.shape else None


def spec_refusal(d):
    """The Refusal TrainingSpec.check raises for the spec fields of ``d`` (answers or a recorded strategy), or None
    (also when ``d`` is no object)."""
    from recipes.base import Refusal

    if not isinstance(d, dict):
        return None
    try:
        TrainingSpec.from_dict(d).check()
    except Refusal as e:
        return e
    return None


def spec_problem(d, where: str, render=None) -> str | None:
    """What TrainingSpec.check refuses in the spec fields of ``d`` (answers or a recorded strategy), as
    ``"<where>.micro_batch is -4, not within 1 … 4096"``, or for a rule across fields ``"<where>: <the rule's
    message>"`` (``render``: Refusal → its text; without it, the rule's key in words); None when it refuses nothing
    or ``d`` is no object."""
    r = spec_refusal(d)
    if r is None:
        return None
    p = r.params
    if r.key == "training.bad_choice":
        return f"{where}.{p['name']} is {str(repr(p['value']))[:40]}, not one of {p['choices']}"
    if r.key == "training.bad_number":
        return f"{where}.{p['name']} is {str(repr(p['value']))[:40]}, not within {p['lo']} … {p['hi']}"
    if r.key == "training.not_whole":
        return f"{where}.{p['name']} is {str(repr(p['value']))[:40]}, not a whole number"
    if r.key == "training.bad_text":
        return f"{where}.{p['name']} is {str(repr(p['value']))[:40]}, not text"
    return f"{where}: {render(r).rstrip('.。') if render else r.key.split('.')[-1].replace('_', ' ')}"


@dataclass
class DataChoice:
    """choose_strategy's data: where it came from and how it was read (schema v6; v5 kept these among the answers).

    ``source`` bundled | local | hub; ``path`` the file the trainer reads (the bundled file, the user's, or the hub
    file fetched; ``path#N`` a sample of N records, recipes/data/datasets.py); ``repo``/``file`` a hub dataset's id and
    file pattern; ``format`` as read (alpaca, sharegpt, messages, paired, unpaired, prompts); ``skip_bad_records``
    malformed records skipped rather than refused; ``val_ratio`` the held-out share (0 … 0.5); records read, trained
    on and held out."""

    source: str = "bundled"
    path: str | None = None
    repo: str | None = None
    file: str | None = None
    format: str | None = None
    skip_bad_records: bool = False
    val_ratio: float = 0.0
    n_records: int = 0
    n_train: int = 0
    n_validation: int = 0


DATA_SOURCES = ("bundled", "local", "hub")  # choose_strategy's dataset answer
# TrainerJob's fields that are the data's (DataChoice) or one run's own facts (the train step's), not the strategy's
_NOT_STRATEGY = frozenset({"dataset_path", "skip_bad_records", "val_ratio", "model_dir", "device", "trust_remote_code",
                           "init", "interpreter", "save_final", "profile_steps", "launch", "zero_sizes",
                           "memory_snapshot"})
STRATEGY_FIELDS = tuple(f.name for f in dataclasses.fields(TrainerJob) if f.name not in _NOT_STRATEGY)


@dataclass
class StrategyChoice(Handoff):
    """choose_strategy: the training strategy, the data, the adapters' backup and the estimate of the plan.

    ``training`` holds TrainerJob's fields as chosen (STRATEGY_FIELDS: TrainingSpec's, the sample question, the
    hosts, the trackers), JSON-typed; read it through :meth:`spec` and :meth:`job`. Schema v6 (wizard/README.md
    section 4); v5 kept one ``strategy`` object of the answers (wizard/session.py ``_v5_to_v6``)."""

    STEP: ClassVar[str] = "choose_strategy"
    DONE_FIELDS: ClassVar[tuple[str, ...]] = ("training",)
    training: dict = field(default_factory=dict)
    data: DataChoice = field(default_factory=DataChoice)
    backup: AdapterBackup | None = None  # where the adapters go while training; None: not backed up
    preflight: dict | None = None      # the smoke run's report
    samples: list = field(default_factory=list)
    estimate: dict | None = None
    fits: bool | None = None
    effective_batch: int | None = None
    # the speed model's tokens/s over all processes on the target GPU, and the optimizer steps it was timed for
    # (recipes/memory/planner.py); None before issue 44 or when the target GPU is unknown
    predicted_tokens_per_s: float | None = None
    planned_steps: int | None = None

    @classmethod
    def done_problem(cls, d: dict) -> str | None:
        """Beyond ``training``: the data's path (what the trainer reads; an empty one became "." and failed at the
        train step) and the method (a missing one trained the default's — the tryout)."""
        lacks = (("training", "method", lambda v: isinstance(v, dict) and bool(v) and "method" not in v),
                 ("data", "path", lambda v: isinstance(v, dict)
                  and not (isinstance(v.get("path"), str) and v["path"].strip())))
        missing = [m for m in [super().done_problem(d)] if m] + \
            [f"{record}.{name}" for record, name, lacking in lacks if lacking(d.get(record))]
        return ", ".join(missing) or None

    @classmethod
    def _inner_problem(cls, d: dict) -> str | None:
        data, backup = d.get("data"), d.get("backup")
        if isinstance(data, dict) and "source" in data and data["source"] not in DATA_SOURCES:
            return f"data.source is {shown(data['source'])}, not one of {', '.join(DATA_SOURCES)}"
        ratio = data.get("val_ratio", 0.0) if isinstance(data, dict) else 0.0
        if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 <= ratio <= 0.5):
            # the held-out share the trainer splits off (choose_strategy asks 0 … 0.5): 5 was loaded (the tester's N4)
            return f"data.val_ratio is {shown(ratio)}, not within 0 … 0.5"
        if isinstance(backup, dict):
            if backup.get("hub") not in HUBS:
                return f"backup.hub is {shown(backup.get('hub'))}, not one of {', '.join(HUBS)}"
            if not (isinstance(backup.get("repo_id"), str) and backup["repo_id"].strip()):
                return f"backup.repo_id is {shown(backup.get('repo_id'))}, not a repository id"
            every = backup.get("every", 1)
            if not (isinstance(every, int) and not isinstance(every, bool) and every >= 1):
                return f"backup.every is {shown(every)}, not a whole number of at least 1"
        return None

    def spec(self) -> TrainingSpec:
        return TrainingSpec.from_dict(self.training)

    def job(self, **facts) -> TrainerJob:
        """The TrainerJob this strategy trains: its fields, the data's path, split and bad-record rule, and a run's
        own ``facts`` (model_dir, device, …)."""
        return TrainerJob.from_dict(self.training | {"dataset_path": self.data.path or "",
                                                     "skip_bad_records": self.data.skip_bad_records,
                                                     "val_ratio": self.data.val_ratio} | facts)

    @staticmethod
    def strategy_of(answers: dict) -> dict:
        """The ``training`` object of choose_strategy's answers (or v5's recorded ``strategy``): STRATEGY_FIELDS."""
        return {k: v for k, v in answers.items() if k in STRATEGY_FIELDS}

    @staticmethod
    def backup_of(answers: dict) -> AdapterBackup | None:
        """The backup chosen in choose_strategy's answers (backup, backup_repo, backup_every), or None."""
        hub, repo, every = answers.get("backup"), answers.get("backup_repo"), answers.get("backup_every")
        if hub not in HUBS or not isinstance(repo, str) or not repo:
            return None
        return AdapterBackup(hub, repo, every if isinstance(every, int) and not isinstance(every, bool) else 1)


@dataclass
class Download(Handoff):
    """download: the verified local copy of the weights."""

    STEP: ClassVar[str] = "download"
    model_dir: str | None = None
    source: str | None = None
    repo_type: str | None = None
    commit: str | None = None
    revision: str | None = None
    bytes: int = 0
    fetched_bytes: int = 0
    copied_bytes: int = 0
    files: list = field(default_factory=list)  # [{"path", "size", "sha256", "git_sha1"}]


@dataclass
class TrainingResult(Handoff):
    """train: the adapter (or full model) and how the training went."""

    STEP: ClassVar[str] = "train"
    DONE_FIELDS: ClassVar[tuple[str, ...]] = ("adapter_dir", "method")
    train_dir: str | None = None
    adapter_dir: str | None = None
    method: str | None = None
    steps: int | None = None
    train_loss: float | None = None
    first5_mean: float | None = None
    last5_mean: float | None = None
    samples: dict = field(default_factory=dict)  # {"question", "before", "after"; "image": a VLM's sample image}
    peak_mem_gib: float | None = None
    mem_kind: str | None = None
    device: str | None = None
    recoveries: list = field(default_factory=list)  # [{"from", "to", "at_step"}]: out of memory, compile failed
    loss_png: str | None = None
    tensorboard_dir: str | None = None
    eval_losses: list = field(default_factory=list)
    trainer_pid: int | None = None

    @property
    def sample_image(self) -> str | None:
        """A vision-language model's sample image (the question was asked of it in training), when the file is
        still there; None otherwise (a text model, or the data moved since)."""
        image = self.samples.get("image")
        return image if isinstance(image, str) and Path(image).is_file() else None


@dataclass
class ExportResult(Handoff):
    """export: the merged model and each quantized copy with its quality figures."""

    STEP: ClassVar[str] = "export"
    key: dict | None = None            # what the partial outputs belong to (the trained result and the answers)
    merged_dir: str | None = None
    merged_bytes: int = 0
    merge_check: dict | None = None
    artifacts: dict = field(default_factory=dict)  # format → {"dir", "tool", "seconds", "quality", "bytes", …}
    merged_smoke: dict | None = None   # the merged model's own reply: {"reply", "tokens", "stopped", "merged"}
    formats: list = field(default_factory=list)
    serve_with: str | None = None
    quantizer_env: dict | None = None

    @classmethod
    def _inner_problem(cls, d: dict) -> str | None:
        for f, a in (d.get("artifacts") or {}).items():
            if not isinstance(a, dict) or not isinstance(a.get("dir"), str):
                return f"artifacts.{f} is not an export with a folder (dir)"
            q = a.get("quality")
            if q is not None and (not isinstance(q, dict) or not all(
                    isinstance(q[k], (int, float)) for k in ("kl_mean", "ppl_ratio") if k in q)):
                return f"artifacts.{f}.quality is not quality figures"
            if not isinstance(a.get("bytes", 0), int):
                return f"artifacts.{f}.bytes is not an integer"
        return None

    def table(self) -> tuple[Msg, list, list]:
        """Title, columns and rows of the exports table (the export step prints it; `yichui show` too): format, folder,
        MiB, mean KL, perplexity ratio, whether the smoke reply stopped. Folders that share a parent are named by their
        own name and the parent said once in the title (a run folder's path folded over three lines per row at 80
        columns: issue 46 item 14)."""
        ms = self.merged_smoke
        rows = [["merged", self.merged_dir, round(self.merged_bytes / 2**20, 2), "", "",
                 msg("ui.yes" if ms.get("stopped") else "ui.no") if isinstance(ms, dict) else ""]]
        for f in self.formats[1:]:
            a = self.artifacts.get(f)
            if not a:
                continue
            q = a.get("quality") or {}
            rows.append([f, a["dir"], round(a.get("bytes", 0) / 2**20, 2),
                         f"{q['kl_mean']:.4f}" if "kl_mean" in q else "", f"{q['ppl_ratio']:.3f}" if "ppl_ratio" in q else "",
                         msg("ui.yes" if (q.get("smoke") or {}).get("stopped") else "ui.no") if q else ""])
        parents = {str(Path(str(r[1])).parent) for r in rows if r[1]}
        title = msg("export.table")
        if len(parents) == 1 and all(r[1] for r in rows):
            title = msg("export.table_in", folder=parents.pop())
            for r in rows:
                r[1] = Path(str(r[1])).name + "/"
        return title, [msg("ui.col.format"), msg("ui.col.path"), "MiB", "KL", msg("export.col.ppl_ratio"),
                       msg("export.col.stops")], rows


@dataclass
class Deployment(Handoff):
    """deploy: the running server, its start-up check and how to reach it (the key stays in its file)."""

    STEP: ClassVar[str] = "deploy"
    DONE_FIELDS: ClassVar[tuple[str, ...]] = ("endpoint", "served_model")
    backend: str | None = None
    engine_version: str | None = None
    engine_table: str | None = None
    endpoint: str | None = None        # …/v1
    served_model: str | None = None
    host: str | None = None            # the address the server binds (127.0.0.1 unless asked), and its port: an
    port: int | None = None            # int from the answer to the server's argv, not parsed back (issue 45)
    model_dir: str | None = None
    adapter: dict | None = None
    args: list = field(default_factory=list)
    server_pid: int | None = None
    log: str | None = None
    start_seconds: float | None = None
    # when each phase of the engine's start began, seconds after its launch (recipes/serving/phases.py), "ready" when
    # /health answered
    start_phases: dict | None = None
    api_key_file: str | None = None
    question: str | None = None
    image: str | None = None           # the image file shown with the question (a vision-language model)
    reply: str | None = None
    finish_reason: str | None = None
    reply_tokens: int | None = None
    streamed: str | None = None
    stream_finish_reason: str | None = None
    kv_cache: dict | None = None
    parity: dict | None = None         # train→serve parity of the sample question (recipes/serving/parity.py)


# the evaluation's metric names and figures as the session keeps them (English, data), and their catalogue words:
# rendered in the reader's language by metric_words (a zh table said "held-out loss … (tie) vs": the trial)
METRIC_TERMS = (("(unpaired: AUC)", "evaluate.term.unpaired_auc"), ("(unpaired: per token)", "evaluate.term.unpaired_token"),
                ("preference accuracy", "evaluate.term.preference_accuracy"),
                ("preference margin", "evaluate.term.preference_margin"), ("held-out", "evaluate.term.heldout"),
                ("perplexity", "evaluate.term.perplexity"), ("loss", "evaluate.term.loss"),
                ("reward", "evaluate.term.reward"), ("(tie)", "evaluate.term.tie"), (" vs ", "evaluate.term.vs"),
                ("exact_match", "evaluate.term.exact_match"), ("rouge_l", "evaluate.term.rouge_l"),
                (", ", "evaluate.term.sep"))
# the evaluation's columns (the models compared) in the user's language; English as recorded
COLUMN_TERMS = {"base": "evaluate.term.base", "finetuned": "evaluate.term.finetuned"}


def column_words(name: str, t) -> str:
    """A column of the evaluation's table (base, finetuned, an endpoint's name) in the language ``t`` speaks."""
    return t(COLUMN_TERMS[name]) if name in COLUMN_TERMS else name


def metric_words(text: str, t) -> str:
    """``text`` (a metric's name, a verdict's figures) with its words in the language ``t`` (a translator of
    catalogue keys: ctx.t, i18n.t) speaks; English unchanged."""
    for phrase, key in METRIC_TERMS:
        text = text.replace(phrase, t(key))
    # "held-out loss" word by word in Chinese read "留出集 损失": no space between two Han characters (trial U)
    return re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", text)


@dataclass
class Evaluation(Handoff):
    """evaluate: base against fine-tuned on the held-out set and the benchmarks."""

    STEP: ClassVar[str] = "evaluate"
    config: dict | None = None
    parts: dict = field(default_factory=dict)
    table: list = field(default_factory=list)
    columns: list = field(default_factory=list)
    examples: list = field(default_factory=list)
    heldout_samples: int | None = None
    report: str | None = None
    chart: str | None = None
    verdict: dict | None = None

    FEW_HELDOUT: ClassVar[int] = 10  # fewer held-out conversations than this: the comparison is noise (item 11)

    def caveats(self) -> list[Msg]:
        """What the verdict rests on that a reader must know: too few held-out conversations. Said after the
        headline by the evaluate step, `yichui show` and report.md alike."""
        n = self.heldout_samples
        return [msg("evaluate.few_heldout", n=n, min=self.FEW_HELDOUT)] if n is not None and 0 < n < self.FEW_HELDOUT \
            else []

    def headline(self, t=None) -> tuple[bool, Msg] | None:
        """The verdict in one line, and whether it is a warning: the fine-tuned model beats the base, does not, is
        better on some metrics and worse on others, or (GRPO) beats it on the summed reward while some rewards fell —
        a reward hacked. The evaluate step, `yichui
        show` and report.md say the same line. None without a verdict (nothing moved, or no held-out part)."""
        v = self.verdict or {}
        if v.get("beats") is None:
            return None
        words = (lambda x: metric_words(str(x), t)) if t else str  # noqa: E731 - English as recorded, else t's
        figures = words(v.get("figures", ""))
        if v["beats"] and v.get("fell"):
            return True, msg("evaluate.reward_fell", figures=figures, fell=[words(x) for x in v["fell"]])
        if self.heldout_samples and self.heldout_samples < self.FEW_HELDOUT:  # too few to judge: the figures, no
            return True, msg("evaluate.few_figures", n=self.heldout_samples, figures=figures)  # verdict (46 C)
        if v.get("mixed"):  # better on one metric, worse on another: said as such
            return True, msg("evaluate.mixed", better=[words(x) for x in v["mixed"]["better"]],
                             worse=[words(x) for x in v["mixed"]["worse"]], figures=figures)
        return (False, msg("evaluate.beats", figures=figures)) if v["beats"] else \
            (True, msg("evaluate.not_better", figures=figures))

    @classmethod
    def _inner_problem(cls, d: dict) -> str | None:
        if not all(isinstance(r, list) for r in d.get("table") or []):
            return "table is not a list of rows"
        if not all(isinstance(c, str) for c in d.get("columns") or []):
            return "columns are not names"
        return None


@dataclass
class Chat(Handoff):
    """chat: the conversation's endpoint and (non-interactively) its one reply."""

    STEP: ClassVar[str] = "chat"
    endpoint: str | None = None
    model: str | None = None
    turns: int = 0
    question: str | None = None
    image: str | None = None           # the image file shown with the question (a vision-language model)
    reply: str | None = None
    finish_reason: str | None = None


HANDOFFS: dict[str, type[Handoff]] = {k.STEP: k for k in (ModelChoice, MemoryEvaluation, StrategyChoice, Download,
                                                            TrainingResult, ExportResult, Deployment, Evaluation, Chat)}
