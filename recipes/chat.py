"""Talking to an OpenAI-compatible endpoint (what `yichui chat` uses): the served model's name and a streamed chat
completion, with the standard library only (Server-Sent Events: ``data: {json}`` lines, ``data: [DONE]`` last)."""
from __future__ import annotations

import json
import urllib.request
from typing import Callable, Iterator


def _auth(api_key: str | None) -> dict:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def first_model(endpoint: str, timeout: float = 10, api_key: str | None = None) -> str:
    """The id of the first model ``GET {endpoint}/models`` lists. Raises OSError when unreachable."""
    req = urllib.request.Request(endpoint.rstrip("/") + "/models", headers=_auth(api_key))
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())["data"][0]["id"]


def stream(endpoint: str, model: str, messages: list[dict], max_tokens: int = 256,
           on_piece: Callable[[str], None] = lambda s: None, timeout: float = 300, api_key: str | None = None,
           temperature: float | None = None) -> Iterator[str]:
    """Yield the reply's text pieces as the server streams them (each also passed to ``on_piece``).
    ``api_key`` is sent as ``Authorization: Bearer``. Raises OSError (URLError, HTTPError) when the endpoint fails."""
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "stream": True}
    if temperature is not None:
        body["temperature"] = temperature
    req = urllib.request.Request(endpoint.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Accept": "text/event-stream"}
                                 | _auth(api_key))
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
