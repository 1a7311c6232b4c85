"""The embedded tiny chat model that `yichui demo` and the tests fine-tune.

A real-format Qwen2 checkpoint (safetensors, fast BPE tokenizer, ChatML chat template, generation config) built
offline and deterministically in seconds on a CPU:

1. a byte-level BPE tokenizer trained with `tokenizers` on generic English text (the Python documentation topics
   that ship with every CPython, ``pydoc_data.topics``) plus the demo instructions;
2. a `Qwen2Config` of hidden size 128, 2 layers, 4 attention heads, 2 KV heads (GQA), about 0.7 M parameters;
3. a short causal-LM pre-training on the generic text only, so the model babbles documentation prose before
   fine-tuning and answers in the style of the demo dataset after it.

Heavy imports (torch, transformers, tokenizers) happen inside :func:`build`.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

REPO_ID = "yichui/tiny-qwen2-chat"
BUILD_VERSION = 1  # bump when the recipe below changes: the cache key includes it
SYSTEM_PROMPT = "You are a helpful assistant."
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# ChatML, as Qwen2 uses it; a default system prompt is inserted when the conversation has none.
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' %}"
    "{{- '<|im_start|>system\\n" + SYSTEM_PROMPT + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

MODEL_SHAPE = dict(hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=512)
VOCAB_SIZE = 2048


def _generic_corpus() -> list[str]:
    from pydoc_data.topics import topics  # ships with CPython: offline and stable for a Python version

    return [topics[k] for k in sorted(topics)]


def _instruction_texts() -> list[str]:
    from recipes.data.datasets import bundled_dataset_path, load_records

    return [" ".join(m["content"] for m in r) for r in load_records(bundled_dataset_path())]


def _train_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=["<|im_start|>"], model_max_length=512)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _pretrain(model, tokenizer, texts: list[str], steps: int, seq: int = 128, batch: int = 16,
              on_step: Callable[[int, float], None] | None = None) -> list[float]:
    import torch

    ids = tokenizer("\n\n".join(texts), add_special_tokens=False)["input_ids"]
    data = torch.tensor(ids[: (len(ids) // seq) * seq]).view(-1, seq)
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps, pct_start=0.1)
    losses = []
    model.train()
    for _ in range(steps):
        rows = data[torch.randint(0, data.shape[0], (batch,), generator=gen)]
        loss = model(input_ids=rows, labels=rows).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if on_step is not None:
            on_step(len(losses), losses[-1])
    model.eval()
    return losses


def build(dest: str | os.PathLike, pretrain_steps: int = 300,
          on_step: Callable[[int, float], None] | None = None) -> Path:
    """Build the tiny model into ``dest`` (written atomically: a temp folder renamed at the end).

    Args:
        dest: target directory; must not exist yet.
        pretrain_steps: causal-LM steps on the generic corpus (micro-batch 16 × 128 tokens).
        on_step: called with (step, loss) after each pre-training step (the demo's progress bar: the build takes
            ~30 s on 2 idle cores, many minutes on a busy machine).

    Returns:
        ``dest`` as a Path, holding config.json, model.safetensors, tokenizer files, chat_template.jinja,
        generation_config.json and yichui_build.json (build version and pre-training losses).
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    dest = Path(dest)
    torch.manual_seed(0)
    generic = _generic_corpus()
    tokenizer = _train_tokenizer(generic + _instruction_texts())
    eos_ids = [tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    config = Qwen2Config(vocab_size=len(tokenizer), tie_word_embeddings=True, rope_theta=10000.0,
                         bos_token_id=None, eos_token_id=eos_ids[0], pad_token_id=eos_ids[1], **MODEL_SHAPE)
    model = Qwen2ForCausalLM(config)
    losses = _pretrain(model, tokenizer, generic, pretrain_steps, on_step=on_step)
    model.generation_config = GenerationConfig(eos_token_id=eos_ids, pad_token_id=eos_ids[1], do_sample=False,
                                               max_new_tokens=64)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=dest.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "yichui_build.json").write_text(json.dumps(
            {"repo_id": REPO_ID, "build_version": BUILD_VERSION, "pretrain_steps": pretrain_steps,
             "pretrain_loss_first": round(losses[0], 4), "pretrain_loss_last": round(losses[-1], 4)}, indent=2))
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
