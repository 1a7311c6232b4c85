"""The embedded tiny vision-language model (issue 22): a real-format Qwen2-VL checkpoint built offline in seconds.

1. a byte-level BPE tokenizer (as the tiny text model's) trained on generic text plus the shapes questions and
   answers (so "red", "circle", … are single tokens), with Qwen2-VL's vision tokens;
2. a Qwen2-VL chat template: a message's content is a string or a list of ``{"type": "image"}`` /
   ``{"type": "text", "text": …}`` entries, an image rendered as ``<|vision_start|><|image_pad|><|vision_end|>``;
3. Qwen2-VL's image processor at 56 × 56 pixels (``min_pixels = max_pixels``): 16 patches of 14, merged 2 × 2
   into 4 image tokens per image;
4. a ``Qwen2VLConfig`` of text hidden size 64 (2 layers, 4 heads, 2 KV heads) and a one-block vision tower of
   width 32; random weights (about 0.3 M parameters).

The CPU image stack (checked 2026-12-02, torch 2.13.0+cpu, transformers 5.24): the registry's torchvision wheels
(0.28.0 pins torch 2.13.0) are CUDA builds that fail to load against the CPU torch ("operator torchvision::nms does
not exist"); without torchvision, transformers falls back to the PIL image processor, but ``Qwen2VLProcessor``'s
constructor looks up a video-processor class that is not there and raises. ``load_processor`` (recipes/training/
vision.py) therefore uses
``AutoProcessor`` where it loads and otherwise :class:`ImageTextProcessor`, the same processor without the video
part; the files written are the standard ones either way (``AutoProcessor`` reads them on a GPU machine).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

REPO_ID = "yichui/tiny-qwen2-vl-shapes"
BUILD_VERSION = 1  # bump when the recipe below changes
VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
PIXELS = 56 * 56
CHAT_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- else %}"
    "{%- for c in message['content'] %}"
    "{%- if c['type'] == 'image' %}{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif c['type'] == 'text' %}{{- c['text'] }}{%- endif %}"
    "{%- endfor %}{%- endif %}{{- '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
TEXT_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=1024,
                  rope_scaling={"type": "mrope", "mrope_section": [4, 2, 2]})  # head dim 16: 8 rotary pairs
VISION_SHAPE = dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=14,
                    spatial_merge_size=2, temporal_patch_size=2, in_channels=3)


def _tokenizer():
    from recipes.data import shapes
    from recipes.demo import tiny_model as tiny

    # the answers often enough that BPE merges each into one token (one token: one decision per answer)
    vqa = [" ".join(shapes.QUESTIONS.values())] * 500 + ["\n".join(list(shapes.COLOURS) + list(shapes.SHAPES))] * 3000
    tok = tiny._train_tokenizer(tiny._generic_corpus() + vqa)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", *VISION_TOKENS]})
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build(dest: str | os.PathLike) -> Path:
    """Build the tiny VLM into ``dest`` (must not exist; written atomically). Returns ``dest`` holding config.json,
    model.safetensors, tokenizer files, chat_template.jinja, processor_config.json and yichui_build.json."""
    import torch
    from transformers import GenerationConfig, Qwen2VLConfig, Qwen2VLForConditionalGeneration, \
        Qwen2VLImageProcessorPil

    dest = Path(dest)
    torch.manual_seed(0)
    tok = _tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in VISION_TOKENS + ["<|im_end|>", "<|endoftext|>"]}
    special = dict(bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    config = Qwen2VLConfig(text_config=dict(vocab_size=len(tok), **TEXT_SHAPE, **special), vision_config=VISION_SHAPE,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                           tie_word_embeddings=True, **special)
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config = GenerationConfig(eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]],
                                               pad_token_id=ids["<|endoftext|>"], do_sample=False, max_new_tokens=8)
    from recipes.training.vision import _image_text_processor_class

    processor = _image_text_processor_class()(
        image_processor=Qwen2VLImageProcessorPil(min_pixels=PIXELS, max_pixels=PIXELS), tokenizer=tok,
        chat_template=CHAT_TEMPLATE)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-vlm-", dir=dest.parent))
    try:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        # the standard class and a video processor's settings (the image's), so AutoProcessor builds the whole
        # processor where torchvision exists — not checked here (no torchvision on this CPU stack)
        cfg = json.loads((tmp / "processor_config.json").read_text())
        video = {k: v for k, v in cfg["image_processor"].items() if k != "image_processor_type"}
        cfg |= {"processor_class": "Qwen2VLProcessor", "video_processor": video | {
            "video_processor_type": "Qwen2VLVideoProcessor"}}
        (tmp / "processor_config.json").write_text(json.dumps(cfg, indent=2))
        tok_cfg = json.loads((tmp / "tokenizer_config.json").read_text())
        if "processor_class" in tok_cfg:
            tok_cfg["processor_class"] = "Qwen2VLProcessor"
            (tmp / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2))
        (tmp / "yichui_build.json").write_text(json.dumps({"repo_id": REPO_ID, "build_version": BUILD_VERSION}))
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
