"""The engines' start phases read from their own logs (recipes/serving/phases.py, issue 48): the real logs of vLLM
0.26.0, SGLang 0.5.17 and LMDeploy 0.18.0 on the H200 (bench/results/2026-12-01-serve-h200-round4/) go through the
phases they went through, in order; a log read as it grows gives the same."""
from pathlib import Path

import pytest

from recipes.serving import phases

R = Path(__file__).resolve().parent.parent / "bench" / "results" / "2026-12-01-serve-h200-round4"


@pytest.mark.parametrize("engine,log,expected", [
    # --enforce-eager: no compile, no CUDA graphs; the 2-minute silent stretch is "warmup"
    ("vllm", "server-merged.log", ["start", "engine", "loading", "kv_cache", "warmup", "api"]),
    ("sglang", "sglang-graphs/server-holdout-sglang-qwen2.5-0.5b-graphs.log",
     ["start", "engine", "loading", "kv_cache", "graphs", "api", "warmup"]),
    ("lmdeploy", "server-lmdeploy-merged.log", ["start", "engine", "loading", "kv_cache", "warmup", "api"]),
])
def test_each_engine_s_real_log_goes_through_its_phases_in_order(engine, log, expected):
    assert phases.phases_of_log(engine, (R / log).read_text(errors="replace")) == expected


def test_vllm_compile_and_cuda_graph_lines():
    """vLLM without --enforce-eager (the lines as vLLM's gpu_model_runner and compile backend print them; its tqdm
    bar rewrites one line with carriage returns)."""
    text = ("(EngineCore_DP0 pid=212) INFO [core.py:116] Initializing a V1 LLM engine (v0.26.0) with config: …\n"
            "(EngineCore_DP0 pid=212) INFO [default_loader.py:430] Loading weights took 0.17 seconds\n"
            "(EngineCore_DP0 pid=212) INFO [backends.py:548] Dynamo bytecode transform time: 4.21 s\n"
            "(EngineCore_DP0 pid=212) INFO [monitor.py:34] torch.compile takes 10.5 s in total\n"
            "(EngineCore_DP0 pid=212) INFO [gpu_worker.py:560] Available KV cache memory: 40.45 GiB\n"
            "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|  | 0/11\r"
            "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 11/11\n"
            "(EngineCore_DP0 pid=212) INFO [gpu_model_runner.py:3480] Graph capturing finished in 8 secs\n"
            "(APIServer pid=200) INFO [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000\n")
    assert phases.phases_of_log("vllm", text) == ["start", "engine", "loading", "compiling", "kv_cache", "graphs",
                                                  "api"]


def test_a_log_read_while_it_grows(tmp_path):
    """The watch reads what was appended since its last poll, a line cut mid-way waits for its end, and the phase
    is the latest begun; a log not written yet is the process starting."""
    log = tmp_path / "server.log"
    watch = phases.StartWatch("sglang", log)
    assert watch.poll() == "start"
    text = (R / "sglang-graphs/server-holdout-sglang-qwen2.5-0.5b-graphs.log").read_bytes()
    cut = text.index(b"Load weight begin") + 4  # the line cut mid-way
    log.write_bytes(text[:cut])
    assert watch.poll() == "engine"
    with open(log, "ab") as f:
        f.write(text[cut:])
    assert watch.poll() == "warmup" and list(watch.began)[:3] == ["start", "engine", "loading"]
