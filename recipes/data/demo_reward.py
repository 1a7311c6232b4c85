"""The GRPO demo's own reward file (``yichui demo --task finetune-grpo``), in the form a user writes one: every
``reward`` / ``reward_*`` function takes (prompt, completion, answer) as text and returns a number, and runs in its
own process (recipes/training/rewards.py). A copy is a starting point for your own."""


def reward_digits(prompt: str, completion: str, answer: str | None) -> float:
    """The share of the reply's characters that are digits: a partial credit the tiny demo model (which babbles
    prose) can earn before it can earn accuracy."""
    return sum(ch.isdigit() for ch in completion) / max(1, len(completion))
