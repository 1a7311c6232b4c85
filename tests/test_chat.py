"""The terminal chat (recipes/serving/client.repl) against a real streaming server on 127.0.0.1: Ctrl-C while a
reply streams stops that reply and brings the prompt back; the chat goes on."""
from __future__ import annotations

import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from recipes.serving import client
from wizard import i18n


def _server(first_piece_sent: threading.Event, go_on: threading.Event):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()

            def chunk(text, finish=None):
                data = {"choices": [{"delta": {"content": text}, "finish_reason": finish}]}
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            question = body["messages"][-1]["content"]
            chunk("Hel")
            if question == "slow":  # a long reply: wait (as a model still generating) until told to go on
                first_piece_sent.set()
                go_on.wait(10)
            try:
                chunk("lo.", "stop")
                self.wfile.write(b"data: [DONE]\n\n")
            except OSError:  # the client hung up (it stopped the reply)
                pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_ctrl_c_stops_the_reply_not_the_chat(capsys):
    first, go_on = threading.Event(), threading.Event()
    srv = _server(first, go_on)
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    said: list[str] = []
    inputs = iter(["slow", "again"])

    def read(prompt):
        try:
            return next(inputs)
        except StopIteration:
            raise EOFError from None

    def interrupt():  # the user's Ctrl-C once the first piece of the slow reply is on the screen
        if first.wait(10):
            os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C (an earlier test in the same process may have left SIGINT ignored or handled)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        turns = client.repl(url, "m", None, i18n.t, said.append, said.append, read=read, session="20261206-1-ab12")
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C during a reply left the chat")
    finally:
        signal.signal(signal.SIGINT, previous)
        go_on.set()
        srv.shutdown()
    assert i18n.t("serving.chat.stopped") in said  # the stopped reply said so, in one line
    assert turns == 1  # the chat went on: the next question got its whole reply
    # and leaving it is said, not silent — the stopped reply too (issue 46's tryout, N5: "1 turn(s)" and no word of it)
    assert "Chat ended after 1 turn(s) and 1 reply(ies) stopped with Ctrl-C" in said[-1], said[-1]
    # the stop command names the session whose server it is: a bare `serve stop` stopped the newest session's
    # server, another one (issue 46 trial G)
    assert said[-1].endswith("(to stop it: yichui serve stop 20261206-1-ab12)."), said[-1]
    assert "Hello." in capsys.readouterr().out


def test_slash_commands_stay_with_the_chat_and_a_text_model_refuses_images(capsys):
    """Issue 46 item 10: /help and an unknown /word went to the model as questions; /image on a text-only model was
    accepted silently. Nothing of these reaches the server (it would answer "Hello."); //text is sent as /text."""
    first, go_on = threading.Event(), threading.Event()
    go_on.set()
    srv = _server(first, go_on)
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    said: list[str] = []
    inputs = iter(["/help", "/summarize this", "/image x.png", "//etc/hosts is a file?"])

    def read(prompt):
        try:
            return next(inputs)
        except StopIteration:
            raise EOFError from None

    try:
        turns = client.repl(url, "tiny", None, i18n.t, said.append, said.append, read=read, vision=False)
    finally:
        srv.shutdown()
    assert i18n.t("serving.chat.help") in said
    assert i18n.t("serving.chat.unknown_command", command="/summarize") in said
    assert i18n.t("serving.chat.text_only", model="tiny") in said
    assert turns == 1  # only the // line was a question
