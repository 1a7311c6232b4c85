"""The embedded tiny vision-language models (issue 22): real-format checkpoints built offline in seconds.

The demo's model (``family="llava"``, :data:`REPO_ID`): a LLaVA — CLIP vision tower, a two-layer projector and a
Qwen2 language model — as transformers builds ``LlavaForConditionalGeneration``:

1. a byte-level BPE tokenizer (as the tiny text model's) trained on generic text plus the shapes questions and
   answers (so "red", "circle", … are single tokens), with an ``<image>`` token;
2. a chat template: a message's content is a string or a list of ``{"type": "image"}`` / ``{"type": "text", …}``
   entries, an image rendered as ``<image>``, which the processor expands into 16 image tokens;
3. CLIP's image processor (the PIL one: no torchvision needed) at 56 × 56 pixels: 16 patches of 14 plus CLS;
4. a text model of hidden size 64 (2 layers, 4 heads, 2 KV heads) and a one-layer vision tower of width 32;
5. **pre-trained** for :data:`PRETRAIN_STEPS` steps (the whole model, ~20 s on 2 cores) to caption the shapes images
   ("Describe the image." → "a red circle"), so its vision side has learned what a fine-tune of the language model
   then uses — as a real VLM's has. It was never asked the demo's questions: the base answers them with a caption or
   worse, the fine-tune in one word.

``family="qwen2_vl"``: a Qwen2-VL of the same text size with random weights (no pre-training), for the tests of the
Qwen2-VL path (its processor without torchvision, M-RoPE).

The CPU image stack (checked 2026-12-02, torch 2.13.0+cpu, transformers 5.24): the registry's torchvision wheels
(0.28.0 pins torch 2.13.0) are CUDA builds that fail to load against the CPU torch ("operator torchvision::nms does
not exist"; ``_C.so`` needs libc10_cuda). Without torchvision, transformers falls back to the PIL image processors,
but ``Qwen2VLProcessor``'s constructor looks up a video-processor class that needs torchvision and raises, so
``AutoProcessor`` (and with it ``transformers serve``) cannot load a Qwen2-VL folder here; ``load_processor``
(recipes/model/vision.py) gives the trainer the same processor without the video part. LLaVA's processor has no
video part: ``AutoProcessor`` and ``transformers serve`` load it on this stack, hence the demo's choice. The GPU
image has torchvision 0.26.0 (bench/results/2026-12-02-gpu-image-probe.txt).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

REPO_ID = "yichui/tiny-llava-shapes"
QWEN2_VL_REPO_ID = "yichui/tiny-qwen2-vl-shapes"
BUILD_VERSION = 2  # bump when the recipe below changes
PRETRAIN_STEPS = 300
CAPTION_PROMPT = "Describe the image."
IMAGE = "<image>"
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
TEXT_LLAVA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=1024)
VISION_LLAVA = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, patch_size=14,
                    projection_dim=32)


def _tokenizer(image_tokens: list[str]):
    from recipes.data import shapes
    from recipes.demo import tiny_model as tiny

    # the answers often enough that BPE merges each into one token (one token: one decision per answer)
    vqa = [" ".join(shapes.QUESTIONS.values()) + " " + CAPTION_PROMPT] * 500 \
        + ["\n".join(list(shapes.COLOURS) + list(shapes.SHAPES))] * 3000
    tok = tiny._train_tokenizer(tiny._generic_corpus() + vqa)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", *image_tokens]})
    return tok


def _template(image: str) -> str:
    return CHAT_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", image)


def build(dest: str | os.PathLike, family: str = "llava", pretrain_steps: int = PRETRAIN_STEPS,
          on_step=None) -> Path:
    """Build a tiny VLM into ``dest`` (must not exist; written atomically): ``family`` "llava" (the demo's,
    pre-trained ``pretrain_steps`` steps to caption shapes; ``on_step(step, loss)`` follows them) or "qwen2_vl"
    (random weights). Returns ``dest`` holding config.json, model.safetensors, tokenizer files, the chat template,
    processor_config.json and yichui_build.json.

    Raises:
        ValueError: an unknown family.
    """
    import torch

    if family not in ("llava", "qwen2_vl"):
        raise ValueError(f"unknown tiny VLM family {family!r}")
    dest = Path(dest)
    torch.manual_seed(0)
    model, processor = _llava() if family == "llava" else _qwen2_vl()
    losses = _pretrain(model, processor, pretrain_steps, on_step) if family == "llava" else []
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-vlm-", dir=dest.parent))
    try:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        if family == "qwen2_vl":
            standard_qwen2_vl_files(tmp)
        (tmp / "yichui_build.json").write_text(json.dumps({
            "repo_id": REPO_ID if family == "llava" else QWEN2_VL_REPO_ID, "build_version": BUILD_VERSION,
            "family": family, "pretrain_steps": pretrain_steps if family == "llava" else 0,
            "final_loss": round(losses[-1], 4) if losses else None}))
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _generation_config(tok):
    from transformers import GenerationConfig

    end, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    return GenerationConfig(eos_token_id=[end, pad], pad_token_id=pad, do_sample=False, max_new_tokens=8)


def _llava():
    from transformers import CLIPImageProcessorPil, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    from recipes.data import shapes

    tok = _tokenizer([IMAGE])
    template = _template(IMAGE)
    tok.chat_template = template
    end, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    special = dict(bos_token_id=None, eos_token_id=end, pad_token_id=pad)
    text = dict(model_type="qwen2", vocab_size=len(tok), tie_word_embeddings=True, **TEXT_LLAVA, **special)
    vision = dict(model_type="clip_vision_model", image_size=shapes.SIZE, **VISION_LLAVA)
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids(IMAGE),
                         vision_feature_select_strategy="default", vision_feature_layer=-1, tie_word_embeddings=True,
                         **special)
    model = LlavaForConditionalGeneration(config)
    model.generation_config = _generation_config(tok)
    image = CLIPImageProcessorPil(size={"shortest_edge": shapes.SIZE},
                                  crop_size={"height": shapes.SIZE, "width": shapes.SIZE})
    processor = LlavaProcessor(image_processor=image, tokenizer=tok, patch_size=VISION_LLAVA["patch_size"],
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=template, image_token=IMAGE)
    return model, processor


def _pretrain(model, processor, steps: int, on_step=None, batch: int = 16) -> list[float]:
    """Caption pre-training of the whole model on freshly rendered shapes (a new random batch each step: no image is
    seen twice), loss on the caption's tokens only; AdamW with a one-cycle schedule peaking at 3e-3. Returns the
    losses."""
    import random

    import torch

    from recipes.data import shapes

    rng = random.Random(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=max(steps, 1), pct_start=0.1)
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": CAPTION_PROMPT}]}]
    head = processor.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    model.train()
    losses = []
    for step in range(1, steps + 1):
        pairs = [(rng.choice(list(shapes.COLOURS)), rng.choice(shapes.SHAPES)) for _ in range(batch)]
        images = [shapes.render(c, s, rng) for c, s in pairs]
        texts = [head + f"a {c} {s}<|im_end|>\n" for c, s in pairs]
        enc = processor(text=texts, images=images, return_tensors="pt", padding=True, padding_side="right")
        n_head = len(processor(text=[head], images=images[:1])["input_ids"][0])  # the same prompt for every record
        labels = enc["input_ids"].clone()
        labels[:, :n_head] = -100
        labels[enc["attention_mask"] == 0] = -100
        loss = model(**enc, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        losses.append(float(loss.detach()))
        if on_step:
            on_step(step, losses[-1])
    model.eval()
    return losses


def _qwen2_vl():
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLImageProcessorPil

    from recipes.model.vision import _image_text_processor_class

    tok = _tokenizer(VISION_TOKENS)
    tok.chat_template = CHAT_TEMPLATE
    ids = {t: tok.convert_tokens_to_ids(t) for t in VISION_TOKENS + ["<|im_end|>", "<|endoftext|>"]}
    special = dict(bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    config = Qwen2VLConfig(text_config=dict(vocab_size=len(tok), **TEXT_SHAPE, **special), vision_config=VISION_SHAPE,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                           tie_word_embeddings=True, **special)
    model = Qwen2VLForConditionalGeneration(config)
    model.generation_config = _generation_config(tok)
    processor = _image_text_processor_class()(
        image_processor=Qwen2VLImageProcessorPil(min_pixels=PIXELS, max_pixels=PIXELS), tokenizer=tok,
        chat_template=CHAT_TEMPLATE)
    return model, processor


def standard_qwen2_vl_files(folder: Path) -> None:
    """The standard processor class and a video processor's settings (the image's) in the files, so AutoProcessor
    builds the whole Qwen2VLProcessor where torchvision loads."""
    cfg = json.loads((folder / "processor_config.json").read_text())
    video = {k: v for k, v in cfg["image_processor"].items() if k != "image_processor_type"}
    cfg |= {"processor_class": "Qwen2VLProcessor", "video_processor": video | {
        "video_processor_type": "Qwen2VLVideoProcessor"}}
    (folder / "processor_config.json").write_text(json.dumps(cfg, indent=2))
    tok_cfg = json.loads((folder / "tokenizer_config.json").read_text())
    if "processor_class" in tok_cfg:
        tok_cfg["processor_class"] = "Qwen2VLProcessor"
        (folder / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2))
