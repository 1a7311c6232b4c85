"""Issue 20, item 1: the wizard offline, in a real pseudo-terminal at 80 columns. A question checked against the
network (the hub endpoint, the benchmark data) was a dead end when nothing answers: refused, re-asked forever, Esc
doing nothing. Now each refusal offers: answer again, a mirror from a short list, or go back to an earlier question
(another source, a local folder, untick the benchmark) — and the wizard speaks no `--set` syntax.
"""
from __future__ import annotations

import json
import socket

import pexpect
from conftest import sessions

from e2e.term import DOWN, ENTER, SPACE, Term
from recipes.data import datasets


def dead_url() -> str:
    """A loopback port nothing listens on: a hub that does not answer, as offline."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_unreachable_hub_goes_back_to_a_local_folder(home, tiny_model):
    """Hugging Face unreachable: the refusal offers hf-mirror.com and a way back; back → local folder → step 2."""
    down = dead_url()
    t = Term(home, rows=40, cols=80, HF_ENDPOINT=down)
    try:
        t.ask("What do you want to do?")                       # fine-tune
        t.ask("Where does the model come from?")               # Hugging Face
        t.ask("Hub endpoint (mirror URL):")                    # the unreachable one, pre-filled
        t.expect(f"Cannot reach {down}")
        t.expect("What now?")
        t.expect("Go back: Where does the model come from?")
        screen = t.screen()
        assert "Use https://hf-mirror.com" in screen and "Use https://huggingface.co" in screen
        assert f"Use {down}" not in screen                      # the refused value is not offered again
        t.p.send(DOWN * 3 + ENTER)                             # again · huggingface.co · hf-mirror.com · back
        t.ask("Where does the model come from?", DOWN * 2)     # the source, asked again: a local folder
        t.ask("Folder of the model:", str(tiny_model))
        t.expect("Which GPU will train it?")                   # step 2: out of the trap
        screen = t.screen()
        assert "select_model.source" not in screen and "--set" not in screen  # no command-line syntax in the wizard
        assert t.quit() == 130
        (s,) = sessions(home)
        assert s["steps"]["select_model"]["status"] == "done"
        assert s["steps"]["select_model"]["answers"] == {"source": "local", "path": str(tiny_model)}
    finally:
        t.p.terminate(force=True)


def test_unreachable_modelscope_in_chinese_answer_again_with_a_mirror(home, hub):
    """ModelScope unreachable, in Chinese: "answer again" with a hub that answers goes on to the model question."""
    down = dead_url()
    t = Term(home, "run", "--task", "finetune", "--lang", "zh", lang="zh", rows=40, cols=80, MODELSCOPE_ENDPOINT=down)
    try:
        t.ask("模型来自哪里？", DOWN)                            # ModelScope
        t.ask("仓库地址（镜像 URL）：")
        t.expect(f"无法连接 {down}")
        t.ask("接下来？")                                        # 重新回答 (the first choice)
        t.ask("仓库地址（镜像 URL）：", hub.url, clear=True)
        t.expect("选择哪个模型？")
        assert "select_model." not in t.screen()
        assert t.quit() == 130
        (s,) = sessions(home)
        assert s["steps"]["select_model"]["answers"] == {"source": "modelscope", "endpoint": hub.url}
    finally:
        t.p.terminate(force=True)


def test_unreachable_benchmark_data_goes_back_to_untick_it(home, tiny_model, tmp_path):
    """GSM8K ticked offline: the data endpoint is refused naming the dataset and how to fetch it; going back to the
    benchmarks, unticking GSM8K, the evaluation runs without it."""
    down = dead_url()
    heldout = tmp_path / "heldout.jsonl"
    heldout.write_text("".join(json.dumps({"messages": c}) + "\n"
                               for c in datasets.load_records(datasets.bundled_dataset_path())[:4]))
    t = Term(home, "run", "--task", "evaluate", rows=40, cols=80, HF_ENDPOINT=down)
    try:
        t.ask("Where does the model come from?", DOWN * 2)     # a local folder
        t.ask("Folder of the model:", str(tiny_model))
        t.ask("Held-out data for loss", DOWN)                  # a file
        t.ask("Held-out file", str(heldout))
        t.ask("Held-out conversations to use", "2", clear=True)
        t.ask("Longest generated reply", "4", clear=True)
        t.ask("Standard benchmarks", SPACE)                    # tick GSM8K (the first)
        t.ask("Examples per benchmark task")
        t.ask("Fetch benchmark data from:")                    # Hugging Face
        t.ask("Hub endpoint for benchmark data:")              # the unreachable one
        t.expect("openai/gsm8k")                                # names the dataset id …
        t.expect("yichui download openai/gsm8k --repo-type dataset")  # … and how to fetch it
        t.expect("Go back: Standard benchmarks")
        screen = t.screen()
        assert "local model folder" not in screen              # not the hub hint nested inside
        t.p.send(DOWN * 3 + ENTER)                             # again · huggingface.co · hf-mirror.com · benchmarks
        t.ask("Standard benchmarks", SPACE)                    # untick GSM8K
        t.expect("held-out rouge_l", timeout=300)
        t.p.expect(pexpect.EOF, timeout=120)
        t.p.close()
        assert t.p.exitstatus == 0
        (s,) = sessions(home)
        assert s["steps"]["evaluate"]["answers"]["benchmarks"] == []
        assert "benchmark_endpoint" not in s["steps"]["evaluate"]["answers"]
    finally:
        t.p.terminate(force=True)


def test_long_choices_wrap_at_50_columns(home):
    """Issue 20, item 4: at 50 columns prompt_toolkit cut each long choice at the edge (the model list lost its
    repository ids). Labels wrap now, later lines under the first."""
    t = Term(home, "run", "--task", "finetune", rows=40, cols=50, HF_HUB_OFFLINE="1")
    try:
        t.ask("Where does the model come from?")
        t.ask("Hub endpoint (mirror URL):")
        t.expect("Which model?")
        t.expect("Another hub id")
        screen = t.screen()
        for repo in ("(deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B)", "(meta-llama/Llama-3.2-1B-Instruct)"):
            assert repo in screen, screen[-2000:]
        assert t.quit() == 130
    finally:
        t.p.terminate(force=True)
