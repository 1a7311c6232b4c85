"""Vision-language models in the trainer (issue 22): recognising one, its processor, its images, and which of its
weights train.

A vision-language model is a config.json with a ``vision_config`` (Qwen2-VL / Qwen2.5-VL / Qwen3-VL, LLaVA,
Llama-3.2-Vision, InternVL, … as transformers 5 builds them: ``model.visual`` or ``model.vision_tower`` beside
``model.language_model``). It is loaded with ``AutoModelForImageTextToText`` and trained on trl's image-text records
(recipes/data/datasets.py to_prompt_completion: an ``images`` column, ``{"type": "image"}`` placeholders) with its
processor as the Trainer's processing class. By default only the language model trains (LoRA on its linear layers;
a full fine-tune freezes the vision tower and the projector), as ms-swift's and LLaMA-Factory's defaults do.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

# module-name parts of the vision side in transformers' vision-language models (tower and projector)
# (and the audio side of omni models, whose towers the same default leaves alone)
VISION_PARTS = ("visual", "vision_tower", "vision_model", "multi_modal_projector", "mm_projector", "connector",
                "embed_vision", "audio_tower", "audio_model", "embed_audio")


def is_vision_model(model_dir: str | os.PathLike) -> bool:
    """Whether ``model_dir/config.json`` describes a vision-language model (it has a ``vision_config``)."""
    try:
        cfg = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and isinstance(cfg.get("vision_config"), dict)


def has_causal_lm(model_dir: str | os.PathLike) -> bool:
    """Whether transformers builds a causal LM for the folder's ``model_type`` (Gemma-3, Llama-4, Mllama: yes;
    Qwen2-VL, LLaVA: only the image-text-to-text model)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        model_type = json.loads((Path(model_dir) / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return False
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def load_processor(path: str | os.PathLike):
    """The model folder's processor: ``AutoProcessor`` where it loads, else (Qwen2-VL-style folders on a stack
    without a loadable torchvision, whose video processor needs it) the same processor without its video part, built
    from the same files (image processor settings, tokenizer, chat template).

    Raises:
        OSError (or what AutoProcessor raised): the folder lacks the processor's files, or they need torchvision
            and the model is not of the Qwen2-VL family.
    """
    from transformers import AutoProcessor, AutoTokenizer, Qwen2VLImageProcessorPil

    try:
        proc = AutoProcessor.from_pretrained(path)
        if hasattr(proc, "image_processor"):  # not a bare tokenizer, which AutoProcessor falls back to
            return proc
        error: Exception = OSError(f"{path}: no image processor")
    except (AttributeError, ImportError, ValueError, OSError, RuntimeError) as e:  # no (loadable) torchvision
        error = e
    model_type = json.loads((Path(path) / "config.json").read_text()).get("model_type")
    if model_type not in ("qwen2_vl", "qwen2_5_vl"):  # the fallback knows Qwen2-VL's processor only
        raise error
    tok = AutoTokenizer.from_pretrained(path)
    image = Qwen2VLImageProcessorPil.from_pretrained(path)  # reads processor_config.json's image_processor
    return _image_text_processor_class()(image_processor=image, tokenizer=tok, chat_template=tok.chat_template)


def _image_text_processor_class():
    from transformers import Qwen2VLProcessor

    class ImageTextProcessor(Qwen2VLProcessor):
        """Qwen2VLProcessor without its video processor (see load_processor): images and text only."""

        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    return ImageTextProcessor


def image_dataset(records: list[dict]):
    """trl's image-text records (``images``: paths or bytes) as a ``datasets.Dataset`` whose ``images`` column is
    the library's Image feature: decoded when a batch is built, not held decoded in memory."""
    from datasets import Dataset, Image, List

    rows = [r | {"images": [{"path": s, "bytes": None} if isinstance(s, str) else {"path": None, "bytes": bytes(s)}
                            for s in r.get("images", [])]} for r in records]
    return Dataset.from_list(rows).cast_column("images", List(Image()))


def is_vision_module(name: str) -> bool:
    return any(part in VISION_PARTS for part in name.split("."))


def language_targets(model, targets: str) -> str:
    """peft ``target_modules`` for LoRA on the language model only: a regex over module names that matches the
    chosen linear layers (``"all-linear"``: every nn.Linear of the language model but its output head; else the
    comma-separated names) and none of the vision tower or projector."""
    import torch

    if targets == "all-linear":
        names = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                        if isinstance(m, torch.nn.Linear) and not is_vision_module(n) and not n.endswith("lm_head")})
    else:
        names = [t.strip() for t in targets.split(",") if t.strip()]
    parts = "|".join(re.escape(p) for p in VISION_PARTS)
    return rf"^(?!.*\.({parts})\.)(?!({parts})\.).*\.({'|'.join(re.escape(n) for n in names)})$"


def freeze_vision(model) -> int:
    """Freeze the vision tower and projector (a full fine-tune trains the language model). Returns the number of
    parameters frozen."""
    n = 0
    for name, p in model.named_parameters():
        if is_vision_module(name):
            p.requires_grad_(False)
            n += p.numel()
    return n
