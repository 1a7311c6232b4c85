"""Did preference tuning help? (issue 47): on held-out pairs, how often a model gives the chosen reply a higher
log-probability than the rejected one, and by how much, for the base and the fine-tuned model side by side.

A reply's log-probability is the sum over its tokens of log p(token | prompt, the reply's tokens before it), the
prompt and reply rendered through the model's chat template as the trainer renders them (trl's DPOTrainer: the
prompt with the generation prompt, then the reply's tokens up to the end of its turn). The accuracy is the share of
pairs where log p(chosen) > log p(rejected); the margin their mean difference (nats). DPO's own "reward accuracy"
(β·log π/π_ref) is relative to the base, 0.5 before training by construction; this one is each model's own
preference, so the base has one too.

KTO's labelled replies without pairs (``{"prompt", "completion", "label"}``, each reply to its own prompt) have no two
replies of one prompt to compare: there a reply scores its mean log-probability per token (replies of different
prompts and lengths), the accuracy is the share of (desirable, undesirable) combinations where the desirable reply
scores higher (the ranking's AUC, ties counted half) and the margin the mean desirable score minus the mean
undesirable one (nats per token) — each model's own, base and fine-tuned alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class PreferenceScore:
    """One model on the held-out pairs: ``accuracy`` (0..1), ``margin`` (mean log p(chosen) − log p(rejected), nats),
    ``pairs`` (how many). ``kind`` "unpaired": labelled replies, ``accuracy`` the AUC and ``margin`` nats per token
    (module docstring), ``pairs`` the replies scored."""

    accuracy: float
    margin: float
    pairs: int
    kind: str = "paired"


def reply_logprob(model, tok, prompt: list[dict], reply: list[dict], per_token: bool = False) -> float:
    """Σ log p(reply tokens | prompt) under ``model`` (nats), through ``tok``'s chat template; ``per_token``: the
    mean over the reply's tokens instead."""
    import torch

    head = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
    whole = tok.apply_chat_template(prompt + reply, tokenize=True, return_dict=False)
    head, whole = list(head), list(whole)
    if whole[:len(head)] != head:  # a template that renders the prompt differently once a reply follows
        raise ValueError("the chat template renders the prompt differently with a reply after it")
    ids = torch.tensor([whole], device=model.device)
    with torch.no_grad():
        logits = model(ids).logits[0, :-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    targets = ids[0, 1:]
    picked = logp.gather(1, targets[:, None])[:, 0][len(head) - 1:]
    return float(picked.mean() if per_token else picked.sum())


def unpaired_score(scored: list[tuple[float, bool]]) -> PreferenceScore:
    """:class:`PreferenceScore` (kind "unpaired") of ``(score, desirable)`` per reply: the AUC of desirable over
    undesirable (ties half) and the difference of their means.

    Raises:
        ValueError: one kind of reply only (nothing to rank)."""
    good = [x for x, d in scored if d]
    bad = [x for x, d in scored if not d]
    if not good or not bad:
        raise ValueError("both desirable and undesirable replies are needed")
    wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
    return PreferenceScore(accuracy=round(wins / (len(good) * len(bad)), 4),
                           margin=round(sum(good) / len(good) - sum(bad) / len(bad), 4), pairs=len(scored),
                           kind="unpaired")


def score(model, tok, pairs: list[dict]) -> PreferenceScore:
    """:class:`PreferenceScore` of ``model`` on ``pairs`` (``{"prompt", "chosen", "rejected"}`` as messages)."""
    diffs = [reply_logprob(model, tok, p["prompt"], p["chosen"]) - reply_logprob(model, tok, p["prompt"], p["rejected"])
             for p in pairs]
    return PreferenceScore(accuracy=round(sum(d > 0 for d in diffs) / len(diffs), 4),
                           margin=round(sum(diffs) / len(diffs), 4), pairs=len(diffs))


def score_model(model_dir: str | Path, pairs: list[dict], trust_remote_code: bool = False, progress=None
                ) -> PreferenceScore:
    """:class:`PreferenceScore` of the model saved in ``model_dir`` (a merged fine-tune or the base; on the GPU when
    there is one, else fp32 on the CPU: recipes/evaluation/heldout.py load) on ``pairs`` — or on KTO's labelled
    replies (``{"prompt", "completion", "label"}``, both kinds present: :func:`unpaired_score`); ``progress(done,
    total)`` after each."""
    import torch

    from recipes.evaluation import heldout

    model, tok = heldout.load(str(model_dir), "cuda" if torch.cuda.is_available() else "cpu", trust_remote_code)
    if pairs and "completion" in pairs[0]:  # KTO's labelled replies, no pairs: unpaired_score
        scored = []
        for i, r in enumerate(pairs, 1):
            scored.append((reply_logprob(model, tok, r["prompt"], r["completion"], per_token=True), bool(r["label"])))
            if progress:
                progress(i, len(pairs))
        del model
        return unpaired_score(scored)
    diffs = []
    for i, p in enumerate(pairs, 1):
        diffs.append(reply_logprob(model, tok, p["prompt"], p["chosen"])
                     - reply_logprob(model, tok, p["prompt"], p["rejected"]))
        if progress:
            progress(i, len(pairs))
    del model
    return PreferenceScore(accuracy=round(sum(d > 0 for d in diffs) / len(diffs), 4),
                           margin=round(sum(diffs) / len(diffs), 4), pairs=len(diffs))


def base_and_tuned(model_dir: str | Path, adapter_dir: str | Path, pairs: list[dict],
                   trust_remote_code: bool = False) -> dict[str, PreferenceScore]:
    """``{"base": …, "finetuned": …}`` on ``pairs``: the base, then the LoRA adapter on it (one copy of the weights
    in memory: peft's ``disable_adapter`` gives the base)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(adapter_dir, trust_remote_code=trust_remote_code)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, trust_remote_code=trust_remote_code)
    model = PeftModel.from_pretrained(base, str(adapter_dir)).eval()
    with model.disable_adapter():
        before = score(model, tok, pairs)
    return {"base": before, "finetuned": score(model, tok, pairs)}
