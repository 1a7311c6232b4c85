"""Talking to an OpenAI-compatible endpoint with the standard library only: the served models, a chat completion and
a streamed one (Server-Sent Events: ``data: {json}`` lines, ``data: [DONE]`` last), each with why it ended.

Every function takes the server's base URL ending in ``/v1`` and an optional API key (sent as
``Authorization: Bearer``). Errors: :class:`OSError` when the endpoint is unreachable or answers an HTTP error
(urllib's URLError / HTTPError, whose ``code`` is the status), :class:`ValueError` when the answer is not the JSON
the API describes.
"""
from __future__ import annotations

import re

import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass
class Reply:
    """One chat completion: its text, why it ended (``"stop"``: an end-of-turn token or a stop string;
    ``"length"``: the token limit) and how many tokens it took (None when the server does not say)."""

    text: str
    finish_reason: str | None
    tokens: int | None = None
    prompt_tokens: int | None = None  # the prompt as the server rendered and counted it (usage.prompt_tokens)
    # each reply token's (text, natural-log probability), asked with complete(logprobs=True); None: not asked, or the
    # server gave none
    logprobs: list[tuple[str, float]] | None = None

    @property
    def stopped(self) -> bool:
        return self.finish_reason == "stop"


def _image_error(path: str) -> str | None:
    """Why ``path`` cannot be sent as an image (no path, no such file, not an image PIL opens), or None."""
    if not path:
        return "/image PATH"
    try:
        from PIL import Image

        with Image.open(Path(path).expanduser()) as img:
            img.verify()
    except FileNotFoundError:
        return "no such file"
    except Exception as e:  # PIL's UnidentifiedImageError, a folder, a truncated file, …
        return type(e).__name__
    return None


def image_part(image: str | bytes, mime: str | None = None) -> dict:
    """An image as a chat message part, OpenAI's ``{"type": "image_url", "image_url": {"url": "data:…;base64,…"}}``
    (the file's bytes inline: the server needs no access to this machine's files)."""
    import base64
    import mimetypes

    data = image if isinstance(image, bytes) else Path(image).read_bytes()
    if mime is None and isinstance(image, bytes):  # bytes from a parquet column: the format PIL reads in them
        import io

        from PIL import Image

        try:
            with Image.open(io.BytesIO(image)) as img:
                mime = Image.MIME.get(img.format or "")
        except (OSError, ValueError):
            pass
    mime = mime or (mimetypes.guess_type(str(image))[0] if isinstance(image, str) else None) or "image/png"
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


def user_turn(question: str, image: str | bytes | None = None) -> list[dict]:
    """One user message: the question, with ``image`` before it when given."""
    if image is None:
        return [{"role": "user", "content": question}]
    return [{"role": "user", "content": [image_part(image), {"type": "text", "text": question}]}]


def _auth(api_key: str | None) -> dict:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def request_json(url: str, body: dict | None = None, timeout: float = 120, api_key: str | None = None) -> dict:
    """GET ``url`` (POST ``body`` as JSON when given) and parse the JSON reply ({} for an empty one)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} | _auth(api_key)
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as r:
        raw = r.read()
    return json.loads(raw) if raw.strip() else {}


def models(endpoint: str, timeout: float = 10, api_key: str | None = None) -> list[str]:
    """The ids ``GET {endpoint}/models`` lists."""
    return [m["id"] for m in request_json(endpoint.rstrip("/") + "/models", timeout=timeout,
                                          api_key=api_key).get("data", [])]


def first_model(endpoint: str, timeout: float = 10, api_key: str | None = None) -> str:
    """The id of the first model the endpoint lists. Raises OSError when unreachable, IndexError when it lists none."""
    return models(endpoint, timeout, api_key)[0]


def complete(endpoint: str, model: str, messages: list[dict], max_tokens: int = 256, api_key: str | None = None,
             temperature: float | None = 0, timeout: float = 300, logprobs: bool = False) -> Reply:
    """One chat completion (not streamed). ``logprobs``: each reply token's log-probability too (OpenAI's
    ``logprobs: true``, ``choices[0].logprobs.content[i] = {token, logprob}``: vLLM, SGLang); a server that refuses
    the field (transformers serve: HTTP 4xx) is asked again without it, and its Reply has none."""
    import urllib.error

    body = {"model": model, "messages": messages, "max_tokens": max_tokens}
    if temperature is not None:
        body["temperature"] = temperature
    url = endpoint.rstrip("/") + "/chat/completions"
    try:
        r = request_json(url, body | ({"logprobs": True} if logprobs else {}), timeout=timeout, api_key=api_key)
    except urllib.error.HTTPError as e:
        if not logprobs or e.code not in (400, 422, 501):
            raise
        r = request_json(url, body, timeout=timeout, api_key=api_key)
    try:
        choice = r["choices"][0]
        usage = r.get("usage") or {}
        text = choice["message"].get("content") or ""
        if not isinstance(text, str):
            raise TypeError(f"content is {type(text).__name__}")
        return Reply(text.strip(), choice.get("finish_reason"), usage.get("completion_tokens"),
                     usage.get("prompt_tokens"), _logprobs(choice.get("logprobs")))
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ValueError(f"not a chat completion: {str(r)[:200]}") from None


def _logprobs(given) -> list[tuple[str, float]] | None:
    """A choice's ``logprobs`` as [(token text, log-probability)], or None where it is missing or malformed."""
    content = given.get("content") if isinstance(given, dict) else None
    if not isinstance(content, list) or not content:
        return None
    try:
        return [(str(c["token"]), float(c["logprob"])) for c in content]
    except (KeyError, TypeError, ValueError):
        return None


def tokenize(endpoint: str, model: str, messages: list[dict], api_key: str | None = None,
             timeout: float = 30) -> list[int] | None:
    """The token ids the server renders ``messages`` to, with the generation prompt: vLLM's and SGLang's
    ``POST /tokenize`` (at the server's root, beside /v1); None where the server has no such endpoint (an HTTP 404 or
    405: transformers serve) or answers without ``tokens``."""
    import urllib.error

    root = endpoint.rstrip("/").removesuffix("/v1")
    body = {"model": model, "messages": messages, "add_generation_prompt": True}
    try:
        r = request_json(root + "/tokenize", body, timeout=timeout, api_key=api_key)
    except urllib.error.HTTPError as e:
        if e.code in (404, 405):
            return None
        raise
    tokens = r.get("tokens") if isinstance(r, dict) else None
    return [int(t) for t in tokens] if isinstance(tokens, list) else None


def stream(endpoint: str, model: str, messages: list[dict], max_tokens: int = 256,
           on_piece: Callable[[str], None] = lambda s: None, timeout: float = 300, api_key: str | None = None,
           temperature: float | None = None) -> Reply:
    """A streamed chat completion: each text piece goes to ``on_piece`` as it arrives; returns the whole reply with
    the finish reason of its last chunk."""
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "stream": True}
    if temperature is not None:
        body["temperature"] = temperature
    req = urllib.request.Request(endpoint.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Accept": "text/event-stream"}
                                 | _auth(api_key))
    pieces: list[str] = []
    finish = None
    with urllib.request.urlopen(req, timeout=timeout) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            for choice in json.loads(data).get("choices", []):
                piece = (choice.get("delta") or {}).get("content") or ""
                finish = choice.get("finish_reason") or finish
                if piece:
                    pieces.append(piece)
                    on_piece(piece)
    return Reply("".join(pieces), finish)


COMMANDS = ("/help", "/reset", "/image", "/exit")


def _bye(t, turns: int, stopped: int, session: str | None) -> str:
    """The chat's last line: the turns taken, the replies stopped (not counted: left out of the conversation), and
    how to stop the server of yichui session ``session`` (None: another endpoint, not yichui's to stop)."""
    return t("serving.chat.bye_stopped" if stopped else "serving.chat.bye", turns=turns, stopped=stopped,
             stop=t("serving.chat.stop_hint", id=session) if session else "")


def repl(endpoint: str, model: str, api_key: str | None, t, say, error, max_tokens: int = 256,
         read=input, vision: bool | None = None, session: str | None = None) -> int:
    """A terminal chat: streamed replies, multi-turn, ``/reset``, ``/exit`` (Ctrl-D, or Ctrl-C at the prompt, too),
    ``/image PATH`` (the image goes with the next question, inline; for a vision-language model).
    Ctrl-C while a reply streams stops that reply and comes back to the prompt (the question and the partial reply
    are left out of the conversation). Returns the turns taken. ``t`` renders catalogue keys; ``say``/``error`` print
    a line. ``vision``: whether the model reads images (False: /image is refused; None: not known, e.g. another
    endpoint). ``/help`` lists the commands; another word after a slash is refused as an unknown command, not sent
    to the model (``//text`` sends ``/text``)."""
    history: list[dict] = []
    turns = stopped = 0  # replies finished; replies stopped with Ctrl-C (left out, and said so at the end)
    image: str | None = None  # attached by /image, sent with the next question
    say(t("serving.chat.hello", endpoint=endpoint, model=model))
    while True:
        try:
            line = read(t("serving.chat.you"))
        except (EOFError, KeyboardInterrupt):
            print()
            say(_bye(t, turns, stopped, session))  # Ctrl-C / Ctrl-D at the prompt: said, not a silent exit
            return turns
        if line.strip() == "/exit":
            say(_bye(t, turns, stopped, session))
            return turns
        if line.strip() == "/reset":
            history.clear()
            image = None
            say(t("serving.chat.reset"))
            continue
        if line.strip() == "/help":
            say(t("serving.chat.help"))
            continue
        word = line.strip().split(maxsplit=1)[0] if line.strip() else ""
        if re.fullmatch(r"/[A-Za-z]\w*", word) and word not in COMMANDS:
            error(t("serving.chat.unknown_command", command=word))
            continue
        if line.strip().startswith("//"):  # a question that starts with a slash
            line = line.strip()[1:]
        elif line.strip().startswith("/image") and vision is False:
            error(t("serving.chat.text_only", model=model))
            continue
        elif line.strip().startswith("/image"):
            path = line.strip()[len("/image"):].strip()
            why = _image_error(path)
            if why:
                error(t("serving.chat.bad_image", path=path or "—", error=why))
            else:
                image = str(Path(path).expanduser())
                say(t("serving.chat.image", path=image))
            continue
        if not line.strip():
            continue
        history += user_turn(line, image)
        image = None
        print(t("serving.chat.model"), end="", flush=True)
        try:
            reply = stream(endpoint, model, history, max_tokens, lambda piece: print(piece, end="", flush=True),
                           api_key=api_key).text
        except OSError as e:
            print()
            history.pop()
            error(t("serving.chat.unreachable", endpoint=endpoint, error=str(e)))
            continue
        except KeyboardInterrupt:  # this reply only; the prompt comes back (issue 20)
            print()
            history.pop()
            say(t("serving.chat.stopped"))
            stopped += 1
            continue
        print()
        history.append({"role": "assistant", "content": reply})
        turns += 1
