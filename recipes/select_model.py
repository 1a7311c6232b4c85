"""Step 1 — choose a model: a catalogue entry, any hub id, or a local folder.

Fetches ``config.json`` while asking (an unknown id is refused with "no such model" and asked again), then the other
small files of the revision (tokenizer, chat template, generation config; no weights) into
``YICHUI_HOME/meta/<source>/<repo>/<commit>``: the strategy step checks the chat template and smoke-tests the
strategy on them before the weights are downloaded, and the download step copies them instead of fetching them twice.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from recipes.hub import models
from recipes.hub import client as hub
from recipes.hub import downloader, snapshot
from recipes.base import Choice, Ctx, Msg, Question, Record, StepError, msg
from recipes.handoff import ModelChoice

name = "select_model"
requires: tuple[str, ...] = ()

CONFIG_FIELDS = ("model_type", "architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
                 "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
                 "tie_word_embeddings", "torch_dtype", "dtype", "num_experts", "num_local_experts",
                 "num_experts_per_tok", "moe_intermediate_size", "sliding_window")


def _repo(answers: dict) -> str | None:
    if answers.get("source") == "local":
        return str(Path(answers["path"]).expanduser().resolve()) if answers.get("path") else None
    if answers.get("model") == "other":
        return answers.get("model_id")
    entry = models.by_key(answers.get("model", ""))
    return models.repo_id(entry, answers["source"]) if entry else None


_ANNOUNCED: set = set()  # (source, repo, endpoint, revision) whose config.json reading was said in this process


def questions(ctx: Ctx) -> list[Question]:
    def check_model(repo: str, answers: dict, revision: str = "main"):
        """Fetch config.json now, so an unknown id is refused at the prompt (the hub client caches it for run)."""
        said = (answers["source"], repo, answers.get("endpoint"), revision)
        if answers["source"] != "local" and said not in _ANNOUNCED:  # once: the check runs for --set and the question
            _ANNOUNCED.add(said)
            offline = answers["source"] == "hf" and hub.offline()  # the client reads its cache only (trial R)
            ctx.info(msg("select_model.fetching_offline" if offline else "select_model.fetching", repo=repo,
                         endpoint=answers.get("endpoint")))
        try:
            config = hub.fetch_config(answers["source"], repo, answers.get("endpoint"), revision)
        except StepError as e:
            # this machine's disk or its offline switch, not the answer: said as such, not "not valid" with
            # "change it with --set …" (the tester's 21-6; trial R)
            if e.key in ("hub.cache_unwritable", "hub.offline"):
                raise
            return e.msg
        from recipes.memory.model import missing_fields

        missing = missing_fields(config)  # transformers would fill them in with its defaults: another model
        if missing:
            return msg("select_model.missing_fields", model=repo, fields=list(missing))
        return broken_config(config)

    def broken_config(config: dict):
        """What the memory model (step 2) would refuse in config.json itself — transformers' own checks (a
        rope_scaling of "garbage"), a dimension out of range — said at this question, with its way to change the
        answer, instead of failing step 2 (the tester's 21-13). A model it cannot read for another reason (custom
        code not yet trusted) is left to step 2."""
        from recipes.memory import model as memory

        try:
            memory.shape_from_config(config)
        except memory.ConfigError as e:
            return e.msg if e.key in ("memory.bad_config", "memory.bad_dimension", "memory.kv_heads",
                                      "memory.experts_per_token", "memory.no_model_type") else None
        except Exception:  # noqa: BLE001 - step 2 says it, with the model's code where it needs it
            return None
        return None

    def validate_model(value, answers):
        if value == "other":
            return None
        entry = models.by_key(value)
        repo = models.repo_id(entry, answers["source"]) if entry else None
        if entry is None and hub.is_repo_id(value):  # a hub id where a catalogue name goes (46 trial L, M1)
            return Msg("select_model.id_as_model", {"model": value}, alone=True)
        if repo is None:
            return msg("select_model.not_on_source", model=value, source=answers["source"])
        return check_model(repo, answers)

    def validate_model_id(value, answers):
        if not hub.is_repo_id(value):
            return msg("select_model.bad_id", value=value)
        return check_model(value, answers)

    def validate_endpoint(value, answers):
        if not hub.is_url(value):
            return msg("select_model.bad_endpoint", value=value)
        down = hub.unreachable(answers["source"], value)  # blamed here, not on the model id asked next
        return down.msg if down else None

    def validate_path(value, answers):
        """config.json that transformers reads, and what every task needs besides (issue 20, item 2): checked here,
        not 25 questions later."""
        err = check_model(value, answers)
        missing = incomplete(Path(value).expanduser())
        if err or missing:
            return err or msg("select_model.local_incomplete", path=value, missing=list(missing))
        from recipes.memory.model import disagreement

        return disagreement(Path(value).expanduser(), value)

    def validate_revision(value, answers):
        # a branch, tag or commit as git names them: no "..", no leading "/", no spaces or control characters (a
        # revision of ../../../etc was sent to the hub and called "not a transformers model")
        if not re.fullmatch(r"[\w.\-]+(/[\w.\-]+)*", value) or {".", ".."} & set(value.split("/")) \
                or value.endswith(".lock"):
            return msg("select_model.bad_revision", value=value)
        repo = _repo(answers)
        return None if value == "main" or repo is None else check_model(repo, answers, value)

    def validate_url(value, answers):
        """An OpenAI-compatible endpoint answers GET {url}/models now (one line when it does not)."""
        from recipes.serving import client

        if not re.match(r"https?://[^\s/]+", value):
            return msg("select_model.bad_endpoint", value=value)
        try:
            client.first_model(value, timeout=10, api_key=os.environ.get("OPENAI_API_KEY"))
        except (OSError, ValueError, KeyError, IndexError) as e:
            return msg("select_model.endpoint_unreachable", url=value, error=str(e))
        return None

    remote = lambda a: a.get("source") not in ("local", "endpoint")  # noqa: E731
    sources = [Choice("hf", msg("select_model.source.hf")), Choice("modelscope", msg("select_model.source.modelscope")),
               Choice("local", msg("select_model.source.local"))]
    if ctx.task == "evaluate":  # only an evaluation can do with an endpoint and no weights
        sources.append(Choice("endpoint", msg("select_model.source.endpoint")))
    return [
        Question("source", "select", "select_model.source", default="hf", choices=sources),
        Question("endpoint_url", "text", "select_model.endpoint_url", when=lambda a: a.get("source") == "endpoint",
                 validate=validate_url, way_back=("source",)),
        # each answer checked against the network has a way back (issue 20, item 1): offline is no dead end
        Question("endpoint", "text", "select_model.endpoint", when=remote,
                 default=lambda a: hub.default_endpoint(a["source"]), validate=validate_endpoint,
                 way_back=("source",), alternatives=lambda a: hub.endpoint_choices(a["source"])),
        Question("model", "select", "select_model.model", when=remote, default=models.CATALOGUE[0].key,
                 choices=lambda a: [Choice(e.key, " ".join([e.label] + ([ctx.t("select_model.tag." + e.tag)]
                                                                     if e.tag else []))
                                           + f"  ({models.repo_id(e, a['source'])})")
                                    for e in models.CATALOGUE] + [Choice("other", msg("select_model.model.other"))],
                 validate=validate_model, way_back=("endpoint", "source")),
        Question("model_id", "text", "select_model.model_id", when=lambda a: remote(a) and a.get("model") == "other",
                 validate=validate_model_id, way_back=("model", "endpoint", "source"),
                 asked_if="select_model.asked_if.other"),
        Question("path", "path", "select_model.path", when=lambda a: a.get("source") == "local",
                 validate=validate_path, way_back=("source",)),
        Question("revision", "text", "select_model.revision", when=remote, default="main",
                 validate=validate_revision, way_back=("model", "source")),
        # a repository that ships its own Python code: run only with an explicit yes, recorded in the session
        Question("trust_remote_code", "confirm", "select_model.trust_remote_code", default=False,
                 when=lambda a: bool(_custom_code(a))),
    ]


def _custom_code(answers: dict) -> dict:
    """The chosen model's ``auto_map`` (its own Python classes), {} when it has none or cannot be read yet."""
    repo = _repo(answers)
    if not repo or answers.get("source") == "endpoint":
        return {}
    try:
        config = hub.fetch_config(answers["source"], repo, answers.get("endpoint"), answers.get("revision", "main"))
    except StepError:
        return {}
    return config.get("auto_map") or {}


def incomplete(folder: Path) -> list[str]:
    """What a local model folder lacks of what every task needs: a tokenizer, a chat template (in
    tokenizer_config.json or chat_template.jinja/.json), weights (safetensors or PyTorch bin) and, for a
    vision-language model (a ``vision_config``), its image processor's settings."""
    import json

    missing = []
    if not any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json")):
        missing.append("tokenizer")
    try:
        cfg = json.loads((folder / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        cfg = {}
    if not (isinstance(cfg, dict) and cfg.get("chat_template")) and not any(
            (folder / f).is_file() for f in ("chat_template.jinja", "chat_template.json")):
        missing.append("chat template")
    if not any(folder.glob("*.safetensors")) and not any(folder.glob("*.bin")):
        missing.append("weights")
    try:
        vision = isinstance(json.loads((folder / "config.json").read_text()).get("vision_config"), dict)
    except (OSError, ValueError, AttributeError):
        vision = False
    if vision and not any((folder / f).is_file() for f in ("preprocessor_config.json", "processor_config.json")):
        missing.append("image processor (preprocessor_config.json)")  # a vision-language model reads images
    return missing


def run(ctx: Ctx, answers: dict) -> ModelChoice:
    source = answers["source"]
    if source == "endpoint":
        from recipes.serving import client

        url = answers["endpoint_url"].rstrip("/")
        served = client.first_model(url, api_key=os.environ.get("OPENAI_API_KEY"))
        ctx.table(msg("select_model.table"), [msg("ui.col.field"), msg("ui.col.value")],
                  [(msg("ui.field.endpoint"), url), (msg("ui.field.model"), served)])
        return ModelChoice(source=source, endpoint_url=url, served_model=served)
    repo = _repo(answers)
    if repo is None:  # the questions name a model for every source but an endpoint
        raise StepError("select_model.bad_id", value="")
    revision = answers.get("revision", "main")
    config = hub.fetch_config(source, repo, answers.get("endpoint"), revision)
    code = config.get("auto_map") or {}
    if code and not answers.get("trust_remote_code"):
        raise StepError("select_model.custom_code", repo=repo, classes=", ".join(sorted(code))[:120])
    arch = (config.get("architectures") or ["?"])[0]
    text: dict = config["text_config"] if isinstance(config.get("text_config"), dict) else {}
    summary = {k: config[k] if k in config else text[k] for k in CONFIG_FIELDS if k in config or k in text}
    vision = config.get("vision_config")
    if isinstance(vision, dict):  # a vision-language model: its tower in one row
        summary["vision"] = " · ".join(f"{k} {vision[k]}" for k in (
            "model_type", "depth", "num_hidden_layers", "hidden_size", "patch_size", "image_size") if k in vision)
    ctx.table(msg("select_model.table"), [msg("ui.col.field"), msg("ui.col.value")],
              [(msg("ui.field.model"), repo), (msg("ui.field.architecture"), arch)]  # config.json's own field names:
              + [(k, v) for k, v in summary.items() if k != "architectures"])  # as the file spells them
    out = ModelChoice(source=source, endpoint=answers.get("endpoint"), repo_id=repo if source != "local" else None,
                      local_path=repo if source == "local" else None, revision=revision, architecture=arch,
                      model_type=config.get("model_type"), config=config, trust_remote_code=bool(code))
    meta, commit = snapshot.fetch_metadata(ctx.home, ctx.progress, out.to_dict())
    out.meta_dir, out.commit = str(meta), commit
    if code:  # what the yes covers: these files at this commit (download refuses another commit)
        out.custom_code = {"classes": code, "commit": commit, "files": [
            {"path": p.name, "sha256": downloader.hash_file(p, "sha256")} for p in sorted(meta.glob("*.py"))]}
        ctx.warn(msg("select_model.custom_code_trusted", repo=repo, files=[p.name for p in meta.glob("*.py")],
                     commit=(commit or revision)[:12]))
    return out


def is_done(ctx: Ctx, record: Record) -> bool:
    out = record.outputs
    return bool(out.get("config") or out.get("served_model"))
