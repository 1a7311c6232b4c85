"""Export formats: what each one is, which serving engine loads it, how it is made, and the quantizer's own
environment.

Formats (the merged model is always written first, in the chosen dtype; every other format is made from it):

=============  ==================================================  ============================================
format         what                                                made by
=============  ==================================================  ============================================
bnb-4bit       NF4 weights, double quantization, 4 bits/weight     bitsandbytes, in the main environment
bnb-8bit       LLM.int8() weights, 8 bits/weight                   bitsandbytes, in the main environment
gptq-w4a16     INT4 weights in groups of 128, bf16 activations     llm-compressor GPTQModifier (calibrated)
awq-w4a16      the same, activation-aware scales (GPU only)        llm-compressor AWQModifier (calibrated)
fp8-dynamic    FP8 E4M3 weights per channel, activations per token llm-compressor QuantizationModifier (none)
=============  ==================================================  ============================================

llm-compressor (the maintained successor of auto-gptq and autoawq, both dead and incompatible with transformers 5)
writes the compressed-tensors format, which transformers reloads through the ``compressed-tensors`` package (pinned
in the main environment). llm-compressor itself pins an older transformers, so it runs in its own environment under
``YICHUI_HOME/envs`` (:func:`ensure_env`), built once and recorded in the session.

Sources: vLLM "Quantization" docs (compressed-tensors INT4/FP8, pre-quantized bitsandbytes 4-bit), SGLang
"Quantization" docs (offline GPTQ/AWQ/FP8 from the model config, compressed-tensors), transformers' quantization
overview (bitsandbytes 4/8-bit, compressed-tensors), llm-compressor 0.14 README (schemes W4A16, FP8_DYNAMIC; GPTQ
and AWQ need the in-features to divide the group size).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from recipes.base import Refusal
from recipes.envs import envs_dir


@dataclass(frozen=True)
class Format:
    """One export format. ``tool``: "bnb" (main environment) or "llmc" (llm-compressor's environment)."""

    tool: str
    bits: int
    scheme: str = ""          # llm-compressor preset scheme
    modifier: str = ""        # llm-compressor modifier class
    group: int = 0            # quantization group along the in-features (0: per channel)
    calibrated: bool = False  # needs calibration samples
    gpu_only: bool = False


FORMATS = {
    "bnb-4bit": Format("bnb", 4),
    "bnb-8bit": Format("bnb", 8),
    "gptq-w4a16": Format("llmc", 4, "W4A16", "GPTQModifier", group=128, calibrated=True),
    "awq-w4a16": Format("llmc", 4, "W4A16", "AWQModifier", group=128, calibrated=True, gpu_only=True),
    "fp8-dynamic": Format("llmc", 8, "FP8_DYNAMIC", "QuantizationModifier"),
    # GGUF through llama.cpp's own converter (the optional extra: pip install '.[gguf]'); q4_k_m also needs llama.cpp's
    # llama-quantize binary on PATH (the Python converter writes f16 and q8_0 only)
    "gguf-f16": Format("gguf", 16, "f16"),
    "gguf-q8_0": Format("gguf", 8, "q8_0"),
    "gguf-q4_k_m": Format("gguf", 4, "Q4_K_M"),
}

# which formats each serving engine loads ("merged" = the bf16/fp16/fp32 merged model): the engines yichui launches
# say so in their EngineSpec (recipes/serving/spec.py, checked against the version's argument table); llama.cpp (and
# Ollama) serve GGUF only, and yichui does not launch them: the export is for the user to take there.
ENGINE_FORMATS = {"llama.cpp": ("merged", "gguf-f16", "gguf-q8_0", "gguf-q4_k_m")}

# llm-compressor's environment: pinned together (../shared/FACTS.md: llm-compressor 0.14 downgrades transformers to
# 5.17, so it never enters the main environment)
LLMC_ENV = "llmcompressor-0.14.0.1"
LLMC_REQUIREMENTS = ("llmcompressor==0.14.0.1",)
MIN_CALIBRATION = 8


class QuantizeError(Refusal):
    """An export that cannot be made."""


def engines() -> tuple[str, ...]:
    """The export targets, in the order offered: the GPU engines, transformers, then llama.cpp."""
    from recipes.serving import spec

    return (*spec.GPU_ENGINES, *(e for e in spec.ENGINES if e not in spec.GPU_ENGINES), *ENGINE_FORMATS)


def engine_formats(engine: str, envs: Path | None = None, cache: Path | None = None) -> tuple[str, ...]:
    """The export formats ``engine`` loads: for the engines yichui launches, at the version installed in ``envs``
    (else the recommended one), from its EngineSpec and argument table (read into ``cache`` from the installed
    engine when yichui has none for its version); llama.cpp: GGUF."""
    from recipes.serving import engines as serving

    if engine in ENGINE_FORMATS:
        return ENGINE_FORMATS[engine]
    return serving.formats(engine, serving.find(engine, envs) if envs is not None else None, cache)


def unsupported(fmt: str, config: dict, gpu: bool) -> tuple[str, dict] | None:
    """Why ``fmt`` cannot be made for a model with this config.json on this machine, as (catalogue key, params),
    or None. Checked before any work: a vision-language model (merged only, so far), a GPU-only quantizer without a
    GPU, and for grouped INT4 every decoder Linear's in-features must divide by the group size (llm-compressor packs
    whole groups)."""
    f = FORMATS[fmt]
    if isinstance(config.get("vision_config"), dict):  # the quantizers' recipes and checks are for text decoders
        return "quantization.vision_formats", {"format": fmt}
    if f.tool == "gguf":
        import importlib.util

        if config.get("auto_map"):  # llama.cpp's converter knows the architectures it was written for only
            return "quantization.gguf_custom_code", {"format": fmt}
        if not all(importlib.util.find_spec(m) for m in ("gguf", "sentencepiece")):
            return "quantization.gguf_not_installed", {"format": fmt}
        if fmt == "gguf-q4_k_m" and not shutil.which("llama-quantize"):
            return "quantization.gguf_needs_quantize", {"format": fmt}
    if f.gpu_only and not gpu:
        return "quantization.needs_gpu", {"format": fmt}
    if f.group:
        widths = {"hidden_size": config.get("hidden_size"), "intermediate_size": config.get("intermediate_size")}
        bad = {k: v for k, v in widths.items() if isinstance(v, int) and v % f.group}  # unknown yet: checked later
        if bad:
            k, v = next(iter(bad.items()))
            return "quantization.group_size", {"format": fmt, "name": k, "value": v, "group": f.group}
    return None


# -- the quantizer's environment -----------------------------------------------------------------------------------

def ensure_env(home: Path, info=lambda text: None, tick=lambda seconds: None) -> dict:
    """The llm-compressor environment, created on first use: a venv with the main environment's torch version and
    llm-compressor's pins. ``YICHUI_WHEELS=DIR[:DIR…]`` installs from the wheels in those folders only, for machines
    without a package registry; the venv then also sees the system's site-packages, since a CUDA torch is too large
    to bring as a wheel (pip still installs every pin the system does not satisfy). The environment counts as built
    only once its record ``yichui-env.json`` exists (written last); a half-built one is removed and built again.

    Returns:
        the record: ``{"name", "path", "python", "packages": {name: version}}``.

    Raises:
        QuantizeError("quantization.env_failed"): venv or pip failed (the pip log's last line is in the message).
    """
    import fcntl

    env = envs_dir(home) / LLMC_ENV
    record = env / "yichui-env.json"
    if record.exists():
        return json.loads(record.read_text())
    env.parent.mkdir(parents=True, exist_ok=True)
    # one builder at a time: two exports starting together (two sessions) must not remove each other's half-built env
    try:
        lock = open(env.parent / f"{LLMC_ENV}.lock", "w")
    except OSError as e:  # a read-only environments folder: the same one line as a failed build
        raise QuantizeError("quantization.env_failed", env=str(env), log=str(env.parent), last=str(e)) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():  # built by the other one meanwhile
            return json.loads(record.read_text())
        return _build_env(env, record, info, tick)


SAY_EVERY_S = 10  # a line this often while pip builds the environment: nothing silent past 10 s (issue 46 item 13)


def _run_saying(cmd: list[str], log, tick, env: dict | None = None, t0: float | None = None, **popen) -> int:
    """Run ``cmd`` with its output to ``log``; every SAY_EVERY_S seconds counted from ``t0`` (time.monotonic(); the
    command's start by default, a whole build's start when it runs several) ``tick(seconds)`` gets how long it has
    been (pip, or the quantizer, prints nothing to the terminal meanwhile). Returns its exit status."""
    t0 = time.monotonic() if t0 is None else t0
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env or _clean_env(), **popen)
    try:
        while True:
            try:
                return proc.wait(timeout=SAY_EVERY_S - (time.monotonic() - t0) % SAY_EVERY_S)
            except subprocess.TimeoutExpired:
                tick(round(time.monotonic() - t0))
    except BaseException:  # Ctrl-C: the build is not left running on its own
        proc.kill()
        proc.wait()
        raise


def _build_env(env: Path, record: Path, info, tick=lambda seconds: None) -> dict:
    """:func:`ensure_env`'s build, under its lock."""
    import torch

    shutil.rmtree(env, ignore_errors=True)
    info(str(env))
    python = env / "bin" / "python"
    torch_pin = "torch==" + torch.__version__.split("+")[0]
    wheels = _wheel_index()
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", torch_pin, *LLMC_REQUIREMENTS,
           *wheels]
    venv = [sys.executable, "-m", "venv", str(env)]
    if wheels:
        venv.append("--without-pip")  # the main interpreter's pip serves (images often lack ensurepip)
    log = env.parent / f"{LLMC_ENV}.pip.log"
    t0 = time.monotonic()  # one count over the venv and pip (a 15 s gap when each began its own: 46 trial M)
    for cmd in (venv, pip):
        if cmd is pip and wheels:
            _see_main_site(python)
        with open(log, "a") as f:
            rc = _run_saying(cmd, f, tick, t0=t0)
        if rc:
            shutil.rmtree(env, ignore_errors=True)
            raise QuantizeError("quantization.env_failed", env=str(env), log=str(log), last=_last_line(log))
    out = subprocess.run([str(python), "-c", "import json, importlib.metadata as m; print(json.dumps({p: m.version(p) "
                          "for p in ('llmcompressor', 'compressed-tensors', 'transformers', 'torch')}))"],
                         capture_output=True, text=True, check=True, env=_clean_env()).stdout
    rec = {"name": LLMC_ENV, "path": str(env), "python": str(python), "packages": json.loads(out)}
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=2))
    os.replace(tmp, record)
    return rec


def _wheel_index() -> list[str]:
    """pip arguments for ``YICHUI_WHEELS=DIR[:DIR…]``: install from those folders only (no package registry)."""
    dirs = [d for d in os.environ.get("YICHUI_WHEELS", "").split(os.pathsep) if d]
    return ["--no-index"] + [a for d in dirs for a in ("--find-links", d)] if dirs else []


def _last_line(log: Path) -> str:
    """The last non-empty line of a log (for a one-line error that names the log)."""
    lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    return (lines[-1] if lines else "?")[-300:]


def _die_with_parent() -> None:
    """In the quantizer's child process (Linux): SIGKILL when yichui dies, so a killed export leaves no worker behind."""
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _clean_env() -> dict:
    """The quantizer's environment sees only its own packages (and, from wheels, the main ones after them)."""
    from recipes.jobs import foreign_env

    return foreign_env()


def _see_main_site(python: Path) -> None:
    """Let the venv see the main interpreter's packages after its own (a .pth file): torch and whatever else
    satisfies the pins is used from there; pip installs the rest into the venv and never uninstalls outside it.
    "The main interpreter's packages" are every folder on its ``sys.path`` that holds installed distributions, in
    its order: its site-packages, and those a .pth file or PYTHONPATH adds (a venv layered over another one, as on
    images whose torch lives in a venv of their own — ``site.getsitepackages()`` names only the first)."""
    import glob

    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip()
    paths = [p for p in dict.fromkeys(sys.path) if p and os.path.isdir(p) and os.path.abspath(p) != purelib
             and glob.glob(os.path.join(glob.escape(p), "*.dist-info"))]
    Path(purelib, "yichui-main-site.pth").write_text("\n".join(paths) + "\n")


def run_llmc(env: dict, spec: dict, work: Path, tick=lambda seconds: None) -> None:
    """Run recipes/quantization/worker.py in the llm-compressor environment on ``spec`` (see that module); its log goes
    to ``work/quantize.log``; ``tick(seconds)`` every SAY_EVERY_S seconds while it runs (46 trial M: 26 s silent).

    Raises:
        QuantizeError("quantization.quantize_failed"): the worker failed; the message names the log and its last line.
    """
    work.mkdir(parents=True, exist_ok=True)
    (work / "quantize.json").write_text(json.dumps(spec, ensure_ascii=False))
    root = Path(__file__).resolve().parent.parent.parent  # the project root: the worker runs as -m recipes.…
    log = work / "quantize.log"
    envvars = _clean_env() | {"PYTHONPATH": str(root), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    with open(log, "w") as f:
        rc = _run_saying([env["python"], "-m", "recipes.quantization.worker", str(work / "quantize.json")], f, tick,
                         env=envvars, cwd=str(work), preexec_fn=_die_with_parent)
    if rc:
        raise QuantizeError("quantization.quantize_failed", format=spec["format"], log=str(log), last=_last_line(log))


def quantize_bnb(merged: Path, out: Path, bits: int, code: bool = False) -> None:
    """Load the merged model with bitsandbytes (4-bit: NF4 with double quantization; 8-bit: LLM.int8()) and save
    the quantized checkpoint with its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    cuda = torch.cuda.is_available()
    if bits == 4:
        q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16 if cuda else torch.float32)
    else:
        q = BitsAndBytesConfig(load_in_8bit=True)
    model = AutoModelForCausalLM.from_pretrained(merged, quantization_config=q, trust_remote_code=code,
                                                 device_map={"": 0} if cuda else {"": "cpu"})
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(merged, trust_remote_code=code).save_pretrained(out)


# -- GGUF -------------------------------------------------------------------------------------------------------------

# llama.cpp's converter (convert_hf_to_gguf.py and its conversion/ package) as vendored in this llama-cpp-python
# source release; its gguf-py is gguf 0.19.0, the version the [gguf] extra pins
LLAMA_CPP_SDIST = "llama-cpp-python==0.3.36"


def ensure_converter(home: Path) -> Path:
    """llama.cpp's HF → GGUF converter, fetched once (the llama-cpp-python source release, ~75 MB, through pip:
    ``YICHUI_WHEELS`` folders work like for :func:`ensure_env`) and unpacked to ``envs/llama.cpp-<version>/``:
    ``convert_hf_to_gguf.py``, ``conversion/``, ``gguf-py/`` (which the converter imports before any installed gguf),
    ``LICENSE`` and the tokenizer test vocabularies ``models/``.

    Returns:
        the folder. Raises QuantizeError("quantization.env_failed") when it cannot be fetched.
    """
    import tarfile

    name = "llama.cpp-" + LLAMA_CPP_SDIST.split("==")[1] + "-1"  # -N: what is unpacked changed
    dest = envs_dir(home) / name
    if (dest / "yichui-tool.json").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dl = envs_dir(home) / (name + ".download")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
           "--no-binary", ":all:", "-d", str(dl), LLAMA_CPP_SDIST, *_wheel_index()]
    log = envs_dir(home) / (name + ".pip.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=_clean_env()).returncode
    sdists = sorted(dl.glob("*.tar.gz"))
    if rc or not sdists:
        raise QuantizeError("quantization.env_failed", env=str(dest), log=str(log), last=_last_line(log))
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    # the converter puts its own gguf-py first on sys.path: llama.cpp moves ahead of the gguf release it names
    keep = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/", "LICENSE", "models/ggml-vocab-")
    with tarfile.open(sdists[0]) as tar:
        for m in tar.getmembers():
            rel = m.name.split("/vendor/llama.cpp/", 1)[-1] if "/vendor/llama.cpp/" in m.name else None
            if rel and rel.startswith(keep) and m.isfile() and ".." not in rel:
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                member = tar.extractfile(m)  # a regular file (m.isfile() above)
                if member is not None:
                    target.write_bytes(member.read())
    (tmp / "yichui-tool.json").write_text(json.dumps({"source": LLAMA_CPP_SDIST, "sdist": sdists[0].name}))
    os.replace(tmp, dest)
    shutil.rmtree(dl, ignore_errors=True)
    return dest


def convert_gguf(converter: Path, merged: Path, out: Path, fmt: str, work: Path) -> Path:
    """Write ``out/model-<type>.gguf`` from the merged model with llama.cpp's converter (f16, q8_0), and for
    q4_k_m quantize its f16 output with ``llama-quantize``. The log goes to ``work/gguf.log``.

    Raises:
        QuantizeError: "quantization.gguf_unknown_tokenizer" when the converter does not know the tokenizer's
            pre-tokenizer (it refuses rather than write a GGUF that tokenizes differently), else
            "quantization.quantize_failed" with the log's last line.
    """
    work.mkdir(parents=True, exist_ok=True)
    log = work / "gguf.log"
    f = FORMATS[fmt]
    target = out / f"model-{fmt.split('-', 1)[1]}.gguf"
    first = target if f.scheme in ("f16", "q8_0") else work / "model-f16.gguf"
    steps = [[sys.executable, str(converter / "convert_hf_to_gguf.py"), str(merged), "--outfile", str(first),
              "--outtype", f.scheme if first == target else "f16"]]
    if first != target:
        steps.append([shutil.which("llama-quantize") or "llama-quantize", str(first), str(target), f.scheme])
    with open(log, "w") as fh:
        for cmd in steps:
            if subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode:
                if "pre-tokenizer was not recognized" in log.read_text(errors="replace"):
                    raise QuantizeError("quantization.gguf_unknown_tokenizer", format=fmt, log=str(log))
                raise QuantizeError("quantization.quantize_failed", format=fmt, log=str(log), last=_last_line(log))
    if first != target:
        first.unlink(missing_ok=True)
    return target
