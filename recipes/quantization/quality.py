"""Is the exported artifact still the model? Compare it with the merged reference on held-out texts.

Figures (per artifact):
    kl_mean     mean over every scored position of KL(P_ref || P_art) of the next-token distributions, in nats
                (the metric llama.cpp's ``perplexity --kl-divergence`` reports for quantized GGUFs);
    ppl, ppl_reference, ppl_ratio
                perplexity exp(mean negative log-likelihood of each next token) of the artifact and of the
                reference on the same tokens, and their ratio (1.0 = no loss);
    smoke       greedy generation from the chat template: the reply, and whether it ended with an EOS token of the
                generation config (a model that never stops is the classic broken export).
"""
from __future__ import annotations

import contextlib
import io
import math
import re
import sys
from typing import Sequence


def _gguf(path) -> dict:
    """``{"gguf_file": name}`` for a folder holding a GGUF file (transformers dequantizes it), else ``{}``."""
    from pathlib import Path

    files = sorted(Path(path).glob("*.gguf"))
    return {"gguf_file": files[0].name} if files and not (Path(path) / "config.json").exists() else {}


_BAR = re.compile(r"^.*\d+%\|.*\|.*$")  # a tqdm line: "Applying quantization config: 100%|###| 14/14 [...]"


@contextlib.contextmanager
def _without_bars():
    """stderr without progress bars while a copy loads: compressed-tensors draws "Applying quantization config" and
    "Dispatching model" with an explicit ``disable=False``, which TQDM_DISABLE does not override, into the export
    step's output (issue 46 trial I, item 14). What else is written there is passed on when the block ends."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            yield
    finally:
        kept = [x for x in re.split(r"[\r\n]", held.getvalue()) if x.strip() and not _BAR.match(x)]
        if kept:
            sys.stderr.write("\n".join(kept) + "\n")


def _load(path, device: str, code: bool = False):
    from recipes.model.vision import auto_model_class

    AutoModelForCausalLM = auto_model_class(path)  # noqa: N806  (image-text-to-text for Qwen2-VL, LLaVA, …)
    kw = {"dtype": "auto", "trust_remote_code": code} | _gguf(path)
    if device == "cuda":
        kw["device_map"] = {"": 0}
    model = AutoModelForCausalLM.from_pretrained(path, **kw)
    if device == "cpu" and getattr(model, "hf_quantizer", None) is None:
        model = model.float()  # bf16 matmuls on a CPU are slow and noisier than the quantization measured
    return model.eval()


def compare(reference_dir, artifact_dir, texts: list[str], max_tokens: int = 256,
            question: str | None = None, max_new_tokens: int = 48, trust_remote_code: bool = False) -> dict:
    """:func:`_compare` without the libraries' progress bars: compressed-tensors draws them on load and again on the
    first forward, which decompresses the copy ("Dispatching model")."""
    with _without_bars():
        return _compare(reference_dir, artifact_dir, texts, max_tokens, question, max_new_tokens, trust_remote_code)


def _compare(reference_dir, artifact_dir, texts: list[str], max_tokens: int = 256,
             question: str | None = None, max_new_tokens: int = 48, trust_remote_code: bool = False) -> dict:
    """Quality figures of ``artifact_dir`` against ``reference_dir`` (both loadable by transformers; a folder with a
    GGUF file is read through transformers' GGUF loader, dequantized).

    Args:
        texts: held-out texts (rendered conversations), each truncated to ``max_tokens`` tokens.
        question: asked through the chat template for the smoke test (skipped when None).
        trust_remote_code: the user's recorded yes to the model's own code.

    Returns:
        ``{"kl_mean", "ppl", "ppl_reference", "ppl_ratio", "tokens", "samples", "smoke"}`` (see the module docstring).

    Raises:
        ValueError: no text has two tokens or more.
    """
    import torch
    from transformers import AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tok = AutoTokenizer.from_pretrained(artifact_dir, trust_remote_code=trust_remote_code,
                                        **_gguf(artifact_dir))  # a GGUF's own tokenizer
    ref, art = _load(reference_dir, device, trust_remote_code), _load(artifact_dir, device, trust_remote_code)
    kl_sum = nll_ref = nll_art = 0.0
    n = used = 0
    with torch.no_grad():
        for text in texts:
            ids = tok(text, return_tensors="pt", truncation=True, max_length=max_tokens,
                      add_special_tokens=False)["input_ids"]
            if ids.shape[1] < 2:
                continue
            lp_ref = torch.log_softmax(ref(ids.to(ref.device)).logits[0, :-1].float(), -1).cpu()
            lp_art = torch.log_softmax(art(ids.to(art.device)).logits[0, :-1].float(), -1).cpu()
            target = ids[0, 1:]
            kl_sum += (lp_ref.exp() * (lp_ref - lp_art)).sum(-1).sum().item()
            nll_ref -= lp_ref.gather(-1, target[:, None]).sum().item()
            nll_art -= lp_art.gather(-1, target[:, None]).sum().item()
            n += target.numel()
            used += 1
    if not n:
        raise ValueError("no held-out text has two tokens or more")
    out: dict = {"kl_mean": round(kl_sum / n, 6), "ppl": round(math.exp(nll_art / n), 4),
           "ppl_reference": round(math.exp(nll_ref / n), 4), "tokens": n, "samples": used}
    out["ppl_ratio"] = round(out["ppl"] / out["ppl_reference"], 4)
    out["smoke"] = smoke(art, tok, question, max_new_tokens) if question else None
    return out


def reply(model_dir, question: str, max_new_tokens: int = 48, trust_remote_code: bool = False,
          image: str | None = None, more_questions: Sequence[str] = ()) -> dict:
    """:func:`smoke` of the model in ``model_dir`` (on the GPU when there is one): one model's own reply, with no
    reference to compare it with; ``image``: a file shown with the question to a vision-language model (whose
    processor then renders the turn). ``more_questions``: asked too, each for its first :data:`PARITY_TOKENS`
    tokens only, under ``"more"`` (the parity gate's held-out prompts)."""
    import torch
    from transformers import AutoTokenizer

    from recipes.model import vision

    model = _load(model_dir, "cuda" if torch.cuda.is_available() else "cpu", trust_remote_code)
    if vision.reads_images(model_dir):
        return smoke(model, vision.load_processor(model_dir), question, max_new_tokens, image) | {"image": image}
    tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    return smoke(model, tok, question, max_new_tokens) | {
        "more": [smoke(model, tok, q, PARITY_TOKENS) for q in more_questions]}


PARITY_TOKENS = 8  # the first greedy reply tokens kept for deploy's parity gate


def smoke(model, tok, question: str, max_new_tokens: int = 48, image: str | None = None) -> dict:
    """Greedy reply to ``question`` through the chat template (with ``image``: shown to a vision-language model,
    ``tok`` its processor); ``stopped``: it ended with an EOS token."""
    import torch

    from recipes.model.vision import chat_inputs

    enc = chat_inputs(tok, question, image).to(model.device)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, output_logits=True,
                             return_dict_in_generate=True)
    new = out.sequences[0, enc["input_ids"].shape[1]:].tolist()
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    # the prompt as training renders it (its ids), the first reply ids, the log-probability of each (natural log,
    # from the raw logits in fp32) and its lead over the runner-up: what deploy's parity gate compares the served
    # engine with (recipes/serving/parity.py) — a reply that departs where the model was sure is no near-tie
    logprobs, margins = [], []
    for i, logits in enumerate(out.logits[:min(PARITY_TOKENS, len(new))]):
        lp = torch.log_softmax(logits[0].float(), dim=-1)
        top2 = torch.topk(lp, 2).values
        logprobs.append(round(float(lp[new[i]]), 4))
        margins.append(round(float(top2[0] - top2[1]), 4))
    return {"question": question, "reply": tok.decode(new, skip_special_tokens=True).strip(),
            "tokens": len(new), "stopped": bool(new) and new[-1] in eos,
            "prompt_ids": enc["input_ids"][0].tolist(), "reply_ids": new[:PARITY_TOKENS],
            "reply_logprobs": logprobs, "reply_margins": margins}
