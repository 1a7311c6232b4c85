"""The chat step (task "chat": select_model → download → deploy → chat): the terminal chat of
:func:`recipes.serving.client.repl` with the deployed server, or (nobody at the terminal) one exchange.
"""
from __future__ import annotations

from pathlib import Path

from recipes.base import Ctx, Question, Record, StepError, msg
from recipes.handoff import Chat, Deployment
from recipes.serving import client, keys

name = "chat"
requires = ("deploy",)


def questions(ctx: Ctx) -> list[Question]:
    # asked only when nobody is at the terminal: one exchange shows the model answers
    return [Question("question", "text", "chat.question", default="What is LoRA?", when=lambda a: not ctx.interactive)]


def run(ctx: Ctx, answers: dict) -> Chat:
    out = ctx.result(Deployment)
    endpoint, model = out.endpoint, out.served_model
    if not endpoint:
        raise StepError("serving.chat.unreachable", endpoint="?", error="no server")
    key = keys.read_key(out.api_key_file)
    try:
        model = model or client.first_model(endpoint, api_key=key)
    except OSError:
        raise StepError("serving.chat.unreachable", endpoint=endpoint, error="no server") from None
    if ctx.interactive:
        # the stop command names this session where its own run folder holds the server (not one of --from's)
        ours = out.log is not None and Path(out.log).resolve().is_relative_to(Path(ctx.run_dir).resolve())
        turns = client.repl(endpoint, model, key, lambda k, **a: ctx.t(msg(k, **a)), ctx.info, ctx.warn,
                            session=ctx.session_id if ours else None)
        return Chat(endpoint=endpoint, model=model, turns=turns)
    question = answers.get("question") or "What is LoRA?"
    try:
        reply = client.stream(endpoint, model, [{"role": "user", "content": question}], 64, api_key=key)
    except OSError as e:
        raise StepError("serving.chat.unreachable", endpoint=endpoint, error=str(e)) from None
    ctx.info(msg("chat.one", question=question, answer=reply.text))
    return Chat(endpoint=endpoint, model=model, turns=1, question=question, reply=reply.text,
                finish_reason=reply.finish_reason)


def is_done(ctx: Ctx, record: Record) -> bool:
    return "turns" in record.outputs
