"""Step 8 — evaluate: did fine-tuning help? Held-out metrics for the base and the fine-tuned model side by side, a few
answers next to their references, and standard benchmarks through lm-evaluation-harness (recipes/evaluation/harness.py).

Held-out data: the validation split the trainer held out (the same seeded split, recomputed from the session), or a
file of conversations with reference replies. Metrics (recipes/evaluation/heldout.py): loss and perplexity of the reference
replies, exact match and ROUGE-L of greedy replies. Against an endpoint with no local model (the evaluate task on a
URL) only the generation metrics exist: chat endpoints return no log-probabilities of given text.

Each part (a model's held-out metrics, a benchmark on a model) is recorded in the session as soon as it finishes:
an interrupted evaluation resumes with the parts still missing. The report (``report.md`` and ``report.png``) is
written to ``<run>/evaluate/``.
"""
from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from recipes.rundir import BASE_SERVER, EvaluateDir, RunDir
from recipes import jobs
from recipes.data import datasets, preference, prompts, split
from recipes.evaluation import harness
from recipes.evaluation import preference as scores
from recipes.base import Choice, Ctx, Msg, Question, Record, StepError, in_range, msg
from recipes.handoff import (Deployment, Download, Evaluation, ExportResult, ModelChoice, StrategyChoice,
                             TrainingResult, column_words, metric_words, trusted)
from recipes.serving import spec as specs

name = "evaluate"
requires = ("select_model", "choose_strategy", "download", "train", "export", "deploy")
METRICS = ("loss", "perplexity", "exact_match", "rouge_l")
EXAMPLES = 3


def models(ctx: Ctx) -> dict:
    """The models to compare: ``{"base": dir}`` and, after training, ``{"finetuned": dir}``; an endpoint-only
    evaluation has ``{"endpoint": url}``."""
    sel, dl, ex, tr = (ctx.result(ModelChoice), ctx.result(Download), ctx.result(ExportResult),
                       ctx.result(TrainingResult))
    if sel.source == "endpoint":
        return {"endpoint": sel.endpoint_url}
    out = {"base": dl.model_dir or sel.local_path}
    if ex.merged_dir and tr.adapter_dir:
        out["finetuned"] = ex.merged_dir
    return {k: v for k, v in out.items() if v}


def training_split(ctx: Ctx) -> list[list[dict]]:
    """The validation conversations the trainer held out (same file, ratio and seed); a preference session's: each
    held-out pair's prompt and chosen reply."""
    held = _held_out_records(ctx)
    return preference.chosen_conversations(held) if held and isinstance(held[0], dict) else held


def preference_split(ctx: Ctx) -> list[dict]:
    """What a preference session's trainer held out, as the evaluation scores it: its pairs (``{"prompt", "chosen",
    "rejected"}``), or KTO's labelled replies (``{"prompt", "completion", "label"}``) when both kinds are among them
    (recipes/evaluation/preference.py ranks desirable over undesirable); [] for SFT and GRPO, or one kind only."""
    held = _held_out_records(ctx)
    if not held or not isinstance(held[0], dict):  # conversations (SFT; GRPO's prompts as conversations)
        return []
    if "chosen" in held[0]:
        return held
    replies = [r for r in held if "completion" in r]
    return replies if {bool(r["label"]) for r in replies} == {True, False} else []


def kto_unranked(objective: str, heldout: str, pairs: list[dict]) -> Msg | None:
    """Why a KTO session's evaluation has no held-out preference score, or None: it ranks desirable replies over
    undesirable ones (or a pair's chosen over its rejected), and the held-out set gives neither both kinds nor
    pairs (``pairs`` as the step scores them, after :func:`preference_split`)."""
    return msg("evaluate.kto_unranked") if objective == "kto" and heldout != "none" and not pairs else None


def _held_out_records(ctx: Ctx) -> list:
    """What the trainer held out of the session's data: conversations (SFT; GRPO's prompts with their reference
    answers as the reply) or pairs (a preference objective)."""
    cs = ctx.result(StrategyChoice)
    data = cs.data
    if not data.path or not data.val_ratio:
        return []
    skip = data.skip_bad_records
    objective = cs.spec().objective
    held = datasets.train_validation(split.records(data.path, objective, skip, images=takes_images(ctx)),
                                     data.val_ratio)[1]
    # GRPO's prompts, each with its reference answer as the reply (the replies' loss and ROUGE-L against it)
    return prompts.as_conversations(held) if objective == "grpo" else held


def takes_images(ctx: Ctx) -> bool:
    """Whether the evaluated model reads images: a vision-language model's config, or an endpoint (whose model
    answers image parts or refuses them itself)."""
    sel = ctx.result(ModelChoice)
    return sel.source == "endpoint" or isinstance((sel.config or {}).get("vision_config"), dict)


def heldout_file(path: str, images: bool = False) -> tuple[list[list[dict]], list[dict]]:
    """(conversations with reference replies, pairs) of a held-out file: a supervised file's conversations (malformed
    records left out); a preference file's preferred replies as conversations and, when it holds pairs, its pairs —
    scored as the training split's are (recipes/evaluation/preference.py).

    Raises:
        DataError: the file cannot be read (as datasets.load says it).
    """
    try:
        prefs = preference.read(path)
    except datasets.DataError:  # not a preference file (or no file: said by the supervised reader below)
        prefs = None
    if prefs is not None:
        return preference.chosen_conversations(prefs.records), [r for r in prefs.records if "chosen" in r]
    convs = [c for c in datasets.load(path, skip_bad=True, images=images).conversations
             if c[-1]["role"] == "assistant" and isinstance(c[-1]["content"], str) and c[-1]["content"].strip()]
    return convs, []


def _references(path: str, images: bool = False) -> Msg | None:
    """None when the file gives conversations with reference replies (a preference file: its preferred replies),
    else why not (a catalogue key); image records only where the model reads images (``images``)."""
    try:
        if preference.read(path).records:
            return None
    except datasets.DataError:
        pass
    try:
        loaded = datasets.read(path)  # malformed records (e.g. no assistant turn) are listed, not raised
    except datasets.DataError as e:
        return e.msg
    if not any(c and c[-1]["role"] == "assistant" and isinstance(c[-1]["content"], str) and c[-1]["content"].strip()
               for c in loaded.conversations):
        return msg("evaluate.no_references", path=path)
    if not images and (n := sum(datasets.has_images(c) for c in loaded.conversations)):
        return msg("data.has_images", path=path, n=n)
    return None


def questions(ctx: Ctx) -> list[Question]:
    found = models(ctx)
    import recipes

    strategy = ctx.result(StrategyChoice)
    # before the strategy step has run (a --set checked at the start) its split is not known yet: "training" is
    # offered, and checked again when this step runs
    has_split = bool(strategy.data.n_validation) or (not strategy.training
                                                    and "choose_strategy" in recipes.TASKS[ctx.task])
    sel = ctx.result(ModelChoice)

    def check_heldout(v, a):
        """"training" where the training run held out nothing (too few records, or val_ratio 0): said so."""
        if v == "training" and not has_split:
            return msg("evaluate.no_split", records=strategy.data.n_records, ratio=strategy.data.val_ratio) \
                if strategy.training else msg("evaluate.no_split_task")
        return None

    def check_benchmarks(v, a):
        if a.get("heldout") == "none" and not v:  # a table of nothing, reported as done (issue 23)
            return msg("evaluate.nothing_to_measure")
        for b in v:
            if b not in harness.BENCHMARKS:
                continue  # the engine names it as not a choice
            if harness.BENCHMARKS[b].kind == "loglikelihood" and "endpoint" in found:
                return msg("evaluate.needs_local_model", benchmark=b)
        return None

    def check_data(v, a):
        """Before any work: each benchmark's data is complete on disk, or its hub lists the files it needs."""
        source = a.get("benchmark_source", "hf")
        missing = [b for b in a.get("benchmarks", []) if not _have_data(ctx, b, _subsets(a), source)]
        from recipes.hub import client as hub

        for b in missing:
            try:
                _, listed = hub.list_files(source, harness.BENCHMARKS[b].repo, v, "main", "dataset")
            except StepError as e:  # the hub's own advice is about models: here only its cause (issue 20, item 10)
                reason = msg("evaluate.no_answer", error=e.msg.args.get("error", "")) \
                    if e.msg.key == "hub.unreachable" else e.msg
                return msg("evaluate.data_unavailable", benchmark=b, endpoint=v, reason=ctx.t(reason),
                           repo=harness.BENCHMARKS[b].repo, source=source, dir=str(data_dir(ctx, source, b)))
            absent = sorted(set(harness.files_for(b, _subsets(a) if b == "mmlu" else None))
                            - {f.path for f in listed})
            if absent:
                return msg("evaluate.data_unavailable", benchmark=b, endpoint=v,
                           reason=ctx.t(msg("evaluate.files_absent", files=list(absent[:3]))),
                           repo=harness.BENCHMARKS[b].repo, source=source, dir=str(data_dir(ctx, source, b)))
        return None

    default_endpoint = sel.endpoint if sel.source in ("hf", "modelscope") else None
    engine = _deploy_backend(ctx)
    return [
        Question("heldout", "select", "evaluate.heldout", default="training" if has_split else "none",
                 choices=([Choice("training", msg("evaluate.heldout.training"))] if has_split else [])
                 + [Choice("file", msg("evaluate.heldout.file")), Choice("none", msg("evaluate.heldout.none"))],
                 validate=check_heldout),
        Question("heldout_path", "path", "evaluate.heldout_path", when=lambda a: a.get("heldout") == "file",
                 validate=lambda v, a: _references(v, takes_images(ctx))),
        Question("heldout_samples", "int", "evaluate.heldout_samples", default=32, validate=in_range(1, 100000),
                 when=lambda a: a.get("heldout") != "none"),
        Question("max_new_tokens", "int", "evaluate.max_new_tokens", default=64, validate=in_range(1, 8192),
                 when=lambda a: a.get("heldout") != "none"),
        Question("compare_base", "confirm", "evaluate.compare_base", default=True,
                 when=lambda a: "finetuned" in found),
        Question("generate_with", "select", "evaluate.generate_with",
                 default=lambda a: "engine" if engine in specs.GPU_ENGINES else "local",
                 choices=[Choice("engine", msg("evaluate.generate_with.engine")),
                          Choice("local", msg("evaluate.generate_with.local"))],
                 when=lambda a: "finetuned" in found or "train" in recipes.TASKS[ctx.task]),
        Question("benchmarks", "checkbox", "evaluate.benchmarks", default=[], validate=check_benchmarks,
                 choices=[Choice(b, msg("evaluate.benchmark." + b)) for b in harness.BENCHMARKS]),
        Question("mmlu_subjects", "text", "evaluate.mmlu_subjects",
                 default=",".join(harness.BENCHMARKS["mmlu"].subsets), when=lambda a: "mmlu" in a.get("benchmarks", [])),
        Question("benchmark_limit", "int", "evaluate.benchmark_limit", default=50, validate=in_range(1, 100000),
                 when=lambda a: bool(a.get("benchmarks"))),
        Question("benchmark_source", "select", "evaluate.benchmark_source", when=lambda a: bool(a.get("benchmarks")),
                 default=sel.source if sel.source in ("hf", "modelscope") else "hf",
                 choices=[Choice("hf", "Hugging Face"), Choice("modelscope", "ModelScope")]),
        Question("benchmark_endpoint", "text", "evaluate.benchmark_endpoint", when=lambda a: bool(a.get("benchmarks")),
                 default=lambda a: default_endpoint or _default_endpoint(a.get("benchmark_source", "hf")),
                 validate=check_data, way_back=("benchmarks", "benchmark_source"),
                 alternatives=lambda a: _endpoint_choices(a.get("benchmark_source", "hf"))),
    ]


def _endpoint_choices(source: str) -> list[Choice]:
    from recipes.hub import client as hub

    return hub.endpoint_choices(source)


def _default_endpoint(source: str) -> str:
    from recipes.hub import client as hub

    return hub.default_endpoint(source) or ""


def _subsets(a: dict) -> list[str]:
    return [s.strip() for s in str(a.get("mmlu_subjects", "")).split(",") if s.strip()]


def data_dir(ctx: Ctx, source: str, bench: str) -> Path:
    return ctx.home / "datasets" / source / harness.BENCHMARKS[bench].repo


def _have_data(ctx: Ctx, bench: str, subsets: list[str], source: str) -> bool:
    subs = subsets if bench == "mmlu" else None
    return all((data_dir(ctx, source, bench) / f).exists() for f in harness.files_for(bench, subs))


def _fetch(ctx: Ctx, bench: str, answers: dict) -> Path:
    """The benchmark's files through yichui's downloader (resumable, verified), unless already complete."""
    from recipes.hub import snapshot

    source = answers["benchmark_source"]
    subs = _subsets(answers) if bench == "mmlu" else None
    target = data_dir(ctx, source, bench)
    files = harness.files_for(bench, subs)
    if not all((target / f).exists() for f in files):
        snapshot.fetch(source, harness.BENCHMARKS[bench].repo, answers["benchmark_endpoint"], "main", target,
                       ctx.progress, ctx.info, "dataset", files)
    return target


@dataclass(frozen=True)
class Server:
    """A server a model's replies come from.

    Attributes:
        url: its OpenAI-compatible base URL (``…/v1``).
        model: the model name requests carry.
        api_key: its key, or None (loopback servers yichui starts for the evaluation have none).
        concurrency: requests sent at once (:attr:`recipes.serving.spec.EngineSpec.concurrent_requests`; 1 for a
            server of unknown kind).
    """

    url: str
    model: str
    api_key: str | None = None
    concurrency: int = 1


def _endpoint_metrics(server: Server, convs, max_new_tokens) -> dict:
    """Greedy replies through the server, ``server.concurrency`` requests at a time, in the order of ``convs``;
    generation metrics only (no log-probabilities there)."""
    from recipes.evaluation import heldout
    from recipes.serving import client

    def ask(c):
        return client.complete(server.url, server.model, [_openai_turn(m) for m in c[:-1]], max_new_tokens,
                               api_key=server.api_key, timeout=600).text

    try:
        with ThreadPoolExecutor(max(1, server.concurrency)) as pool:
            replies = list(pool.map(ask, convs))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:  # URLError is an OSError
        raise StepError("evaluate.server_failed", endpoint=server.url, error=f"{type(e).__name__}: {e}"[:200]) from None
    return {"loss": None, "perplexity": None, **heldout.generation_scores(replies, [c[-1]["content"] for c in convs]),
            "samples": len(convs), "tokens": None, "answers": replies}


def _openai_turn(m: dict) -> dict:
    """A conversation turn as a chat request's message: image parts (a file or bytes) inline as ``image_url``."""
    if not isinstance(m["content"], list):
        return m
    from recipes.serving import client

    return m | {"content": [client.image_part(p["image"]) if p["type"] == "image" else p for p in m["content"]]}


EVAL_CONTEXT = 4096  # tokens: a held-out conversation (≤ 1024) or a 5-shot GSM8K prompt, and the reply


def _deploy_backend(ctx: Ctx) -> str | None:
    """The engine this session's deploy step serves with (answered or run), or None."""
    return ctx.result(Deployment).backend or ctx.answers("deploy").get("backend")


def _free_fraction() -> float | None:
    """The share of GPU 0's memory free now (torch.cuda.mem_get_info), or None without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    free, total = torch.cuda.mem_get_info(0)
    return free / total


def serve_base(ctx: Ctx, model_dir: str, trust_remote_code: bool):
    """A second server of the deploy step's engine (same version, same extra options) for the base model in
    ``model_dir``, on 127.0.0.1 (no key: loopback only), eager, at most :data:`EVAL_CONTEXT` tokens, taking 80 % of
    the GPU memory free now; the caller stops it.

    Returns:
        (endpoint ``http://127.0.0.1:PORT/v1``, served model name, the server's job).

    Raises:
        StepError: the engine is not installed, its launch does not check, or it does not start
            ("deploy.not_installed", the launch's EngineError, "serving.died", "serving.timeout").
    """
    from recipes.serving import engines, server

    dep_a = ctx.answers("deploy")
    backend = str(ctx.result(Deployment).backend)
    from recipes.envs import envs_dir

    envs = envs_dir(ctx.home)
    inst = engines.find(backend, envs)
    if inst is None:
        raise StepError("deploy.not_installed", backend=backend, hint=engines.install_hint(backend, envs))
    tab = engines.table_for(inst, engines.cache_dir(ctx.home))
    port = server.reserve_port(ctx.home, ctx.session_id + ":base", "127.0.0.1", 8200)
    template = Path(model_dir) / "chat_template.jinja"
    free = _free_fraction()
    launch = engines.command(
        inst.spec, tab, model_dir=model_dir, fmt="merged", served_name="base", host="127.0.0.1", port=port,
        chat_template=str(template) if template.exists() else None,
        max_model_len=min(int(dep_a.get("max_model_len") or EVAL_CONTEXT), EVAL_CONTEXT),
        gpu_util=round(0.8 * free, 2) if free else None, tensor_parallel=int(dep_a.get("tensor_parallel") or 1),
        device="auto" if free else "cpu", trust_remote_code=trust_remote_code, eager=inst.spec.gpu,
        extra=engines.split_args(dep_a.get("engine_args")))
    job = server.start(BASE_SERVER, inst, launch, RunDir(ctx.run_dir).evaluate.root, port, home=ctx.home)  # run() stopped a killed run's one
    base = server.client_base("127.0.0.1", port)
    try:
        server.wait_healthy(job, base)
    except BaseException:
        job.stop()
        raise
    return base + "/v1", launch.served_model, job


# fewer held-out conversations than this: a verdict on them is noise, and the step says so
FEW_HELDOUT = Evaluation.FEW_HELDOUT


def verdict(parts: dict) -> dict | None:
    """Does the fine-tuned model beat the base on the held-out set? Every metric both have among loss (lower is
    better) and ROUGE-L (higher) that moved must say so — a tie (ROUGE-L 0.0 vs 0.0 on a tiny model) is neither, and
    the figures say "(tie)"; no allowance for noise (15–30 held-out conversations move ROUGE-L by a few hundredths).
    A preference stage is judged on what it trains: the held-out preference accuracy and margin (higher) — DPO may
    lower the chosen replies' likelihood too, so their loss is shown but not judged.
    ``{"beats": bool | None, "checks": {metric: bool | None}, "figures": "loss 2.0 vs 3.0, …"}``; beats None when
    nothing moved; None without both models' held-out parts."""
    b, f = parts.get("heldout:base"), parts.get("heldout:finetuned")
    pb, pf = parts.get("preference:base"), parts.get("preference:finetuned")
    rb, rf = parts.get("reward:base"), parts.get("reward:finetuned")
    metrics: tuple
    if rb and rf:  # GRPO is judged on what it trains: the held-out replies' mean reward (higher)
        b, f, metrics = rb, rf, (("reward", 1),)
    elif pb and pf:
        b, f = {"preference accuracy": pb["accuracy"], "preference margin": pb["margin"]}, \
            {"preference accuracy": pf["accuracy"], "preference margin": pf["margin"]}
        metrics = (("preference accuracy", 1), ("preference margin", 1))
    elif not b or not f:
        return None
    else:
        metrics = (("loss", -1), ("rouge_l", 1))
    checks: dict = {}  # metric → True (better), False (worse), None (a tie: neither, issue 46 item 11)
    for k, sign in metrics:
        if b.get(k) is not None and f.get(k) is not None:
            checks[k] = None if f[k] == b[k] else (f[k] - b[k]) * sign > 0
    moved = [v for v in checks.values() if v is not None]
    beats = None if not moved else all(moved)
    # GRPO: each reward function's mean that fell while the sum rose — what the optimizer traded away (a reward
    # hacked: the demo's digits share up, accuracy down)
    fell = [f"{k} {f[k]} vs {b[k]}" for k in f if k.startswith("reward ") and isinstance(f[k], (int, float))
            and isinstance(b.get(k), (int, float)) and f[k] < b[k]] if rb and rf and checks.get("reward") else []
    # better on one metric and worse on another: not a win, and not "does NOT beat" either (issue 46's tryout: loss
    # 3.93 vs 6.37 and ROUGE-L 0.106 vs 0.123 on 2 held-out conversations was "does NOT beat the base")
    mixed = {"better": [k for k, ok in checks.items() if ok], "worse": [k for k, ok in checks.items() if ok is False]}
    return {"beats": beats, "checks": checks, **({"fell": fell} if rb and rf else {}),
            **({"mixed": mixed} if mixed["better"] and mixed["worse"] else {}),
            "figures": ", ".join(f"{k} {f[k]} vs {b[k]}" + (" (tie)" if checks[k] is None else "") for k in checks)}


def _serving(ctx: Ctx) -> tuple[str | None, str | None, str | None]:
    """(endpoint, served model, API key) of this session's running server, or of the selected endpoint."""
    sel, dep = ctx.result(ModelChoice), ctx.result(Deployment)
    if sel.source == "endpoint":
        return sel.endpoint_url, sel.served_model, None
    if dep.endpoint:
        from recipes import jobs
        from recipes.serving import keys

        job = jobs.read(RunDir(ctx.run_dir).serve.job)
        if job is not None and job.alive():
            return dep.endpoint, dep.served_model, keys.read_key(dep.api_key_file)
    return None, None, None


class Replies:
    """Where each model's replies come from: a :class:`Server`, or None (generated here from the weights).

    With ``through`` (generate_with: engine) the fine-tuned model answers from the session's server and the base from
    a second server of the same engine (:func:`serve_base`), started at its first use and ended by :meth:`stop`.
    Without it an endpoint model answers from its URL, and the fine-tuned model from the session's server for
    generative benchmarks only (as before: its held-out replies are generated here).
    """

    def __init__(self, ctx, found: dict, code: bool, through: bool, endpoint, served, key):
        self.ctx, self.found, self.code, self.through = ctx, found, code, through
        backend = ctx.result(Deployment).backend
        # a server of the session's engine answers many requests at once; the user's own endpoint: one at a time
        self.concurrency = specs.recommended(backend).concurrent_requests if backend in specs.SPECS else 1
        own = ctx.result(ModelChoice).source != "endpoint"
        self.session = Server(endpoint, served, key, self.concurrency if own else 1) if endpoint else None
        self._base: Server | None = None
        self._job = None  # the base server's, once started

    def _engine(self, m: str) -> Server | None:
        if m == "finetuned":
            return self.session
        if self._base is None:
            self.ctx.info(msg("evaluate.serving_base", engine=self.ctx.result(Deployment).backend))
            url, name, self._job = serve_base(self.ctx, self.found["base"], self.code)
            self._base = Server(url, name, None, self.concurrency)  # loopback: no key
        return self._base

    def heldout(self, m: str) -> Server | None:
        if m == "endpoint":  # the selected endpoint is the session's server (evaluate._serving)
            return self.session
        return self._engine(m) if self.through else None

    def benchmark(self, m: str, kind: str) -> Server | None:
        if kind != "generate":
            return None  # log-likelihood benchmarks run on the weights
        if self.through and m in ("base", "finetuned"):
            return self._engine(m)
        if m == "endpoint" or m == "finetuned":
            return self.session
        return None

    def stop(self) -> None:
        if self._job is not None:
            self._job.stop()


def run(ctx: Ctx, answers: dict) -> Evaluation:
    code = trusted(ctx)
    found = models(ctx)
    if not found:
        raise StepError("evaluate.nothing")
    edir = RunDir(ctx.run_dir).evaluate.root
    edir.mkdir(parents=True, exist_ok=True)
    config = {k: answers.get(k) for k in ("heldout", "heldout_path", "heldout_samples", "max_new_tokens",
                                          "compare_base", "generate_with", "benchmarks", "mmlu_subjects",
                                          "benchmark_limit")}
    config["models"] = found
    previous = ctx.result(Evaluation)
    parts: dict = dict(previous.parts) if previous.config == config else {}
    if parts:
        ctx.info(msg("evaluate.resuming", n=len(parts)))
    ctx.record(config=config, parts=parts)
    endpoint, served, key = _serving(ctx)
    left = jobs.read(EvaluateDir(edir).base_server_job)
    if left is not None and left.alive():  # a killed evaluation's base server: this run starts its own when needed
        left.stop()
    targets = [m for m in ("base", "finetuned", "endpoint") if m in found
               and (m != "base" or "finetuned" not in found or answers.get("compare_base", True))]

    convs: list = []
    if answers["heldout"] == "training":
        convs = training_split(ctx)
    file_pairs: list = []
    if answers["heldout"] == "file":  # a preference session's own kind of file: its pairs are scored too
        convs, file_pairs = heldout_file(answers["heldout_path"], takes_images(ctx))
        file_pairs = file_pairs if ctx.result(StrategyChoice).spec().objective != "sft" else []
    convs = convs[:answers.get("heldout_samples", 32)]
    pairs = (preference_split(ctx) if answers["heldout"] == "training" else file_pairs)[
        :answers.get("heldout_samples", 32)]
    if pairs and "completion" in pairs[0] and len({bool(r["label"]) for r in pairs}) < 2:
        pairs = []  # labelled replies of one kind within the samples taken: nothing to rank
    unranked = kto_unranked(ctx.result(StrategyChoice).spec().objective, answers["heldout"], pairs)
    if unranked is not None:  # said, not left out of the table without a word (trial W)
        ctx.warn(unranked)
    if answers["heldout"] != "none" and not convs:
        raise StepError("evaluate.no_heldout")
    if answers["heldout"] != "none" and len(convs) < FEW_HELDOUT:  # said, not left to the figures (issue 46 item 11)
        ctx.warn(msg("evaluate.few_heldout", n=len(convs), min=FEW_HELDOUT))

    def done(key: str, value) -> None:
        parts[key] = value
        ctx.record(parts=parts)

    through = answers.get("generate_with") == "engine" and "finetuned" in found
    if through and not endpoint:
        ctx.warn(msg("evaluate.no_server_local"))
        through = False
    replies = Replies(ctx, found, code, through, endpoint, served, key)
    try:
        for m in targets:
            k = f"heldout:{m}"
            if not convs or k in parts:
                continue
            # GRPO's held-out set: prompts with their reference answers, not conversations
            grpo = ctx.result(StrategyChoice).spec().objective == "grpo" and answers["heldout"] == "training"
            ctx.info(msg("evaluate.heldout_running_prompts" if grpo else "evaluate.heldout_running",
                         model=column_words(m, ctx.t), n=len(convs)))
            t0 = time.time()
            server = replies.heldout(m)
            res = {}
            if m != "endpoint":  # the loss from the weights on disk; the replies too, unless a server gives them
                from recipes.evaluation import heldout

                with ctx.progress(msg("evaluate.heldout_progress", model=column_words(m, ctx.t)),
                                  total=len(convs)) as bar:
                    res = heldout.evaluate(found[m], convs, answers["max_new_tokens"], generate=server is None,
                                           progress=lambda i, n: bar.update(completed=i), trust_remote_code=code)
            if server is not None:
                res = _endpoint_metrics(server, convs, answers["max_new_tokens"]) | \
                    {x: res[x] for x in ("loss", "perplexity", "tokens") if x in res} | {"where": server.url}
            done(k, res | {"seconds": round(time.time() - t0, 1)})

        for m in targets:  # a preference stage: each model's own preference on the held-out pairs (from log-probs)
            k = f"preference:{m}"
            if not pairs or m == "endpoint" or k in parts:
                continue
            ctx.info(msg("evaluate.preference_running_unpaired" if "completion" in pairs[0]
                         else "evaluate.preference_running", model=m, n=len(pairs)))
            t0 = time.time()
            with ctx.progress(msg("evaluate.preference_progress", model=m), total=len(pairs)) as bar:
                got = scores.score_model(found[m], pairs, code, progress=lambda i, n: bar.update(completed=i))
            done(k, dataclasses.asdict(got) | {"seconds": round(time.time() - t0, 1)})

        spec = ctx.result(StrategyChoice).spec()
        if spec.objective == "grpo" and answers["heldout"] == "training":  # GRPO's own measure: its rewards
            from recipes.training import rewards

            for m in targets:
                k, got = f"reward:{m}", parts.get(f"heldout:{m}", {})
                if k in parts or not got.get("answers"):
                    continue
                done(k, rewards.score_texts(spec.rewards, spec.reward_file, [c[:-1] for c in convs],
                                            got["answers"], [c[-1]["content"] or None for c in convs]))

        for b in answers.get("benchmarks", []):
            ddir = _fetch(ctx, b, answers)
            for m in targets:
                k = f"bench:{b}:{m}"
                if k in parts:
                    continue
                srv = replies.benchmark(m, harness.BENCHMARKS[b].kind) or Server("", served or "", key)
                ctx.info(msg("evaluate.bench_running", benchmark=b, model=m, where=srv.url or found.get(m, "")))
                t0 = time.time()
                res = harness.run(b, ddir, edir / f"harness-{b}-{m}", answers["benchmark_limit"],
                                  endpoint=srv.url or None, served_model=srv.model, api_key=srv.api_key,
                                  concurrency=srv.concurrency,
                                  model_dir=None if m == "endpoint" else found[m],
                                  subsets=_subsets(answers) if b == "mmlu" else None, trust_remote_code=code)
                done(k, res | {"seconds": round(time.time() - t0, 1)})
    finally:
        replies.stop()

    table = summary(parts, targets, answers.get("benchmarks", []))
    ctx.table(msg("evaluate.table"), [msg("evaluate.col.metric"), *(column_words(m, ctx.t) for m in targets)],
              [[metric_words(r[0], ctx.t)] + r[1:] for r in table])
    verdict_ = verdict(parts)
    if (said := Evaluation(verdict=verdict_, heldout_samples=len(convs) or None).headline(ctx.t)) is not None:
        # GRPO: a reward that fell is said here too; too few held out: the figures without a verdict
        (ctx.warn if said[0] else ctx.info)(said[1])
    examples = []
    for i, c in enumerate(convs[:EXAMPLES]):
        ex = {"prompt": datasets.text_of(c[-2]["content"]) if len(c) > 1 else "", "reference": c[-1]["content"]}
        for m in targets:
            ex[m] = parts.get(f"heldout:{m}", {}).get("answers", [""] * (i + 1))[i]
        examples.append(ex)
        ctx.info(msg("evaluate.example", n=i + 1, prompt=_short(ex["prompt"]), reference=_short(ex["reference"]),
                     answers="\n  ".join(ctx.t("ui.label_value", label=column_words(m, ctx.t), value=_short(ex[m]))
                                         for m in targets)))
    report, chart = write_report(ctx, edir, config, parts, targets, answers.get("benchmarks", []), examples,
                                 heldout=len(convs))
    ctx.info(msg("evaluate.report", path=str(report)))
    return Evaluation(config=config, parts=parts, table=table, columns=targets, examples=examples,
                      heldout_samples=len(convs), report=str(report), chart=str(chart) if chart else None,
                      verdict=verdict_)


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def summary(parts: dict, targets: list[str], benchmarks: list[str]) -> list[list]:
    """Rows ``[metric, value per target…]`` (None where not measured)."""
    rows = []
    for metric in METRICS:
        vals = [parts.get(f"heldout:{m}", {}).get(metric) for m in targets]
        if any(v is not None for v in vals):
            rows.append([f"held-out {metric}", *vals])
    unpaired = any(parts.get(f"preference:{m}", {}).get("kind") == "unpaired" for m in targets)
    for metric in ("accuracy", "margin"):  # recipes/evaluation/preference.py: log p(chosen) − log p(rejected)
        vals = [parts.get(f"preference:{m}", {}).get(metric) for m in targets]
        if any(v is not None for v in vals):  # KTO's labelled replies: the ranking's AUC, nats per token
            rows.append([f"held-out preference {metric}" + (" (unpaired: AUC)" if metric == "accuracy" else
                                                             " (unpaired: per token)") * unpaired, *vals])
    names = list(dict.fromkeys(k for m in targets for k in parts.get(f"reward:{m}", {})))  # GRPO's rewards
    for name in names:
        rows.append([f"held-out {name}", *[parts.get(f"reward:{m}", {}).get(name) for m in targets]])
    for b in benchmarks:
        rows.append([f"{b} ({harness.BENCHMARKS[b].metric.split(',')[0]})",
                     *[parts.get(f"bench:{b}:{m}", {}).get("score") for m in targets]])
    return rows


def write_report(ctx: Ctx, edir: Path, config: dict, parts: dict, targets: list[str], benchmarks: list[str],
                 examples: list[dict], heldout: int | None = None) -> tuple[Path, Path | None]:
    """report.md in the session's language (every sentence from the catalogue: ``evaluate.report.*``); each reply a
    block quote of its own, so a multi-line answer does not run into the next label (issue 46 item 14); ``heldout``:
    the held-out conversations compared (too few is said, as the step says it)."""
    t = ctx.t
    rows = summary(parts, targets, benchmarks)
    lines = [t("evaluate.report.title", id=ctx.session_id), "", f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "", f"| {t('evaluate.report.metric')} | " + " | ".join(column_words(m, t) for m in targets) + " |",
             "|---|" + "---|" * len(targets)]
    lines += ["| " + " | ".join([metric_words(str(r[0]), t)] + ["—" if v is None else str(v) for v in r[1:]]) + " |"
              for r in rows]
    lines += ["", t("evaluate.report.models", models=[f"{column_words(k, t)} = `{v}`"
                                                            for k, v in config["models"].items()]), ""]
    wheres = {m: parts.get(f"heldout:{m}", {}).get("where") for m in targets}
    if any(wheres.values()):
        lines += [t("evaluate.report.replies_from", where=[
            f"{m} = {w or t('evaluate.report.in_process')}" for m, w in wheres.items()]), ""]
    v = verdict(parts)
    if v and v["beats"] is not None:
        checks = ", ".join(t("ui.label_value", label=metric_words(k, t),
                             value=t('evaluate.report.tie' if ok is None else 'ui.yes' if ok else 'ui.no'))
                           for k, ok in v["checks"].items())
        said = Evaluation(verdict=v).headline(t)
        line = ctx.t(said[1]) if v.get("mixed") and said is not None else \
            t("evaluate.report.beats" if v["beats"] else "evaluate.report.not_beats", checks=checks)
        if heldout and heldout < FEW_HELDOUT:  # no verdict on a handful of conversations: the figures (46 tryouts)
            line = t("evaluate.few_figures", n=heldout, figures=metric_words(str(v.get("figures", "")), t))
        lines += [line, ""]
        if said is not None and v["beats"] and v.get("fell"):  # GRPO: a reward hacked — said here too
            lines += ["**" + t("evaluate.report.warning") + "** " + ctx.t(said[1]), ""]
    for caveat in Evaluation(heldout_samples=heldout).caveats():  # too few held out: said in the report too
        lines += ["**" + t("evaluate.report.warning") + "** " + ctx.t(caveat), ""]

    def quoted(text: object) -> list[str]:
        return ["> " + line if line.strip() else ">" for line in str(text or "").splitlines() or [""]]

    if examples:
        lines += [t("evaluate.report.examples"), ""]
        for i, ex in enumerate(examples, 1):
            lines += [f"### {i}", ""]
            for label, text in [(t("evaluate.report.prompt"), ex["prompt"]), (t("evaluate.report.reference"),
                                                                              ex["reference"])] \
                    + [(column_words(m, t), ex.get(m, "")) for m in targets]:
                lines += [f"**{label}**:", "", *quoted(text), ""]
    lines += [t("evaluate.report.footer_bench", limit=config.get("benchmark_limit")) if benchmarks
              else t("evaluate.report.footer"), ""]
    report = EvaluateDir(edir).report_md
    report.write_text("\n".join(lines))
    chart = _chart(rows, targets, EvaluateDir(edir).report_png)
    return report, chart


def _chart(rows: list[list], targets: list[str], path: Path) -> Path | None:
    """Grouped bars of the metrics in [0, 1] (exact match, ROUGE-L, benchmark scores), one bar per model."""
    shown = [r for r in rows if "loss" not in r[0] and "perplexity" not in r[0] and any(v is not None for v in r[1:])]
    if not shown:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(shown)), 3.6), dpi=100)
    width = 0.8 / len(targets)
    for j, m in enumerate(targets):
        ax.bar([i + j * width for i in range(len(shown))], [r[1 + j] or 0 for r in shown], width, label=m)
    ax.set_xticks([i + width * (len(targets) - 1) / 2 for i in range(len(shown))], [r[0] for r in shown], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def is_done(ctx: Ctx, record: Record) -> bool:
    return "table" in record.outputs
