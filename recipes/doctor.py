"""`yichui doctor`: what this machine can do, checked before the expensive part.

Each check returns a :class:`Check`: a name, a verdict (``ok`` | ``warn`` | ``missing`` | ``fail``), what was found,
and the exact command or action that fixes it — literal text (versions, commands) or a catalogue :class:`Msg`
(``cli.doctor.*``: the wizard shows it in the session's language). ``needed`` marks what the session (or yichui itself) cannot do
without: the command exits 1 when a needed check is not ``ok``/``warn``.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from recipes.base import Msg, msg

GIB = 2**30
MIN_FREE_GIB = 20.0  # a 7B model in bf16 (15 GiB) plus a checkpoint's worth of room


@dataclass
class Check:
    name: str
    verdict: str          # ok | warn | missing | fail | gpu_only (absent, and runs on NVIDIA GPUs only: none here)
    found: str | Msg
    fix: str | Msg = ""
    needed: bool = False
    fix_if_needed: str | Msg = ""  # a gpu_only check's install command, shown when a session needs it

    @property
    def blocking(self) -> bool:
        return self.needed and self.verdict in ("missing", "fail")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def gpu_checks() -> list[Check]:
    """Driver and GPUs (nvidia-smi), the torch build, CUDA seen by torch, bf16 support."""
    import torch

    out = []
    smi = shutil.which("nvidia-smi")
    driver = cuda_drv = None
    if smi:
        try:
            text = subprocess.run([smi], capture_output=True, text=True, timeout=20).stdout
            import re

            m = re.search(r"Driver Version:\s*([\d.]+).*?CUDA Version:\s*([\d.]+)", text)
            if m:
                driver, cuda_drv = m.groups()
        except (OSError, subprocess.SubprocessError):
            pass
    from recipes.memory import model as memory

    gpus = memory.detect_gpus()
    build = torch.version.cuda
    out.append(Check("torch", "ok", f"{torch.__version__} (CUDA {build})" if build
                     else msg("cli.doctor.torch_cpu", version=torch.__version__)))
    if not gpus:
        out.append(Check("GPU", "warn", msg("cli.doctor.no_gpu"), msg("cli.doctor.no_gpu_fix")))
        return out
    out.append(Check("GPU", "ok", msg("cli.doctor.gpus_driver" if driver else "cli.doctor.gpus", n=len(gpus),
                                      name=gpus[0]["name"], gib=gpus[0]["memory_gib"], driver=driver, cuda=cuda_drv)))
    if not build:
        out.append(Check("torch CUDA", "fail", msg("cli.doctor.cpu_torch_on_gpu"),
                         "TORCH_SPEC='torch>=2.11,<2.14' ./install.sh", needed=True))
        return out
    if cuda_drv and tuple(map(int, build.split(".")[:2])) > tuple(map(int, cuda_drv.split(".")[:2])):
        out.append(Check("torch CUDA", "fail", msg("cli.doctor.cuda_too_new", build=build, cuda=cuda_drv),
                         msg("cli.doctor.cuda_too_new_fix"), needed=True))
    elif not torch.cuda.is_available():
        out.append(Check("torch CUDA", "fail", "torch.cuda.is_available() == False", msg("cli.doctor.no_cuda_fix"),
                         needed=True))
    else:
        out.append(Check("torch CUDA", "ok", f"CUDA {build}"))
        bf16 = torch.cuda.is_bf16_supported()
        out.append(Check("bf16", "ok" if bf16 else "warn", msg("cli.doctor.bf16" if bf16 else "cli.doctor.no_bf16"),
                         "" if bf16 else msg("cli.doctor.no_bf16_fix")))
    return out


def disk_check(home: Path) -> Check:
    probe = home if home.exists() else next((p for p in home.parents if p.exists()), Path("/"))
    free = shutil.disk_usage(probe).free / GIB
    # a file where a folder of the path must go is as unwritable as a read-only folder (the demo built its model for
    # minutes, then failed: the tester's N24)
    writable = probe.is_dir() and os.access(probe, os.W_OK)
    if not writable:
        return Check("disk", "fail", msg("cli.doctor.not_writable", path=probe), msg("cli.doctor.not_writable_fix"),
                     needed=True)
    verdict = "ok" if free >= MIN_FREE_GIB else "warn" if free >= 1 else "fail"
    return Check("disk", verdict, msg("cli.doctor.disk", gib=f"{free:.1f}", path=probe),
                 "" if verdict == "ok" else msg("cli.doctor.disk_fix", gib=f"{MIN_FREE_GIB:.0f}"),
                 needed=verdict == "fail")


def host_memory() -> tuple[int, int] | None:
    """(available, total) host RAM in bytes (psutil.virtual_memory: MemAvailable, MemTotal on Linux), or None where
    unknown."""
    import psutil  # accelerate's dependency

    try:
        vm = psutil.virtual_memory()
    except (OSError, RuntimeError):
        return None
    return int(vm.available), int(vm.total)


def ram_check() -> Check:
    mem = host_memory()
    if mem is None:
        return Check("host RAM", "warn", msg("cli.doctor.ram_unknown"))
    avail, total = mem[0] / GIB, mem[1] / GIB
    return Check("host RAM", "ok" if avail >= 8 else "warn",
                 msg("cli.doctor.ram", avail=f"{avail:.1f}", total=f"{total:.1f}"))


OPTIONAL = (  # (name, distribution or import, install command, what it is for: a cli.doctor.* key)
    ("deepspeed", "deepspeed", "pip install deepspeed==0.19.8", "cli.doctor.for_deepspeed"),
    ("flash-attn", "flash_attn", "pip install flash-attn --no-build-isolation", "cli.doctor.for_flash_attn"),
    ("liger-kernel", "liger_kernel", "pip install liger-kernel", "cli.doctor.for_liger"),
    ("bitsandbytes", "bitsandbytes", "pip install bitsandbytes==0.50.2", "cli.doctor.for_bnb"),
    # the viewer of the events the trainer writes (it writes them through tensorboardX, a dependency)
    ("tensorboard", "tensorboard", "pip install tensorboard", "cli.doctor.for_tensorboard"),
)
GPU_ONLY = ("flash-attn", "liger-kernel")  # CUDA kernels: not suggested on a machine without an NVIDIA GPU


def optional_checks(home: Path) -> list[Check]:
    from recipes.quantization import quantize
    from recipes.serving import engines, spec

    import shlex
    import sys

    from recipes.memory import model as memory

    out = []
    gpus = bool(memory.detect_gpus())
    for name, module, cmd, what in OPTIONAL:
        if name in GPU_ONLY and not gpus and importlib.util.find_spec(module) is None:
            continue
        # into this interpreter's environment (yichui's .venv), not whichever `pip` is first on PATH
        cmd = cmd.replace("pip install", f"{shlex.quote(sys.executable)} -m pip install", 1)
        have = importlib.util.find_spec(module) is not None
        out.append(Check(name, "ok" if have else "missing",
                         (_version(name) or msg("cli.doctor.installed")) if have else msg(what), "" if have else cmd))
    from recipes.envs import envs_dir

    envs = envs_dir(home)

    def absent(name: str, what: Msg, fix: str) -> Check:
        # an engine of NVIDIA GPUs on a machine without one: said so, not "missing" with an install command that
        # cannot help here (issue 46 trial I, N13); its command comes back when a session needs it
        return Check(name, "missing", what, fix) if gpus else \
            Check(name, "gpu_only", msg("cli.doctor.gpu_only_found", what=what), "", fix_if_needed=fix)
    for engine in spec.GPU_ENGINES:
        inst = engines.find(engine, envs)
        out.append(Check(engine, "ok", f"{inst.version} ({inst.where}: {inst.python})") if inst else
                   absent(engine, msg("cli.doctor.for_engine"), engines.install_hint(engine, envs)))
    from recipes.training import backends

    found = backends.find_unsloth(home)
    out.append(Check("unsloth", "ok", f"{found.version} ({found.python})") if found else
               absent("unsloth", msg("cli.doctor.for_unsloth"), backends.install_command(home)))
    llmc = envs / quantize.LLMC_ENV / "yichui-env.json"
    out.append(Check("llm-compressor", "ok" if llmc.exists() else "missing",
                     str(llmc.parent) if llmc.exists() else msg("cli.doctor.for_llmc"),
                     "" if llmc.exists() else msg("cli.doctor.llmc_fix")))
    return out


# a model id no hub holds: each hub's API answers it in its own words (Hugging Face: 401/404 with an X-Error-Code
# header, RepoNotFound; ModelScope: a JSON body with Code and Success false) — a web server that is not a hub does not
HUB_PROBE_REPO = "yichui-doctor/no-such-model"


def speaks_as_hub(name: str, url: str, timeout: float) -> tuple[bool, str]:
    """Whether ``url`` answers a model-info request for HUB_PROBE_REPO as the hub ``name`` ("hf" | "modelscope")
    does (recipes/hub/server.py answers as both; ../shared/FACTS.md). Returns (speaks, what it answered: an HTTP
    status and content type). Raises OSError/ValueError when nothing answers."""
    path = f"/api/v1/models/{HUB_PROBE_REPO}" if name == "modelscope" else f"/api/models/{HUB_PROBE_REPO}"
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as r:
            status, headers, body = r.status, r.headers, r.read(65536)
    except urllib.error.HTTPError as e:
        status, headers, body = e.code, e.headers, e.read(65536)
    kind = (headers.get("Content-Type") or "").split(";")[0] or "?"
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if name == "modelscope":
        speaks = isinstance(data, dict) and "Code" in data and "Success" in data
    else:
        speaks = bool(headers.get("X-Error-Code")) or (status == 200 and isinstance(data, dict) and "id" in data)
    return speaks, f"HTTP {status}, {kind}"


def hub_checks(endpoints: dict[str, str], timeout: float = 5.0) -> list[Check]:
    """Each hub's endpoint answers a model-info request as that hub's API does (:func:`speaks_as_hub`): reachable
    but answering otherwise (a web page, a plain 404) is a warning, as is a host that does not answer; either is
    fixed by the hub's own variable (recipes/hub/client.py ENDPOINT_ENV)."""
    from recipes.hub.client import ENDPOINT_ENV

    out = []
    for name, url in endpoints.items():
        fix = msg("cli.doctor.hub_fix_hf") if name == "hf" else \
            msg("cli.doctor.hub_fix", variable=ENDPOINT_ENV.get(name, "HF_ENDPOINT"))
        try:
            speaks, answer = speaks_as_hub(name, url, timeout)
        except (OSError, ValueError) as e:
            out.append(Check(f"hub {name}", "warn", msg("cli.doctor.hub_down", url=url, why=getattr(e, "reason", e)),
                             fix))
            continue
        out.append(Check(f"hub {name}", "ok", msg("cli.doctor.hub_ok", url=url)) if speaks else
                   Check(f"hub {name}", "warn", msg("cli.doctor.hub_not_hub", url=url, answer=answer), fix))
    return out


def python_check() -> Check:
    ok = sys.version_info >= (3, 10)
    return Check("python", "ok" if ok else "fail", sys.version.split()[0], "" if ok else msg("cli.doctor.python_fix"),
                 needed=True)


def run_all(home: Path, endpoints: dict[str, str], needs: tuple[str, ...] = ()) -> list[Check]:
    """Every check; names in ``needs`` (a session's requirements) become blocking when missing."""
    checks = [python_check(), *gpu_checks(), disk_check(home), ram_check(), *optional_checks(home),
              *hub_checks(endpoints)]
    for c in checks:
        if c.name in needs:
            c.needed = True
            if c.verdict == "gpu_only":  # a session that needs it here: missing, with its install command
                c.verdict, c.fix = "missing", c.fix_if_needed
    return checks


def needs_of(session_data: dict) -> tuple[str, ...]:
    """What a session cannot do without: its serving engine, deepspeed for ZeRO, bitsandbytes for QLoRA, unsloth's
    environment for its training backend."""
    steps = session_data.get("steps", {})
    active = lambda n: steps.get(n, {}).get("status") not in ("skipped", "done")  # noqa: E731
    out = []
    strat = steps.get("choose_strategy", {}).get("answers", {})
    if active("train") and strat.get("distribution", "").startswith("zero"):
        out.append("deepspeed")
    if active("train") and strat.get("method") == "qlora" and strat.get("training_backend") != "unsloth":
        out.append("bitsandbytes")  # (on unsloth: its own environment's)
    if active("train") and strat.get("training_backend") == "unsloth":
        out.append("unsloth")
    backend = steps.get("deploy", {}).get("answers", {}).get("backend")
    if active("deploy") and backend in ("vllm", "sglang", "lmdeploy"):
        out.append(backend)
    return tuple(out)
