"""The bundled image-question data for the vision-language demo (issue 22): shapes in colours, rendered here.

Each record is a conversation in trl's image-text form: ``images`` lists a PNG file beside the jsonl (a path
relative to its folder) and the user turn holds an image placeholder and a question; the assistant answers in one
word. The same two questions ("What
colour is the shape?", "What shape is this?") are asked of every image and the right answer depends on the image
only — a model that ignores the image cannot beat chance (1/3 per question).

Rendering is deterministic for a seed (PIL's ImageDraw on a light canvas; position and size drawn from the seed), so
the data is rebuilt offline, the same everywhere, instead of being shipped.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (50, 80, 220)}
SHAPES = ("circle", "square", "triangle")
QUESTIONS = {"colour": "What colour is the shape?", "shape": "What shape is this?"}
SIZE = 56  # pixels per side: 4 × 4 patches of 14, merged 2 × 2 into 4 image tokens by the tiny VLM's processor


@dataclass(frozen=True)
class Item:
    """One rendered image: its file (relative to the dataset's folder), colour and shape."""

    image: str
    colour: str
    shape: str


def render(colour: str, shape: str, rng: random.Random):
    """A ``SIZE`` × ``SIZE`` RGB PIL image: one ``shape`` filled with ``colour`` at a random place and size."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (SIZE, SIZE), (245, 245, 245))
    draw = ImageDraw.Draw(img)
    r = rng.randint(SIZE // 4, SIZE * 2 // 5)
    x, y = rng.randint(r, SIZE - r), rng.randint(r, SIZE - r)
    fill = COLOURS[colour]
    if shape == "circle":
        draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
    elif shape == "square":
        draw.rectangle((x - r, y - r, x + r, y + r), fill=fill)
    else:
        draw.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=fill)
    return img


def records(items: list[Item], questions: tuple[str, ...] = ("colour", "shape")) -> list[dict]:
    """trl's image-text form: for each item and question, ``images`` (the file, relative to the jsonl's folder) and
    ``messages`` whose user turn holds an ``{"type": "image"}`` placeholder and the question; the one-word answer.
    (trl's SFTTrainer takes a dataset as images and text only through a top-level ``images`` column.)"""
    out = []
    for it in items:
        for q in questions:
            out.append({"images": [it.image], "messages": [
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTIONS[q]}]},
                {"role": "assistant", "content": it.colour if q == "colour" else it.shape}]})
    return out


def build(dest: str | Path, n_images: int, seed: int = 0, name: str = "shapes.jsonl") -> Path:
    """Render ``n_images`` images into ``dest/images/`` and write ``dest/<name>`` (two records per image: its colour
    and its shape asked). Colours and shapes are balanced (each of the 9 pairs n_images // 9 times or once more),
    placed in a seeded random order. Returns the jsonl's path."""
    dest = Path(dest)
    (dest / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pairs = [(c, s) for c in COLOURS for s in SHAPES]
    chosen = [pairs[i % len(pairs)] for i in range(n_images)]
    rng.shuffle(chosen)
    items = []
    for i, (c, s) in enumerate(chosen):
        rel = f"images/{seed}-{i:04d}.png"
        render(c, s, rng).save(dest / rel)
        items.append(Item(rel, c, s))
    path = dest / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records(items)))
    return path
