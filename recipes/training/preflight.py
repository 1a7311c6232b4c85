"""Preflight smoke run: the chosen strategy trains 2 optimizer steps on a 2-layer copy of the model's architecture
with random weights, on the user's data and chat template, before the weights are downloaded.

A chat template that breaks on some record, data the trainer cannot use, or a configuration the libraries reject
(an optimizer, a sharding, a quantization that does not run on this machine) then costs seconds, not a download and
an hour. The copy is the model's own config.json with ``num_hidden_layers`` (and every per-layer list such as
``layer_types``) cut to 2: hidden size, heads, vocabulary and embedding are the real ones. It is written as a normal
checkpoint, so the trainer loads it through the same path as the real weights (bf16, NF4 for QLoRA), and the trainer
is launched exactly as the train step launches it (one process, or torch.distributed.run with DeepSpeed / FSDP on
this node), on the first records of the dataset (enough for 2 steps), except that compiled layers run eager (see
:func:`smoke_spec`). A one-process trainer is started before the copy is built and imports its libraries meanwhile
(recipes/training/worker.py ``--wait-for-spec``). Files live in ``<run>/preflight/``.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import replace
from pathlib import Path

from recipes.rundir import PREFLIGHT, TRAINER, RunDir, TrainDir
from recipes import jobs
from recipes.data import datasets
from recipes.base import StepError, msg
from recipes.training import runner
from recipes.training.spec import TrainerJob, TrainingSpec

LAYERS = 2
STEPS = 2


def two_layer_config(config: dict, layers: int = LAYERS) -> dict:
    """``config`` (config.json as a dict) with ``layers`` decoder layers: ``num_hidden_layers`` and every list as
    long as the layer count (``layer_types``, per-layer MoE flags) cut to that length. A ``quantization_config`` (a
    pre-quantized checkpoint) is dropped: the copy's random weights are written unquantized. A vision-language
    model's ``text_config`` is cut the same way, and its vision tower where the tower's block lists are known
    (:func:`_cut_tower`: a 32-block tower of 670 M parameters is most of a 3B VLM's copy otherwise)."""
    out = {k: v for k, v in config.items() if k != "quantization_config"}
    if isinstance(config.get("vision_config"), dict):
        out["vision_config"] = _cut_tower(config["vision_config"], config.get("vision_feature_layer", -2), layers)
    if isinstance(config.get("text_config"), dict):
        out["text_config"] = two_layer_config(config["text_config"], layers)
        if "num_hidden_layers" not in config:
            return out
    n = int(config.get("num_hidden_layers") or layers)
    out["num_hidden_layers"] = min(layers, n)
    for k, v in config.items():
        if isinstance(v, list) and len(v) == n and k != "architectures":
            out[k] = v[:layers]
    return out


def _cut_tower(vision: dict, feature_layer, layers: int) -> dict:
    """A vision tower's config with ``layers`` blocks where the cut is known to keep it buildable: Qwen2-VL-family
    towers (``depth``; Qwen2.5-VL's ``fullatt_block_indexes`` keep the blocks under the cut, else the last one;
    Qwen3-VL's ``deepstack_visual_indexes`` become the first blocks, one each) and CLIP / SigLIP towers read at a
    layer counted from the end (LLaVA's ``vision_feature_layer`` -2). Any other tower keeps its depth: its
    per-block settings are not known here."""
    out = dict(vision)
    if "depth" in vision:
        deep = vision.get("deepstack_visual_indexes") or []
        n = max(layers, len(deep))
        if int(vision["depth"]) <= n:
            return out
        out["depth"] = n
        if "fullatt_block_indexes" in vision:
            out["fullatt_block_indexes"] = [i for i in vision["fullatt_block_indexes"] if i < n] or [n - 1]
        if deep:
            out["deepstack_visual_indexes"] = list(range(len(deep)))
        return out
    negative = all(isinstance(x, int) and x < 0 for x in (feature_layer if isinstance(feature_layer, list)
                                                           else [feature_layer]))
    if vision.get("model_type") in ("clip_vision_model", "siglip_vision_model") and negative:
        deepest = -min(feature_layer if isinstance(feature_layer, list) else [feature_layer])
        n = max(layers, deepest)  # hidden_states holds layers + 1 entries: index -k needs k - 1 blocks
        if int(vision.get("num_hidden_layers") or 0) > n:
            out["num_hidden_layers"] = n
    return out


def build_copy(meta_dir: Path, dest: Path, trust_remote_code: bool = False) -> dict:
    """Write the 2-layer random-weights copy of the model in ``meta_dir`` (its config.json and tokenizer) to
    ``dest``, in the config's dtype (bf16 for most checkpoints). Returns ``{"params": N, "bytes": B}``.
    ``trust_remote_code``: the user said yes to the model's own code (it is copied along by save_pretrained).

    Raises:
        StepError: transformers cannot build the architecture (an unknown ``model_type``).
    """
    import torch
    from transformers import AutoConfig, AutoTokenizer

    from recipes.model.vision import PROCESSOR_FILES, auto_model_class

    AutoModelForCausalLM = auto_model_class(meta_dir)  # noqa: N806  (image-text-to-text for Qwen2-VL, LLaVA, …)
    dest.mkdir(parents=True, exist_ok=True)
    config = json.loads((meta_dir / "config.json").read_text())
    (dest / "config.json").write_text(json.dumps(two_layer_config(config), indent=2))
    for code in meta_dir.glob("*.py") if trust_remote_code else ():
        shutil.copyfile(code, dest / code.name)
    AutoTokenizer.from_pretrained(meta_dir, trust_remote_code=trust_remote_code).save_pretrained(dest)
    for name in ("generation_config.json", *PROCESSOR_FILES):  # a vision-language model's processor too
        if (meta_dir / name).is_file() and not (dest / name).exists():
            shutil.copyfile(meta_dir / name, dest / name)
    try:
        cfg = AutoConfig.from_pretrained(dest, trust_remote_code=trust_remote_code)
    except (ValueError, KeyError) as e:
        raise StepError("training.preflight_unknown_architecture", error=str(e).splitlines()[0][:200]) from None
    dtype = getattr(cfg, "dtype", None) or getattr(cfg, "torch_dtype", None) or torch.float32
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in place in its dtype: no fp32 copy of a large embedding first
    try:
        model = _random_model(AutoModelForCausalLM, cfg, trust_remote_code)
        model.save_pretrained(dest)
    except Exception as e:  # the architecture (or a repository's own code) cannot be built or saved
        raise StepError("training.preflight_copy_failed", error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    finally:
        torch.set_default_dtype(previous)
    params = sum(p.numel() for p in model.parameters())
    return {"params": params, "bytes": sum(p.numel() * p.element_size() for p in model.parameters())}


def _random_model(cls, cfg, trust_remote_code: bool):
    """``cls.from_config(cfg)`` with its weights initialized once. Built as it is, every layer is initialized twice:
    torch's own init as each layer is made, then transformers' ``init_weights`` over it. Under transformers'
    ``no_init_weights`` the layers are made uninitialized and ``init_weights`` then runs once — what
    ``from_pretrained`` does for weights a checkpoint lacks. A Qwen2.5-7B shape's 2-layer copy (1.6 B parameters,
    bf16): 11.6–12.1 s against 17.0–17.9 s on a 2-core CPU (bench/results/2026-12-06-preflight-warm-cpu.md). A
    model's own code (its init is its own) is built as it is."""
    from transformers.initialization import no_init_weights

    if trust_remote_code:
        return cls.from_config(cfg, trust_remote_code=True)
    with no_init_weights():
        model = cls.from_config(cfg)
    model.init_weights()
    return model


def records_needed(spec: TrainingSpec) -> int:
    """Records for STEPS optimizer steps: micro-batch × gradient accumulation × processes each (at least 8)."""
    return max(8, STEPS * spec.micro_batch * spec.grad_accum * spec.processes)


def _sample(dataset_path: str, n: int) -> str:
    """The dataset reference limited to its first ``n`` records (``path#n``; a smaller ``#m`` already there wins)."""
    path, have = datasets.split_sample(dataset_path)
    return f"{path}#{min(n, have) if have else n}"


def smoke_spec(plan: TrainerJob, pdir: Path, dataset_path: str) -> TrainerJob:
    """The smoke run's job: ``plan`` on the copy in ``pdir/model`` and the sampled ``dataset_path``, STEPS steps on
    this node, nothing kept but the last checkpoint — and eager layers even where the plan compiles them: compiling
    cost the copy's two steps 6 + 17.5 s on an H100 (bench/results/2026-12-06-compile-shapes-h100.md), a compile
    failure in training is recovered by the train step (it goes on eager), and eager layers hold more activation
    memory than compiled ones, so the memory the smoke run reports does not flatter the plan."""
    return replace(plan, model_dir=str(pdir / "model"), dataset_path=dataset_path, device="auto", max_steps=STEPS,
                   compile_layers=False, save_steps=STEPS, save_total_limit=1, sample_question=None, save_final=False,
                   logging_steps=1, nodes=1, hosts="", launch=secrets.token_hex(6))


def smoke_run(ctx, plan: TrainerJob, meta_dir: Path, available: int | None = None, warm_start: bool = True) -> dict:
    """Build the copy of the model whose small files (config, tokenizer) are in ``meta_dir``, run the trainer on it
    for STEPS steps as ``plan`` says (its trust_remote_code: the user's yes to the model's code), report. Returns the
    outputs recorded under ``preflight``. ``available``: the data's records, when fewer than it takes (said so: "the
    first 128 records" of 38, issue 46 trial I). ``warm_start`` False: the trainer starts after the copy is built
    (the peer bench/preflight_cost.py --start cold measures).

    Raises:
        StepError: the smoke run failed (the trainer's error and its log), or ran out of memory.
        KeyboardInterrupt: Ctrl-C; the smoke run is stopped (it is redone on resume).
    """
    pdir = RunDir(ctx.run_dir).preflight.root
    for name in (PREFLIGHT, TRAINER):  # "trainer": a smoke run of an earlier yichui
        old = jobs.read(pdir / f"{name}.pid.json")
        if old is not None and old.alive():
            old.stop(timeout=5)
    shutil.rmtree(pdir, ignore_errors=True)  # a smoke run starts from nothing: no checkpoint to resume
    t0 = time.time()
    spec = smoke_spec(plan, pdir, _sample(plan.dataset_path, records_needed(plan)))
    spec = runner.with_backend(spec, ctx.home)  # the smoke run trains on the chosen backend too
    spec_path = TrainDir(pdir).spec
    argv = runner.worker_argv(spec, spec_path)

    def spawn_trainer(*extra: str) -> jobs.Job:  # PREFLIGHT: `yichui status` lists it apart from the training
        return jobs.spawn(PREFLIGHT, argv + list(extra), pdir, env=runner.trainer_env(spec), cwd=runner.REPO)

    # one process: the trainer starts now and imports its libraries while the copy is built here (it waits for the
    # spec); unsloth must be imported before transformers, and torch.distributed.run starts the ranks itself
    warm = warm_start and argv[1:3] == ["-m", "recipes.training.worker"] and spec.training_backend != "unsloth"
    job = spawn_trainer("--wait-for-spec", str(os.getpid())) if warm else None
    try:
        copy = build_copy(meta_dir, pdir / "model", plan.trust_remote_code)
    except BaseException:  # the copy failed or Ctrl-C: the waiting trainer goes too
        if job is not None:
            job.stop(timeout=5)
        raise
    spec.write(spec_path)
    ctx.info(msg("training.preflight_start", steps=STEPS, layers=LAYERS, params=f"{copy['params'] / 1e6:,.1f}",
                 records=min(records_needed(plan), available) if available else records_needed(plan)))
    job = job or spawn_trainer()
    try:  # the train step's own view of the trainer's events
        runner.follow(ctx, job, pdir, title=msg("training.preflight_live_title", pid=job.pid))
    except KeyboardInterrupt:
        job.stop(timeout=5)  # a smoke run is not worth keeping: it starts from nothing on resume
        raise
    except runner.OutOfMemory:
        raise StepError("training.preflight_oom", log=job.log) from None
    except StepError as e:  # training.train_failed (the trainer's error) or training.died (its log's last line)
        if e.key == "training.no_records_fit":  # said as the smoke test's finding
            raise StepError("training.preflight_no_records_fit", seq_len=spec.seq_len, log=job.log) from None
        if e.key not in ("training.train_failed", "training.died"):  # the trainer's own words (a reward file that raised)
            raise
        error = e.msg.args.get("error") or next(
            (line for line in reversed(job.log_tail(30).splitlines()) if line.strip()), "?")
        if "num_samples=0" in error:  # trl dropped every record: none has a completion within seq_len
            raise StepError("training.preflight_no_records_fit", seq_len=spec.seq_len, log=job.log) from None
        raise StepError("training.preflight_failed", error=error[:300], log=job.log) from None
    result = json.loads(TrainDir(pdir).result.read_text())
    seconds = round(time.time() - t0, 1)
    ctx.info(msg("training.preflight_passed", seconds=seconds, losses=" → ".join(f"{x:.3f}" for x in result["losses"]),
                 peak=result["peak_mem_gib"], kind=ctx.t("training.mem." + result["mem_kind"])))
    return {"ok": True, "seconds": seconds, "layers": LAYERS, "steps": result["steps"], "params": copy["params"],
            "losses": result["losses"], "peak_mem_gib": result["peak_mem_gib"], "mem_kind": result["mem_kind"],
            "device": result["device"], "processes": result.get("processes", 1), "dir": str(pdir)}
