"""What yichui knows about each serving engine, as data: one :class:`EngineSpec` per engine and version.

A launch is a set of *settings* (the same names for every engine: ``host``, ``port``, ``max_model_len``,
``gpu_memory_utilization``, ``tensor_parallel``, ``eager``, ``api_key``, …). Each spec maps a setting to the option
names it has had in that engine, newest first; the launch takes the first one the version's argument table lists
(:mod:`recipes.serving.tables`, or the installed engine's own parser). So a renamed option is a second name in a
tuple, and an option a version removed is simply absent from its table — no version test in the code.

Which export formats an engine loads is data too: ``formats`` names the formats the engine can load at all, each
with the settings that tell it how the weights are stored, and a format whose setting value is not among the
version's choices (vLLM 0.33 lost ``--quantization bitsandbytes``) is not offered.

Sources for each engine's settings: its own parser (the tables), its serving docs for the formats (vLLM
"Quantization"; SGLang "Quantization"; LMDeploy "PyTorch engine supported models"), and what was started on an H200
(``started``: the result file that shows it).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

# the quantized export formats llm-compressor writes (compressed-tensors checkpoints)
COMPRESSED_TENSORS = ("gptq-w4a16", "awq-w4a16", "fp8-dynamic")


@dataclass(frozen=True)
class EngineSpec:
    """One engine at one version (the version of its committed argument table).

    Attributes:
        engine: the distribution name (``vllm``, ``sglang``, ``lmdeploy``, ``transformers``).
        version: the version this spec and its table describe.
        gpu: the engine needs a GPU (vLLM, SGLang, LMDeploy); transformers serve runs anywhere.
        entry: how the engine starts inside its own interpreter, for the key launcher: ``module:function`` (called
            with no arguments) or ``runpy:module`` (run as ``python -m module``); None = the console script
            ``console`` beside yichui's interpreter (transformers).
        console: the engine's console script (to find its interpreter on PATH from the shebang).
        prefix: the argv before the options (``serve`` for ``vllm serve``).
        help: the argv that prints every option (``--help=all`` for vLLM).
        model_option: the option naming the model directory; None = the first positional argument.
        options: launch setting → the option names it has had, newest first (the first the table lists is used).
        formats: export format → {setting: value} telling the engine how the weights are stored ("merged" first).
        fixed: settings every launch carries (LMDeploy: its PyTorch engine, the one that runs on CUDA 13).
        utilization: how the engine reads the memory fraction: "total" (of the GPU's memory: vLLM, SGLang) or
            "after_weights" (of what the weights leave: LMDeploy's --cache-max-entry-count).
        lora: serves an unmerged LoRA adapter.
        loopback_only: has no API key: never bound beyond 127.0.0.1.
        served_by_path: names the served model by the directory it loaded (transformers serve).
        adapter_request: the model name a request for the unmerged adapter must carry, from ``{base}`` (the base's
            served name) and ``{adapter}`` (the adapter's, which /v1/models lists): SGLang reads ``base:adapter``
            and serves the base for a bare adapter name (sglang/srt/entrypoints/openai/serving_base.py).
        kv_tokens_log: a pattern finding the KV-cache size in tokens in the engine's start-up log: its groups'
            product (one group: tokens; LMDeploy: blocks and tokens per block).
        concurrent_requests: how many requests the evaluate step sends it at once: engines with continuous batching
            (vLLM, SGLang, LMDeploy) answer a batch in about the time of one; transformers serve, one at a time.
        started: where this version was really started on a GPU (a bench/results file), "" when it never was.
        install: the pip requirement that installs this version.
    """

    engine: str
    version: str
    gpu: bool
    entry: str | None
    console: str
    prefix: tuple[str, ...]
    help: tuple[str, ...]
    model_option: str | None
    options: Mapping[str, tuple[str, ...]]
    formats: Mapping[str, Mapping[str, str]]
    fixed: Mapping[str, str] = field(default_factory=dict)
    utilization: str = "total"
    lora: bool = False
    loopback_only: bool = False
    served_by_path: bool = False
    adapter_request: str = "{adapter}"
    kv_tokens_log: str = ""
    concurrent_requests: int = 1
    started: str = ""
    install: str = ""

    def __post_init__(self):
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "formats", MappingProxyType({k: MappingProxyType(dict(v))
                                                              for k, v in self.formats.items()}))
        object.__setattr__(self, "fixed", MappingProxyType(dict(self.fixed)))
        if not self.install:
            object.__setattr__(self, "install", f"{self.engine}=={self.version}")


_VLLM_026 = EngineSpec(
    engine="vllm", version="0.26.0", gpu=True, entry="vllm.entrypoints.cli.main:main", console="vllm",
    prefix=("serve",), help=("--help=all",), model_option=None,
    options={"served_name": ("--served-model-name",), "host": ("--host",), "port": ("--port",),
             "tensor_parallel": ("--tensor-parallel-size", "-tp"), "max_model_len": ("--max-model-len",),
             "gpu_memory_utilization": ("--gpu-memory-utilization",), "chat_template": ("--chat-template",),
             "enable_lora": ("--enable-lora",), "max_lora_rank": ("--max-lora-rank",),
             "lora_modules": ("--lora-modules",), "eager": ("--enforce-eager",),
             "trust_remote_code": ("--trust-remote-code",), "api_key": ("--api-key",),
             "quantization": ("--quantization", "-q")},
    # compressed-tensors (llm-compressor's GPTQ/AWQ/FP8); pre-quantized bitsandbytes 4-bit while vLLM has it
    formats={"merged": {}, **{f: {"quantization": "compressed-tensors"} for f in COMPRESSED_TENSORS},
             "bnb-4bit": {"quantization": "bitsandbytes"}},
    lora=True, kv_tokens_log=r"GPU KV cache size: ([\d,]+) tokens",  # vllm/v1/core/kv_cache_utils.py
    concurrent_requests=16,
    started="bench/results/2026-12-01-serve-h200.md")  # every format above and a rank-64 adapter, on an H200

_SGLANG_0517 = EngineSpec(
    engine="sglang", version="0.5.17", gpu=True, entry="runpy:sglang.launch_server", console="sglang",
    prefix=(), help=("--help",), model_option="--model-path",
    options={"served_name": ("--served-model-name",), "host": ("--host",), "port": ("--port",),
             "tensor_parallel": ("--tp-size", "--tensor-parallel-size"), "max_model_len": ("--context-length",),
             "gpu_memory_utilization": ("--mem-fraction-static",), "chat_template": ("--chat-template",),
             "enable_lora": ("--enable-lora",), "max_lora_rank": ("--max-lora-rank",),
             "lora_modules": ("--lora-paths",), "eager": ("--disable-cuda-graph",),
             "trust_remote_code": ("--trust-remote-code",), "api_key": ("--api-key",),
             "quantization": ("--quantization",)},
    formats={"merged": {}, **{f: {"quantization": "compressed-tensors"} for f in COMPRESSED_TENSORS}},
    # sglang/srt/mem_cache/memory_pool.py, and kv_pool_runtime.py's after CUDA-graph capture (0.5.17's source)
    lora=True, adapter_request="{base}:{adapter}", concurrent_requests=16,
    kv_tokens_log=r"KV [Cc]ache (?:is )?allocated\. dtype: [^,]+, #tokens: (\d+)",
    # merged, GPTQ, AWQ, FP8 on an H200 (round 2); the rank-64 adapter as base:adapter (round 3); with CUDA
    # graphs (round 4)
    started="bench/results/2026-12-01-serve-h200-round2.md")

# LMDeploy's TurboMind engine is a CUDA 12 build; its PyTorch engine runs wherever torch does. The PyTorch engine
# loads compressed-tensors only as int4 pack-quantized, symmetric, group size 32, weights only
# (lmdeploy/pytorch/config.py _parse_compressed_tensors_config, 0.18.0); llm-compressor's W4A16 exports use group
# size 128 and FP8 dynamic quantizes activations, so none of the exports loads: it serves the merged model and
# adapters. Its --chat-template takes a template name or a JSON file, not Jinja: it
# reads the template from the tokenizer (which the export writes), so no setting is passed.
_LMDEPLOY_018 = EngineSpec(
    engine="lmdeploy", version="0.18.0", gpu=True, entry="lmdeploy.cli.entrypoint:run", console="lmdeploy",
    prefix=("serve", "api_server"), help=("--help",), model_option=None,
    options={"served_name": ("--model-name",), "host": ("--server-name",), "port": ("--server-port",),
             "tensor_parallel": ("--tp",), "max_model_len": ("--session-len",),
             "gpu_memory_utilization": ("--cache-max-entry-count",), "lora_modules": ("--adapters",), "eager": ("--eager-mode",),
             "trust_remote_code": ("--trust-remote-code",), "api_key": ("--api-keys",), "backend": ("--backend",),
             "log_level": ("--log-level",)},
    # INFO: the start-up line that gives the KV cache ("Building CacheEngine with config: CacheConfig(…)",
    # lmdeploy/pytorch/engine/executor/base.py) is not printed at the default WARNING
    formats={"merged": {}}, fixed={"backend": "pytorch", "log_level": "INFO"}, utilization="after_weights", lora=True,
    concurrent_requests=16,
    kv_tokens_log=r"CacheConfig\(max_batches=\d+, block_size=(\d+), num_cpu_blocks=\d+, num_gpu_blocks=(\d+)",
    # merged and a rank-64 adapter from a trained session, 0.0.0.0 with a key, on an H200
    started="bench/results/2026-12-01-serve-h200-round4.md")

# transformers serve: no API key (loopback only), no tensor parallelism, no context or memory options; it reads the
# quantization_config from config.json, so every format transformers loads needs no flag.
_TRANSFORMERS_524 = EngineSpec(
    engine="transformers", version="5.24.0", gpu=False, entry=None, console="transformers", prefix=("serve",),
    help=("--help",), model_option=None,
    options={"host": ("--host",), "port": ("--port",), "device": ("--device",),
             "trust_remote_code": ("--trust-remote-code",)},
    formats={f: {} for f in ("merged", "bnb-4bit", "bnb-8bit", *COMPRESSED_TENSORS)},
    loopback_only=True, served_by_path=True, install="transformers[serving]==5.24.0")

# every version with a committed table, oldest first
SPECS: dict[str, tuple[EngineSpec, ...]] = {
    "transformers": (_TRANSFORMERS_524,),
    # replace() copies every field: the install line and the GPU record belong to one version only
    "vllm": (_VLLM_026, replace(_VLLM_026, version="0.33.0", started="", install="")),
    "sglang": (_SGLANG_0517, replace(_SGLANG_0517, version="0.5.23", started="", install="")),
    "lmdeploy": (_LMDEPLOY_018,),
}
ENGINES = tuple(SPECS)  # the order the deploy step offers them
GPU_ENGINES = tuple(e for e in ENGINES if SPECS[e][0].gpu)


def version_key(version: str):
    """A version, comparable (PEP 440: ``0.26.0`` < ``0.26.1rc1`` < ``0.26.1`` < ``0.33.0``)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def spec(engine: str, version: str | None = None) -> EngineSpec:
    """The spec for ``engine`` at ``version``: that version's own, else the newest one not newer than it (renames
    after it are unknown), else the oldest. ``version`` None: :func:`recommended`.

    Raises:
        KeyError: an engine yichui does not launch.
    """
    known = SPECS[engine]
    if version is None:
        return recommended(engine)
    exact = [s for s in known if s.version == version]
    if exact:
        return exact[0]
    older = [s for s in known if version_key(s.version) <= version_key(version)]
    return older[-1] if older else known[0]


def recommended(engine: str) -> EngineSpec:
    """The version yichui suggests installing: the newest that was started on a GPU, else the newest with a table."""
    known = SPECS[engine]
    started = [s for s in known if s.started]
    return (started or list(known))[-1]
