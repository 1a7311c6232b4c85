"""deploy: transformers serve on the merged model, OpenAI chat and streaming, port and host checks.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations

import contextlib

import shutil
from pathlib import Path

import pytest

import recipes
from recipes import jobs
from recipes.base import StepError, msg
from recipes.memory import model as memory
from recipes.serving import spec as specs
from wizard.engine import check


@pytest.mark.slow
def test_deploy_serves_openai_compatible_chat_and_streaming(chain, monkeypatch):
    chain.upto("deploy")
    from openai import OpenAI

    monkeypatch.setenv("HF_TOKEN", "hf_secret_of_the_user")  # in the wizard's environment, never the server's
    out = chain.step("deploy")
    assert out["endpoint"].startswith("http://127.0.0.1:") and out["reply"]
    client = OpenAI(base_url=out["endpoint"], api_key="unused")
    r = client.chat.completions.create(model=out["served_model"], max_tokens=8, temperature=0,
                                       messages=[{"role": "user", "content": "What is LoRA?"}])
    assert r.choices[0].message.content
    chunks = list(client.chat.completions.create(model=out["served_model"], max_tokens=8, stream=True,
                                                 messages=[{"role": "user", "content": "Hi"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    q = chain.questions("deploy")
    assert check(q["host"], "0.0.0.0", {"backend": "transformers"})[1].key == "serving.loopback_only"
    port = int(out["endpoint"].rsplit(":", 1)[1].split("/")[0])
    # its own server's port is free for this session, which stops that server first (issue 46 trial I: a resume
    # moved its endpoint 8000 → 8004); a port another process listens on is not
    assert check(q["port"], str(port), {"host": "127.0.0.1"})[1] is None
    import socket

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        assert check(q["port"], str(other.getsockname()[1]), {"host": "127.0.0.1"})[1].key == "deploy.port_in_use"
    # tensor parallelism the engines accept: heads (4), MLP width (384) divisible; 2 KV heads replicated over 4
    assert check(q["tensor_parallel"], "3", {})[1].key == "deploy.tp_heads"
    assert check(q["tensor_parallel"], "4", {})[1] is None
    refused = check(q["backend"], "vllm", {})[1]
    from wizard import i18n

    assert refused.key == "deploy.not_installed" and specs.recommended("vllm").install in i18n.render(refused)
    if not memory.detect_gpus():  # a GPU engine on a machine without one: the line says to serve with transformers
        assert "transformers here" in i18n.render(refused)
    assert out["finish_reason"] in ("stop", "length") and out["stream_finish_reason"] in ("stop", "length")
    assert out["streamed"] and out["api_key_file"] is None
    # the engine's start, phase by phase, read from its log as it started (issue 48): transformers serve says when
    # its HTTP server is up; /health answered after that
    ph = out["start_phases"]
    assert ph["start"] == 0 and 0 < ph["api"] <= ph["ready"] == out["start_seconds"], ph
    # a short served name (issue 20, item 8), not the absolute export path: a link beside the server's log
    assert out["served_model"] == out["args"][0] == "tiny-qwen2-chat-lora"
    link = chain.session.run_dir / "serve" / out["served_model"]
    assert link.resolve() == Path(out["model_dir"]).resolve()
    # a quantized copy goes by its own name, not the merged model's (issue 46 trial G)
    from recipes import deploy

    assert deploy._served_name(chain.ctx("deploy"), "bnb-4bit") == "tiny-qwen2-chat-lora-bnb-4bit"
    assert deploy._served_name(chain.ctx("deploy"), "adapter") == "tiny-qwen2-chat-lora"
    job = jobs.read(chain.session.run_dir / "serve" / "server.pid.json")
    environ = Path(f"/proc/{job.pid}/environ").read_bytes().split(b"\0")
    assert any(v.startswith(b"PATH=") for v in environ) and not any(v.startswith(b"HF_TOKEN=") for v in environ)
    # the engine's kernel caches under YICHUI_HOME, one folder per engine version, shared by every session (issue 48)
    caches = dict(v.split(b"=", 1) for v in environ if v.split(b"=", 1)[0] in
                  (b"VLLM_CACHE_ROOT", b"TRITON_CACHE_DIR", b"TORCHINDUCTOR_CACHE_DIR", b"FLASHINFER_WORKSPACE_BASE"))
    import os  # the caller's own setting of one wins (the suite's environment may set Inductor's or Triton's)

    assert len(caches) == 4 and all(b"/cache/kernels/transformers-" in v or os.environ.get(k.decode()) == v.decode()
                                    for k, v in caches.items()), caches
    assert b"/cache/kernels/transformers-" in caches[b"VLLM_CACHE_ROOT"]
    assert job.alive() and job.stop() and not job.alive()

    # a port taken by the time the server would start: test_a_port_set_in_this_run_and_taken_by_the_start_still_fails
    # (the user's port: refused before spawning), test_a_saved_port_taken_by_the_time_deploy_runs_gives_way… (another)
    # a server that dies during start-up (a broken config.json): one error with the end of its log
    exported = chain.session.steps["export"]["outputs"]
    good = exported["merged_dir"]
    bad = Path(good).parent / "broken-merged"
    shutil.copytree(good, bad, dirs_exist_ok=True)
    (bad / "config.json").write_text("{oops")
    exported["merged_dir"] = str(bad)
    try:
        with pytest.raises(StepError) as e:
            recipes.load("deploy").run(chain.ctx("deploy"), dict(chain.session.steps["deploy"]["answers"]))
    finally:
        exported["merged_dir"] = good
        shutil.rmtree(bad)
    assert e.value.msg.key == "serving.died" and e.value.msg.args["tail"]


def test_two_sessions_choosing_a_port_at_once_get_different_ones(tmp_path):
    """Two yichui processes (two demos started together on one YICHUI_HOME) choose their server's port at the same
    moment: each gets its own, reserved while it runs — the second no longer trains for minutes and then finds its
    port taken (issue 23). A reservation of a process that has exited counts as free; a live one is refused by the
    port question with the session that holds it."""
    import subprocess
    import sys
    import time

    home = tmp_path / "home"
    script = ("import sys, time\nfrom pathlib import Path\nfrom recipes.serving.server import reserve_port\n"
              "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"  # both at one instant
              "print(reserve_port(Path(sys.argv[1]), sys.argv[3]), flush=True)\ntime.sleep(60)\n")
    at = time.time() + 3
    procs = [subprocess.Popen([sys.executable, "-c", script, str(home), str(at), sid], stdout=subprocess.PIPE,
                              text=True, cwd=Path(recipes.__file__).parent.parent) for sid in ("sid-a", "sid-b")]
    try:
        ports = [int(p.stdout.readline()) for p in procs]
        assert ports[0] and ports[1] and ports[0] != ports[1], ports
        from recipes.serving import server

        assert server.reserved_by_other(home, ports[0], "sid-c") == "sid-a"
        assert server.reserved_by_other(home, ports[0], "sid-a") is None  # its own
        mine = server.reserve_port(home, "sid-c")
        assert mine not in ports and server.reserve_port(home, "sid-c") == mine  # asked again: the same one
        procs[0].kill()
        procs[0].wait()
        assert server.reserved_by_other(home, ports[0], "sid-c") is None  # its process is gone: free again
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_reservation_outlives_the_wizard_once_handed_to_its_server(tmp_path):
    """A wizard killed while the server it started is still loading (not yet listening) must not free the port for
    another session: the reservation is handed to the server's process when it starts (server.start → hand_over).
    Seen in the suite: a chaos kill freed the port, the next deploy reserved it, then the server bound it."""
    import subprocess
    import sys

    from recipes.serving import server

    home = tmp_path / "home"
    engine = subprocess.Popen(["sleep", "60"])  # the server; a child of the test, which reaps it
    script = ("import sys\nfrom pathlib import Path\nfrom recipes.serving import server\n"
              "port = server.reserve_port(Path(sys.argv[1]), 'sid-a', start=8300)\n"
              "server.hand_over(port, int(sys.argv[2]))\nprint(port, flush=True)\nsys.stdin.read()\n")
    wizard = subprocess.Popen([sys.executable, "-c", script, str(home), str(engine.pid)], stdout=subprocess.PIPE,
                              stdin=subprocess.PIPE, text=True, cwd=Path(recipes.__file__).parent.parent)
    try:
        port = int(wizard.stdout.readline())
        wizard.kill()  # kill -9 of the wizard; its server lives on
        wizard.wait()
        assert server.reserved_by_other(home, port, "sid-b") == "sid-a"
        assert server.reserve_port(home, "sid-b", start=8300) != port
    finally:
        wizard.kill()
        engine.kill()
        engine.wait()
    assert server.reserved_by_other(home, port, "sid-b") is None  # the server gone: the port is free again


def test_a_port_given_by_an_answer_is_claimed_as_a_chosen_one_is(tmp_path):
    """A port from a saved answer (a resumed session) or --set is reserved when it is checked, as the default's is:
    before, a resumed session's saved port was only checked, another session's deploy reserved it meanwhile and
    both servers started on it (seen in the suite: "Another server answers on port 8001")."""
    import subprocess
    import sys

    from recipes.serving import server

    home = tmp_path / "home"
    script = ("import sys\nfrom pathlib import Path\nfrom recipes.serving import server\n"
              "print(server.claim_port(Path(sys.argv[1]), 'sid-a', 8350), flush=True)\nsys.stdin.read()\n")
    a = subprocess.Popen([sys.executable, "-c", script, str(home)], stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                         text=True, cwd=Path(recipes.__file__).parent.parent)
    try:
        assert a.stdout.readline().strip() == "None"  # claimed
        assert server.claim_port(home, "sid-b", 8350) == "sid-a"  # refused: live, another session's
        assert server.claim_port(home, "sid-a", 8350) is None  # the same session (its resumed wizard): fine
        assert server.reserve_port(home, "sid-c", start=8350) != 8350
    finally:
        a.kill()
        a.wait()
    assert server.claim_port(home, "sid-b", 8350) is None  # its process gone: free, and now sid-b's
    assert server.reserved_by_other(home, 8350, "sid-c") == "sid-b"


def _resolved(chain, saved: int, **sets):
    """The deploy step's answers as a resumed run resolves them (the engine's precedence, its sources kept) when the
    session's earlier run answered ``deploy.port=saved``; ``sets``: this run's --set values. (ctx, answers)."""
    chain.upto("deploy")
    rec = chain.session.steps["deploy"]
    rec["answers"] = {**rec["answers"], "port": saved}  # what the earlier wizard run of the session saved
    chain.session.save()
    chain.engine.overrides = {"deploy": sets}
    ctx = chain.ctx("deploy")
    return ctx, chain.engine.resolve(recipes.load("deploy"), ctx)


@pytest.mark.slow
def test_a_saved_port_taken_by_the_time_deploy_runs_gives_way_to_a_free_one(chain, monkeypatch):
    """CI's failure (tests/e2e/test_interrupt.py): a resumed session's deploy.port, answered by an earlier run and
    free when the resumed run checked it, was taken by another session's server before the step started its own;
    the step stopped with "Port 8000 is in use". A port nobody gave in this run (saved, replayed, the default) gives
    way to a free one chosen as the default is, said in one line; the session's answer, the outputs and the
    Deployment the later steps read carry the port really served on."""
    import socket

    from recipes.handoff import Deployment
    from recipes.serving import client, server
    from wizard import i18n
    from wizard.session import Session

    saved = server.reserve_port(chain.home, chain.session.id)
    ctx, answers = _resolved(chain, saved)
    assert answers["port"] == saved and ctx.source("port") == "resumed"
    said: list[str] = []
    monkeypatch.setattr(ctx, "info", lambda m, **a: said.append(i18n.render(m, **a)))
    mod = recipes.load("deploy")
    with socket.socket() as taken:  # another session's server, listening on it by now
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT leftovers don't count
        taken.bind(("127.0.0.1", saved))
        taken.listen()
        out = mod.run(ctx, answers).to_dict()
        rec = chain.session.record("deploy")
        rec.outputs.update(out)  # as the engine stores the record
        rec.status = "done"
        chain.session.save()
    moved = int(out["endpoint"].rsplit(":", 1)[1].split("/")[0])
    assert moved != saved and i18n.t("deploy.port_moved", port=saved, by=msg("deploy.taken_by_process"),
                                     new=moved) in said
    assert out["served_model"] in client.models(out["endpoint"])  # the server answers there
    job = jobs.read(chain.session.run_dir / "serve" / "server.pid.json")
    assert server.port_of(job) == moved and server.reserved_by_other(chain.home, moved, "sid-other") \
        == chain.session.id  # held for this session's server
    saved_file = Session.load(chain.session.path)  # the session as saved: valid, and the port really used
    assert saved_file.steps["deploy"]["answers"]["port"] == moved
    assert saved_file.result(Deployment).endpoint == out["endpoint"]
    # the port served on is recorded as a number with its host (issue 45: it was read back from the server's argv)
    assert (out["host"], out["port"]) == ("127.0.0.1", moved) and saved_file.result(Deployment).port == moved
    assert chain.ctx("evaluate").result(Deployment).endpoint == out["endpoint"]  # what chat and evaluate are handed
    assert mod.is_done(chain.ctx("deploy"), rec)

    # reserved by another live session since (its server loading): the same way out, naming that session
    with _reserved_by_another_session(chain.home, 8500) as theirs:
        said.clear()
        again = mod._port_now(ctx, "127.0.0.1", theirs)  # the step's check before the start, the port resumed
        assert again not in (theirs, 0)
        assert said == [i18n.t("deploy.port_moved", port=theirs, by=msg("deploy.taken_by_session", session="sid-other"),
                               new=again)]
    assert job.stop() and not job.alive()


@pytest.mark.slow
def test_a_port_set_in_this_run_and_taken_by_the_start_still_fails(chain):
    """`--set deploy.port=P`: the user asked for exactly that port; taken by the time the step would start the
    server, it fails with the one-line message, nothing started, as before."""
    import socket

    from recipes.serving import server
    from wizard import i18n

    mine = server.reserve_port(chain.home, chain.session.id, start=8450)
    ctx, answers = _resolved(chain, mine + 1, port=str(mine))
    assert answers["port"] == mine and ctx.source("port") == "set"
    started = jobs.read(chain.session.run_dir / "serve" / "server.pid.json")
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", mine))
        taken.listen()
        with pytest.raises(StepError) as e:
            recipes.load("deploy").run(ctx, answers)
    assert e.value.msg.key == "deploy.port_in_use" and e.value.msg.args["port"] == mine
    assert "\n" not in i18n.render(e.value.msg)
    now = jobs.read(chain.session.run_dir / "serve" / "server.pid.json")
    assert (now.pid if now else None) == (started.pid if started else None)  # no server was started
    # reserved by another live session since: its own one line too
    with _reserved_by_another_session(chain.home, 8550) as theirs, pytest.raises(StepError) as e:
        recipes.load("deploy")._port_now(ctx, "127.0.0.1", theirs)
    assert e.value.msg.key == "deploy.port_reserved" and e.value.msg.args["session"] == "sid-other"


@contextlib.contextmanager
def _reserved_by_another_session(home: Path, start: int):
    """A port reserved from ``start`` on by another live process ("sid-other"), as a second session's deploy holds
    one while its server loads; the reservation ends with that process."""
    import subprocess
    import sys

    script = ("import sys\nfrom pathlib import Path\nfrom recipes.serving import server\n"
              f"print(server.reserve_port(Path(sys.argv[1]), 'sid-other', start={start}), flush=True)\n"
              "sys.stdin.read()\n")
    other = subprocess.Popen([sys.executable, "-c", script, str(home)], stdout=subprocess.PIPE,
                             stdin=subprocess.PIPE, text=True, cwd=Path(recipes.__file__).parent.parent)
    try:
        yield int(other.stdout.readline())
    finally:
        other.kill()
        other.wait()


def test_a_reply_split_inside_a_character_is_no_departure(tiny_model):
    """Byte-level tokens split a Han character over two tokens: the trained reply's first k tokens then decode to
    text ending in U+FFFD, which the served reply (whole characters) never starts with — a correct Chinese deploy
    read as departing at that token. With the real tiny tokenizer: a whole reply follows itself, and one that
    changes a character departs there."""
    from transformers import AutoTokenizer

    from recipes.serving.parity import divergence

    tok = AutoTokenizer.from_pretrained(tiny_model)
    reply = "低秩适配：只训练两个小矩阵。"
    ids = tok(reply, add_special_tokens=False)["input_ids"]
    pieces = [tok.decode(ids[:k + 1]) for k in range(len(ids))]
    assert any(p.endswith("\ufffd") for p in pieces), pieces  # the case itself: a character over two tokens
    assert divergence(pieces, reply) is None
    changed = divergence(pieces, "低秩微调：只训练两个小矩阵。")
    assert changed is not None and "适" not in tok.decode(ids[:changed]), (changed, pieces)


def test_the_parity_gate_reads_only_well_formed_export_records():
    """The session file is input: a hand-edited merged_smoke (ids as text, margins as a string, a question that is no
    text) is left unchecked — said — instead of a traceback inside the deploy step."""
    from recipes.serving.parity import well_formed

    good = {"question": "What is LoRA?", "prompt_ids": [1, 2], "reply_ids": [3], "reply_logprobs": [-0.1],
            "reply_margins": [2.5]}
    assert well_formed(good) and well_formed({k: v for k, v in good.items() if not k.startswith("reply_")})
    for bad in ({"prompt_ids": ["1"]}, {"reply_ids": {"a": 1}}, {"reply_margins": "2.5"}, {"question": 7},
                {"reply_logprobs": [True]}, {"prompt_ids": None}):
        assert not well_formed(good | bad), bad
    assert not well_formed([good]) and not well_formed(None)


def test_a_folder_named_merged_is_not_served_as_model_merged():
    """Issue 46 item 14: a local model folder `…/export/merged` (a yichui export) was served as model `merged`; the
    name comes from config.json's `_name_or_path` or the nearest folder name that says which model it is."""
    from recipes.deploy import _name_of

    assert _name_of(Path("/x/tiny-qwen2-chat")) == "tiny-qwen2-chat"
    assert _name_of(Path("/r/export/merged"), "/models/hf/Qwen/Qwen2.5-7B-Instruct") == "Qwen2.5-7B-Instruct"
    assert _name_of(Path("/data/my-model/checkpoint-500")) == "my-model"
    assert _name_of(Path("/data/my-model/export/gptq-w4a16"), "merged") == "my-model"


@pytest.mark.slow
def test_a_chat_template_changed_after_training_fails_the_parity_gate(chain):
    """Issue 48's parity gate: the served folder's chat template edited after training (a line added before every
    conversation) makes transformers serve render the sample question into more tokens than training did — the deploy
    step fails, naming both counts and where the templates differ, and leaves no server behind. With the template
    restored it passes, the rendering compared by count (transformers serve has no tokenize endpoint)."""
    from recipes.rundir import ServeDir
    from wizard import i18n

    chain.upto("deploy")
    merged = Path(chain.session.record("export").outputs["merged_dir"])
    template = merged / "chat_template.jinja"
    original = template.read_text()
    template.write_text("{{- 'Answer in one line. ' }}" + original)
    try:
        with pytest.raises(StepError) as e:
            chain.step("deploy")
        said = i18n.render(e.value.msg)
        assert e.value.key == "deploy.parity_prompt", said
        assert e.value.params["served"] > e.value.params["training"] and "Answer in one line" in said, said
        server = jobs.read(ServeDir(chain.session.run_dir / "serve").job)
        assert server is None or not server.alive()  # the failed start-up check stopped it
    finally:
        template.write_text(original)
    out = chain.step("deploy")
    assert out["parity"]["prompt_ok"] and not out["parity"]["by_ids"], out["parity"]
    assert out["parity"]["prompt_served"] == out["parity"]["prompt_training"] > 10
    assert out["parity"]["greedy_match"], out["parity"]  # the same weights in the same library, on the same CPU
    # the held-out questions the export asked were asked too, each rendered and answered alike
    others = out["parity"]["others"]
    assert len(others) == 2 and all(o["prompt_ok"] and o["greedy_match"] for o in others), others
    assert {o["question"] for o in others}.isdisjoint({out["parity"]["question"]}), others
    jobs.read(ServeDir(chain.session.run_dir / "serve").job).stop()


@pytest.mark.slow
def test_a_served_folder_holding_other_weights_fails_the_parity_gate(chain, tmp_path):
    """Issue 48: the prompts render alike, yet the engine serves another model than the one trained — here the
    export's weights replaced by the base's (as a copy gone wrong, or the base served under the export's name). The
    greedy reply leaves the trained model's where it was sure, and the deploy step fails naming the question, the
    token, both replies and the likely fix; with the trained weights back it passes."""
    from recipes.rundir import ServeDir
    from wizard import i18n

    chain.upto("deploy")
    merged = Path(chain.session.record("export").outputs["merged_dir"])
    kept = tmp_path / "model.safetensors"
    shutil.copy2(merged / "model.safetensors", kept)
    shutil.copy2(Path(chain.tiny) / "model.safetensors", merged / "model.safetensors")
    try:
        with pytest.raises(StepError) as e:
            chain.step("deploy")
        said = i18n.render(e.value.msg)
        assert e.value.key == "deploy.parity_departs", said
        assert float(e.value.params["margin"]) >= 2.0 and "serve the folder the export wrote" in said, said
        assert e.value.params["training"] != e.value.params["served"], said
        server = jobs.read(ServeDir(chain.session.run_dir / "serve").job)
        assert server is None or not server.alive()
    finally:
        shutil.copy2(kept, merged / "model.safetensors")
    out = chain.step("deploy")
    assert out["parity"]["greedy_match"] and out["parity"]["margin"] is None, out["parity"]
    jobs.read(ServeDir(chain.session.run_dir / "serve").job).stop()


@pytest.mark.slow
def test_another_sessions_server_is_offered_to_stop_never_ticked(chain, tmp_path):
    """Issue 46, trial E: in a terminal the deploy step's "stop these first?" list came with the servers serving the
    same model name ticked, and an Enter stopped another session's good server. Now it is offered, none ticked."""
    import sys

    chain.upto("deploy")
    other = chain.session.run_dir.parent / "20990101-000000-aaaa" / "serve"
    other.mkdir(parents=True)
    # a server of another session answering to the same name as this session's would (transformers serve's argv)
    job = jobs.spawn("server", [sys.executable, "-c", "import time; time.sleep(120)", "serve",
                                "/elsewhere/tiny-qwen2-chat-lora"], other)
    try:
        chain.engine.prompter = object()  # in a terminal: the question is asked
        q = chain.questions("deploy")["stop_servers"]
        assert "20990101-000000-aaaa" in [c.value for c in q.choices]
        assert (q.default(chain.engine.session.record("deploy").answers) if callable(q.default) else q.default) == []
    finally:
        chain.engine.prompter = None
        job.stop(timeout=5)
        shutil.rmtree(other.parent, ignore_errors=True)


def test_the_printed_curl_line_sends_the_question_as_typed_and_the_key_from_its_file(tmp_path):
    """The deploy step's "Try it" line, run by bash and curl against a real HTTP server on 127.0.0.1: the request's
    JSON carries the question's own characters (the zh line showed "\\u4ec0\\u4e48…", issue 46 trial I, N12), quotes
    in it survive the shell, and the key comes from its file at run time, never on the line."""
    import http.server
    import json
    import subprocess
    import threading

    from recipes.deploy import curl_line

    got: dict = {}

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            got["path"], got["auth"] = self.path, self.headers.get("Authorization")
            got["body"] = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = tmp_path / "api_key"
    key.write_text("k-123\n")
    question = "什么是 LoRA？它's \"good\"?"
    line = curl_line(f"http://127.0.0.1:{server.server_port}", "m", question, key)
    try:
        assert "\\u" not in line and question.split()[0] in line and "k-123" not in line
        r = subprocess.run(["bash", "-c", line + " -s -o /dev/null -w '%{http_code}'"], capture_output=True,
                           text=True, timeout=30)
    finally:
        server.shutdown()
    assert r.stdout == "200", r.stdout + r.stderr
    body = json.loads(got["body"])
    assert got["path"] == "/v1/chat/completions" and got["auth"] == "Bearer k-123"
    assert body["model"] == "m" and body["messages"][-1]["content"] == question
