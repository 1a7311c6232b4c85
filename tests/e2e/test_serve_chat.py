"""`yichui serve status | logs | stop` and `yichui chat` against a real `transformers serve` on the tiny model,
started as the deploy step starts it (detached, its pid in the session's run directory); chat in a real pty, in
English and Chinese."""
from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import pexpect
import pytest
from conftest import YICHUI, env_for, yichui

import recipes
from recipes import jobs
from recipes.serving import client, server
from wizard.session import Session


@pytest.fixture
def served(home, tiny_model):
    s = Session.new("finetune", h=home)
    port = server.reserve_port(home, s.id)  # reserved as the deploy step does: a demo in the other worker skips it
    base = f"http://127.0.0.1:{port}"
    argv = [str(Path(sys.executable).parent / "transformers"), "serve", str(tiny_model), "--host", "127.0.0.1",
            "--port", str(port), "--device", "cpu"]
    job = jobs.spawn("server", argv, s.run_dir / "serve")
    try:
        server.wait_healthy(job, base)
        model = client.first_model(base + "/v1")
        s.steps["deploy"]["outputs"] = {"endpoint": base + "/v1", "served_model": model, "server_pid": job.pid}
        s.save()
        yield s, job
    finally:
        job.stop()


def chat_term(home, *args, lang="en"):
    env = env_for(home, LANG="zh_CN.UTF-8" if lang == "zh" else "C.UTF-8", TERM="xterm-256color")
    return pexpect.spawn(YICHUI, ["chat", *args], env=env, encoding="utf-8", dimensions=(40, 160), timeout=120)


def test_serve_status_logs_chat_and_stop(home, served):
    s, job = served
    r = yichui(home, "serve", "status")  # no SESSION: the most recent session whose server runs
    assert r.returncode == 0 and str(job.pid) in r.stdout and "running" in r.stdout and "127.0.0.1" in r.stdout
    r = yichui(home, "serve", "logs", s.id, "-n", "5")
    assert r.returncode == 0 and 0 < len(r.stdout.strip().splitlines()) <= 5

    t = chat_term(home, s.id)
    t.expect("Chatting with")
    t.expect("you> ")
    t.sendline("What is LoRA?")
    t.expect("model> ")
    t.expect("you> ")  # the streamed reply ended, the next turn is asked
    reply = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", t.before).strip()
    assert reply  # the tiny model answers something
    t.sendline("/reset")
    t.expect(re.escape("(conversation cleared)"))
    t.sendline("/exit")
    t.expect(pexpect.EOF)
    t.close()
    assert t.exitstatus == 0
    t = chat_term(home)  # no SESSION: it says which session's server it joined (issue 46, tryout)
    t.expect(re.escape(f"The server of session {s.id}"))
    t.expect("you> ")
    t.sendline("/exit")
    t.expect(pexpect.EOF)
    t.close()

    r = yichui(home, "serve", "stop", s.id)
    assert r.returncode == 0 and f"pid {job.pid}" in r.stdout and not job.alive()
    r = yichui(home, "serve", "status", s.id)
    assert r.returncode == 1 and "not running" in r.stdout
    r = yichui(home, "chat", s.id)
    assert r.returncode == 1 and "no running server" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_chat_in_chinese_with_an_explicit_endpoint(home, served):
    s, job = served
    endpoint = s.steps["deploy"]["outputs"]["endpoint"]
    t = chat_term(home, "--endpoint", endpoint, lang="zh")
    t.expect("正在与")
    t.expect("你> ")
    t.sendline("你好")
    t.expect("模型> ")
    t.expect("你> ")
    t.sendeof()  # Ctrl-D leaves too
    t.expect(pexpect.EOF)
    t.close()
    assert t.exitstatus == 0
    # a key an HTTP header cannot carry (a pasted line break, another alphabet): said as the key's fault in one line,
    # the key not echoed; it was sent, refused by the HTTP library and the server blamed (the tester's 21-7, N10)
    for key, what in (("abc\ndef", "contains a line break"), ("ключ", "non-ASCII")):
        r = yichui(home, "chat", "--endpoint", endpoint, OPENAI_API_KEY=key)
        assert r.returncode == 2 and what in r.stderr and "Cannot reach" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and key not in r.stderr and "def" not in r.stderr


def test_chat_with_an_unreachable_endpoint_is_one_line(home):
    with socket.socket() as sock:  # a port the system just gave out and took back: far from the servers' 8000 on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    r = yichui(home, "chat", "--endpoint", f"http://127.0.0.1:{port}/v1")
    assert r.returncode == 1 and "Cannot reach" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    # a port no server can have is the URL's fault: exit 2, said as such (the tester's N21: "Cannot reach … InvalidURL")
    for bad in ("http://127.0.0.1:99999/v1", "http://127.0.0.1:port/v1", "http:///v1"):
        r = yichui(home, "chat", "--endpoint", bad)
        assert r.returncode == 2 and "is not a valid http(s) URL" in r.stderr and "Cannot reach" not in r.stderr, bad


def test_concurrent_replies_come_back_in_order(served):
    """The evaluate step sends an engine several requests at once (EngineSpec.concurrent_requests): greedy replies
    from a real server, 4 at a time, are the ones sent one at a time, each beside its own conversation."""
    from recipes.evaluate import Server, _endpoint_metrics

    s, _ = served
    out = s.steps["deploy"]["outputs"]
    convs = [[{"role": "user", "content": q}, {"role": "assistant", "content": "ref"}]
             for q in ("What is LoRA?", "Name a colour.", "Count to three.", "What is a GPU?", "Say hello.",
                       "What is NF4?")]
    one = _endpoint_metrics(Server(out["endpoint"], out["served_model"], None, 1), convs, 12)["answers"]
    many = _endpoint_metrics(Server(out["endpoint"], out["served_model"], None, 4), convs, 12)["answers"]
    assert len(set(one)) > 1  # the questions get different replies, so an order mix-up would show
    assert many == one
