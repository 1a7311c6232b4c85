"""Held-out metrics of one model on conversations it was not trained on: what the evaluate step shows side by side
for the base model and the fine-tuned one.

Per model, over the held-out conversations (each ends with the reference assistant turn):
    loss        mean negative log-likelihood (nats) of the reference reply's tokens given the conversation before it,
                through the model's chat template, averaged over tokens (as the trainer's validation loss);
    perplexity  exp(loss);
    exact_match share of greedy replies equal to the reference after normalisation (case, punctuation, articles and
                whitespace: SQuAD's normalize_answer);
    rouge_l     mean ROUGE-L F-measure of greedy reply against reference (Lin, 2004) by the ``rouge_score`` package;
                text with CJK characters is scored per character (rouge_score's default tokenizer drops non-Latin
                characters).
"""
from __future__ import annotations

import math
import re
import string

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def normalize(text: str) -> str:
    """SQuAD v1.1 normalize_answer: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


class _Tokenizer:
    """rouge_score tokenizer: characters for CJK text, else rouge_score's own word tokenizer (lower case, stemmed)."""

    def __init__(self):
        from rouge_score import tokenizers

        self.words = tokenizers.DefaultTokenizer(use_stemmer=True)

    def tokenize(self, text: str) -> list[str]:
        if CJK.search(text):
            return [c for c in text.lower() if not c.isspace() and c not in string.punctuation]
        return self.words.tokenize(text)


def rouge_l(prediction: str, reference: str) -> float:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_Tokenizer())
    return scorer.score(reference, prediction)["rougeL"].fmeasure


def generation_scores(replies: list[str], references: list[str]) -> dict:
    """Mean exact match and ROUGE-L F of replies against references (same order, non-empty)."""
    n = len(references)
    return {"exact_match": round(sum(normalize(p) == normalize(r) for p, r in zip(replies, references)) / n, 4),
            "rouge_l": round(sum(rouge_l(p, r) for p, r in zip(replies, references)) / n, 4)}


def load(path: str, device: str, trust_remote_code: bool = False):
    """The model and its tokenizer (a vision-language model: its processor), eval mode, fp32 on a CPU."""
    from transformers import AutoTokenizer

    from recipes.model import vision

    AutoModelForCausalLM = vision.auto_model_class(path)  # noqa: N806  (image-text-to-text for Qwen2-VL, LLaVA, …)
    tok = vision.load_processor(path) if vision.reads_images(path) else \
        AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    kw = {"dtype": "auto", "trust_remote_code": trust_remote_code} | ({"device_map": {"": 0}} if device == "cuda" else {})
    model = AutoModelForCausalLM.from_pretrained(path, **kw)
    if device == "cpu" and getattr(model, "hf_quantizer", None) is None:
        model = model.float()
    return model.eval(), tok


def evaluate(path: str, conversations: list[list[dict]], max_new_tokens: int = 64, max_tokens: int = 1024,
             progress=lambda done, total: None, trust_remote_code: bool = False, generate: bool = True) -> dict:
    """The metrics of the model in ``path`` on ``conversations`` (``trust_remote_code``: the user's recorded yes to
    the model's own code; ``generate`` False: the loss only, the replies come from elsewhere, e.g. a server).

    Returns:
        ``{"loss", "perplexity", "exact_match", "rouge_l", "samples", "tokens", "answers": [str]}``; ``answers`` are
        the greedy replies in order (without ``generate``: only loss, perplexity, samples and tokens).

    Raises:
        ValueError: no conversation has a reference reply token within ``max_tokens``.
    """
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tok = load(path, device, trust_remote_code)
    nll = 0.0
    tokens = 0
    answers = []
    for i, conv in enumerate(conversations):
        prompt_in, full_in = _encode(tok, conv)
        prompt, full = prompt_in["input_ids"], full_in["input_ids"]
        if "pixel_values" not in full_in:  # image tokens are never cut (they must match the image's features)
            full = full[:, :max_tokens]
        n_prompt = prompt.shape[1]
        labels = full.clone()
        labels[:, :n_prompt] = -100  # the reply's tokens only (the template renders the prompt identically)
        n = int((labels[:, 1:] != -100).sum())
        with torch.no_grad():
            if n:
                extra = {k: v.to(model.device) for k, v in full_in.items() if k not in ("input_ids", "attention_mask")}
                logits = model(full.to(model.device), **extra).logits[:, :-1].float()
                nll += float(torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1).to(model.device),
                    ignore_index=-100, reduction="sum"))
                tokens += n
            if generate:
                out = model.generate(**{k: v.to(model.device) for k, v in prompt_in.items()},
                                     max_new_tokens=max_new_tokens, do_sample=False)
                answers.append(tok.decode(out[0][n_prompt:], skip_special_tokens=True).strip())
        progress(i + 1, len(conversations))
    if not tokens:
        raise ValueError("no reference tokens")
    loss = nll / tokens
    del model
    out = {"loss": round(loss, 4), "perplexity": round(math.exp(min(loss, 50)), 3), "samples": len(conversations),
           "tokens": tokens}
    if generate:
        out |= generation_scores(answers, [c[-1]["content"] for c in conversations]) | {"answers": answers}
    return out


def _encode(tok, conv: list[dict]):
    """The conversation without its last turn (with the generation prompt) and whole, tokenized through the chat
    template: by a tokenizer, or — ``tok`` a vision-language model's processor — by the processor with the
    conversation's images (trl's image-text form: parts, placeholders, the images in order)."""
    if not hasattr(tok, "image_processor"):
        return (tok.apply_chat_template(conv[:-1], add_generation_prompt=True, return_dict=True, return_tensors="pt"),
                tok.apply_chat_template(conv, return_dict=True, return_tensors="pt"))
    import io

    from PIL import Image

    from recipes.data.datasets import to_prompt_completion

    rec: dict = to_prompt_completion([conv])[0] if any(isinstance(m["content"], list) for m in conv) else \
        {"prompt": [m | {"content": [{"type": "text", "text": m["content"]}]} for m in conv[:-1]],
         "completion": [conv[-1] | {"content": [{"type": "text", "text": conv[-1]["content"]}]}], "images": []}
    sources: list = rec.get("images", [])
    images = [Image.open(io.BytesIO(s) if isinstance(s, bytes) else str(s)).convert("RGB") for s in sources] or None
    prompt = tok.apply_chat_template(rec["prompt"], add_generation_prompt=True, tokenize=False)
    full = tok.apply_chat_template(rec["prompt"] + rec["completion"], tokenize=False)
    return tok(text=[prompt], images=images, return_tensors="pt"), tok(text=[full], images=images, return_tensors="pt")
