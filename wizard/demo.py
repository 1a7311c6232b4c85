"""The embedded default that `yichui demo` runs: a tiny model on a local hub, and the answers to every question.

Three kinds (the session's ``demo`` field): ``true`` the tiny text model (recipes/demo/tiny_model.py) fine-tuned on
the bundled conversations; ``"vlm"`` (``yichui demo --task finetune-vlm``) the tiny vision-language model
(recipes/demo/tiny_vlm.py) fine-tuned on rendered shapes (recipes/data/shapes.py) and evaluated on held-out images;
``"dpo"`` (``yichui demo --task finetune-dpo``) the tiny text model preference-tuned with DPO on the bundled pairs
(recipes/data/preference.py signed_off_pairs) and evaluated on the held-out pairs, base beside fine-tuned.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from recipes.data import datasets
from recipes.demo import tiny_model as tiny

VLM = "vlm"
VLM_TASK = "finetune-vlm"  # `yichui demo --task finetune-vlm`: the fine-tune task on the tiny VLM
DPO = "dpo"
DPO_TASK = "finetune-dpo"  # `yichui demo --task finetune-dpo`: the fine-tune task with DPO on the tiny text model
GRPO = "grpo"
GRPO_TASK = "finetune-grpo"  # `yichui demo --task finetune-grpo`: GRPO on the tiny text model's arithmetic prompts
TASKS = {VLM_TASK: VLM, DPO_TASK: DPO, GRPO_TASK: GRPO}  # the demo's own tasks → the session's demo field
PRETRAIN_STEPS = 300  # the tiny text model's; the tiny VLM's is tiny_vlm.PRETRAIN_STEPS (also 300)
SHAPES_VERSION = 1  # bump when the demo's shapes data below changes
TRAIN_IMAGES, HELDOUT_IMAGES = 270, 45  # two questions per image: 540 training records, 90 held-out


def kind_of(demo) -> str | None:
    """The model a session's ``demo`` field builds: "text" (the text, DPO and GRPO demos), "vlm", or None."""
    return VLM if demo == VLM else "text" if demo else None


def hub_root(home: Path) -> Path:
    return home / "cache" / "hub"


def _builder(kind: str):
    from recipes.demo import tiny_vlm

    return tiny_vlm if kind == VLM else tiny


def isolate(home: Path) -> None:
    """A demo writes nothing outside YICHUI_HOME (issue 46 item 4: it left huggingface_hub's cache folder and
    matplotlib's font cache under the user's home, and a later session read its cache): the libraries' caches of
    this process and the jobs it starts go under ``home/cache/demo/``. It talks to its own hub on 127.0.0.1 only, so
    the user's Hugging Face cache is not needed, and the clients' offline switches (HF_HUB_OFFLINE, set on boxes
    without internet, refuses loopback too) are turned off for it. Called before huggingface_hub is imported: it
    reads them at import."""
    root = home / "cache" / "demo"
    for var, sub in (("HF_HOME", "hf"), ("MPLCONFIGDIR", "matplotlib"), ("XDG_CACHE_HOME", "xdg")):
        os.environ[var] = str(root / sub)
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ[var] = "0"


BUILDER = "demo-build"  # the job name a first demo's model build records itself under, in home/cache/demo/


def build_in_progress(home: Path):
    """The live yichui process building a demo's tiny model under ``home`` (a :class:`recipes.jobs.Job`), or None:
    the demo's session is made only after the build (Ctrl-C there leaves none), and `yichui status` said "No
    sessions yet" through its ~30 s (trial T)."""
    from recipes import jobs

    job = jobs.read(jobs.pid_path(home / "cache" / "demo", BUILDER))
    return job if job is not None and job.alive() else None


def model_ready(home: Path, kind: str = "text") -> bool:
    b = _builder(kind)
    marker = hub_root(home) / b.REPO_ID / "yichui_build.json"
    try:
        return json.loads(marker.read_text()).get("build_version") == b.BUILD_VERSION
    except (OSError, ValueError):
        return False


def ensure_model(home: Path, on_step=None, kind: str = "text") -> None:
    """Build the tiny model of ``kind`` into the demo hub root unless a build of this version is there;
    ``on_step(step, loss)`` follows its pre-training (:data:`PRETRAIN_STEPS` steps)."""
    b = _builder(kind)
    dest = hub_root(home) / b.REPO_ID
    if model_ready(home, kind):
        return
    from recipes import jobs

    if dest.exists():
        import shutil

        shutil.rmtree(dest)
    me = jobs.record_self(BUILDER, home / "cache" / "demo")
    try:
        if kind == VLM:
            b.build(dest, pretrain_steps=PRETRAIN_STEPS, on_step=on_step)
        else:
            b.build(dest, PRETRAIN_STEPS, on_step=on_step)
    finally:
        jobs.forget(me)


def shapes_data(home: Path) -> tuple[Path, Path]:
    """The VLM demo's data in ``YICHUI_HOME/cache/demo-data/shapes-v<N>/`` (rendered once, deterministic): the
    training file (:data:`TRAIN_IMAGES` images, seed 0) and the held-out one (:data:`HELDOUT_IMAGES` other images,
    seed 1). Written into a temporary folder renamed into place, so a stopped render leaves nothing half-made."""
    import os
    import shutil
    import tempfile

    from recipes.data import shapes

    dest = home / "cache" / "demo-data" / f"shapes-v{SHAPES_VERSION}"
    if not (dest / "shapes-heldout.jsonl").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".shapes-", dir=dest.parent))
        try:
            shapes.build(tmp, TRAIN_IMAGES, seed=0, name="shapes-train.jsonl")
            shapes.build(tmp, HELDOUT_IMAGES, seed=1, name="shapes-heldout.jsonl")
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return dest / "shapes-train.jsonl", dest / "shapes-heldout.jsonl"


def start_hub(home: Path, endpoint: str | None = None):
    """The demo's local hub, on the port of ``endpoint`` (a resumed session's recorded hub, which its download step
    goes on asking) when that port is free, else on any free port."""
    import re

    from recipes.hub.server import HubServer

    m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/?", endpoint or "")
    if m:
        try:
            return HubServer(hub_root(home), port=int(m.group(1))).start()
        except OSError:  # taken by now: a new port (the steps still to run re-read the endpoint they are given)
            pass
    return HubServer(hub_root(home)).start()


def answers(hub_url: str, demo: bool | str = True, home: Path | None = None) -> dict:
    """Every answer of the demo, as the defaults layer (``--set`` and resumed answers win). Tuned so 2 CPU cores
    finish in minutes:
    LoRA steps on micro-batches of 8 at a high learning rate, which a model of under a million parameters needs to
    move. ``demo`` (the session's field) "vlm": the tiny VLM's (``home`` holds its rendered data); "dpo": DPO's."""
    if demo == VLM:
        assert home is not None
        return vlm_answers(hub_url, home)
    if demo == DPO:
        return dpo_answers(hub_url)
    if demo == GRPO:
        return grpo_answers(hub_url)
    return {
        "select_model": {"source": "hf", "endpoint": hub_url, "model": "yichui-tiny", "revision": "main"},
        "evaluate_memory": {},  # the question's defaults: the GPUs found here, else an A10 as the target
        "download": {},
        "choose_strategy": {"method": "lora", "lora_rank": 16, "lora_alpha": 32, "lora_dropout": 0.0,
                            "lora_targets": "all-linear", "activation_checkpointing": False, "dataset": "bundled",
                            "seq_len": 256, "batch_size": 8, "micro_batch": 8, "grad_accum": 1, "learning_rate": 3e-3,
                            "max_steps": 150, "save_steps": 50, "save_total_limit": 2, "val_ratio": 0.05,
                            "sample_question": "What is LoRA?"},
        "train": {"device": "auto"},
        "export": {"dtype": "auto", "serve_with": "transformers", "formats": ["bnb-8bit"], "quality_samples": 8},
        "deploy": {"backend": "transformers", "model": "merged", "host": "127.0.0.1"},
        # held-out: the training split (fine-tune) or 16 bundled conversations (the evaluate task)
        "evaluate": {"heldout": "training", "heldout_path": f"{datasets.bundled_dataset_path()}#16",
                     "heldout_samples": 16, "max_new_tokens": 32, "benchmarks": []},
        "chat": {"question": "What is LoRA?"},
    }


def vlm_answers(hub_url: str, home: Path) -> dict:
    """The VLM demo's answers: LoRA on the language model of the tiny VLM, the shapes questions, the merged model
    served by transformers serve and evaluated on the held-out images (base beside fine-tuned)."""
    train, heldout = shapes_data(home)
    return {
        "select_model": {"source": "hf", "endpoint": hub_url, "model": "yichui-tiny-vlm", "revision": "main"},
        "evaluate_memory": {},
        "download": {},
        "choose_strategy": {"method": "lora", "lora_rank": 16, "lora_alpha": 32, "lora_dropout": 0.0,
                            "lora_targets": "all-linear", "activation_checkpointing": False, "dataset": "local",
                            "dataset_path": str(train), "seq_len": 256, "batch_size": 8, "micro_batch": 8,
                            "grad_accum": 1, "learning_rate": 3e-3, "max_steps": VLM_STEPS, "save_steps": 50,
                            "save_total_limit": 2, "val_ratio": 0.05, "sample_question": "What colour is the shape?"},
        "train": {"device": "auto"},
        "export": {"dtype": "auto", "serve_with": "transformers", "formats": [], "quality_samples": 8},
        "deploy": {"backend": "transformers", "model": "merged", "host": "127.0.0.1"},
        "evaluate": {"heldout": "file", "heldout_path": str(heldout), "heldout_samples": 2 * HELDOUT_IMAGES,
                     "max_new_tokens": 8, "benchmarks": []},
    }


VLM_STEPS = 150


def dpo_answers(hub_url: str) -> dict:
    """The DPO demo's answers: LoRA DPO (β 0.1) on the bundled pairs with the SFT loss on the chosen reply (weight 2:
    the tiny base babbles, and DPO alone taught it to repeat the sign-off without end — held-out preference 0.0 →
    1.0 either way, but only with the SFT term does the served model answer and stop; at weight 1 it stopped with
    one compute thread and not with two, the same seed on other summation orders (trial W), at 2 with both), the
    text demo's 150 steps, the merged model served by transformers serve, evaluated on the 15 held-out pairs (each
    model's preference: base vs fine-tuned) and their chosen replies."""
    out = answers(hub_url)
    out["choose_strategy"] |= {"objective": "dpo", "dpo_beta": 0.1, "sft_loss_weight": 2.0}
    out["export"]["formats"] = []
    out["evaluate"] |= {"heldout": "training", "heldout_samples": 16}
    return out


GRPO_STEPS = 40


def grpo_answers(hub_url: str) -> dict:
    """The GRPO demo's answers: LoRA GRPO on the bundled arithmetic prompts (recipes/data/demo_prompts.jsonl), four
    replies of up to 24 tokens per prompt, two prompts per optimizer step, scored by accuracy and by the bundled
    reward file (recipes/data/demo_reward.py: the share of digits, which the tiny model — it babbles prose — can
    earn while accuracy stays out of its reach); the merged model served by transformers serve, evaluated on the
    held-out prompts by the same rewards, base beside fine-tuned."""
    from recipes.data import prompts

    out = answers(hub_url)
    out["choose_strategy"] |= {"objective": "grpo", "rewards": ["accuracy", "file"],
                               "reward_file": str(prompts.BUNDLED.with_name("demo_reward.py")),
                               "num_generations": 4, "completion_length": 24, "grpo_beta": 0.0,
                               "batch_size": 8, "micro_batch": 8, "grad_accum": 1, "max_steps": GRPO_STEPS,
                               "save_steps": 10, "val_ratio": 0.1, "sample_question": "What is 2 + 3? Give the final "
                                                                                     "answer as '#### N'."}
    out["export"]["formats"] = []
    out["evaluate"] |= {"heldout": "training", "heldout_samples": 16, "max_new_tokens": 24}
    out["chat"] = {"question": "What is 2 + 3?"}
    return out
