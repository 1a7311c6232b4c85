"""Standard benchmarks through lm-evaluation-harness (``lm_eval`` 0.4.13, pinned beside the main stack: it installs
with no conflict), on data fetched by yichui's own downloader.

The harness's task definitions are used as they are (prompt, few-shot split, filters, metric): yichui writes a
task file that ``include``s the harness's own YAML and only points its dataset at the downloaded files, so no
benchmark data is ever fetched by the harness itself (it would go to the hub, unreachable offline).

Generative tasks (GSM8K) run through the OpenAI-compatible endpoint from the deploy step (lm_eval's
``local-chat-completions``), so the same code evaluates vLLM, SGLang, LMDeploy or transformers servers; without an
endpoint they run in-process. Log-likelihood tasks (multiple-choice MMLU) need log-probabilities of given
continuations, which chat-completions endpoints do not return: they always run in-process on the local model
(lm_eval's ``hf`` model).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from recipes.base import Refusal


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: the harness task(s), the hub dataset and the files each split reads."""

    kind: str                 # "generate" (endpoint) or "loglikelihood" (in-process)
    repo: str                 # dataset repository on the Hugging Face hub (ModelScope mirrors use the same id)
    task: str                 # lm_eval task name; {subset} for per-subject tasks
    yaml: str                 # the task's YAML under lm_eval/tasks
    splits: dict = field(default_factory=dict)  # split → file in the repository; {subset} substituted
    metric: str = "exact_match"
    subsets: tuple = ()       # default subjects


BENCHMARKS = {
    "gsm8k": Benchmark("generate", "openai/gsm8k", "gsm8k", "gsm8k/gsm8k.yaml",
                       {"train": "main/train-00000-of-00001.parquet", "test": "main/test-00000-of-00001.parquet"},
                       metric="exact_match,flexible-extract"),
    "mmlu": Benchmark("loglikelihood", "cais/mmlu", "mmlu_{subset}", "mmlu/default/mmlu_{subset}.yaml",
                      {"test": "{subset}/test-00000-of-00001.parquet", "dev": "{subset}/dev-00000-of-00001.parquet"},
                      metric="acc,none", subsets=("high_school_computer_science", "college_computer_science")),
}


class HarnessError(Refusal):
    """A benchmark that cannot be run (its files, its answers)."""


def files_for(name: str, subsets: list[str] | None = None) -> list[str]:
    """The repository files a benchmark reads."""
    b = BENCHMARKS[name]
    subs = subsets or list(b.subsets) or [""]
    return sorted({f.format(subset=s) for s in subs for f in b.splits.values()})


def task_yaml(name: str, data_dir: Path, out_dir: Path, subsets: list[str] | None = None) -> list[str]:
    """Write the task files that point the harness's own definitions at the downloaded data; return task names."""
    import lm_eval

    b = BENCHMARKS[name]
    tasks_root = Path(lm_eval.__file__).parent / "tasks"
    out_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for sub in subsets or list(b.subsets) or [""]:
        task = "yichui_" + b.task.format(subset=sub)
        files = {split: str(data_dir / f.format(subset=sub)) for split, f in b.splits.items()}
        lines = [f"include: {tasks_root / b.yaml.format(subset=sub)}", f"task: {task}", "tag: []",
                 "dataset_path: parquet", "dataset_name: null", "dataset_kwargs:", "  data_files:"]
        lines += [f"    {split}: {path}" for split, path in files.items()]
        (out_dir / f"{task}.yaml").write_text("\n".join(lines) + "\n")
        names.append(task)
    return names


@contextlib.contextmanager
def _env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(name: str, data_dir: Path, work_dir: Path, limit: int, *, endpoint: str | None = None,
        served_model: str | None = None, api_key: str | None = None, model_dir: str | None = None,
        subsets: list[str] | None = None, num_fewshot: int | None = None, trust_remote_code: bool = False,
        concurrency: int = 1) -> dict:
    """Run one benchmark; return ``{"score", "metric", "samples", "per_task": {task: score}, "where"}``.

    ``score`` is the mean over tasks of the benchmark's metric (GSM8K: exact match after the harness's
    flexible-extract filter; MMLU: accuracy), on the first ``limit`` test examples of each task. Through an
    endpoint ``concurrency`` requests go at once (lm-eval's ``num_concurrent``: an engine batches them).

    Raises:
        HarnessError("evaluation.no_endpoint" | "evaluation.no_local_model"): nothing to run it on.
    """
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    b = BENCHMARKS[name]
    tasks = task_yaml(name, data_dir, work_dir / "tasks", subsets)
    manager = TaskManager(include_path=str(work_dir / "tasks"), include_defaults=False)
    kw: dict = {"tasks": tasks, "task_manager": manager, "limit": limit, "log_samples": False,
                "num_fewshot": num_fewshot, "bootstrap_iters": 0}
    if b.kind == "generate" and endpoint:
        where = endpoint
        kw |= {"model": "local-chat-completions", "apply_chat_template": True,
               "model_args": {"model": served_model, "base_url": endpoint.rstrip("/") + "/chat/completions",
                              "num_concurrent": max(1, concurrency), "max_retries": 2, "tokenized_requests": False}}
    elif model_dir:
        import torch

        where = model_dir
        kw |= {"model": "hf", "model_args": {"pretrained": model_dir, "dtype": "auto",
                                             "trust_remote_code": trust_remote_code,
                                             "device": "cuda" if torch.cuda.is_available() else "cpu"},
               "batch_size": 8, "apply_chat_template": b.kind == "generate"}
    else:
        raise HarnessError("evaluation.no_local_model" if b.kind == "loglikelihood" else "evaluation.no_endpoint",
                           benchmark=name)
    with _env(OPENAI_API_KEY=api_key or "none", HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1"):
        out = simple_evaluate(**kw)
    metric = b.metric
    per = {t: (None if out["results"][t].get(metric) is None else float(out["results"][t][metric])) for t in tasks}
    scores = [v for v in per.values() if v is not None]
    samples = sum(int(out.get("n-samples", {}).get(t, {}).get("effective", 0)) for t in tasks)
    return {"score": round(sum(scores) / len(scores), 4) if scores else None, "metric": metric, "samples": samples,
            "per_task": per, "where": where, "kind": b.kind}
