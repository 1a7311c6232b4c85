"""Running the trainer: its command and environment, the rendezvous of several nodes, following its events, and
the rule for an out-of-memory error.

The train step (recipes/train.py) and the preflight smoke run (recipes/training/preflight.py) both start the trainer
(recipes/training/worker.py, a subprocess entry point) with these and show its events the same way.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from recipes.rundir import TrainDir
from recipes import jobs
from recipes.training import plots
from recipes.base import StepError, msg
from recipes.training.spec import TrainerJob, TrainingSpec

POLL_S = 0.5
REPO = Path(__file__).resolve().parent.parent.parent  # the project's root: the trainer runs there (-m recipes.…)


def trainer_env(spec: TrainerJob | None = None) -> dict:
    """The trainer's environment. expandable_segments lets the CUDA caching allocator grow segments instead of
    leaving fragmented blocks: lower, steadier peak reserved memory (the memory model is calibrated with it). A
    trainer in another backend's interpreter (``spec.interpreter``) gets the environment that interpreter needs
    (recipes/training/backends.py process_env)."""
    from recipes.training import backends

    env = dict(backends.process_env() if spec is not None and spec.interpreter else os.environ)
    env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    if env.get("TORCH_CUDA_ARCH_LIST"):
        env["TORCH_CUDA_ARCH_LIST"] = plain_arch_list(env["TORCH_CUDA_ARCH_LIST"])
    return env


def plain_arch_list(arch_list: str) -> str:
    """``TORCH_CUDA_ARCH_LIST`` without the architecture-specific suffixes ("9.0a" → "9.0", "10.0f+PTX" →
    "10.0+PTX"). DeepSpeed 0.19.8 compiles its ops (cpu_adam, async_io) on first use and parses each entry as
    numbers: "9.0a", which GPU images set for Hopper, fails with "invalid literal for int() with base 10: '0a'"
    (seen on the H200, bench/results/2026-12-03-nvme-offload-h200.md). Its ops use no sm_90a-only instructions."""
    out = []
    for cc in arch_list.replace(" ", ";").split(";"):
        if cc.strip():
            base, plus, ptx = cc.strip().partition("+")
            out.append(base.rstrip("abcdefghijklmnopqrstuvwxyz") + plus + ptx)
    return ";".join(out)


def with_backend(spec: TrainerJob, home: Path) -> TrainerJob:
    """``spec`` with the interpreter its training backend runs in: unsloth's environment under ``home``
    (recipes/training/backends.py), for GRPO with vLLM generation vLLM's, yichui's own otherwise.

    Raises:
        StepError("training.no_vllm_generation"): GRPO's vLLM generation was chosen and its environment is not
            installed (the message gives the command that installs it).
        StepError("training.no_unsloth"): the unsloth backend was chosen and its environment is not installed (the
            message gives the command that installs it).
    """
    from dataclasses import replace

    from recipes.training import backends

    if spec.objective == "grpo" and spec.generation == "vllm":  # vLLM's own pins: its environment runs the trainer
        vllm = backends.find_vllm_generation(home)
        if vllm is None:
            raise StepError("training.no_vllm_generation", env=str(backends.vllm_generation_env(home)),
                            version=backends.VLLM_GENERATION_VERSION, command=backends.install_command(home, "vllm"))
        return replace(spec, interpreter=vllm.python)
    if spec.training_backend != "unsloth":
        return replace(spec, interpreter="")
    found = backends.find_unsloth(home)
    if found is None:
        raise StepError("training.no_unsloth", env=str(backends.unsloth_env(home)),
                        command=backends.install_command(home))
    return replace(spec, interpreter=found.python)


class CompileFailed(Exception):
    """torch.compile of the decoder layers failed in the trainer (after optimizer step ``step``; ``message``: its
    first line): the same run goes on without compiling."""

    def __init__(self, step: int | None, message: str):
        self.step, self.message = step, message


class Stopped(KeyboardInterrupt):
    """The trainer was stopped on purpose (`yichui stop`, SIGTERM) and wrote its checkpoint: resumable, not a failure,
    and not a detach either — the follower says so (issue 20, item 3)."""


class OutOfMemory(Exception):
    """The trainer reported a CUDA out-of-memory error after optimizer step ``step``."""

    def __init__(self, step: int | None):
        self.step = step


def recover(spec: TrainingSpec) -> dict | None:
    """After a CUDA out-of-memory error: half the micro-batch and twice the gradient accumulation (the same
    effective batch), and activation checkpointing on. Never below the objective's least micro-batch (KTO: 2); for
    GRPO the micro-batch's largest divisor up to half, so that micro-batch × accumulation (whole groups of replies)
    stays the same. Returns ``{"from": {...}, "to": {...}}`` (the changed
    fields), or None when nothing is left to give."""
    from recipes.training.spec import least_micro_batch

    before = {"micro_batch": spec.micro_batch, "grad_accum": spec.grad_accum,
              "activation_checkpointing": spec.activation_checkpointing}
    after = dict(before)
    half = spec.micro_batch // 2
    if spec.objective == "grpo":  # whole groups of replies per step: micro-batch × accumulation stays exactly the same
        half = max(d for d in range(1, half + 1) if spec.micro_batch % d == 0) if half else 0
    if half >= least_micro_batch(spec.objective):  # KTO's KL term needs two replies in a micro-batch
        after["micro_batch"] = half
        after["grad_accum"] = spec.grad_accum * 2 if spec.micro_batch % 2 == 0 else \
            -(-spec.micro_batch * spec.grad_accum // half)
    after["activation_checkpointing"] = True
    return None if after == before else {"from": before, "to": after}


def checkpoints(tdir: Path) -> list[Path]:
    """The trainer's complete checkpoints in ``tdir/checkpoints``, oldest first. Complete: it holds
    trainer_state.json, which the Trainer writes last (after the weights, optimizer, scheduler and RNG states)."""
    found = [p for p in TrainDir(tdir).checkpoints.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return sorted((p for p in found if (p / "trainer_state.json").is_file()), key=lambda p: int(p.name.split("-")[-1]))


def set_aside_incomplete(tdir: Path) -> list[str]:
    """Rename the checkpoints a kill interrupted while they were written (no trainer_state.json) to
    ``incomplete-checkpoint-N``, so that the Trainer's resume (transformers.trainer_utils.get_last_checkpoint: the
    highest ``checkpoint-N``) takes the last complete one instead of failing on the half-written one. Kept, not
    deleted; one earlier set-aside copy of the same step is replaced. Returns the names set aside."""
    import shutil

    complete = set(checkpoints(tdir))
    out = []
    for p in TrainDir(tdir).checkpoints.glob("checkpoint-*"):
        if p.is_dir() and p.name.split("-")[-1].isdigit() and p not in complete:
            aside = p.with_name("incomplete-" + p.name)
            shutil.rmtree(aside, ignore_errors=True)
            p.rename(aside)
            out.append(p.name)
    return sorted(out, key=lambda n: int(n.split("-")[-1]))


def _spec_seq_len(tdir: Path) -> int | str:
    """The sequence length in the trainer's spec.json ("?" when it cannot be read)."""
    try:
        return int(json.loads(TrainDir(tdir).spec.read_text())["seq_len"])
    except (OSError, ValueError, KeyError, TypeError):
        return "?"


def damage(ckpt: Path) -> str | None:
    """What makes a complete-looking checkpoint unreadable, in a few words naming the file, or None: its
    trainer_state.json not JSON, a ``*.safetensors`` whose header or byte ranges do not open (safetensors' own
    check), a torch file (``*.pt``, ``*.pth``, ``*.bin``: torch.save's zip archive) whose archive does not open — a
    file cut short by a full disk or a copy, which the Trainer's resume would fail on at every attempt (the tester's
    21-5 and N6, issue 46). Reads headers and the archives' directories only, not the tensors."""
    import zipfile

    try:
        json.loads((ckpt / "trainer_state.json").read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return "trainer_state.json is not JSON"
    for p in sorted(ckpt.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".safetensors":
            from safetensors import SafetensorError, safe_open

            try:
                with safe_open(str(p), framework="numpy"):
                    pass
            except (SafetensorError, OSError):
                return f"{p.relative_to(ckpt)} does not open as safetensors"
        elif p.suffix in (".pt", ".pth", ".bin"):
            try:
                with zipfile.ZipFile(p):
                    pass
            except (zipfile.BadZipFile, OSError):
                return f"{p.relative_to(ckpt)} is not a complete torch file"
    return None


def set_aside_damaged(tdir: Path) -> list[tuple[str, str]]:
    """From the newest complete checkpoint back to the first intact one, rename each one :func:`damage` finds
    unreadable to ``damaged-checkpoint-N`` (kept, not deleted; an earlier copy of the same name replaced), so that
    the Trainer resumes from the last intact one. Returns ``[(name, what is damaged)]``, newest first."""
    import shutil

    out = []
    for p in reversed(checkpoints(tdir)):
        what = damage(p)
        if what is None:
            break
        aside = p.with_name("damaged-" + p.name)
        shutil.rmtree(aside, ignore_errors=True)
        p.rename(aside)
        out.append((p.name, what))
    return out


def node_hosts(spec: TrainerJob) -> list[str]:
    from recipes.training.rendezvous import split_hosts

    return split_hosts(spec.hosts) if spec.nodes > 1 else []


def worker_argv(spec: TrainerJob, spec_path: Path, node_rank: int = 0) -> list[str]:
    """The trainer's command: one process; several on this node (torch.distributed.run, standalone; gloo on CPU,
    NCCL on GPUs); or node ``node_rank``'s share of several nodes (static rendezvous at the first host). DeepSpeed
    and FSDP need the launcher's environment even for one process (the preflight smoke run of a multi-node plan)."""
    worker = ["-m", "recipes.training.worker", str(spec_path)]
    python = spec.interpreter or sys.executable  # a backend's own environment (with_backend)
    n, hosts = spec.processes, node_hosts(spec)
    if len(hosts) > 1:
        launcher = [f"--nnodes={len(hosts)}", f"--node_rank={node_rank}", f"--master_addr={hosts[0]}",
                    f"--master_port={spec.master_port}"]
    elif n > 1 or spec.distribution != "ddp":
        launcher = ["--standalone"]
    else:
        return [python] + worker
    return [python, "-m", "torch.distributed.run", *launcher, f"--nproc_per_node={n}"] + worker


def meet(ctx, spec: TrainerJob, tdir: Path, spec_path: Path) -> None:
    """Several nodes: write each node's launch script and a DeepSpeed-style hostfile, print what to run where,
    then wait for every node at the rendezvous (recipes/training/rendezvous.py) before this node starts its share.
    Raises StepError when this machine is not the first host or the nodes do not all arrive."""
    import shlex
    import subprocess

    from recipes.training import rendezvous

    hosts = node_hosts(spec)
    master, n = f"{hosts[0]}:{spec.master_port}", spec.processes
    if not rendezvous.is_local_address(hosts[0]):
        raise StepError("training.master_not_here", host=hosts[0])
    timeout = os.environ.get("YICHUI_RENDEZVOUS_TIMEOUT", "900")
    checks = [[sys.executable, "-m", "recipes.training.rendezvous", f"--nodes={len(hosts)}", f"--node-rank={r}",
               f"--master={master}", f"--timeout={timeout}"] for r in range(len(hosts))]
    launch_dir = TrainDir(tdir).launch
    launch_dir.mkdir(exist_ok=True)
    TrainDir(tdir).hostfile.write_text("".join(f"{h} slots={n}\n" for h in hosts))
    line = lambda argv: " ".join(shlex.quote(c) for c in argv)  # noqa: E731
    for r, host in enumerate(hosts):
        script = launch_dir / f"node-{r}.sh"
        script.write_text(
            "#!/usr/bin/env bash\n"
            f"# yichui: node {r} of {len(hosts)}, to run on {host}. The repository, Python environment, model, data\n"
            "# and run directory must be at the same paths on every node (a shared file system, or copies).\n"
            "set -euo pipefail\n"
            f"cd {shlex.quote(str(REPO))}\n"
            "export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}\n"
            f"{line(checks[r])}\n"
            f"exec {line(worker_argv(spec, spec_path, r))}\n")
        script.chmod(0o755)
        if r:
            ctx.info(msg("training.node_command", rank=r, host=host, script=str(script)))
    ctx.info(msg("training.rendezvous_wait", nodes=len(hosts), master=master, timeout=timeout))
    p = subprocess.run(checks[0], capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        raise StepError("training.rendezvous_failed", reason=(p.stderr.strip().splitlines() or ["?"])[-1],
                        script=str(launch_dir / "node-1.sh"))
    ctx.info(msg("training.rendezvous_ok", nodes=len(hosts), hosts=list(json.loads(p.stdout)["hosts"])))


SPEED_CHECK_S = 120.0  # the measured rate is compared with the plan's after this much training …
SPEED_TOLERANCE = 0.20  # … and said when it differs by more than this (issue 44)


def follow(ctx, job: jobs.Job, tdir: Path, title=None, predicted_tps: float | None = None) -> None:
    """Show the trainer's events (``tdir``: train/, or preflight/ for the smoke run; `yichui attach` too) in a live
    view titled ``title`` until its ``done`` event. ``predicted_tps``: the speed model's tokens/s over all processes
    (choose_strategy); once SPEED_CHECK_S of training on a GPU have passed (or at the end, if sooner), the measured
    median is said beside it when the two differ by more than SPEED_TOLERANCE (:func:`speed_note`).

    Raises:
        StepError: ``training.train_failed`` (its ``error`` event) or ``training.died``.
        OutOfMemory: a CUDA out-of-memory error.
        CompileFailed: torch.compile of the decoder layers failed.
        Stopped: the trainer was stopped on purpose (`yichui stop`, SIGTERM); said here already.
        KeyboardInterrupt: Ctrl-C (the view detaches; the trainer goes on).
    """
    # elapsed since the trainer started, not since this view did (`yichui attach` later)
    events_path, offset, t_start = TrainDir(tdir).events, 0, job.started_at or time.time()
    last: dict = {}
    first: dict = {}
    losses: list[float | None] = []
    rewards: list[float] = []  # GRPO's, step by step
    stopped = False  # its `stopped` event was seen (it may come before the process is seen to exit)
    rates: list[float] = []  # tokens/s of the step events after the first two (start-up, warm-up)
    gpu, checked, started, generates = False, predicted_tps is None, False, False
    from recipes.training.rewards import TIMEOUT_S as rewards_timeout_s
    try:
        launch = json.loads(TrainDir(tdir).spec.read_text()).get("launch")
    except (OSError, ValueError):
        launch = None

    def ours(e: dict) -> bool:  # events of this launch (one or several worker processes)
        return e.get("launch") == launch if launch else e.get("pid") == job.pid
    with ctx.live(title or msg("training.train_live_title", pid=job.pid)) as update:
        while True:
            events, offset = jobs.read_events(events_path, offset)
            for e in events:
                if not ours(e):
                    continue
                if e["event"] == "start":
                    gpu, started = e.get("device") == "cuda", True
                    generates = e.get("objective") == "grpo"
                elif e["event"] == "step":
                    first, last = first or e, e
                    losses.append(e.get("loss"))
                    if isinstance(e.get("reward"), (int, float)):
                        rewards.append(e["reward"])
                    if e.get("tokens_per_s") and len(losses) > 2:
                        rates.append(float(e["tokens_per_s"]))
                    if not checked and gpu and rates and e["time"] - first["time"] >= SPEED_CHECK_S:
                        checked = speed_note(ctx, rates, predicted_tps)
                elif e["event"] == "stopped":
                    stopped = True
                elif e["event"] == "error":
                    _wait_exit(job)
                    if e.get("kind") == "oom":
                        raise OutOfMemory(e.get("step"))
                    if e.get("kind") == "compile":
                        raise CompileFailed(e.get("step"), e.get("message", "?"))
                    if e.get("kind") == "refusal" and isinstance(e.get("key"), str):  # the worker's Refusal
                        raise StepError(e["key"], **(e.get("params") or {}))
                    if "num_samples=0" in str(e.get("message")):  # trl dropped every record: none fits seq_len
                        raise StepError("training.no_records_fit", seq_len=_spec_seq_len(tdir), log=job.log)
                    raise StepError("training.train_failed", error=e.get("message", "?"), log=job.log)
                elif e["event"] == "done":
                    if not checked and gpu and rates:
                        checked = speed_note(ctx, rates, predicted_tps)
                    update(_fields(ctx, first, last, t_start, losses, rewards) | {"_final": True})
                    _wait_exit(job)
                    return
            if last:
                update(_fields(ctx, first, last, t_start, losses, rewards))
            else:  # no step yet: what the 10-20 s before the first one are (issue 46 item 13), not an empty box
                # GRPO's first step generates and scores replies: a slow (or hanging) reward file shows here
                state = "training.state.first_step_grpo" if started and generates else \
                    "training.state.first_step" if started else "training.state.starting"
                update({ctx.t("training.field.state"): ctx.t(state, seconds=f"{rewards_timeout_s:.0f}"),
                        ctx.t("training.field.elapsed"): f"{time.time() - t_start:.0f}s"})
            if not job.alive():
                events, offset = jobs.read_events(events_path, offset)
                if any(ours(e) and e["event"] == "done" for e in events):
                    return
                if any(ours(e) and e["event"] == "error" for e in events):
                    offset = 0  # handle the error event on the next pass
                    continue
                if stopped or job.stop_requested() or any(ours(e) and e["event"] == "stopped" for e in events):
                    ctx.info(msg("training.stopped", pid=job.pid, id=ctx.session_id))
                    raise Stopped
                # its log's last lines go with the error, said after the live view has closed (printed while it
                # was open they ran into its border: the 46 tryout C)
                raise StepError("training.died", pid=job.pid, log=job.log,
                                tail=died_tail(job.log_tail(40, this_run=True)))
            time.sleep(POLL_S)


def died_tail(text: str, keep: int = 8) -> str:
    """The last lines of a dead trainer's log as said with ``training.died``, indented: its last ``keep`` lines that
    are not the Trainer's per-step metric dicts (``{'loss': …}``: twenty of them filled a screen after a kill -9,
    issue 46 trial E), then the last such dict — where training was when it stopped."""
    lines = [x for x in text.splitlines() if x.strip()]
    metrics = [x for x in lines if x.lstrip().startswith("{'")]
    shown = [x for x in lines if not x.lstrip().startswith("{'")][-keep:] + metrics[-1:]
    return "\n".join("  " + x for x in shown) or "  —"


def speed_note(ctx, rates: list[float], predicted_tps: float | None) -> bool:
    """Say the measured training speed (the median of ``rates``, tokens/s) beside the speed model's when they differ by
    more than SPEED_TOLERANCE; True once compared."""
    import statistics

    if not predicted_tps or not rates:
        return False
    measured = statistics.median(rates)
    if abs(measured / predicted_tps - 1) > SPEED_TOLERANCE:
        ctx.info(msg("training.speed_vs_plan", measured=f"{measured:,.0f}", predicted=f"{predicted_tps:,.0f}",
                     ratio=f"{measured / predicted_tps:.2f}"))
    return True


def _wait_exit(job: jobs.Job, timeout: float = 30.0) -> None:
    """After ``done`` the trainer only exits; wait for it so ``status`` never shows a finished job as running."""
    end = time.monotonic() + timeout
    while job.alive() and time.monotonic() < end:
        time.sleep(0.1)


def _fields(ctx, first: dict, e: dict, t_start: float, losses: list | None = None,
            rewards: list | None = None) -> dict:
    """The live view's rows; ETA from the step rate between the first and the latest event seen."""
    if not e:
        return {}
    step, total = e.get("step", 0), e.get("total_steps") or 0
    t = ctx.t
    eta = "?"
    if total and step >= total:  # the last step is done: the adapter is being saved (it said "6s" for 45 s)
        eta = t("training.eta.saving")
    elif e is not first and e["step"] > first["step"]:
        rate = (e["time"] - first["time"]) / (e["step"] - first["step"])
        # counted down from the latest event, not frozen at it between two events (issue 46 item 14)
        eta = f"{max(0.0, rate * (total - step) - (time.time() - e['time'])):.0f}s"
    # DPO's step events carry trl's implicit reward accuracy on the micro-batch (chosen over rejected, vs the base)
    # KTO's: the reward margin (desirable over undesirable), it has no accuracy
    # GRPO's: the mean summed reward of the step's replies and the share cut at the completion length
    reward = {t("training.field.reward_accuracy"): e["reward_accuracies"]} if "reward_accuracies" in e else \
        {t("training.field.reward_margin"): e["reward_margins"]} if "reward_margins" in e else \
        {t("training.field.reward"): f"{e['reward']:.3f}", t("training.field.clipped"): f"{e.get('clipped', 0):.0%}"} \
        if isinstance(e.get("reward"), (int, float)) else {}
    return {t("training.field.step"): f"{step}/{total}", t("training.field.loss"): e.get("loss"), **reward,
            t("training.field.lr"): f"{e.get('lr', 0):.2e}", t("training.field.tokens_per_s"): e.get("tokens_per_s") or "?",
            t("training.field.memory"): f"{e.get('mem_gib')} ({t('training.mem.' + str(e.get('mem_kind')))})",
            t("training.field.elapsed"): f"{time.time() - t_start:.0f}s", t("training.field.eta"): eta,
            # GRPO: the reward's curve (its loss hovers around 0 whatever it learns)
            t("training.field.curve"): plots.sparkline(rewards if rewards else losses or [])}
