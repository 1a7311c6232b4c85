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


def image_text_only(model_dir: str | os.PathLike) -> bool:
    """A vision-language model transformers builds no causal LM of (Qwen2-VL, LLaVA): loaded with
    ``AutoModelForImageTextToText`` and its processor everywhere (train, merge, smoke replies, evaluation)."""
    return is_vision_model(model_dir) and not has_causal_lm(model_dir)


def reads_images(model_dir: str | os.PathLike) -> bool:
    """A vision-language model transformers builds as image-text-to-text (Qwen2-VL, LLaVA, Gemma-3, Qwen3.5, Llama-4,
    …): where a model is only run (merged, evaluated, smoke-tested) it is loaded so, with its processor — for some of
    them (Qwen3.5, Llama-4, Mllama) ``AutoModelForCausalLM`` would build the text model alone and drop the tower."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    if not is_vision_model(model_dir):
        return False
    try:
        model_type = json.loads((Path(model_dir) / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return False
    return model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


def auto_model_class(model_dir: str | os.PathLike, image_text: bool | None = None):
    """``AutoModelForImageTextToText`` for :func:`reads_images` folders (or ``image_text`` True: the class the
    trainer used, :data:`MODEL_CLASS_FILE`), else ``AutoModelForCausalLM``."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    if image_text is None:
        image_text = reads_images(model_dir)
    return AutoModelForImageTextToText if image_text else AutoModelForCausalLM


# written by the trainer beside the adapter (or full model) it saves: which auto class it trained (the merge loads
# the base with the same one, or the adapter's module names would not match)
MODEL_CLASS_FILE = "yichui_model_class.json"


def trained_class(adapter_dir: str | os.PathLike) -> bool | None:
    """Whether the trainer trained the image-text-to-text class (True) or the causal LM (False), from
    :data:`MODEL_CLASS_FILE`; None when the folder does not say (an adapter of an earlier yichui)."""
    try:
        return bool(json.loads((Path(adapter_dir) / MODEL_CLASS_FILE).read_text())["image_text"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# the processor's own files, copied beside a merged model (the tokenizer's are written by its save_pretrained)
PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json", "video_preprocessor_config.json",
                   "chat_template.json", "chat_template.jinja")


def chat_inputs(proc, question: str, image: str | bytes | None = None):
    """One user turn through the chat template, tokenized: with ``image`` (a file path or bytes) through the
    processor (``proc`` a vision-language model's processor), else a text turn (through a processor: its content
    given as a list of parts, as the processors' templates expect). Returns the BatchFeature (``input_ids``,
    ``attention_mask``, and the processor's image tensors)."""
    if image is None:
        content = question if not hasattr(proc, "image_processor") else [{"type": "text", "text": question}]
        return proc.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                        tokenize=True, return_tensors="pt", return_dict=True)
    import io

    from PIL import Image

    turn = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    text = proc.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
    with Image.open(io.BytesIO(image) if isinstance(image, bytes) else image) as img:
        return proc(text=[text], images=[img.convert("RGB")], return_tensors="pt")


def max_pixels(model_dir: str | os.PathLike) -> int | None:
    """The most pixels per image a dynamic-resolution processor (Qwen2-VL / Qwen2.5-VL / Qwen3-VL) resizes to, read
    from the folder's processor files (``max_pixels``, or transformers 5's ``size.longest_edge`` in pixels); None
    for a fixed-size tower (LLaVA's CLIP: every image becomes ``image_size``²) or no processor files."""
    for name in ("preprocessor_config.json", "processor_config.json"):
        try:
            cfg = json.loads((Path(model_dir) / name).read_text())
        except (OSError, ValueError):
            continue
        cfg = cfg.get("image_processor", cfg) if isinstance(cfg, dict) else {}
        size: dict = cfg["size"] if isinstance(cfg.get("size"), dict) else {}
        # Qwen2-VL's size is in pixels (both edges); others' in pixels per side (CLIP's shortest_edge 336)
        qwen = "merge_size" in cfg or "Qwen2VL" in str(cfg.get("image_processor_type"))
        value = cfg.get("max_pixels") or (size.get("longest_edge") if qwen and "shortest_edge" in size else None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def set_max_pixels(image_processor, pixels: int) -> None:
    """Resize images to at most ``pixels`` pixels (a dynamic-resolution image processor; the least stays at most
    that)."""
    least = min(int(getattr(image_processor, "min_pixels", None) or image_processor.size.get("shortest_edge", pixels)),
                pixels)
    image_processor.size = {"shortest_edge": least, "longest_edge": pixels}
    for attr, value in (("max_pixels", pixels), ("min_pixels", least)):
        if hasattr(image_processor, attr):
            setattr(image_processor, attr, value)


def write_max_pixels(folder: str | os.PathLike, pixels: int) -> None:
    """The same in a model folder's processor files (a merged model serves at the resolution it was trained at)."""
    for name in ("preprocessor_config.json", "processor_config.json"):
        path = Path(folder) / name
        try:
            cfg = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        inner = cfg.get("image_processor", cfg)
        least = min(int(inner.get("min_pixels") or (inner.get("size") or {}).get("shortest_edge", pixels)), pixels)
        if "max_pixels" in inner:
            inner["max_pixels"], inner["min_pixels"] = pixels, least
        if isinstance(inner.get("size"), dict) and "longest_edge" in inner["size"]:
            inner["size"] = {"shortest_edge": least, "longest_edge": pixels}
        path.write_text(json.dumps(cfg, indent=2))


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


# the projector (aligner) between the tower and the language model: its own module, or inside the tower (Qwen2-VL's
# ``visual.merger``)
PROJECTOR_PARTS = ("multi_modal_projector", "mm_projector", "merger", "deepstack_merger_list", "connector",
                   "embed_vision", "embed_audio")


def is_vision_module(name: str) -> bool:
    return any(part in VISION_PARTS for part in name.split("."))


def vision_part(name: str) -> str | None:
    """"projector" for the projector's modules and parameters, "tower" for the rest of the vision (or audio) side,
    None for the language model."""
    parts = name.split(".")
    if not any(p in VISION_PARTS for p in parts):
        return None
    return "projector" if any(p in PROJECTOR_PARTS for p in parts) else "tower"


def projector_modules(model) -> list[str]:
    """The projector's outermost modules' names (peft ``modules_to_save``: trained whole, saved with the adapter)."""
    names = [n for n, _ in model.named_modules() if n and vision_part(n) == "projector"]
    return [n for n in names if not any(n.startswith(o + ".") for o in names)]


def language_targets(model, targets: str, tower: bool = False) -> str:
    """peft ``target_modules`` for LoRA on the language model: a regex over module names that matches the chosen
    linear layers (``"all-linear"``: every nn.Linear of the language model but its output head; else the
    comma-separated names) and none of the projector; of the vision tower none, or with ``tower`` every linear
    layer (its names differ from the language model's)."""
    import torch

    if tower:
        lm = re.compile(language_targets(model, targets))
        names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)
                 and (lm.fullmatch(n) or vision_part(n) == "tower")]
        return "^(" + "|".join(re.escape(n) for n in names) + ")$"
    if targets == "all-linear":
        names = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                        if isinstance(m, torch.nn.Linear) and not is_vision_module(n) and not n.endswith("lm_head")})
    else:
        names = [t.strip() for t in targets.split(",") if t.strip()]
    parts = "|".join(re.escape(p) for p in VISION_PARTS)
    return rf"^(?!.*\.({parts})\.)(?!({parts})\.).*\.({'|'.join(re.escape(n) for n in names)})$"


def tower_out_of_backward(model) -> None:
    """Keep a frozen vision tower out of the backward pass under activation checkpointing (or LoRA).

    transformers' ``enable_input_require_grads`` (called by peft and by ``gradient_checkpointing_enable``) hooks the
    input embeddings of every sub-model, the vision tower's patch embedding included: the frozen tower's output then
    requires grad, so it keeps its blocks' inputs and runs a backward that changes nothing (measured on an H200: up
    to 1.6 GiB per 2016² image on Qwen2.5-VL, bench/results/2026-12-02-memory-vlm-h200.md). This wraps the model's
    ``enable_input_require_grads`` so that, each time it is called, the hooks on the tower's modules are removed;
    the text embeddings keep theirs (checkpointed decoder layers need a grad-requiring input), a trainable
    projector keeps its own parameters' gradients."""
    original = model.enable_input_require_grads
    tower = [m for n, m in model.named_modules() if vision_part(n) == "tower"]

    def drop() -> None:
        kept = []
        for handle in getattr(model, "_require_grads_hooks", None) or []:
            if any(handle.id in m._forward_hooks for m in tower):
                handle.remove()
            else:
                kept.append(handle)
        model._require_grads_hooks = kept

    def enable() -> None:
        original()
        drop()

    drop()  # hooks an earlier call left (QLoRA's prepare_model_for_kbit_training)
    model.enable_input_require_grads = enable


def freeze_vision(model, tower: bool = True, projector: bool = True) -> int:
    """Freeze the vision tower and/or the projector (a full fine-tune then trains the rest). Returns the number of
    parameters frozen."""
    frozen = {"tower"} if tower else set()
    frozen |= {"projector"} if projector else set()
    n = 0
    for name, p in model.named_parameters():
        if vision_part(name) in frozen:
            p.requires_grad_(False)
            n += p.numel()
    return n
