"""Step 5 — train, as a detached child process the wizard follows.

The trainer (recipes/training/worker.py) runs in its own session with stdin from /dev/null and output to a log, so it
survives the wizard, the terminal and the SSH link. This step writes its spec, starts it (or re-attaches to the one
already running for this session, or restarts it from the last checkpoint when it died), and shows a live view of
its events until it finishes. Ctrl-C detaches the view; the training goes on.
"""
from __future__ import annotations

import json
import os
import secrets
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

from recipes.rundir import BACKUP, TRAINER, RunDir, TrainDir
from recipes import jobs
from recipes.memory import model as memory
from recipes.training import backup, plots
from recipes.base import Choice, Ctx, Question, Record, StepError, msg
from recipes.handoff import Download, ModelChoice, StrategyChoice, TrainingResult, trusted
from recipes.training.spec import FULL_WEIGHTS, TrainerJob, TrainingSpec
from recipes.training.runner import (REPO, CompileFailed, OutOfMemory, Stopped, checkpoints, follow, meet, node_hosts, recover,
                                     set_aside_damaged, set_aside_incomplete, trainer_env, with_backend,
                                     worker_argv)

name = "train"
requires = ("select_model", "choose_strategy", "download")
def questions(ctx: Ctx) -> list[Question]:
    job = jobs.read(TrainDir(train_dir(ctx)).job())
    if job is not None and job.alive():
        return []  # a trainer is running: re-attach to it with the answers it was started with
    has_gpu = bool(memory.detect_gpus())
    return [Question("device", "select", "train.device", default="auto",
                     choices=[Choice("auto", msg("train.device.auto")), Choice("cpu", "CPU"),
                              Choice("cuda", "CUDA GPU")],
                     validate=lambda v, a: msg("train.no_cuda") if v == "cuda" and not has_gpu else None)]


def train_dir(ctx: Ctx) -> Path:
    return RunDir(ctx.run_dir).train.root


def _spec(ctx: Ctx, answers: dict) -> TrainerJob:
    """The trainer's job: the chosen spec, the data and the device, with every recovery (out of memory, a failed
    compile) applied."""
    s = ctx.result(StrategyChoice)
    spec = s.job(model_dir=ctx.result(Download).model_dir, device=answers["device"], trust_remote_code=trusted(ctx))
    for change in ctx.result(TrainingResult).recoveries:
        spec = replace(spec, **change["to"])
    spec.check()  # a recorded strategy edited by hand is refused here in one line, not by the trainer it would start
    _check_targets(spec)
    return with_backend(spec, ctx.home)


def _check_targets(spec: TrainerJob) -> None:
    """The LoRA targets name layers the model has (a recorded strategy edited by hand reached peft's raw
    NoMatchingPeftModuleError in the trainer: the tester's N2, issue 46); choose_strategy is asked again on resume.

    Raises:
        StepError("memory.unknown_targets"): a name the model has no linear layer for."""
    if spec.method in FULL_WEIGHTS or spec.lora_targets == "all-linear":
        return
    try:
        shape = memory.shape_from_config(json.loads((Path(spec.model_dir) / "config.json").read_text()))
    except Exception:  # a model the memory model cannot read (said at step 2): peft's own check stays
        return
    try:
        shape.targeted(spec.lora_targets)
    except memory.ConfigError as e:
        raise StepError(e.key, **e.params).caused_by("choose_strategy") from None


def _stale_result(result: Path) -> str | None:
    """What train/result.json names that is not there (its adapter folder, moved or deleted; or the file is not a
    result), or None when it is whole or absent. The training then runs again from the last intact checkpoint, which
    for a finished run only saves the final adapter (issue 46 item 18: resume said "Training finished" without
    training, then failed at export on every resume)."""
    if not result.exists():
        return None
    try:
        adapter = json.loads(result.read_text()).get("adapter_dir")
    except (OSError, ValueError, AttributeError):
        return str(result)
    if not isinstance(adapter, str) or not Path(adapter).is_dir() or not any(Path(adapter).iterdir()):
        return str(adapter)
    return None


# what a run trains: the strategy (TrainingSpec's fields) and the data and model it reads; a run whose recorded
# spec.json differs in any of them is another training, not one to finish or resume
_RUN_FIELDS = tuple(f.name for f in fields(TrainingSpec)) + ("model_dir", "dataset_path", "val_ratio",
                                                               "skip_bad_records")


def _changed(recorded: Path, spec: TrainerJob) -> list[str]:
    """``name old → new`` for each training-defining field where the run's spec.json differs from ``spec`` (an
    unreadable spec.json: every field, as "?")."""
    try:
        old = json.loads(recorded.read_text())
    except (OSError, ValueError):
        return ["spec.json ?"]
    new = spec.to_dict()
    norm = lambda v: list(v) if isinstance(v, tuple) else v  # noqa: E731 (JSON reads tuples back as lists)
    return [f"{k} {old.get(k)!r} → {new[k]!r}" for k in _RUN_FIELDS if k in new and norm(old.get(k)) != norm(new[k])]


def _from_source(ctx: Ctx, tdir: Path) -> None:
    """A training taken over from another session (``--from``) whose result is gone (issue 46 trial I: the adapter
    moved away, the run trained 400 steps again from step 0 though the source's checkpoint-400 was intact): its
    latest complete checkpoint and spec.json are copied here (hard links where the disk allows), so the trainer
    resumes from it — and finishes at once when it is the last step."""
    import shutil

    prev = ctx.result(TrainingResult).train_dir
    if not prev or Path(prev).resolve() == tdir.resolve() or checkpoints(tdir) or TrainDir(tdir).result.exists():
        return
    found = checkpoints(Path(prev))
    if not found:
        return
    dst = TrainDir(tdir).checkpoints / found[-1].name
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(found[-1], dst, copy_function=os.link)
    except OSError:  # another disk: copied
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(found[-1], dst)
    if TrainDir(Path(prev)).spec.exists():
        shutil.copy(TrainDir(Path(prev)).spec, TrainDir(tdir).spec)
    ctx.info(msg("train.from_source_checkpoint", checkpoint=found[-1].name, path=str(found[-1])))


def _set_aside_if_changed(ctx: Ctx, answers: dict, tdir: Path) -> None:
    """A run of other answers (a --set that re-opened this step, issue 46 trial I: it said "train runs again", then
    reported the old result and kept the old adapter under the new answers) is moved aside whole, kept, and the
    training starts from step 0; one still running is refused instead.

    Raises:
        StepError("train.changed_while_running"): its trainer still runs."""
    td = TrainDir(tdir)
    if not td.spec.exists() or not (td.result.exists() or checkpoints(tdir)):
        return
    changed = _changed(td.spec, _spec(ctx, answers))
    if not changed:
        return
    job = jobs.read(td.job())
    if job is not None and job.alive():
        raise StepError("train.changed_while_running", pid=job.pid, id=ctx.session_id)
    aside = tdir.with_name(f"{tdir.name}.before-{time.strftime('%Y%m%d-%H%M%S')}")
    tdir.rename(aside)
    tdir.mkdir(parents=True)
    ctx.warn(msg("train.answers_changed", changes="; ".join(changed)[:400], aside=str(aside)))


def run(ctx: Ctx, answers: dict) -> TrainingResult:
    tdir = train_dir(ctx)
    tdir.mkdir(parents=True, exist_ok=True)
    result = TrainDir(tdir).result
    _from_source(ctx, tdir)
    _set_aside_if_changed(ctx, answers, tdir)
    if (gone := _stale_result(result)) is not None:  # a result whose adapter is gone: train again, not "finished"
        result.replace(TrainDir(tdir).stale_result)
        ctx.warn(msg("train.result_stale", adapter=gone))
    while not result.exists():
        job = jobs.read(TrainDir(tdir).job())
        if job is not None and job.alive():
            ctx.info(msg("train.reattach", pid=job.pid))
        else:
            job = _launch(ctx, answers, tdir)
        ctx.record(trainer_pid=job.pid, train_dir=str(tdir))
        try:
            follow(ctx, job, tdir, predicted_tps=ctx.result(StrategyChoice).predicted_tokens_per_s)
        except Stopped:  # follow said it was stopped: not "detached, training goes on"
            raise
        except KeyboardInterrupt:
            ctx.info(msg("train.detached", pid=job.pid, id=ctx.session_id))
            raise
        except OutOfMemory as oom:
            spec = _spec(ctx, answers)
            change = recover(spec)
            if change is None:
                raise StepError("train.oom_no_room", micro_batch=spec.micro_batch, log=job.log) from None
            change["at_step"] = oom.step
            recoveries = ctx.result(TrainingResult).recoveries + [change]
            ctx.record(recoveries=recoveries)
            ctx.warn(msg("train.oom_recovered" if oom.step else "train.oom_recovered_first", step=oom.step,
                         micro_batch=change["to"]["micro_batch"], grad_accum=change["to"]["grad_accum"]))
        except CompileFailed as failed:  # the worker says so only when the layers were compiled
            change = {"from": {"compile_layers": True}, "to": {"compile_layers": False}, "at_step": failed.step}
            ctx.record(recoveries=ctx.result(TrainingResult).recoveries + [change])
            ctx.warn(msg("train.compile_failed", error=failed.message, log=job.log))
    _start_backup(ctx, tdir)  # a resume after the training ended: the final adapter may still be due
    out = json.loads(result.read_text())
    _report_backup(ctx, tdir)
    losses = out.get("losses") or []
    if 1 < len(losses) < 10:  # the first and the last five overlap: said as the first and the last logged
        ctx.info(msg("train.finished_few", steps=out["steps"], first=losses[0], last=losses[-1],
                     seconds=out["runtime_s"]))
    else:
        ctx.info(msg("train.finished", steps=out["steps"], first=out["first5_mean"], last=out["last5_mean"],
                     seconds=out["runtime_s"]))
    if out.get("rewards"):  # GRPO: what it optimizes, where its loss says little
        mean = lambda xs: round(sum(xs) / len(xs), 4)  # noqa: E731
        rewards = out["rewards"]
        first, last = (rewards[0], rewards[-1]) if len(rewards) < 10 else (mean(rewards[:5]), mean(rewards[-5:]))
        ctx.info(msg("train.finished_rewards_few" if len(rewards) < 10 else "train.finished_rewards",
                     first=first, last=last))
    events, _ = jobs.read_events(TrainDir(tdir).events)
    png = plots.loss_png(events, TrainDir(tdir).loss_png, title=ctx.session_id)
    if png:
        import importlib.util

        viewer = importlib.util.find_spec("tensorboard") is not None  # the events are written without it
        ctx.info(msg("train.curve" if viewer else "train.curve_no_viewer", png=str(png),
                     tb=str(TrainDir(tdir).tensorboard), python=sys.executable))  # the venv's, not PATH's
    from recipes.training import trackers

    for name in dict.fromkeys(ctx.result(StrategyChoice).job().trackers):  # where, and how to see it
        ctx.info(msg("train.tracker_store", tracker=name, path=str(trackers.store(name, TrainDir(tdir).trackers)),
                     command=trackers.view_command(name, TrainDir(tdir).trackers)))
    return TrainingResult(train_dir=str(tdir), adapter_dir=out["adapter_dir"], method=out["method"],
                          steps=out["steps"], train_loss=out["train_loss"], first5_mean=out["first5_mean"],
                          last5_mean=out["last5_mean"], samples=out["samples"], peak_mem_gib=out["peak_mem_gib"],
                          mem_kind=out["mem_kind"], device=out["device"],
                          recoveries=ctx.result(TrainingResult).recoveries, loss_png=str(png) if png else None,
                          tensorboard_dir=str(TrainDir(tdir).tensorboard), eval_losses=out.get("eval_losses", []),
                          trainer_pid=ctx.result(TrainingResult).trainer_pid)


def _has_optimizer_state(ckpt: Path) -> bool:
    """Whether a checkpoint holds the optimizer's state as the Trainer saves it: optimizer.pt (one process, DDP),
    global_step*/ (DeepSpeed) or optimizer_*/ (FSDP)."""
    return (ckpt / "optimizer.pt").is_file() or any(ckpt.glob("global_step*")) or any(ckpt.glob("optimizer_*"))


def _launch(ctx: Ctx, answers: dict, tdir: Path) -> jobs.Job:
    """Start the trainer on the current spec; it resumes from the latest complete checkpoint when there is one (one
    a kill interrupted while it was written is set aside first)."""
    for name in set_aside_incomplete(tdir):
        ctx.warn(msg("train.incomplete_checkpoint", checkpoint=name))
    for name, what in set_aside_damaged(tdir):  # cut short by a full disk or a copy: the Trainer would fail on it
        ctx.warn(msg("train.damaged_checkpoint", checkpoint=name, what=what))
    ckpts = checkpoints(tdir)
    if ckpts:
        ctx.info(msg("train.resume_from", checkpoint=ckpts[-1].name))
        if not _has_optimizer_state(ckpts[-1]):  # the Trainer then starts a fresh optimizer without a word
            ctx.warn(msg("train.no_optimizer_state", checkpoint=ckpts[-1].name))
    spec = replace(_spec(ctx, answers), launch=secrets.token_hex(6))
    spec_path = TrainDir(tdir).spec
    spec.write(spec_path)
    if len(node_hosts(spec)) > 1:
        meet(ctx, spec, tdir, spec_path)
    argv = worker_argv(spec, spec_path)
    job = jobs.spawn(TRAINER, argv, tdir, env=trainer_env(spec), cwd=REPO)
    ctx.info(msg("train.started", pid=job.pid, log=job.log))
    _start_backup(ctx, tdir, spec.save_steps)
    if spec.interpreter:  # not yichui's own trainer: say whose, and where it runs
        ctx.info(msg("train.on_backend", backend=spec.training_backend, python=spec.interpreter))
    return job


BACKUP_WAIT_S = 120  # for the final adapter's upload once training ended; then it goes on in the background


def _start_backup(ctx: Ctx, tdir: Path, save_steps: int | None = None) -> None:
    """Start the adapter backup job (recipes/training/backup.py) beside the trainer when one was chosen, unless it
    runs already or the final adapter is up. Its environment is the wizard's: the hub token stays there."""
    chosen = ctx.result(StrategyChoice).backup
    if chosen is None:
        return
    model = ctx.result(ModelChoice)
    if model.source in backup.HUBS and model.repo_id:  # the uploaded adapter names its base by hub id
        chosen = replace(chosen, base_model=model.repo_id)
    if save_steps is None:
        save_steps = ctx.result(StrategyChoice).spec().save_steps
    backup.write_config(tdir, chosen, save_steps)
    running = jobs.read(TrainDir(tdir).job(BACKUP))
    if (running is not None and running.alive()) or "." in backup.uploaded(tdir):
        return
    job = jobs.spawn(BACKUP, [sys.executable, "-m", "recipes.training.backup", str(tdir)], tdir,
                     env=dict(os.environ, HF_HUB_DISABLE_XET="1"), cwd=REPO)
    ctx.info(msg("train.backup_started_all" if chosen.every == 1 else "train.backup_started",
                 hub=backup.HUB_NAMES[chosen.hub], repo=chosen.repo_id, every=chosen.every, log=job.log))


def _report_backup(ctx: Ctx, tdir: Path) -> None:
    """After training: wait up to BACKUP_WAIT_S for the final adapter's upload (said first), then say what went
    up and what did not (a failed upload never fails the step: the adapter is on disk)."""
    chosen = ctx.result(StrategyChoice).backup
    if chosen is None:
        return
    hub = backup.HUB_NAMES[chosen.hub]

    def shown(path: str) -> str:
        return ctx.t(msg("train.backup_final")) if path == "." else path

    def running() -> bool:
        job = jobs.read(TrainDir(tdir).job(BACKUP))
        return job is not None and job.alive()

    end = time.monotonic() + BACKUP_WAIT_S
    if not backup.summary(tdir)["done"] and running():
        ctx.info(msg("train.backup_waiting", seconds=BACKUP_WAIT_S, hub=hub))
    while not (done := backup.summary(tdir))["done"] and running() and time.monotonic() < end:
        time.sleep(1)
    ctx.info(msg("train.backup_summary", n=len(done["uploaded"]), hub=hub, repo=chosen.repo_id,
                 paths=[shown(x) for x in done["uploaded"]] or "—"))
    for path, error in done["gave_up"].items():
        ctx.warn(msg("train.backup_gave_up", path=shown(path), error=error, log=str(TrainDir(tdir).log(BACKUP))))
    for path, (attempt, attempts, error) in done["failing"].items():
        ctx.warn(msg("train.backup_failing", path=shown(path), attempt=attempt, attempts=attempts, error=error))
    if not done["done"] and running():
        ctx.info(msg("train.backup_pending", id=ctx.session_id))


def missing(ctx: Ctx, record: Record) -> str | None:
    """The path a done training lacks now (the adapter or full model folder, or result.json), for the line that
    says it runs again — it said only "gone from disk" (issue 46 trial J, N2); None when nothing is missing."""
    adapter = record.outputs.get("adapter_dir")
    taken = record.outputs.get("train_dir")
    result = TrainDir(Path(taken) if taken else train_dir(ctx)).result
    if isinstance(adapter, str) and adapter and not Path(adapter).is_dir():
        return adapter
    return None if result.exists() else str(result)


def is_done(ctx: Ctx, record: Record) -> bool:
    adapter = record.outputs.get("adapter_dir")
    taken = record.outputs.get("train_dir")  # a result taken over (--from) lives there
    tdir = Path(taken) if taken else train_dir(ctx)
    return isinstance(adapter, str) and bool(adapter) and Path(adapter).is_dir() and TrainDir(tdir).result.exists()
