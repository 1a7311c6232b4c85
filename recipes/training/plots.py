"""The loss curve: a one-line terminal sparkline for the live view, and a PNG (matplotlib) in the run directory."""
from __future__ import annotations

from pathlib import Path

BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 40) -> str:
    """The whole run in at most ``width`` block characters, lowest ▁ to highest █ (empty for fewer than two values):
    each character the mean of its share of the steps, so 3,000 steps show their trend, not the noise of the last
    40 (issue 46 item 14)."""
    vals = [v for v in values if v is not None]
    if len(vals) > width:  # equal shares, the first ones one longer when they do not divide
        edges = [round(i * len(vals) / width) for i in range(width + 1)]
        vals = [sum(vals[a:b]) / (b - a) for a, b in zip(edges, edges[1:])]
    if len(vals) < 2:
        return ""
    lo, hi = min(vals), max(vals)
    span = (hi - lo) or 1.0
    return "".join(BLOCKS[min(len(BLOCKS) - 1, int((v - lo) / span * (len(BLOCKS) - 1) + 0.5))] for v in vals)


def curves(events: list[dict]) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(step, loss) and (step, eval_loss) from an events stream; a step logged again after a resume keeps the
    latest value."""
    train, evals = {}, {}
    for e in events:
        if e.get("event") == "step" and e.get("loss") is not None:
            train[e["step"]] = e["loss"]
        elif e.get("event") == "eval":
            evals[e["step"]] = e["eval_loss"]
    return sorted(train.items()), sorted(evals.items())


def loss_png(events: list[dict], path: Path, title: str = "") -> Path | None:
    """Write the training (and validation) loss against the optimizer step to ``path``; None without data."""
    train, evals = curves(events)
    if not train:
        return None
    import matplotlib

    matplotlib.use("Agg")  # no display: render to a file
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot([s for s, _ in train], [v for _, v in train], label="training loss", linewidth=1.2)
    if evals:
        ax.plot([s for s, _ in evals], [v for _, v in evals], "o-", label="validation loss")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
