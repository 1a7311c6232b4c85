"""The interactive wizard in a real pseudo-terminal (pexpect), driven through every prompt.

English: non-default choices everywhere and validation re-prompts, then the answers are checked in the session
file. Chinese: Ctrl-C at a prompt (exit 130, the resume command printed), then `resume` in a new terminal, pre-filled
answers confirmed, to the end.
"""
from __future__ import annotations

import json
import socket

import pytest
from conftest import sessions, stop_all

import recipes
from e2e.term import CTRL_C, DOWN, UP, Term
from recipes.data import datasets

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def messages_file(tmp_path):
    path = tmp_path / "chat.jsonl"
    convs = datasets.load_records(datasets.bundled_dataset_path())[:48]
    path.write_text("".join(json.dumps({"messages": c}) + "\n" for c in convs))
    return path


def test_english_every_prompt_non_default_with_reprompts(home, hub, messages_file, tmp_path):
    port = free_port()
    no_refs = tmp_path / "questions-only.jsonl"
    no_refs.write_text('{"messages": [{"role": "user", "content": "What is LoRA?"}]}\n')
    t = Term(home, HF_ENDPOINT=hub.url)
    try:
        t.ask("What do you want to do?")                              # the task menu: fine-tune (first)
        t.ask("Where does the model come from?")                      # Hugging Face
        t.ask("Hub endpoint (mirror URL):")                           # pre-filled from HF_ENDPOINT
        t.ask("Which model?")                                         # Qwen2.5 0.5B: not on this hub
        t.expect("No such model: Qwen/Qwen2.5-0.5B-Instruct")          # re-prompt 1
        t.ask("What now?")                                            # answer again (or go back: issue 20, item 1)
        t.ask("Which model?", DOWN * 20)                              # Another hub id …
        t.ask("Hub id (org/name):", "not an id")
        t.expect("is not a hub id")                                   # re-prompt 2
        t.ask("What now?")
        t.ask("Hub id (org/name):", "yichui/tiny-qwen2-chat", clear=True)
        t.ask("Revision (branch, tag or commit):")
        t.ask("Which GPU will train it?", UP)                          # T4 instead of the A10 default
        t.ask("How many GPUs?", "2", clear=True)
        t.ask("Training objective:")                                  # SFT (the default)
        t.ask("Fine-tuning method:", DOWN)                            # QLoRA
        t.ask("LoRA rank r:", "0", clear=True)
        t.expect("Must be between 1 and 1024")                        # re-prompt 3
        t.ask("LoRA rank r:", "4", clear=True)
        t.ask("LoRA alpha:", "16", clear=True)
        t.ask("LoRA dropout:", "0.1", clear=True)
        t.ask("LoRA target modules", "q_proj,v_proj", clear=True)
        t.ask("Training data:", DOWN)                                 # a local file
        t.ask("Path of the dataset file:", str(tmp_path / "missing.jsonl"))
        t.expect("does not exist")                                    # re-prompt 4
        t.expect("What now?")
        t.expect("Training data")                                     # a way back to the data's source, and:
        t.ask("Training objective")                                   # to the objective; Enter: answer again
        t.ask("Path of the dataset file:", str(messages_file), clear=True)
        t.ask("Fraction held out for validation", "0.25", clear=True)
        t.ask("Maximum sequence length", "128", clear=True)
        t.ask("Training processes")
        t.ask("Nodes (machines", "0", clear=True)
        t.expect("Must be between 1 and 1024")                        # re-prompt
        t.ask("Nodes (machines", "1", clear=True)
        t.ask("Sequences per optimizer step", "4", clear=True)
        t.ask("Plan (fitting ones first")                             # the planner's fastest, preselected
        t.ask("Activation checkpointing", "y", enter=False)
        t.ask("Micro-batch size", "2", clear=True)
        t.ask("Gradient accumulation steps:", "2", clear=True)
        t.ask("Pack sequences padding-free", "n", enter=False)
        t.ask("Optimizer:")
        t.ask("Learning rate:", "0.002", clear=True)
        t.ask("Optimizer steps", "6", clear=True)
        t.ask("Save a checkpoint every N steps:", "3", clear=True)
        t.ask("Keep the last K checkpoints:", "1", clear=True)
        t.ask("Back up the adapter to a hub")                          # no backup (the default; tests/test_backup.py)
        t.ask("Also log to these experiment trackers")                # none (the default; tests/test_trackers.py)
        t.ask("A question to ask the model", "What is QLoRA?", clear=True)
        t.ask("Smoke-test this strategy before the weights download")  # yes: 2 steps on a 2-layer random copy
        t.expect("Smoke test passed", timeout=120)
        t.ask("Download into folder:")
        t.ask("Compare the speed of other endpoints", hub.url, clear=True)  # the same hub, timed as a mirror
        t.expect("Endpoints, fastest first")
        t.ask("Train on:", DOWN)                                      # CPU
        t.expect("Training finished", timeout=240)
        t.ask("Weights dtype of the merged model:", DOWN * 3)          # float32
        t.ask("Which engine will serve the model?")                    # transformers (no GPU here)
        t.ask("Quantized copies to make", " ")                         # untick bnb-4bit: the merged model only
        t.expect("[J? Quantized copies to make")                      # questionary's "done" echo gone over
        t.expect("none")                                              # and said again with which ones: none
        t.expect("deploy.backend = transformers (as export.serve_with")  # not asked twice (issue 20, item 13)
        t.ask("Which export to serve?")
        t.ask("Bind address:", "0.0.0.0", clear=True)
        t.expect("only binds 127.0.0.1")                              # re-prompt 6
        t.ask("Bind address:", "127.0.0.1", clear=True)
        t.ask("Port:", str(port), clear=True)
        t.ask("Extra options for the engine", "--port 1")
        t.expect("is set by yichui from the session")                 # re-prompt: an option yichui sets itself
        t.ask("Extra options for the engine", "", clear=True)         # none
        t.expect("After fine-tuning (from the server)", timeout=300)
        t.ask("Held-out data for loss", DOWN)                         # a file instead of the validation split
        t.ask("Held-out file", str(no_refs))
        t.expect("has no reference replies")                          # re-prompt 7
        t.ask("Held-out file", str(messages_file), clear=True)
        t.ask("Held-out conversations to use", "6", clear=True)
        t.ask("Longest generated reply", "16", clear=True)
        t.ask("Also evaluate the base model", "y", enter=False)
        t.ask("Which replies should", UP)                             # both models served (the base by a 2nd server)
        t.ask("Standard benchmarks")                                  # none ticked
        t.expect("Starting a second transformers server", timeout=300)
        t.expect("held-out rouge_l", timeout=300)
        assert t.finish() == 0
        (s,) = sessions(home)
        a = {name: rec["answers"] for name, rec in s["steps"].items()}
        assert a["select_model"] == {"source": "hf", "endpoint": hub.url, "model": "other",
                                     "model_id": "yichui/tiny-qwen2-chat", "revision": "main"}
        assert a["evaluate_memory"] == {"target_gpu": "t4-16g", "gpu_count": 2}
        assert a["download"]["compare_mirrors"] == hub.url
        assert a["choose_strategy"] == {
            "objective": "sft", "method": "qlora", "lora_rank": 4, "lora_alpha": 16, "lora_dropout": 0.1, "lora_targets": "q_proj,v_proj",
            "activation_checkpointing": True, "processes": 1, "nodes": 1, "packing": False, "dataset": "local", "dataset_path": str(messages_file),
            "val_ratio": 0.25, "seq_len": 128, "batch_size": 4, "plan": a["choose_strategy"]["plan"],
            "micro_batch": 2, "grad_accum": 2, "optim": "adamw", "learning_rate": 0.002, "max_steps": 6,
            "save_steps": 3, "save_total_limit": 1, "backup": "none", "trackers": [], "sample_question": "What is QLoRA?",
            "preflight": True}
        assert a["choose_strategy"]["plan"] == "ckpt=off,mb=4,liger=off"  # tiny model: no checkpointing, all in one
        assert a["train"] == {"device": "cpu"}
        assert a["export"] == {"dtype": "float32", "serve_with": "transformers", "formats": []}
        assert a["deploy"] == {"backend": "transformers", "model": "merged", "host": "127.0.0.1", "port": port,
                               "engine_args": ""}
        assert a["evaluate"] == {"heldout": "file", "heldout_path": str(messages_file), "heldout_samples": 6,
                                 "max_new_tokens": 16, "compare_base": True, "generate_with": "engine",
                                 "benchmarks": []}
        held = s["steps"]["evaluate"]["outputs"]["parts"]
        assert held["heldout:finetuned"]["where"] == s["steps"]["deploy"]["outputs"]["endpoint"]
        assert held["heldout:base"]["where"].startswith("http://127.0.0.1:")
        assert s["task"] == "finetune" and s["steps"]["chat"]["status"] == "skipped"
        assert s["steps"]["evaluate"]["outputs"]["columns"] == ["base", "finetuned"]
        assert s["steps"]["train"]["outputs"]["method"] == "qlora" and s["steps"]["train"]["outputs"]["steps"] == 6
        assert s["steps"]["deploy"]["outputs"]["endpoint"] == f"http://127.0.0.1:{port}/v1"
    finally:
        t.p.terminate(force=True)
        stop_all(home)


def test_chinese_ctrl_c_at_a_prompt_then_resume(home, hub):
    t = Term(home, "--lang", "zh", lang="zh", HF_ENDPOINT=hub.url)
    try:
        t.ask("你想做什么？")                                          # the task menu, in Chinese
        t.ask("模型来自哪里？")
        t.ask("仓库地址（镜像 URL）：")
        t.ask("选择哪个模型？")
        t.expect("没有这个模型")                                       # the re-prompt, in Chinese
        t.ask("接下来？")                                              # 重新回答
        t.ask("选择哪个模型？", UP * 3)                                # the tiny demo model (third from the end)
        t.ask("版本（分支、标签或提交号）：")
        t.ask("用哪种 GPU 训练？")
        t.ask("使用几块 GPU？")
        t.ask("训练目标：")                                            # SFT
        t.ask("微调方法：")                                            # LoRA (recommended)
        t.ask("LoRA 秩 r：", "32", clear=True)
        t.expect("LoRA alpha：")
        t.p.send(CTRL_C)                                               # Ctrl-C at a prompt
        t.expect("已中断")
        (s,) = sessions(home)
        t.expect(f"yichui resume {s['id']}")
        assert t.finish(timeout=30) == 130
        saved = json.loads((home / "sessions" / f"{s['id']}.json").read_text())
        assert saved["steps"]["choose_strategy"]["answers"] == {"objective": "sft", "method": "lora", "lora_rank": 32}
        assert saved["steps"]["evaluate_memory"]["status"] == "done"
        assert saved["steps"]["download"]["status"] == "pending"  # the weights come after the strategy

        r = Term(home, "--lang", "zh", "resume", lang="zh", HF_ENDPOINT=hub.url)
        r.expect(f"继续会话 {s['id']}")
        r.expect("此前已完成")                                         # done steps are not asked again
        r.ask("上次运行停止时正在回答它的问题")                         # go on from there: the 3 answers kept
        r.expect("choose_strategy.lora_rank = 32")                     # kept, said
        r.ask("LoRA alpha：")                                          # the first one missing: default 2 × 32
        r.ask("LoRA dropout：")
        r.ask("LoRA 目标模块")
        r.ask("训练数据：")
        r.ask("留作验证集的比例")
        r.ask("最大序列长度（token）：", "128", clear=True)
        r.ask("训练进程数")
        r.ask("节点数")
        r.ask("每个进程每个优化步的序列数", "4", clear=True)
        r.ask("训练方案")
        r.ask("启用激活检查点", "n", enter=False)
        r.ask("微批大小", "4", clear=True)
        r.ask("梯度累积步数：", "1", clear=True)
        r.ask("无填充打包序列", "n", enter=False)
        r.ask("优化器：")
        r.ask("学习率：")
        r.ask("优化步数", "4", clear=True)
        r.ask("每 N 步保存一次检查点：", "2", clear=True)
        r.ask("保留最近 K 个检查点：")
        r.ask("训练时把适配器备份到模型仓库吗")
        r.ask("同时记录到这些实验跟踪工具")
        r.ask("训练前后用来提问模型的问题：")
        r.ask("下载权重前先冒烟测试此策略")
        r.expect("冒烟测试通过", timeout=120)
        r.ask("下载到目录：")
        r.ask("先比较其他地址的速度")
        r.ask("训练设备：")
        r.expect("训练完成", timeout=240)
        r.ask("合并后模型的权重精度：")
        r.ask("将用哪个引擎部署模型")
        r.ask("除合并后的模型外")                                        # bnb-4bit, ticked by default
        r.ask("质量检查用的留出样本数", "4", clear=True)
        r.expect("deploy.backend = transformers（沿用 export.serve_with")
        r.ask("部署哪个导出结果？", DOWN)                               # the bnb 4-bit copy
        r.ask("监听地址：")
        r.ask("端口：")
        r.ask("引擎的额外选项")                                         # none
        r.expect("微调后（来自服务）", timeout=300)
        r.ask("用于损失、困惑度")                                       # the validation split
        r.ask("最多使用的留出对话数：", "4", clear=True)
        r.ask("生成回复的最大长度", "8", clear=True)
        r.ask("同时评测基座模型", "y", enter=False)
        r.ask("留出集与生成式基准用哪里")                               # generated here (transformers' default)
        r.ask("标准基准")
        r.expect("评测结果", timeout=300)
        assert r.finish() == 0
        final = json.loads((home / "sessions" / f"{s['id']}.json").read_text())
        assert [n for n, rec in final["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])
        cs = final["steps"]["choose_strategy"]["answers"]
        assert (cs["method"], cs["lora_rank"], cs["lora_alpha"], cs["max_steps"]) == ("lora", 32, 64, 4)
        assert final["steps"]["deploy"]["answers"]["model"] == "bnb-4bit"
        assert final["steps"]["deploy"]["outputs"]["reply"]
    finally:
        t.p.terminate(force=True)
        stop_all(home)
