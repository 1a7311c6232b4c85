"""The bad-input catalogue: each entry is a real `yichui` command that must fail with one line naming what is wrong
and what to do (the catalogue message, in the user's language), a non-zero exit, and nothing lost.

The troubleshooting page (docs/troubleshooting.md) is generated from CATALOGUE (`python tests/test_bad_inputs.py` prints it) and a
test checks it is current.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import yichui  # noqa: E402

from wizard import i18n  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Case:
    id: str
    what: str                # the bad input, for docs/troubleshooting.md (English; zh from the catalogue message)
    key: str                 # the catalogue message the user sees
    argv: Callable           # (env: Env) -> list of yichui arguments
    code: int = 2
    setup: Callable | None = None  # (env) -> None
    after: Callable | None = None  # (env) -> None: asserts what else must hold afterwards
    vlm: bool = False              # the case uses the tiny vision-language model (env.tiny_vlm)


class Env:
    """What a case may use: YICHUI_HOME, a hub with the tiny model, a scratch folder, a valid session, extra env."""

    def __init__(self, home, hub, tmp, tiny, tmpfs, lang="en"):
        self.home, self.hub, self.tmp, self.tiny, self.tmpfs, self.lang = home, hub, tmp, tiny, tmpfs, lang
        self.extra: dict = {}
        self._session = None
        self.tiny_vlm: Path | None = None

    def session(self) -> Path:
        if self._session is None:
            from wizard.session import Session

            s = Session.new("finetune", h=self.home)
            s.data["lang"] = self.lang  # started by the same user: a session speaks the language it began in
            s.save()
            self._session = s.path
        return self._session

    def new_sessions(self) -> list[dict]:
        """The sessions the case's command made (not :meth:`session`)."""
        return [json.loads(p.read_text()) for p in (self.home / "sessions").glob("*.json") if p != self.session()]

    def edited(self, fn) -> str:
        data = json.loads(self.session().read_text())
        fn(data)
        p = self.tmp / "edited.json"
        p.write_text(json.dumps(data))
        return str(p)

    def web(self) -> str:
        """A plain web server (404 for everything) on 127.0.0.1: it answers, but it is no hub."""
        import functools
        import http.server
        import threading

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
            http.server.SimpleHTTPRequestHandler, directory=str(self.tmp)))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{srv.server_address[1]}"

    def file(self, name: str, content: bytes | str) -> str:
        p = self.tmp / name
        p.write_bytes(content.encode() if isinstance(content, str) else content)
        return str(p)

    def folder(self, name: str, files: dict) -> str:
        d = self.tmp / name
        d.mkdir()
        for k, v in files.items():
            (d / k).write_text(v)
        return str(d)


# a Qwen3-MoE of the real layout at toy size (transformers 5 fuses its experts: LoRA on them is peft's ParamWrapper)
MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 128,
       "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2, "num_hidden_layers": 2,
       "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
       "max_position_embeddings": 512, "tie_word_embeddings": False}


def ys(*pairs: str) -> list[str]:
    return ["run", "--yes", *[a for p in pairs for a in ("--set", p)]]


def reserved_port(env: Env) -> int:
    """A free port that a live process (this test's) reserved for another session, as a running demo does."""
    from recipes.serving import server

    return server.reserve_port(env.home, "20261201-000000-abcd", start=8100)


def taken_port(env: Env) -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    env.extra["_socket"] = s  # kept open for the case
    return s.getsockname()[1]


def running_trainer(e) -> None:
    """A live job in the case's session: a process recorded as its trainer (it ends by itself in 20 s)."""
    from recipes import jobs
    from wizard.session import Session

    s = Session.load(e.session())
    jobs.spawn("trainer", ["sleep", "20"], s.run_dir / "train")


def hold_lock(env: Env) -> None:
    path = env.session()
    fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, b"4242")
    env.extra["_lock"] = fd


LOCAL = lambda env: ("select_model.source=local", f"select_model.path={env.tiny}")  # noqa: E731


def hub_run(env: "Env", *more: str) -> list[str]:
    """A fine-tune of the tiny model from the local hub, without the smoke test."""
    return ys(f"select_model.endpoint={env.hub.url}", "select_model.model=other",
              "select_model.model_id=yichui/tiny-qwen2-chat", "choose_strategy.preflight=false", *more)


def data(env: "Env", path: str, *more: str) -> list[str]:
    """A fine-tune of the tiny local model on the dataset file ``path``."""
    return ys(*LOCAL(env), "choose_strategy.dataset=local", *more, f"choose_strategy.dataset_path={path}")

def real_weights(folder: str) -> str:
    """``folder`` with a model.safetensors whose header safetensors reads (the weights a local model is checked for)."""
    from recipes.hub.server import weights_header

    head = weights_header(256)
    Path(folder, "model.safetensors").write_bytes(head + bytes(256 - len(head)))
    return folder


def broken_weights(env: "Env", name: str, weights: bytes) -> None:
    """A copy of the tiny model under ``name`` whose model.safetensors holds ``weights``."""
    import shutil

    shutil.copytree(env.tiny, env.tmp / name)
    (env.tmp / name / "model.safetensors").write_bytes(weights)


def lying_header() -> bytes:
    """A safetensors file whose header says 1000×1000 floats and which holds 16 bytes."""
    import struct

    head = json.dumps({"w": {"dtype": "F32", "shape": [1000, 1000], "data_offsets": [0, 16]}}).encode()
    return struct.pack("<Q", len(head)) + head + b"\0" * 16


def strict_template_model(env: "Env") -> str:
    """A copy of the tiny model whose chat template refuses a system turn (as Gemma's does)."""
    import shutil

    d = env.tmp / "strict-template"
    shutil.copytree(env.tiny, d)
    (d / "chat_template.jinja").write_text(
        "{%- for m in messages %}{%- if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{%- endif %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}")
    return str(d)


def untemplated_on_hub(env: "Env") -> None:
    """The tiny model on the local hub as yichui/no-template, without a chat template (a base model)."""
    import shutil

    d = env.home / "cache" / "hub" / "yichui" / "no-template"
    shutil.copytree(env.tiny, d)
    (d / "chat_template.jinja").unlink()
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))


def vlm_without_text_width(env: "Env") -> str:
    """A copy of the tiny VLM whose text_config lacks hidden_size (transformers' default, 4096, is not its 64)."""
    import shutil

    d = env.tmp / "vlm-no-text-width"
    shutil.copytree(env.tiny_vlm, d)
    cfg = json.loads((d / "config.json").read_text())
    del cfg["text_config"]["hidden_size"]
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


def quantized_copy(env: "Env", quantization: dict) -> str:
    """A copy of the tiny model whose config.json says it is pre-quantized (``quantization``); the refusals come
    from the config, before any weight is read."""
    import shutil

    d = env.tmp / f"quantized-{quantization['quant_method']}"
    shutil.copytree(env.tiny, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["quantization_config"] = quantization
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                       "group_size": 128}}}}


def fewer_layers_on_hub(env: "Env") -> None:
    """The tiny model on the local hub as yichui/fewer-layers, its config.json saying 1 layer of its 2."""
    import shutil

    d = env.home / "cache" / "hub" / "yichui" / "fewer-layers"
    shutil.copytree(env.tiny, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] = 1
    if isinstance(cfg.get("layer_types"), list):
        cfg["layer_types"] = cfg["layer_types"][:1]
    (d / "config.json").write_text(json.dumps(cfg))


def weights_kept_and_model_asked_again(env: "Env") -> None:
    """The downloaded weights stay (a corrected config needs no second download) and resume asks for the model."""
    got = list((env.home / "models").rglob("model.safetensors"))
    assert got and got[0].stat().st_size == (env.tiny / "model.safetensors").stat().st_size, got
    (s,) = env.new_sessions()
    assert s["steps"]["select_model"]["status"] == "pending" and s["steps"]["download"]["status"] == "failed"


def model_asked_again(env: "Env") -> None:
    """Issue 20, item 2: the failure comes from the model chosen at step 1, so resume asks step 1 again."""
    (s,) = env.new_sessions()
    assert s["steps"]["select_model"]["status"] == "pending" and s["steps"]["choose_strategy"]["status"] == "failed"


def stopped_before(step: str, env: "Env") -> None:
    """Nothing reached ``step``: the answer was refused up front (no session made), or the case's session stopped
    before it (it and every step after it never started)."""
    import recipes

    for s in env.new_sessions():
        order = recipes.TASKS[s["task"]]
        assert all(s["steps"][n]["status"] == "pending" for n in order[order.index(step):]), s["steps"]


def no_weights_fetched(env: "Env") -> None:
    """The smoke test ran on the small files alone: the tokenizer was fetched, no weight byte was."""
    got = [p for m, p, _ in env.hub.hub.requests if m == "GET"]
    assert any(p.endswith("/tokenizer.json") for p in got), got
    assert not any(p.endswith(".safetensors") for p in got), got
    assert not list((env.home / "models").rglob("tiny-qwen2-chat"))


def no_training(env: "Env") -> None:
    """Refused before any step ran: no session of this run has its model downloaded or trained."""
    import json

    for path in env.home.glob("sessions/*.json"):
        steps = json.loads(path.read_text()).get("steps", {})
        assert all(steps.get(n, {}).get("status") != "done" for n in ("download", "train")), path


def image_records(env: "Env", image: str, first_text: bool = False) -> str:
    """A dataset of two image-question records, the second's images column naming ``image`` (a red square is written
    as ok.png beside it); ``first_text``: the first record is a text one instead."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (220, 40, 40)).save(buf, format="PNG")
    env.file("ok.png", buf.getvalue())
    row = lambda img: json.dumps({"images": [img], "messages": [  # noqa: E731
        {"role": "user", "content": "<image>What colour is the shape?"}, {"role": "assistant", "content": "red"}]})
    first = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}) \
        if first_text else row("ok.png")
    return env.file("images.jsonl", first + "\n" + row(image) + "\n")


def turns(*roles: str) -> str:
    return json.dumps({"messages": [{"role": r, "content": f"{r} text"} for r in roles]})


CATALOGUE = [
    # the command line
    Case("unknown-task", "an unknown task", "cli.unknown_task", lambda e: ["run", "--task", "bake", "--yes"]),
    Case("unknown-set-key", "a --set key the step does not have", "answer.unknown_key", lambda e: ys("deploy.prot=9000")),
    Case("unknown-set-key-many", "a --set key misspelt in a step of ~60 questions (all listed on one line before)",
         "answer.unknown_key_many", lambda e: ys("choose_strategy.learning_rat=1e-4")),
    Case("set-not-key-value", "a --set without '='", "cli.bad_set", lambda e: ["run", "--yes", "--set", "deploy"]),
    Case("set-unknown-step", "a --set for a step that does not exist", "cli.unknown_step", lambda e: ys("bake.x=1")),
    Case("set-outside-task", "a --set for a step outside the task", "answer.step_not_in_task",
         lambda e: ["run", "--task", "quantize", *ys("train.device=cpu")[1:]]),
    Case("not-a-number", "a word where a whole number goes", "answer.not_int", lambda e: ys("choose_strategy.lora_rank=abc")),
    Case("not-a-float", "a word where a number goes", "answer.not_float", lambda e: ys("choose_strategy.learning_rate=fast")),
    Case("targets-100k", "LoRA targets of 100,000 characters (the unknown-targets line repeated them whole)",
         "answer.invalid", lambda e: ys(*LOCAL(e), "choose_strategy.lora_targets=" + "x" * 100_000)),
    Case("question-120k", "a sample question of 120,000 characters (was taken silently and asked at every check)",
         "answer.invalid", lambda e: ys(*LOCAL(e), "choose_strategy.sample_question=" + "why " * 30_000)),
    Case("estimate-targets-commas", "yichui estimate --lora-targets ,,, (priced a LoRA of no module)",
         "training.bad_targets", lambda e: ["estimate", str(e.tiny), "--lora-targets", ",,,"]),
    Case("int-of-5000-digits", "a whole number of 5,000 digits (was called 'not a whole number')", "answer.int_too_long",
         lambda e: ys("choose_strategy.micro_batch=" + "9" * 5000)),
    Case("set-value-100k", "a --set value of 100,000 characters (was echoed whole)", "answer.not_float",
         lambda e: ys("choose_strategy.learning_rate=" + "x" * 100_000)),
    Case("impossible-number", "a number out of range (learning rate 0)", "answer.out_of_range",
         lambda e: ys("choose_strategy.learning_rate=0")),
    Case("impossible-rank", "LoRA rank 0", "answer.out_of_range", lambda e: ys("choose_strategy.lora_rank=0")),
    Case("backup-without-token", "an adapter backup to a hub with no token in the environment (asked before training)",
         "choose_strategy.backup_no_token",
         lambda e: ys(*LOCAL(e), "choose_strategy.backup=hf", "choose_strategy.backup_repo=me/adapter"),
         setup=lambda e: e.extra.update(HF_TOKEN=""), after=lambda e: stopped_before("train", e)),
    Case("q-galore", "Q-GaLore, which this stack cannot run (said with the reason, not a bare 'not a choice')",
         "choose_strategy.q_galore_unsupported", lambda e: ys(*LOCAL(e), "choose_strategy.method=q-galore")),
    Case("prequantized-full", "a full fine-tune (or QLoRA, DoRA, GaLore) of a pre-quantized (compressed-tensors "
         "W4A16) model: LoRA only, with the base kept quantized", "choose_strategy.prequantized_lora_only",
         lambda e: ys("select_model.source=local", f"select_model.path={quantized_copy(e, W4A16)}",
                      "choose_strategy.method=full")),
    Case("prequantized-gptq", "a model in the GPTQ checkpoint format (quant_method gptq), which needs gptqmodel",
         "choose_strategy.prequantized_unsupported",
         lambda e: ys("select_model.source=local",
                      f"select_model.path={quantized_copy(e, {'quant_method': 'gptq', 'bits': 4})}",
                      "choose_strategy.method=lora")),
    Case("not-yes-no", "'maybe' for a yes/no question", "answer.not_bool", lambda e: ys("choose_strategy.packing=maybe")),
    Case("not-a-choice", "a choice that does not exist", "answer.not_a_choice", lambda e: ys("choose_strategy.method=magic")),
    Case("bad-format", "an export format that does not exist", "answer.not_a_choice", lambda e: ys("export.formats=zip")),
    Case("unsloth-not-installed", "the unsloth training backend where its environment is not installed",
         "answer.set_not_asked", lambda e: ys(*LOCAL(e), "choose_strategy.training_backend=unsloth")),
    Case("engine-cannot-load", "an export the chosen engine cannot load", "export.engine_cannot_load",
         lambda e: ys("export.serve_with=transformers", "export.formats=gguf-q8_0")),
    Case("engine-not-deployed", "llama.cpp chosen at export in a session that deploys (the deploy step does not "
         "start it: a KeyError there after training and export)", "export.engine_not_deployed",
         lambda e: ys("export.serve_with=llama.cpp")),
    Case("too-few-calibration", "too few calibration samples", "export.too_few_calibration",
         lambda e: ys("export.formats=gptq-w4a16", "export.calibration_samples=3")),
    Case("no-tty", "the wizard without a terminal (stdin not a TTY)", "cli.no_tty", lambda e: ["run"]),
    Case("bad-lang", "an unknown interface language", "cli.bad_lang", lambda e: ["--lang", "fr", "steps"]),
    Case("demo-unknown-task", "yichui demo with an unknown task", "cli.unknown_task", lambda e: ["demo", "--task", "bake"]),
    # models and hubs
    Case("malformed-id", "a hub id that is not org/name", "select_model.bad_id",
         lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other", "select_model.model_id=not an id")),
    Case("unknown-model", "a model the hub does not have", "hub.no_such_model",
         lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other", "select_model.model_id=nobody/nothing")),
    Case("gated-repo", "a gated repository (licence not accepted)", "hub.gated",
         lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                      "select_model.model_id=yichui/tiny-qwen2-chat"),
         setup=lambda e: setattr(e.hub.hub, "faults", [{"path": "*config.json", "status": 403, "error_code": "GatedRepo"}])),
    Case("unreachable-hub", "an unreachable hub endpoint", "hub.unreachable",
         lambda e: ys("select_model.endpoint=http://127.0.0.1:9", "select_model.model=other",
                      "select_model.model_id=org/model")),
    Case("hub-offline-mode", "a hub model not on the machine while HF_HUB_OFFLINE=1 is set (was 'cannot reach "
         "the hub … check the network')", "hub.offline",
         lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                      "select_model.model_id=yichui/tiny-qwen2-chat"),
         code=1, setup=lambda e: e.extra.update(HF_HUB_OFFLINE="1")),  # the machine's switch, not the answer
    Case("endpoint-not-a-hub", "a hub endpoint that is a web server, not a hub", "hub.bad_answer",
         lambda e: ys(f"select_model.endpoint={e.web()}", "select_model.model=other", "select_model.model_id=org/model")),
    Case("bad-endpoint-url", "a hub endpoint that is not a URL", "select_model.bad_endpoint",
         lambda e: ys("select_model.endpoint=hub.local", "select_model.model=other", "select_model.model_id=org/model")),
    Case("no-local-folder", "a local model folder that does not exist", "hub.no_such_folder",
         lambda e: ys("select_model.source=local", f"select_model.path={e.tmp}/nowhere")),
    Case("hub-cache-unwritable", "the hub client's cache folder cannot be written (HF_HOME under a file; a "
         "read-only home was called 'cannot reach the hub', then the model id 'not valid')", "hub.cache_unwritable",
         lambda e: hub_run(e), code=1,  # the machine's disk, not an answer: the step fails (the tester's 21-6)
         setup=lambda e: (e.tmp / "a-file").write_text("x") and e.extra.update(HF_HOME=str(e.tmp / "a-file" / "hf"))),
    Case("revision-path-traversal", "a revision of ../../../etc (was called 'not a transformers model')",
         "select_model.bad_revision", lambda e: hub_run(e, "select_model.revision=../../../etc")),
    Case("model-path-is-dev-null", "/dev/null given as the model folder (was told to use its parent)", "hub.not_a_folder",
         lambda e: ys("select_model.source=local", "select_model.path=/dev/null")),
    Case("zero-byte-weights", "a local model whose model.safetensors is 0 bytes (reached training)",
         "memory.weights_unreadable", lambda e: ys("select_model.source=local", f"select_model.path={e.tmp}/zero"),
         setup=lambda e: broken_weights(e, "zero", b"")),
    Case("weights-header-lies", "a safetensors header whose shapes are larger than its bytes (reached training)",
         "memory.weights_unreadable", lambda e: ys("select_model.source=local", f"select_model.path={e.tmp}/liar"),
         setup=lambda e: broken_weights(e, "liar", lying_header())),
    Case("model-path-is-a-file", "a file given as the model folder (its config.json; was 'does not exist')",
         "hub.file_not_folder", lambda e: ys("select_model.source=local", f"select_model.path={e.tiny}/config.json")),
    Case("no-config", "a local folder without config.json", "hub.no_local_model",
         lambda e: ys("select_model.source=local", f"select_model.path={e.folder('empty-model', {'README.md': 'x'})}")),
    Case("malformed-config", "a config.json that is not JSON", "hub.bad_config",
         lambda e: ys("select_model.source=local", f"select_model.path={e.folder('bad-model', {'config.json': '{oops'})}")),
    Case("custom-code", "a repository that ships its own Python code (auto_map), without a yes", "select_model.custom_code",
         lambda e: ys("select_model.source=local", "select_model.path=" + real_weights(e.folder("custom-code", {
             "config.json": json.dumps({"model_type": "mine", "auto_map": {"AutoModelForCausalLM": "modeling_mine.M"}}),
             "modeling_mine.py": "raise SystemExit('custom code ran')", "tokenizer.json": "{}",
             "chat_template.jinja": "{{ messages }}"}))), code=1),
    Case("local-incomplete", "a local folder with config.json only (no tokenizer, chat template, weights)",
         "select_model.local_incomplete",
         lambda e: ys("select_model.source=local", "select_model.path=" + e.folder("config-only", {
             "config.json": (e.tiny / "config.json").read_text()}))),
    Case("config-missing-field", "a config.json without hidden_size (transformers would fill in its default)",
         "select_model.missing_fields",
         lambda e: ys("select_model.source=local", "select_model.path=" + e.folder("no-hidden-size", {
             "config.json": json.dumps({k: v for k, v in json.loads((e.tiny / "config.json").read_text()).items()
                                        if k != "hidden_size"})}))),
    Case("config-architectures-a-string", "config.json's architectures as one string (read letter by letter and "
         "called encoder-only)", "memory.bad_config",
         lambda e: ["estimate", e.folder("arch-str", {"config.json": json.dumps(
             json.loads((e.tiny / "config.json").read_text()) | {"architectures": "Qwen2ForCausalLM"})})]),
    Case("config-no-context", "config.json's max_position_embeddings 0 (priced a context of a million tokens)",
         "memory.bad_dimension", lambda e: ["estimate", e.folder("mpe0", {"config.json": json.dumps(
             json.loads((e.tiny / "config.json").read_text()) | {"max_position_embeddings": 0})})]),
    Case("estimate-hub-unreachable", "yichui estimate of a hub id with the hub out of reach (said nothing of a "
         "local config.json)", "cli.estimate.unreachable",
         lambda e: ["estimate", "org/model", "--endpoint", "http://127.0.0.1:9"], code=1),
    Case("config-field-transformers-refuses", "a config.json field transformers' own validators refuse (rope_scaling "
         "\"garbage\"; was called encoder-only)", "memory.bad_config",
         lambda e: ["estimate", e.folder("bad-rope", {"config.json": json.dumps(
             json.loads((e.tiny / "config.json").read_text()) | {"rope_scaling": "garbage"})})]),
    Case("config-field-refused-at-step-1", "the same config.json as the model folder in the wizard (accepted at step 1, "
         "refused at step 2 with exit 1 and no --set: the tester's 21-13)", "memory.bad_config",
         lambda e: ys("select_model.source=local", "select_model.path=" + e.folder("bad-rope-wizard", {
             "config.json": json.dumps(json.loads((e.tiny / "config.json").read_text()) | {"rope_scaling": "garbage"})}))),
    Case("vlm-text-config-missing-field", "a vision-language model whose text_config lacks hidden_size (LLaVA 1.5 "
         "leaves out fields equal to the default; here the weights' width is not the default)",
         "memory.weights_disagree", vlm=True,
         argv=lambda e: ys("select_model.source=local", "select_model.path=" + vlm_without_text_width(e))),
    Case("config-contradicts-weights", "a hub model whose config.json gives fewer layers than its weights have "
         "(transformers would load the first ones without a word): refused once downloaded, before training",
         "memory.weights_disagree", setup=fewer_layers_on_hub, after=weights_kept_and_model_asked_again, code=1,
         argv=lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                           "select_model.model_id=yichui/fewer-layers", "choose_strategy.preflight=false")),
    # data
    Case("no-dataset", "a dataset file that does not exist", "data.no_file",
         lambda e: data(e, f"{e.tmp}/missing.jsonl")),
    Case("dataset-is-a-fifo", "a named pipe given as the dataset (was 'does not exist')", "data.not_a_file",
         lambda e: data(e, f"{e.tmp}/pipe.jsonl"), setup=lambda e: os.mkfifo(e.tmp / "pipe.jsonl")),
    Case("empty-dataset", "an empty dataset file", "data.empty",
         lambda e: data(e, e.file('empty.jsonl', ''))),
    Case("unknown-data-format", "records of no known format", "data.unknown_format",
         lambda e: data(e, e.file('odd.jsonl', json.dumps({'foo': 1})))),
    Case("no-json-lines", "a .jsonl file whose lines are not JSON (was 'unknown record format')", "data.no_json",
         lambda e: data(e, e.file('garbage.jsonl', "{not json 0\n{not json 1\n"))),
    Case("not-utf8-data", "a dataset that is not UTF-8", "data.not_text_at",
         lambda e: data(e, e.file('bin.jsonl', bytes(range(128, 256))))),
    Case("bad-sample-size", "a dataset sample of -5 records (file.jsonl#-5)", "data.bad_sample",
         lambda e: data(e, e.file('ok.jsonl', json.dumps({'instruction': 'a', 'output': 'b'})) + "#-5")),
    Case("bad-data-suffix", "a dataset of an unsupported type", "data.bad_suffix",
         lambda e: data(e, e.file('data.txt', 'hello'))),
    Case("malformed-records", "malformed records, told to abort", "data.bad_records",
         lambda e: data(e, e.file(
             "some-bad.jsonl", json.dumps({"instruction": "hi", "output": "hello"}) + "\n{broken\n"), "choose_strategy.bad_records=abort"),
         code=2),  # refused before any step, said once (the tester's 21-8: exit 1 after the step began, said twice)
    Case("missing-image", "an image-text record whose image file is missing (named with its line and reason)",
         "data.bad_records",
         lambda e: data(e, image_records(e, "missing.png", first_text=True), "choose_strategy.bad_records=abort"),
         code=2),
    Case("images-for-text-model", "image-text records for a text model (refused when the dataset is named)",
         "choose_strategy.images_need_vlm", lambda e: data(e, image_records(e, "ok.png"))),
    Case("hub-model-without-template", "a hub model with no chat template (a base model)",
         "choose_strategy.no_chat_template", setup=untemplated_on_hub, after=model_asked_again, code=1,
         argv=lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                           "select_model.model_id=yichui/no-template", "choose_strategy.preflight=false")),
    Case("template-rejects-record", "a chat template that rejects record 3 (a system turn)",
         "choose_strategy.template_failed",
         lambda e: ys("select_model.source=local", f"select_model.path={strict_template_model(e)}",
                      "choose_strategy.dataset=local", "choose_strategy.dataset_path=" + e.file("sys.jsonl", "\n".join(
                          [turns("user", "assistant")] * 2 + [turns("system", "user", "assistant")]))), code=1),
    Case("smoke-test-fails", "a strategy the smoke test rejects (sequence length 16: no record fits)",
         "training.preflight_no_records_fit",
         lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                      "select_model.model_id=yichui/tiny-qwen2-chat", "choose_strategy.seq_len=16"), code=1,
         after=lambda e: no_weights_fetched(e)),
    Case("nothing-fits-smoke-test-off", "no record fits the sequence length, with the smoke test off (the tester's "
         "21-2: trl's raw num_samples=0)", "training.no_records_fit",
         lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                      "select_model.model_id=yichui/tiny-qwen2-chat", "choose_strategy.seq_len=16",
                      "choose_strategy.preflight=false"), code=1),
    # session files
    Case("session-truncated", "a truncated session file", "session.not_json",
         lambda e: ["show", e.file("cut.json", e.session().read_text()[:100])]),
    Case("session-hand-edited", "a hand-edited session (unknown status)", "session.invalid",
         lambda e: ["show", e.edited(lambda d: d["steps"]["train"].update(status="finished"))]),
    Case("session-wrong-steps", "a session whose steps were removed", "session.invalid",
         lambda e: ["show", e.edited(lambda d: d["steps"].pop("train"))]),
    Case("session-damaged-outputs", "a session whose recorded outputs have the wrong type (a hand edit)",
         "session.invalid", lambda e: ["resume", e.edited(lambda d: d["steps"]["evaluate_memory"].update(
             status="done", outputs={"gpu": "x"})), "--yes"]),
    Case("session-damaged-export", "a session whose recorded export is damaged inside (an artifact without a folder)",
         "session.invalid", lambda e: ["show", e.edited(lambda d: d["steps"]["export"]["outputs"].update(
             artifacts={"bnb-8bit": "str"}))]),
    Case("session-newer", "a session from a newer yichui", "session.newer",
         lambda e: ["resume", e.edited(lambda d: d.update(schema_version=99)), "--yes"]),
    Case("session-folder", "a folder given as the session", "session.is_folder", lambda e: ["show", str(e.tmp)]),
    Case("session-binary", "a binary file given as the session", "session.not_text",
         lambda e: ["show", e.file("bin.json", bytes(range(128, 256)))]),
    Case("session-device", "a device given as the session (yichui show /dev/zero)", "session.not_a_file",
         lambda e: ["show", "/dev/zero"]),
    Case("session-huge", "a 64 MiB file given as the session", "session.too_large",
         lambda e: ["show", str(e.tmp / "huge.json")], setup=lambda e: open(e.tmp / "huge.json", "ab").truncate(64 << 20)),
    Case("session-strategy-edited", "a done strategy hand-edited to a method that does not exist", "session.invalid",
         lambda e: ["resume", e.edited(lambda d: d["steps"]["choose_strategy"].update(
             status="done", outputs={"training": {"method": "foo"}})), "--yes"]),
    Case("session-foreign-run-dir", "a session whose run_dir was hand-edited to another folder, resumed",
         "cli.resume.odd_run_dir", lambda e: ["resume", e.edited(lambda d: d.update(run_dir=str(e.tmp))), "--yes"]),
    Case("engine-needs-gpu", "vLLM chosen at export for a session that deploys on a machine without a GPU",
         "export.engine_needs_gpu", lambda e: ys("export.serve_with=vllm")),
    Case("moe-lora-dropout", "LoRA dropout on a MoE model's fused experts (peft cannot run it)",
         "cli.estimate.moe_dropout",
         lambda e: ["estimate", e.folder("moe", {"config.json": json.dumps(MOE)}), "--lora-dropout", "0.1"]),
    Case("delete-running", "deleting a session whose trainer runs", "cli.delete.running",
         lambda e: ["delete", str(e.session()), "--yes"], setup=running_trainer),
    Case("session-missing", "a session id that does not exist", "session.not_found", lambda e: ["replay", "19990101-000000-0000", "--yes"]),
    Case("two-wizards", "two wizards on one session", "session.locked",
         lambda e: ["resume", str(e.session()), "--yes"], setup=hold_lock),
    # serving
    Case("port-in-use", "a port another program holds", "deploy.port_in_use", lambda e: ys(f"deploy.port={taken_port(e)}")),
    Case("port-reserved", "a port another running session has reserved for its server", "deploy.port_reserved",
         lambda e: ys(f"deploy.port={reserved_port(e)}")),
    Case("port-out-of-range", "a port above 65535", "answer.out_of_range", lambda e: ys("deploy.port=70000")),
    Case("engine-not-installed", "a serving engine that is not installed", "deploy.not_installed", lambda e: ys("deploy.backend=vllm")),
    Case("chat-unreachable", "chat with an endpoint nobody serves", "serving.chat.unreachable",
         lambda e: ["chat", "--endpoint", "http://127.0.0.1:9/v1"], code=1),
    Case("evaluate-unreachable", "evaluating an endpoint nobody serves", "select_model.endpoint_unreachable",
         lambda e: ["run", "--task", "evaluate", *ys("select_model.source=endpoint",
                                                     "select_model.endpoint_url=http://127.0.0.1:9/v1")[1:]]),
    Case("benchmark-offline", "a benchmark whose data is neither on disk nor reachable", "evaluate.data_unavailable",
         lambda e: ["run", "--task", "evaluate", *ys(*LOCAL(e), "evaluate.heldout=none", "evaluate.benchmarks=gsm8k",
                                                     "evaluate.benchmark_endpoint=http://127.0.0.1:9")[1:]]),
    Case("heldout-without-references", "an evaluation set with no reference replies", "evaluate.no_references",
         lambda e: ["run", "--task", "evaluate", *ys(*LOCAL(e), "evaluate.heldout=file", "evaluate.heldout_path=" + e.file(
             "q.jsonl", json.dumps({"messages": [{"role": "user", "content": "hi"}]})))[1:]]),
    Case("nothing-to-evaluate", "an evaluation with no held-out data and no benchmark", "evaluate.nothing_to_measure",
         lambda e: ["run", "--task", "evaluate", *ys(*LOCAL(e), "evaluate.heldout=none")[1:]]),
    Case("nothing-to-evaluate-after-training", "no held-out data and no benchmark in a fine-tune (refused at step 8, "
         "after training, export and deploy: the tester's N8)", "evaluate.nothing_to_measure",
         lambda e: ys(*LOCAL(e), "evaluate.heldout=none"), after=lambda e: no_training(e)),
    Case("no-training-split", "the training split as held-out data where nothing was trained (or held out)",
         "evaluate.no_split_task", lambda e: ["run", "--task", "evaluate", *ys(*LOCAL(e), "evaluate.heldout=training")[1:]]),
    # disks and folders
    Case("full-disk", "a download into a full disk", "cli.download.no_space",
         lambda e: ["download", "yichui/tiny-qwen2-chat", "--endpoint", e.hub.url, "--local-dir", str(e.tmpfs("256k"))],
         code=1),  # the world (a disk), not the user's input: wizard/README.md, exit status
    Case("folder-read-only", "a model folder on a read-only filesystem (the download's here; an export folder gives "
         "the same line)", "engine.os_error", code=1,
         argv=lambda e: hub_run(e, f"download.local_dir={e.tmpfs('1m', ro=True) / 'models'}")),
    Case("path-too-long", "a 10,000-character folder name", "engine.os_error", code=1,
         argv=lambda e: hub_run(e, f"download.local_dir={e.tmp / ('x' * 10_000)}")),
    Case("read-only-home", "YICHUI_HOME on a read-only filesystem", "cli.preflight",
         lambda e: e.extra.update(YICHUI_HOME=str(e.tmpfs("1m", ro=True) / "home")) or ys("deploy.port=8000")),
    Case("bad-repo-type", "yichui download --repo-type space", "cli.bad_repo_type",
         lambda e: ["download", "org/name", "--repo-type", "space"]),
    Case("bad-source", "yichui download --source github", "hub.unknown_source", lambda e: ["download", "org/name", "--source", "github"]),
    Case("estimate-dropout-out-of-range", "yichui estimate --lora-dropout 2 (or nan)", "training.bad_number",
         lambda e: ["estimate", str(e.tiny), "--lora-dropout", "2"]),
    Case("estimate-bad-method", "yichui estimate with an unknown method", "training.bad_choice",
         lambda e: ["estimate", str(e.tiny), "--method", "magic"]),
    Case("estimate-negative-memory", "yichui estimate --gpu-memory -1", "cli.option_positive",
         lambda e: ["estimate", str(e.tiny), "--gpu-memory", "-1"]),
    Case("estimate-infinite-memory", "yichui estimate --gpu-memory inf (or nan)", "cli.option_positive",
         lambda e: ["estimate", str(e.tiny), "--gpu-memory", "inf"]),
    Case("estimate-seq-over-context", "yichui estimate --seq longer than the model's context", "cli.seq_over_max",
         lambda e: ["estimate", str(e.tiny), "--seq", "4096"]),
    Case("estimate-gpu-and-memory", "yichui estimate --gpu with --gpu-memory", "cli.options_disagree",
         lambda e: ["estimate", str(e.tiny), "--gpu", "a10-24g", "--gpu-memory", "40"]),
    Case("estimate-master-weights-lora", "yichui estimate --master-weights for a LoRA method",
         "cli.master_weights_full_only", lambda e: ["estimate", str(e.tiny), "--master-weights", "bf16"]),
    Case("estimate-offload-ddp", "yichui estimate --offload without ZeRO or FSDP", "cli.offload_needs_sharding",
         lambda e: ["estimate", str(e.tiny), "--offload"]),
    Case("estimate-switch-both-ways", "yichui estimate --liger --no-liger (a switch asked both ways, or an older "
         "spelling against the new one)", "cli.options_disagree",
         lambda e: ["estimate", str(e.tiny), "--liger", "--no-liger"]),
    Case("estimate-qlora-compiled", "yichui estimate --method qlora --compile-layers (2.1× the memory, not modelled)",
         "training.qlora_and_compile",
         lambda e: ["estimate", str(e.tiny), "--method", "qlora", "--compile-layers"]),
    Case("chat-not-a-url", "yichui chat --endpoint notaurl", "cli.chat.bad_endpoint",
         lambda e: ["chat", "--endpoint", "notaurl"]),
    Case("no-server", "serve status of a session that never deployed", "cli.serve.never_deployed",
         lambda e: ["serve", "status", str(e.session())], code=1),
    Case("no-such-hub-dataset", "a hub dataset id the hub does not have (checked when answered, not at the end)",
         "hub.no_such_dataset", lambda e: ys(f"select_model.endpoint={e.hub.url}", "select_model.model=other",
                                             "select_model.model_id=yichui/tiny-qwen2-chat",
                                             "choose_strategy.dataset=hub", "choose_strategy.dataset_repo=nobody/nothing")),
    Case("no-server-running", "yichui chat with no server running (the newest session never deployed)",
         "cli.serve.none_running_hint", lambda e: (e.session(), ["chat"])[1], code=1),
]


def render(key: str, lang: str) -> str:
    """The catalogue message with its placeholders shown as …"""
    return re.sub(r"\{[^}]*\}", "…", i18n.CATALOG[key][lang]).replace("\n", " ")


def markdown() -> str:
    lines = ["| # | bad input | what yichui says | 中文提示 |", "|---|---|---|---|"]
    for i, c in enumerate(CATALOGUE, 1):
        lines.append(f"| {i} | {c.what} | {render(c.key, 'en')} | {render(c.key, 'zh')} |")
    return "\n".join(lines)


def test_the_catalogue_has_forty_cases_and_known_messages():
    assert len(CATALOGUE) >= 40 and len({c.id for c in CATALOGUE}) == len(CATALOGUE)
    for c in CATALOGUE:
        assert c.key in i18n.CATALOG, c.key


def test_troubleshooting_page_is_the_catalogue():
    readme = (ROOT / "docs" / "troubleshooting.md").read_text()
    start, end = "<!-- bad-inputs:start -->", "<!-- bad-inputs:end -->"
    assert start in readme and end in readme
    assert readme.split(start)[1].split(end)[0].strip() == markdown(), \
        "regenerate with: python tests/test_bad_inputs.py > section, and paste between the markers"


# the cases that run choose_strategy or the smoke run in a subprocess (4-11 s each): `slow`, out of the inner loop
HEAVY = {"smoke-test-fails", "nothing-fits-smoke-test-off", "no-dataset", "dataset-is-a-fifo", "template-rejects-record", "unknown-data-format", "not-utf8-data",
         "malformed-records", "empty-dataset", "bad-sample-size", "bad-data-suffix", "estimate-seq-over-context",
         "missing-image", "images-for-text-model"}


# each case runs in one language, every second one in Chinese (LANG=zh_CN.UTF-8, as a user's locale), the cases of
# issue 23's second round in both; test_every_case_message_has_the_same_placeholders_in_both_languages covers the rest
BOTH = {"config-missing-field", "vlm-text-config-missing-field", "config-contradicts-weights", "port-reserved",
        "folder-read-only", "path-too-long", "nothing-to-evaluate", "no-training-split"}
RUNS = [(c, lang) for i, c in enumerate(CATALOGUE)
        for lang in (("en", "zh") if c.id in BOTH else ("zh",) if i % 2 and c.id != "bad-lang" else ("en",))]


def line_pattern(key: str, lang: str) -> re.Pattern:
    """The catalogue message as a regex: its literal text in order, any text where a placeholder is."""
    parts = [re.escape(lit) + ("(.+?)" if name is not None else "")
             for lit, name, _, _ in string.Formatter().parse(i18n.CATALOG[key][lang])]
    return re.compile("".join(parts))


def bystander(env: "Env") -> dict[Path, bytes]:
    """What a bad input must not touch: a session, its last checkpoint, and a half-downloaded weights file."""
    from wizard.session import Session

    sid = Session.load(env.session()).id
    files = {env.home / "runs" / sid / "train" / "checkpoint-10" / "adapter_model.safetensors": b"checkpoint" * 100,
             env.home / "models" / "hf" / "org" / "half" / "model.safetensors.yichui-part": b"downloaded" * 100}
    for p, data in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


@pytest.mark.parametrize("case,lang", [pytest.param(c, lang, marks=pytest.mark.slow) if c.id in HEAVY else (c, lang)
                                       for c, lang in RUNS], ids=[f"{c.id}-{lang}" for c, lang in RUNS])
def test_bad_input(case, lang, home, hub, tmp_path, tiny_model, tmpfs, request):
    """One line: the case's catalogue message, whole (its literal text in the run's language, in order), after the
    error prefix; the case's exit status; no traceback; and nothing lost — every session file there was is
    unchanged and loads, a checkpoint and a half-downloaded file beside them are unchanged, and what the case says
    must survive (its ``after``) does."""
    env = Env(home, hub, tmp_path, tiny_model, tmpfs, lang)
    if case.vlm:
        env.tiny_vlm = request.getfixturevalue("tiny_vlm_model")
    kept = bystander(env)
    if case.setup:
        case.setup(env)
    argv = case.argv(env)
    before = {p: p.read_bytes() for p in (home / "sessions").glob("*.json")}
    extra = {k: v for k, v in env.extra.items() if not k.startswith("_")}
    r = yichui(home, *argv, timeout=300, **extra, **({"LANG": "zh_CN.UTF-8"} if lang == "zh" else {}))
    lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
    assert r.returncode == case.code, (r.returncode, r.stdout[-1500:], r.stderr[-1500:])
    i18n.set_lang(lang)
    try:
        prefix = i18n.t("ui.error_prefix").strip()
    finally:
        i18n.set_lang("en")
    errors = [x for x in lines if x.startswith(prefix)]
    assert len(errors) == 1 and lines[-1] == errors[0], r.stderr  # one error line (after at most a warning)
    assert len(lines) <= 2, r.stderr
    assert len(r.stderr) < 2_000, r.stderr[:500]  # no value echoed whole (a 100,000-character --set was)
    assert r.stderr.count("x" * 100) <= 1, r.stderr  # … nor shown twice (its reason quoting it: trial L)
    assert line_pattern(case.key, lang).search(errors[0][len(prefix):]), (i18n.CATALOG[case.key][lang], errors[0])
    assert "Traceback" not in r.stdout + r.stderr
    from wizard.session import Session

    assert before and all(p.read_bytes() == data for p, data in before.items())
    for p in (home / "sessions").glob("*.json"):
        Session.load(p)
    assert all(p.read_bytes() == data for p, data in kept.items())
    if case.after:
        case.after(env)


def test_every_case_message_has_the_same_placeholders_in_both_languages():
    """A case run in one language only still says its line in the other: the same placeholders, so it formats."""
    for c in CATALOGUE:
        names = {lang: sorted(n for _, n, _, _ in string.Formatter().parse(i18n.CATALOG[c.key][lang]) if n)
                 for lang in ("en", "zh")}
        assert names["en"] == names["zh"], (c.key, names)


def test_a_forty_column_terminal_wraps_and_asks(home, tmp_path):
    """Not an error: at 40 columns tables wrap within the width and the wizard still asks its first question."""
    import pexpect
    from conftest import YICHUI, env_for

    for args in (["steps"], ["doctor"], ["--help"]):
        r = yichui(home, *args, COLUMNS="40")
        assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, args
        # doctor's fix commands stay one line each, whole, so they can be copied (the terminal wraps them)
        drawn = [x for x in r.stdout.splitlines() if not x.startswith("  [")]
        assert max(len(x) for x in drawn) <= 40, (args, r.stdout)
    t = pexpect.spawn(YICHUI, [], env=env_for(home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1"),
                      encoding="utf-8", dimensions=(24, 40), timeout=60)
    t.expect("What do you want")
    t.send("\x03")  # Ctrl-C at the task menu: nothing started, exit 130
    t.expect(pexpect.EOF)
    t.close()
    assert t.exitstatus == 130


if __name__ == "__main__":
    print(markdown())
