"""Step 4 — download the chosen revision (recipes/hub/snapshot.py, with yichui's resumable, verified downloader).

File selection (safetensors over .bin duplicates; no original/ or GGUF unless asked; include/exclude patterns), a
free-disk check before starting (what remains + 5 %), one progress view (total and per file), the commit recorded.
A local model is used where it lies. `yichui download` runs the same code without a session.
"""
from __future__ import annotations

from pathlib import Path

from recipes.base import Ctx, Question, Record, StepError, msg
from recipes.handoff import Download, ModelChoice
from recipes.hub import client as hub
from recipes.hub import downloader
from recipes.hub.snapshot import fetch

# refusals of a download that another answer to select_model fixes (another id, revision, source or endpoint)
ANSWER_FIXES = frozenset({"hub.no_such_model", "hub.no_such_revision", "hub.denied", "hub.missing_or_private",
                          "hub.token_refused", "hub.gated", "hub.no_config", "hub.empty_listing",
                          # a weight file the listing named and the hub then refused or no longer has: another model,
                          # revision or endpoint (the tryout's 403 and 404 on model.safetensors ended the wizard)
                          "hub.not_found", "hub.download_denied", "hub.download_gated"})

name = "download"
requires = ("select_model",)


def _default_dir(ctx: Ctx) -> str | None:
    sel = ctx.result(ModelChoice)
    if sel.source in ("local", "") or not sel.repo_id:
        return None
    return str(ctx.home / "models" / sel.source / sel.repo_id)


def questions(ctx: Ctx) -> list[Question]:
    remote = ctx.result(ModelChoice).source not in ("local", "endpoint")

    def check_mirrors(v, a):
        bad = [m for m in _mirrors(v) if not m.startswith(("http://", "https://"))]
        return msg("select_model.bad_endpoint", value=bad[0]) if bad else None

    return [Question("local_dir", "path", "download.local_dir", default=_default_dir(ctx), when=lambda a: remote),
            Question("compare_mirrors", "text", "download.compare_mirrors", default="none", when=lambda a: remote,
                     validate=check_mirrors)]


def _mirrors(value: str) -> list[str]:
    return [] if value.strip().lower() in ("", "none", "-") else [m.strip() for m in value.split(",") if m.strip()]


def run(ctx: Ctx, answers: dict) -> Download:
    sel = ctx.result(ModelChoice)
    if sel.source == "local":
        path = Path(str(sel.local_path)).expanduser().resolve()
        ctx.info(msg("download.local", path=str(path)))
        return Download(model_dir=str(path))
    if not sel.repo_id or not sel.endpoint:  # a remote source always names both (select_model's questions)
        raise StepError("select_model.bad_id", value=str(sel.repo_id))
    endpoint = sel.endpoint
    mirrors = _mirrors(answers.get("compare_mirrors", "none"))
    if mirrors:
        timed = hub.probe(sel.source, sel.repo_id, [endpoint, *mirrors], sel.revision)
        ctx.table(msg("download.mirrors"), [msg("ui.col.endpoint"), "ms", "MiB/s"],
                  [(t["endpoint"], t["latency_ms"] if t["ok"] else "—", t["mib_s"] if t["ok"] else t["error"])
                   for t in timed])
        if timed[0]["ok"] and timed[0]["endpoint"] != endpoint:
            ctx.info(msg("download.faster_mirror", endpoint=timed[0]["endpoint"], id=ctx.session_id))
    try:
        out = Download.from_dict(fetch(sel.source, sel.repo_id, endpoint, sel.revision, Path(answers["local_dir"]),
                                       ctx.progress, ctx.info, seed=Path(sel.meta_dir) if sel.meta_dir else None))
    except StepError as e:
        # the model, its revision or access to it refused: another answer at step 1 fixes it — the wizard offers
        # to go back there now (a dead end before, issue 46 item 4), a resume asks it again
        if e.key in ANSWER_FIXES:
            raise e.caused_by("select_model")
        raise
    from recipes.memory.model import disagreement

    # before minutes of training on another model's shape
    wrong = disagreement(Path(out.model_dir), sel.repo_id) if out.model_dir else None
    if wrong:
        raise StepError(wrong.key, **wrong.args).caused_by("select_model")
    approved = (sel.custom_code or {}).get("commit")
    if approved and out.commit and out.commit != approved:  # the yes covered the code of another commit
        raise StepError("download.code_changed", repo=sel.repo_id, approved=approved[:12], now=out.commit[:12],
                        id=ctx.session_id)
    return out


def skip(ctx: Ctx) -> str | None:
    """An evaluation of an endpoint has no weights to fetch."""
    return "endpoint" if ctx.result(ModelChoice).source == "endpoint" else None


def is_done(ctx: Ctx, record: Record) -> bool:
    out = record.outputs
    d = Path(out.get("model_dir") or "/nonexistent")
    return (d / "config.json").is_file() and all(downloader.is_complete(d / f["path"], f["size"], f.get("sha256"),
                                                                        f.get("git_sha1"))
                                                 for f in out.get("files", []))
