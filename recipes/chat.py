"""Talking to an OpenAI-compatible endpoint (what `yichui chat` uses): the served model's name and a streamed chat
completion, with the standard library only (Server-Sent Events: ``data: {json}`` lines, ``data: [DONE]`` last)."""
from __future__ import annotations

import json
import urllib.request
from typing import Callable, Iterator


def first_model(endpoint: str, timeout: float = 10) -> str:
    """The id of the first model ``GET {endpoint}/models`` lists. Raises OSError when unreachable."""
    with urllib.request.urlopen(endpoint.rstrip("/") + "/models", timeout=timeout) as r:
        return json.loads(r.read())["data"][0]["id"]


def stream(endpoint: str, model: str, messages: list[dict], max_tokens: int = 256,
           on_piece: Callable[[str], None] = lambda s: None, timeout: float = 300) -> Iterator[str]:
    """Yield the reply's text pieces as the server streams them (each also passed to ``on_piece``).
    Raises OSError (URLError, HTTPError) when the endpoint fails."""
    body = json.dumps({"model": model, "messages": messages, "max_tokens": max_tokens, "stream": True}).encode()
    req = urllib.request.Request(endpoint.rstrip("/") + "/chat/completions", data=body,
                                 headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            for choice in json.loads(data).get("choices", []):
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    on_piece(piece)
                    yield piece
