"""Issue 22, first slice: the embedded tiny vision-language model and the bundled shapes data, on the CPU stack.

Real components: the tiny Qwen2-VL checkpoint built offline (recipes/demo/tiny_vlm.py), its processor (the chat
template with an image entry, 4 image tokens per 56 × 56 image), the rendered shapes data (recipes/data/shapes.py),
and a short plain torch training of the whole model on it: the answer must come from the image — held-out accuracy
above chance (1/3) — which is what the issue's demo acceptance will rest on.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

SIZE_SQ = 56 * 56


@pytest.fixture(scope="module")
def vlm(tmp_path_factory):
    from recipes.demo import tiny_vlm

    path = tiny_vlm.build(tmp_path_factory.mktemp("tiny-vlm") / "model", family="qwen2_vl")
    from recipes.model.vision import load_processor

    return path, load_processor(path)


def test_shapes_data_is_deterministic_and_the_answer_is_in_the_image(tmp_path):
    from recipes.data import shapes

    a, b = shapes.build(tmp_path / "a", 18, seed=3), shapes.build(tmp_path / "b", 18, seed=3)
    assert a.read_text() == b.read_text()
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes()
               for p in sorted(x.relative_to(tmp_path / "a") for x in (tmp_path / "a" / "images").glob("*.png")))
    recs = [json.loads(x) for x in a.read_text().splitlines()]
    assert len(recs) == 36  # two questions per image
    assert all(len(r["images"]) == 1 and (tmp_path / "a" / r["images"][0]).is_file() for r in recs)
    colour_answers = [r["messages"][1]["content"] for r in recs if "colour" in r["messages"][0]["content"][1]["text"]]
    assert sorted(set(colour_answers)) == sorted(shapes.COLOURS)  # one question, every answer: only the image tells
    assert all(colour_answers.count(c) == 6 for c in shapes.COLOURS)  # balanced: chance is 1/3
    # the pixels carry the answer: the commonest non-background colour is the record's colour
    from PIL import Image

    for r in recs[::2]:
        img = Image.open(tmp_path / "a" / r["images"][0]).convert("RGB")
        counts = sorted((n, c) for n, c in img.getcolors(SIZE_SQ) if c != (245, 245, 245))
        colour = next(name for name, rgb in shapes.COLOURS.items() if rgb == counts[-1][1])
        assert colour in {x["messages"][1]["content"] for x in recs if x["images"] == r["images"]}


def test_processor_renders_an_image_turn(vlm):
    from recipes.data import shapes

    _, proc = vlm
    img = shapes.render("red", "circle", random.Random(0))
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": shapes.QUESTIONS["colour"]}]}]
    text = proc.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    batch = proc(text=[text], images=[img], return_tensors="pt")
    pad = proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert int((batch["input_ids"] == pad).sum()) == 4  # 16 patches of 14 px merged 2 × 2
    assert tuple(batch["image_grid_thw"][0].tolist()) == (1, 4, 4)
    for word in list(shapes.COLOURS) + list(shapes.SHAPES):  # one token per answer, the word's own
        assert proc.tokenizer(word)["input_ids"] == [proc.tokenizer.convert_tokens_to_ids(word)], word
    # the files name the standard processor and carry a video processor's settings: AutoProcessor builds the whole
    # Qwen2VLProcessor where torchvision loads (not here)
    from transformers.video_processing_utils import BaseVideoProcessor

    path, _ = vlm
    video, _ = BaseVideoProcessor.get_video_processor_dict(str(path))
    assert video["video_processor_type"] == "Qwen2VLVideoProcessor"
    assert json.loads((path / "processor_config.json").read_text())["processor_class"] == "Qwen2VLProcessor"


def _train(spec: dict, tdir) -> list[dict]:
    """yichui's trainer (recipes/training/worker.py, its own process) on ``spec``; its events."""
    import subprocess
    import sys

    from recipes import jobs
    from recipes.training.spec import TrainerJob

    tdir.mkdir(parents=True, exist_ok=True)
    TrainerJob.from_dict(spec | {"device": "cpu", "seq_len": 256, "lr_scheduler": "constant",
                                 "sample_question": None}).write(tdir / "spec.json")
    p = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(tdir / "spec.json")],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return jobs.read_events(tdir / "events.jsonl")[0]


@pytest.mark.slow
def test_the_trainer_fine_tunes_the_language_side_of_a_vision_language_model(vlm, tmp_path):
    """The same trainer on image-text records: the model loads as image-text-to-text with its processor, LoRA adapts
    the language model's linear layers and none of the vision tower's, the loss falls, the adapter folder holds the
    processor's files; a full fine-tune leaves the vision tower's weights as they were (frozen by default)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    from recipes.data import shapes

    model_dir, _ = vlm
    data_path = shapes.build(tmp_path / "data", 18)
    evs = _train({"model_dir": str(model_dir), "dataset_path": str(data_path), "method": "lora", "lora_rank": 16,
                  "lora_alpha": 32, "lora_dropout": 0.0, "max_steps": 12, "save_steps": 6, "micro_batch": 4,
                  "learning_rate": 5e-3}, tmp_path / "lora")
    losses = [e["loss"] for e in evs if e["event"] == "step"]
    assert len(losses) == 12 and sum(losses[-3:]) < sum(losses[:3])
    adapter = tmp_path / "lora" / "adapter"
    keys = list(safe_open(str(adapter / "adapter_model.safetensors"), "pt").keys())
    assert keys and all("language_model" in k for k in keys)
    assert {k.split(".")[-3] for k in keys} == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                "down_proj"}
    assert (adapter / "processor_config.json").is_file() and (adapter / "chat_template.jinja").is_file()

    # text records on the same model (its config has a vision part; transformers builds no causal LM of it)
    from recipes.data.datasets import bundled_dataset_path

    evs = _train({"model_dir": str(model_dir), "dataset_path": f"{bundled_dataset_path()}#16", "method": "lora",
                  "max_steps": 2, "save_steps": 2, "micro_batch": 4}, tmp_path / "text")
    assert [e["step"] for e in evs if e["event"] == "step"] == [1, 2]

    _train({"model_dir": str(model_dir), "dataset_path": str(data_path), "method": "full", "max_steps": 4,
            "save_steps": 4, "micro_batch": 4, "learning_rate": 3e-3, "master_weights": "bf16"}, tmp_path / "full")
    before, after = load_file(model_dir / "model.safetensors"), load_file(tmp_path / "full" / "adapter" / "model.safetensors")
    vision = [k for k in before if "visual" in k]
    assert vision and all((before[k] == after[k]).all() for k in vision)
    assert any(not (before[k] == after[k]).all() for k in before if "visual" not in k)  # the language model trained


@pytest.mark.slow
def test_the_vision_side_trains_when_chosen(vlm, tmp_path):
    """freeze_vision_tower / freeze_projector off: LoRA also on the tower's linear layers and the projector (Qwen2-VL's
    ``visual.merger``) trained whole and saved with the adapter; a full fine-tune with only the projector unfrozen
    changes the projector and not the tower."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    from recipes.data import shapes

    model_dir, _ = vlm
    data_path = shapes.build(tmp_path / "data", 9)
    _train({"model_dir": str(model_dir), "dataset_path": str(data_path), "method": "lora", "max_steps": 2,
            "save_steps": 2, "micro_batch": 4, "freeze_vision_tower": False, "freeze_projector": False},
           tmp_path / "lora")
    keys = list(safe_open(str(tmp_path / "lora" / "adapter" / "adapter_model.safetensors"), "pt").keys())
    assert any(".visual.blocks." in k and "lora_A" in k for k in keys), keys  # LoRA on the tower
    assert any(".visual.merger." in k and "lora" not in k for k in keys), keys  # the projector whole
    assert any(".language_model." in k and "lora_A" in k for k in keys)

    _train({"model_dir": str(model_dir), "dataset_path": str(data_path), "method": "full", "max_steps": 2,
            "save_steps": 2, "micro_batch": 4, "learning_rate": 3e-3, "master_weights": "bf16",
            "freeze_projector": False}, tmp_path / "full")
    before, after = load_file(model_dir / "model.safetensors"), load_file(tmp_path / "full" / "adapter" / "model.safetensors")
    changed = {k for k in before if not (before[k] == after[k]).all()}
    assert any(".merger." in k for k in changed), sorted(changed)[:10]
    assert not any("visual" in k and ".merger." not in k for k in changed), sorted(changed)[:10]


def test_the_image_resolution_is_chosen_and_kept(vlm, tmp_path):
    """A dynamic-resolution processor's most pixels per image: read from the folder, set on the processor (fewer
    image tokens) and written into a copy's processor files (what a merged model is served with)."""
    import shutil

    from recipes.data import shapes
    from recipes.model import vision

    path, proc = vlm
    assert vision.max_pixels(path) == 56 * 56
    ip = proc.image_processor
    before = {k: getattr(ip, k) for k in ("size", "min_pixels", "max_pixels") if hasattr(ip, k)}
    vision.set_max_pixels(proc.image_processor, 28 * 28)
    try:
        msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]}]
        text = proc.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        batch = proc(text=[text], images=[shapes.render("red", "circle", random.Random(0))], return_tensors="pt")
        assert int((batch["input_ids"] == proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")).sum()) == 1
    finally:  # the module's processor as it was, for the other tests
        for k, v in before.items():
            setattr(ip, k, v)
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    vision.write_max_pixels(copy, 28 * 28)
    assert vision.max_pixels(copy) == 28 * 28
    assert vision.load_processor(copy).image_processor.size["longest_edge"] == 28 * 28


def test_a_frozen_tower_stays_out_of_the_backward_pass(vlm):
    """With activation checkpointing on, transformers hooks every sub-model's input embeddings to require grad, the
    vision tower's too: its output would then require grad and keep activations for a backward that changes nothing.
    After tower_out_of_backward it does not; the language model's embeddings still do; the projector trains."""
    from transformers import Qwen2VLForConditionalGeneration

    from recipes.data import shapes
    from recipes.model import vision

    path, proc = vlm
    seen = {}

    def run(model) -> None:
        blocks = model.model.visual.blocks
        h1 = blocks[-1].register_forward_hook(lambda m, i, o: seen.__setitem__("tower", o.requires_grad))
        h2 = model.model.visual.merger.register_forward_hook(lambda m, i, o: seen.__setitem__("merger", o.requires_grad))
        msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]}]
        text = proc.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        batch = proc(text=[text], images=[shapes.render("red", "circle", random.Random(0))], return_tensors="pt")
        model.train()
        model(**batch, labels=batch["input_ids"]).loss.backward()
        h1.remove()
        h2.remove()

    model = Qwen2VLForConditionalGeneration.from_pretrained(path)
    model.requires_grad_(False)
    model.gradient_checkpointing_enable()
    run(model)
    assert seen["tower"] is True  # the waste this guards against: transformers' hook on the tower's patch embedding

    model = Qwen2VLForConditionalGeneration.from_pretrained(path)
    model.requires_grad_(False)
    model.model.visual.merger.requires_grad_(True)  # a projector that trains
    vision.tower_out_of_backward(model)
    model.gradient_checkpointing_enable()
    run(model)
    assert seen == {"tower": False, "merger": True}
    assert all(p.grad is not None for p in model.model.visual.merger.parameters())
    assert model.get_input_embeddings()._forward_hooks  # the text embeddings' hook stays


def test_a_local_vlm_folder_needs_its_processor(vlm, tmp_path):
    import shutil

    from recipes.select_model import incomplete

    path, _ = vlm
    assert incomplete(path) == []
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    (copy / "processor_config.json").unlink()
    assert incomplete(copy) == ["image processor (preprocessor_config.json)"]


@pytest.mark.slow
def test_the_merge_uses_the_trained_class_and_refuses_an_adapter_it_cannot_place(vlm, tmp_path):
    """The trainer says which class it trained beside the adapter; the export's merge loads the base with it, and an
    adapter tensor that finds no module (another class or architecture) stops the merge instead of vanishing."""
    import json as json_

    from safetensors.torch import load_file, save_file

    from recipes.base import StepError
    from recipes.data import shapes
    from recipes.export import merge
    from recipes.model.vision import MODEL_CLASS_FILE

    model_dir, _ = vlm
    _train({"model_dir": str(model_dir), "dataset_path": str(shapes.build(tmp_path / "data", 9)), "method": "lora",
            "max_steps": 2, "save_steps": 2, "micro_batch": 4, "learning_rate": 1e-2}, tmp_path / "lora")
    adapter = tmp_path / "lora" / "adapter"
    assert json_.loads((adapter / MODEL_CLASS_FILE).read_text()) == {"image_text": True}
    check = merge(str(model_dir), str(adapter), "lora", tmp_path / "merged", "float32")
    assert check is not None and (tmp_path / "merged" / "processor_config.json").is_file()
    tensors = load_file(adapter / "adapter_model.safetensors")
    key = next(iter(tensors))
    tensors[key.replace("language_model", "text_only_model")] = tensors[key].clone()
    save_file(tensors, adapter / "adapter_model.safetensors")
    with pytest.raises(StepError) as e:
        merge(str(model_dir), str(adapter), "lora", tmp_path / "merged2", "float32")
    assert e.value.msg.key == "export.adapter_mismatch" and e.value.msg.args["n"] == 1


def test_the_smoke_copy_cuts_the_vision_tower_where_its_blocks_are_known():
    """The preflight copy of a VLM cuts the tower too (Qwen2.5-VL-3B's copy kept a 670 M-parameter tower: 126.6 s of
    smoke test on the H200, bench/results/2026-12-02-vlm-chain-h200.md), keeping it buildable: Qwen2.5-VL's
    full-attention blocks and Qwen3-VL's deepstack blocks point inside the cut tower, LLaVA's CLIP still has the
    layer it is read at, and a tower whose block settings are unknown (Llama-3.2-Vision's) keeps its depth."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    from recipes.training.preflight import two_layer_config

    q25 = json.loads((Path(__file__).parent.parent / "bench" / "configs" / "qwen2.5-vl-3b" / "config.json").read_text())
    cut = two_layer_config(q25)
    assert cut["num_hidden_layers"] == 2 and cut["vision_config"]["depth"] == 2
    assert cut["vision_config"]["fullatt_block_indexes"] == [1]  # [7, 15, 23, 31] point past the cut
    q3 = two_layer_config({"vision_config": {"depth": 27, "deepstack_visual_indexes": [8, 16, 24]},
                           "text_config": {"num_hidden_layers": 36}})
    assert q3["vision_config"] == {"depth": 3, "deepstack_visual_indexes": [0, 1, 2]}
    llava = two_layer_config({"vision_config": {"model_type": "clip_vision_model", "num_hidden_layers": 24},
                              "text_config": {"num_hidden_layers": 32}, "vision_feature_layer": -2})
    assert llava["vision_config"]["num_hidden_layers"] == 2
    deep_read = two_layer_config({"vision_config": {"model_type": "clip_vision_model", "num_hidden_layers": 24},
                                  "vision_feature_layer": [-2, -5, -8]})
    assert deep_read["vision_config"]["num_hidden_layers"] == 8  # index -8 needs 7 blocks before it
    mllama = {"model_type": "mllama_vision_model", "num_hidden_layers": 32, "intermediate_layers_indices": [3, 7]}
    assert two_layer_config({"vision_config": mllama, "text_config": {"num_hidden_layers": 40}})["vision_config"] \
        == mllama
    # the cut Qwen2.5-VL config builds and runs an image (narrowed so that it builds in a second on a CPU)
    small = dict(cut, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                 vocab_size=151936, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                 vision_config=dict(cut["vision_config"], hidden_size=32, intermediate_size=64, num_heads=2,
                                    out_hidden_size=64))
    config = AutoConfig.for_model(**small)
    model = AutoModelForImageTextToText.from_config(config)
    assert len(model.model.visual.blocks) == 2
    patches = torch.randn(16, 3 * 2 * 14 * 14)  # one 56 × 56 image: 4 × 4 patches of 14, 2 frames
    ids = torch.tensor([[q25["vision_start_token_id"], *[q25["image_token_id"]] * 4, q25["vision_end_token_id"], 9]])
    out = model(input_ids=ids, pixel_values=patches, image_grid_thw=torch.tensor([[1, 4, 4]]))
    assert out.logits.shape == (1, 7, 151936) and torch.isfinite(out.logits).all()
