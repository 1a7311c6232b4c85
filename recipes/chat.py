"""Talking to an OpenAI-compatible endpoint (what `yichui chat` uses): the served model's name and a streamed chat
completion, with the standard library only (Server-Sent Events: ``data: {json}`` lines, ``data: [DONE]`` last)."""
from __future__ import annotations

import json
import urllib.request
from typing import Callable, Iterator


def _auth(api_key: str | None) -> dict:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def request_json(url: str, body: dict | None = None, timeout: float = 120, api_key: str | None = None) -> dict:
    """GET ``url`` (POST ``body`` as JSON when given) and parse the JSON reply ({} for an empty one).

    Raises:
        OSError: unreachable, or an HTTP error status (urllib's URLError / HTTPError).
        ValueError: the reply is not JSON.
    """
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} | _auth(api_key)
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as r:
        raw = r.read()
    return json.loads(raw) if raw.strip() else {}


def first_model(endpoint: str, timeout: float = 10, api_key: str | None = None) -> str:
    """The id of the first model ``GET {endpoint}/models`` lists. Raises OSError when unreachable."""
    return request_json(endpoint.rstrip("/") + "/models", timeout=timeout, api_key=api_key)["data"][0]["id"]


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


# ---- the chat step (task "chat": select_model → download → deploy → chat) ----------------------------------------

name = "chat"
requires = ("deploy",)


def questions(ctx):
    from recipes.base import Question

    # asked only when nobody is at the terminal: one exchange shows the model answers
    return [Question("question", "text", "chat.question", default="What is LoRA?", when=lambda a: not ctx.interactive)]


def repl(endpoint: str, model: str, api_key: str | None, t, say, error, max_tokens: int = 256,
         read=input) -> int:
    """A terminal chat: streamed replies, multi-turn, ``/reset``, ``/exit`` (Ctrl-D too). Returns the turns taken.
    ``t`` renders catalogue keys; ``say``/``error`` print a line."""
    history: list[dict] = []
    turns = 0
    say(t("cli.chat.hello", endpoint=endpoint, model=model))
    while True:
        try:
            line = read(t("cli.chat.you"))
        except (EOFError, KeyboardInterrupt):
            print()
            return turns
        if line.strip() == "/exit":
            return turns
        if line.strip() == "/reset":
            history.clear()
            say(t("cli.chat.reset"))
            continue
        if not line.strip():
            continue
        history.append({"role": "user", "content": line})
        print(t("cli.chat.model"), end="", flush=True)
        try:
            reply = "".join(stream(endpoint, model, history, max_tokens, lambda piece: print(piece, end="", flush=True),
                                   api_key=api_key))
        except OSError as e:
            print()
            history.pop()
            error(t("cli.chat.unreachable", endpoint=endpoint, error=str(e)))
            continue
        print()
        history.append({"role": "assistant", "content": reply})
        turns += 1


def run(ctx, answers: dict) -> dict:
    from recipes import deploy
    from recipes.base import StepError, msg

    out = ctx.outputs("deploy")
    endpoint, model = out.get("endpoint"), out.get("served_model")
    key = deploy.read_key(out.get("api_key_file"))
    try:
        model = model or first_model(endpoint, api_key=key)
    except (OSError, TypeError):
        raise StepError("cli.chat.unreachable", endpoint=endpoint, error="no server") from None
    if ctx.interactive:
        turns = repl(endpoint, model, key, lambda k, **a: ctx.t(msg(k, **a)), ctx.info, ctx.warn)
        return {"endpoint": endpoint, "model": model, "turns": turns}
    question = answers.get("question") or "What is LoRA?"
    try:
        reply = "".join(stream(endpoint, model, [{"role": "user", "content": question}], 64, api_key=key))
    except OSError as e:
        raise StepError("cli.chat.unreachable", endpoint=endpoint, error=str(e)) from None
    ctx.info(msg("chat.one", question=question, answer=reply))
    return {"endpoint": endpoint, "model": model, "turns": 1, "question": question, "reply": reply}


def is_done(ctx, record: dict) -> bool:
    return "turns" in record["outputs"]
