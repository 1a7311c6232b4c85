"""The chat step (task "chat": select_model → download → deploy → chat) and the terminal chat `yichui chat` uses:
streamed replies from an OpenAI-compatible endpoint (:mod:`recipes.serving.client`), multi-turn, ``/reset``, ``/exit``.
"""
from __future__ import annotations

from recipes.serving import client, keys

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
            reply = client.stream(endpoint, model, history, max_tokens, lambda piece: print(piece, end="", flush=True),
                                  api_key=api_key).text
        except OSError as e:
            print()
            history.pop()
            error(t("cli.chat.unreachable", endpoint=endpoint, error=str(e)))
            continue
        print()
        history.append({"role": "assistant", "content": reply})
        turns += 1


def run(ctx, answers: dict) -> dict:
    from recipes.base import StepError, msg

    out = ctx.outputs("deploy")
    endpoint, model = out.get("endpoint"), out.get("served_model")
    key = keys.read_key(out.get("api_key_file"))
    try:
        model = model or client.first_model(endpoint, api_key=key)
    except (OSError, TypeError):
        raise StepError("cli.chat.unreachable", endpoint=endpoint, error="no server") from None
    if ctx.interactive:
        turns = repl(endpoint, model, key, lambda k, **a: ctx.t(msg(k, **a)), ctx.info, ctx.warn)
        return {"endpoint": endpoint, "model": model, "turns": turns}
    question = answers.get("question") or "What is LoRA?"
    try:
        reply = client.stream(endpoint, model, [{"role": "user", "content": question}], 64, api_key=key)
    except OSError as e:
        raise StepError("cli.chat.unreachable", endpoint=endpoint, error=str(e)) from None
    ctx.info(msg("chat.one", question=question, answer=reply.text))
    return {"endpoint": endpoint, "model": model, "turns": 1, "question": question, "reply": reply.text,
            "finish_reason": reply.finish_reason}


def is_done(ctx, record: dict) -> bool:
    return "turns" in record["outputs"]
