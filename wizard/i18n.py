"""The one catalogue of user-facing text, English and Chinese, and the functions that pick and format it.

Every message is ``CATALOG[key] = {"en": ..., "zh": ...}`` formatted with ``str.format(**args)``. The language comes
from ``--lang en|zh``, else the locale (LC_ALL / LC_MESSAGES / LANG starting with ``zh``), else English.
tests/test_i18n.py checks that every key has both languages and that every key used in the code exists.
"""
from __future__ import annotations

import os
from typing import Any

LANGS = ("en", "zh")
_lang = "en"

CATALOG: dict[str, dict[str, str]] = {
    # -- command line ---------------------------------------------------------------------------------------------
    "cli.help": {"en": "yichui — fine-tune, export and serve a language model in one guided run.",
                 "zh": "一锤定音（yichui）——一次引导完成大模型的微调、导出与部署。"},
    "cli.lang": {"en": "Language of the interface: en or zh (default: from the locale).",
                 "zh": "界面语言：en 或 zh（默认取自系统区域设置）。"},
    "cli.run": {"en": "Start a new session in the interactive wizard (the default command).",
                "zh": "在交互式向导中开始新会话（默认命令）。"},
    "cli.demo": {"en": "Run all seven steps on the bundled tiny model, offline, with no questions.",
                 "zh": "用内置的小模型离线跑完全部七个步骤，不提任何问题。"},
    "cli.resume": {"en": "Continue an interrupted session where it stopped (default: the most recent unfinished one).",
                   "zh": "从中断处继续一个会话（默认：最近一个未完成的会话）。"},
    "cli.replay": {"en": "Run a saved session again as a new session, reusing its answers.",
                   "zh": "以新会话重新运行一个已保存的会话，沿用其答案。"},
    "cli.steps": {"en": "List the steps of the wizard.", "zh": "列出向导的各个步骤。"},
    "cli.show": {"en": "Show a session's state as a table.", "zh": "以表格显示会话状态。"},
    "cli.status": {"en": "Show what is running for a session (training, server).",
                   "zh": "显示会话正在运行的任务（训练、服务）。"},
    "cli.stop": {"en": "Stop what is running for a session (training, server).",
                 "zh": "停止会话正在运行的任务（训练、服务）。"},
    "cli.opt.set": {"en": "Answer a question: step.key=value (repeatable). Wins over every other source.",
                    "zh": "回答一个问题：step.key=value（可重复），优先于其他来源。"},
    "cli.opt.yes": {"en": "Ask nothing: use the saved answers, --set values and defaults.",
                    "zh": "不提问：使用已保存的答案、--set 的值与默认值。"},
    "cli.opt.task": {"en": "What to do: finetune (more tasks come later).", "zh": "要做的事：finetune（更多任务稍后提供）。"},
    "cli.arg.session": {"en": "Session id or path to a session file.", "zh": "会话 ID 或会话文件路径。"},
    "cli.no_tty": {"en": "No terminal here (stdin is not a TTY), so the wizard cannot ask questions. "
                         "Use `yichui replay SESSION --yes`, `yichui run --yes` or `yichui demo`.",
                   "zh": "当前没有终端（stdin 不是 TTY），向导无法提问。"
                         "请使用 `yichui replay SESSION --yes`、`yichui run --yes` 或 `yichui demo`。"},
    "cli.bad_set": {"en": "--set expects step.key=value, got {value!r}.",
                    "zh": "--set 的格式应为 step.key=value，收到的是 {value!r}。"},
    "cli.unknown_step": {"en": "--set names an unknown step {step!r}; steps are: {steps}.",
                         "zh": "--set 中的步骤 {step!r} 不存在；可用步骤：{steps}。"},
    "cli.unknown_task": {"en": "Unknown task {task!r}; tasks are: {tasks}.", "zh": "未知任务 {task!r}；可用任务：{tasks}。"},
    "cli.resuming": {"en": "Resuming session {id} ({path}).", "zh": "继续会话 {id}（{path}）。"},
    "cli.replaying": {"en": "Replaying {path} as new session {id}.", "zh": "以新会话 {id} 重放 {path}。"},
    "cli.new_session": {"en": "New session {id} — saved in {path}.", "zh": "新会话 {id}，保存在 {path}。"},
    "cli.already_finished": {"en": "Session {id} is already finished; `yichui show {id}` shows it, "
                                   "`yichui replay {id} --yes` runs it again.",
                             "zh": "会话 {id} 已经完成；`yichui show {id}` 可查看，`yichui replay {id} --yes` 可重新运行。"},
    "cli.no_jobs": {"en": "Nothing has been started for session {id}.", "zh": "会话 {id} 尚未启动任何任务。"},
    "cli.stopped": {"en": "Stopped {job} (pid {pid}) of session {id}.", "zh": "已停止会话 {id} 的 {job}（pid {pid}）。"},
    "cli.nothing_running": {"en": "Nothing is running for session {id}.", "zh": "会话 {id} 没有正在运行的任务。"},
    "cli.col.step": {"en": "step", "zh": "步骤"},
    "cli.col.status": {"en": "status", "zh": "状态"},
    "cli.col.answers": {"en": "answers", "zh": "答案"},
    "cli.col.outputs": {"en": "outputs", "zh": "输出"},
    "cli.col.description": {"en": "description", "zh": "说明"},
    "cli.col.job": {"en": "job", "zh": "任务"},
    "cli.col.state": {"en": "state", "zh": "状态"},
    "cli.col.detail": {"en": "detail", "zh": "详情"},
    "cli.col.log": {"en": "log", "zh": "日志"},
    "cli.state.running": {"en": "running", "zh": "运行中"},
    "cli.state.stopped": {"en": "not running", "zh": "未运行"},
    "cli.show.title": {"en": "Session {id} · task {task} · {path}", "zh": "会话 {id} · 任务 {task} · {path}"},
    "cli.status.title": {"en": "Jobs of session {id}", "zh": "会话 {id} 的任务"},
    "cli.steps.title": {"en": "Steps of the wizard", "zh": "向导步骤"},
    "cli.demo.building": {"en": "Building the tiny demo model (once; cached in {path}) ...",
                          "zh": "正在构建演示用小模型（仅一次，缓存于 {path}）……"},
    "cli.demo.hub": {"en": "Local model hub (Hugging Face API) at {url}, serving {repo}.",
                     "zh": "本地模型仓库（Hugging Face API）位于 {url}，提供 {repo}。"},
    "cli.demo.done": {"en": "Demo finished in {seconds:.0f} s.", "zh": "演示完成，用时 {seconds:.0f} 秒。"},
    # -- status words and UI ----------------------------------------------------------------------------------------
    "status.pending": {"en": "pending", "zh": "待办"},
    "status.running": {"en": "running", "zh": "进行中"},
    "status.done": {"en": "done", "zh": "完成"},
    "status.failed": {"en": "failed", "zh": "失败"},
    "status.skipped": {"en": "skipped", "zh": "跳过"},
    "ui.error_prefix": {"en": "error: ", "zh": "错误："},
    "ui.step_already_done": {"en": "done, skipped", "zh": "已完成，跳过"},
    "ui.col.field": {"en": "field", "zh": "字段"},
    "ui.col.value": {"en": "value", "zh": "值"},
    "ui.col.format": {"en": "format", "zh": "格式"},
    "ui.col.path": {"en": "path", "zh": "路径"},
    # -- answers and the engine -------------------------------------------------------------------------------------
    "answer.not_int": {"en": "{value!r} is not a whole number.", "zh": "{value!r} 不是整数。"},
    "answer.not_float": {"en": "{value!r} is not a number.", "zh": "{value!r} 不是数字。"},
    "answer.not_bool": {"en": "{value!r} is not yes/no (use true or false).", "zh": "{value!r} 不是是/否（请用 true 或 false）。"},
    "answer.not_a_choice": {"en": "{value!r} is not one of: {choices}.", "zh": "{value!r} 不在可选项中：{choices}。"},
    "answer.empty": {"en": "An answer is needed here.", "zh": "此处需要填写。"},
    "answer.out_of_range": {"en": "Must be between {lo} and {hi}.", "zh": "必须介于 {lo} 与 {hi} 之间。"},
    "answer.missing": {"en": "No answer for {name}: supply it with --set {name}=VALUE.",
                       "zh": "{name} 没有答案：请用 --set {name}=VALUE 提供。"},
    "answer.missing_secret": {"en": "No value for the secret {name}: set the environment variable {env} "
                                    "(secrets never go through --set or the session file).",
                              "zh": "机密项 {name} 没有值：请设置环境变量 {env}（机密不经过 --set，也不写入会话文件）。"},
    "answer.secret_via_set": {"en": "{name} is a secret and cannot be given with --set: set the environment variable {env}.",
                              "zh": "{name} 是机密项，不能用 --set 提供：请设置环境变量 {env}。"},
    "answer.invalid": {"en": "{name}={value!r} is not valid: {reason} Change it with --set {name}=VALUE.",
                       "zh": "{name}={value!r} 无效：{reason} 请用 --set {name}=VALUE 修改。"},
    "answer.unknown_key": {"en": "--set {name}: step {step} has no question {key!r}; its questions are: {keys}.",
                           "zh": "--set {name}：步骤 {step} 没有问题 {key!r}；它的问题有：{keys}。"},
    "engine.redo": {"en": "The outputs of {step} are gone from disk; running it again.",
                    "zh": "{step} 的输出已不在磁盘上，重新运行该步骤。"},
    "engine.interrupted": {"en": "Interrupted. Answers so far are saved. Continue with: yichui resume {id}",
                           "zh": "已中断，已保存目前的答案。继续请运行：yichui resume {id}"},
    "engine.crashed": {"en": "{step} failed: {error} (traceback in {log}).", "zh": "{step} 失败：{error}（调用栈见 {log}）。"},
    "engine.finished": {"en": "All steps done. Session {id} is saved in {path}.", "zh": "全部步骤完成。会话 {id} 保存在 {path}。"},
    "engine.resume_hint": {"en": "Fix the cause, then continue with: yichui resume {id}",
                           "zh": "排除原因后继续：yichui resume {id}"},
    # -- sessions -------------------------------------------------------------------------------------------------
    "session.invalid": {"en": "Session file {path} is not a valid yichui session: {what}. It was left untouched; "
                              "fix it by hand or start a new session.",
                        "zh": "会话文件 {path} 不是有效的 yichui 会话：{what}。文件未被改动；请手动修复或开始新会话。"},
    "session.not_found": {"en": "No session {path}: give a session id or a path (`yichui show` lists the latest).",
                          "zh": "找不到会话 {path}：请给出会话 ID 或路径（`yichui show` 显示最近的会话）。"},
    "session.not_json": {"en": "Session file {path} is not valid JSON (line {line}, column {col}: {error}). "
                               "It was left untouched; fix it by hand or start a new session.",
                         "zh": "会话文件 {path} 不是有效的 JSON（第 {line} 行第 {col} 列：{error}）。文件未被改动；请手动修复或开始新会话。"},
    "session.newer": {"en": "Session file {path} has schema version {version}, newer than this yichui knows ({known}): "
                            "upgrade yichui to open it.",
                      "zh": "会话文件 {path} 的格式版本为 {version}，比当前 yichui 支持的（{known}）更新：请升级 yichui 后再打开。"},
    "session.no_migration": {"en": "Session file {path} has schema version {version}, which no migration covers.",
                             "zh": "会话文件 {path} 的格式版本为 {version}，没有对应的迁移。"},
    "session.locked": {"en": "Session {path} is open in another yichui (pid {pid}); close that one first.",
                       "zh": "会话 {path} 正被另一个 yichui（pid {pid}）使用；请先关闭它。"},
    "session.none": {"en": "No sessions in {home} yet: start one with `yichui` or `yichui demo`.",
                     "zh": "{home} 中还没有会话：用 `yichui` 或 `yichui demo` 开始。"},
    "session.none_unfinished": {"en": "No unfinished session in {home}: `yichui` starts a new one.",
                                "zh": "{home} 中没有未完成的会话：运行 `yichui` 开始新会话。"},
    # -- steps ----------------------------------------------------------------------------------------------------
    "step.select_model.title": {"en": "Choose a model", "zh": "选择模型"},
    "step.evaluate_memory.title": {"en": "Evaluate GPU memory", "zh": "评估显存"},
    "step.download.title": {"en": "Download the model", "zh": "下载模型"},
    "step.choose_strategy.title": {"en": "Choose the training strategy", "zh": "选择训练策略"},
    "step.train.title": {"en": "Train", "zh": "训练"},
    "step.export.title": {"en": "Export", "zh": "导出"},
    "step.deploy.title": {"en": "Deploy", "zh": "部署"},
    "step.select_model.desc": {"en": "a catalogue model, any hub id or a local folder; reads config.json only",
                               "zh": "目录中的模型、任意仓库 ID 或本地目录；只读取 config.json"},
    "step.evaluate_memory.desc": {"en": "detect GPUs; calibrated peak memory per strategy; smallest instance",
                                  "zh": "检测 GPU；按策略给出校准的峰值显存；最小实例"},
    "step.download.desc": {"en": "fetch the revision from Hugging Face / ModelScope; disk check; commit recorded",
                           "zh": "从 Hugging Face / ModelScope 下载该版本；检查磁盘；记录提交号"},
    "step.choose_strategy.desc": {"en": "LoRA / QLoRA / full, hyper-parameters and the dataset",
                                  "zh": "LoRA / QLoRA / 全参数、超参数与数据集"},
    "step.train.desc": {"en": "trl + peft in a detached process; live view; checkpoints",
                        "zh": "在独立进程中用 trl + peft 训练；实时视图；检查点"},
    "step.export.desc": {"en": "merge the adapter; bitsandbytes 4-bit copy", "zh": "合并适配器；bitsandbytes 4 位副本"},
    "step.deploy.desc": {"en": "OpenAI-compatible server on 127.0.0.1; one chat completion",
                         "zh": "在 127.0.0.1 启动 OpenAI 兼容服务；发送一次对话请求"},
    # data
    "data.no_file": {"en": "Dataset {path} does not exist: give a .json or .jsonl file.",
                     "zh": "数据集 {path} 不存在：请提供 .json 或 .jsonl 文件。"},
    "data.empty": {"en": "Dataset {path} has no records.", "zh": "数据集 {path} 没有任何记录。"},
    "data.bad_json": {"en": "Dataset {path} is not valid JSON (line {line}: {error}).",
                      "zh": "数据集 {path} 不是有效的 JSON（第 {line} 行：{error}）。"},
    "data.bad_line": {"en": "Dataset {path}: line {line} is not valid JSON ({error}); fix or remove that line.",
                      "zh": "数据集 {path}：第 {line} 行不是有效的 JSON（{error}）；请修正或删除该行。"},
    "data.not_a_list": {"en": "Dataset {path} must hold a JSON list of records.", "zh": "数据集 {path} 必须是 JSON 记录列表。"},
    "data.unknown_format": {"en": "Dataset {path}: unknown record format; supported: {formats} "
                                  "(alpaca: instruction/input/output; messages: a list of role/content).",
                            "zh": "数据集 {path}：无法识别的记录格式；支持：{formats}"
                                  "（alpaca：instruction/input/output；messages：role/content 列表）。"},
    "data.bad_records": {"en": "Dataset {path}: {count} malformed record(s), e.g. {where}.",
                         "zh": "数据集 {path}：{count} 条记录格式有误，例如 {where}。"},
    # hub
    "hub.no_such_model": {"en": "No such model: {repo} on {endpoint}. Check the id (org/name) or the source.",
                          "zh": "没有这个模型：{endpoint} 上不存在 {repo}。请检查 ID（组织/名称）或来源。"},
    "hub.gated": {"en": "{repo} on {endpoint} is gated: accept its licence on the hub, then set HF_TOKEN.",
                  "zh": "{repo}（{endpoint}）需要授权：请先在网站上同意其许可，再设置 HF_TOKEN。"},
    "hub.no_such_revision": {"en": "{repo} has no revision {revision!r}: use a branch, tag or commit that exists.",
                             "zh": "{repo} 没有版本 {revision!r}：请使用存在的分支、标签或提交号。"},
    "hub.no_config": {"en": "{repo} has no config.json: it is not a transformers model.",
                      "zh": "{repo} 没有 config.json：它不是 transformers 模型。"},
    "hub.unreachable": {"en": "Cannot reach {endpoint} ({error}). Check the network or choose a mirror "
                              "(HF_ENDPOINT / MODELSCOPE_ENDPOINT).",
                        "zh": "无法连接 {endpoint}（{error}）。请检查网络或选择镜像（HF_ENDPOINT / MODELSCOPE_ENDPOINT）。"},
    "hub.no_local_model": {"en": "{path} holds no config.json: give the folder of a transformers model.",
                           "zh": "{path} 中没有 config.json：请给出 transformers 模型所在的目录。"},
    "hub.unknown_source": {"en": "Unknown source {source!r}; sources are: {sources}.",
                           "zh": "未知来源 {source!r}；可用来源：{sources}。"},
    "hub.bad_config": {"en": "config.json of {repo} is not valid JSON: {error}.", "zh": "{repo} 的 config.json 不是有效的 JSON：{error}。"},
    # select_model
    "select_model.source": {"en": "Where does the model come from?", "zh": "模型来自哪里？"},
    "select_model.source.hf": {"en": "Hugging Face (or a mirror)", "zh": "Hugging Face（或镜像）"},
    "select_model.source.modelscope": {"en": "ModelScope", "zh": "ModelScope（魔搭）"},
    "select_model.source.local": {"en": "A local folder", "zh": "本地目录"},
    "select_model.endpoint": {"en": "Hub endpoint (mirror URL):", "zh": "仓库地址（镜像 URL）："},
    "select_model.model": {"en": "Which model?", "zh": "选择哪个模型？"},
    "select_model.model.other": {"en": "Another hub id …", "zh": "其他仓库 ID……"},
    "select_model.model_id": {"en": "Hub id (org/name):", "zh": "仓库 ID（组织/名称）："},
    "select_model.path": {"en": "Folder of the model:", "zh": "模型所在目录："},
    "select_model.revision": {"en": "Revision (branch, tag or commit):", "zh": "版本（分支、标签或提交号）："},
    "select_model.table": {"en": "Model", "zh": "模型"},
    "select_model.bad_id": {"en": "{value!r} is not a hub id: write it as org/name.", "zh": "{value!r} 不是仓库 ID：格式应为 组织/名称。"},
    "select_model.bad_endpoint": {"en": "{value!r} is not an http(s) URL.", "zh": "{value!r} 不是 http(s) 网址。"},
    "select_model.not_on_source": {"en": "{model} is not published on {source}.", "zh": "{model} 未在 {source} 上发布。"},
    # evaluate_memory
    "evaluate_memory.target_gpu": {"en": "Which GPU will train it?", "zh": "用哪种 GPU 训练？"},
    "evaluate_memory.gpu_count": {"en": "How many GPUs?", "zh": "使用几块 GPU？"},
    "evaluate_memory.no_gpu": {"en": "No NVIDIA GPU detected here; estimating for the GPU you choose. "
                                     "Training here runs on the CPU.",
                               "zh": "本机未检测到 NVIDIA GPU；按所选 GPU 估算。在本机训练将使用 CPU。"},
    "evaluate_memory.table": {"en": "Peak memory per GPU on {n} × {gpu} ({gib} GiB), micro-batch 1, {seq} tokens, LoRA rank 8",
                              "zh": "每块 GPU 的峰值显存：{n} × {gpu}（{gib} GiB），微批 1，{seq} 个 token，LoRA 秩 8"},
    "evaluate_memory.nothing_fits": {"en": "No strategy fits on {gpu}; QLoRA with checkpointing is preselected — "
                                           "shorten the sequence or use more or larger GPUs.",
                                     "zh": "在 {gpu} 上没有可行的策略；已预选 QLoRA + 激活检查点——请缩短序列或使用更多、更大的 GPU。"},
    # download
    "download.local_dir": {"en": "Download into folder:", "zh": "下载到目录："},
    "download.local": {"en": "Using the local model in {path}; nothing to download.", "zh": "使用本地模型 {path}，无需下载。"},
    "download.plan": {"en": "{n} files, {gib} GiB, of {repo} at commit {commit} into {path}.",
                      "zh": "{repo}（提交 {commit}）的 {n} 个文件，共 {gib} GiB，下载到 {path}。"},
    "download.progress": {"en": "Downloading {repo}", "zh": "正在下载 {repo}"},
    "download.no_space": {"en": "Not enough disk in {path}: {need} GiB needed, {free} GiB free. Free space or choose "
                                "another folder (--set download.local_dir=...).",
                          "zh": "{path} 磁盘空间不足：需要 {need} GiB，仅剩 {free} GiB。请清理空间或换目录（--set download.local_dir=...）。"},
    "download.incomplete": {"en": "{file} is incomplete after download; run `yichui resume` to fetch it again.",
                            "zh": "{file} 下载后不完整；运行 `yichui resume` 重新获取。"},
    "download.bad_hash": {"en": "{file} does not match its sha256; it was removed — run `yichui resume` to fetch it again.",
                          "zh": "{file} 的 sha256 不匹配，已删除——运行 `yichui resume` 重新获取。"},
    # choose_strategy
    "choose_strategy.method": {"en": "Fine-tuning method:", "zh": "微调方法："},
    "choose_strategy.method.lora": {"en": "LoRA (bf16 base, small adapters)", "zh": "LoRA（bf16 基座 + 小型适配器）"},
    "choose_strategy.method.qlora": {"en": "QLoRA (NF4 4-bit base, double quantization)", "zh": "QLoRA（NF4 4 位基座，双重量化）"},
    "choose_strategy.method.full": {"en": "Full fine-tuning (all parameters)", "zh": "全参数微调"},
    "choose_strategy.lora_rank": {"en": "LoRA rank r:", "zh": "LoRA 秩 r："},
    "choose_strategy.lora_alpha": {"en": "LoRA alpha:", "zh": "LoRA alpha："},
    "choose_strategy.lora_dropout": {"en": "LoRA dropout:", "zh": "LoRA dropout："},
    "choose_strategy.lora_targets": {"en": "LoRA target modules (all-linear or q_proj,v_proj,...):",
                                     "zh": "LoRA 目标模块（all-linear 或 q_proj,v_proj,...）："},
    "choose_strategy.bad_targets": {"en": "{value!r}: write all-linear or module names separated by commas.",
                                    "zh": "{value!r}：请写 all-linear 或以逗号分隔的模块名。"},
    "choose_strategy.activation_checkpointing": {"en": "Activation checkpointing (less memory, ~30 % slower)?",
                                                 "zh": "启用激活检查点（省显存，约慢 30%）？"},
    "choose_strategy.dataset": {"en": "Training data:", "zh": "训练数据："},
    "choose_strategy.dataset.bundled": {"en": "The bundled demo instructions (306 examples)", "zh": "内置演示指令集（306 条）"},
    "choose_strategy.dataset.local": {"en": "A local .json / .jsonl file (alpaca or messages)",
                                      "zh": "本地 .json / .jsonl 文件（alpaca 或 messages 格式）"},
    "choose_strategy.dataset_path": {"en": "Path of the dataset file:", "zh": "数据集文件路径："},
    "choose_strategy.seq_len": {"en": "Maximum sequence length (tokens):", "zh": "最大序列长度（token）："},
    "choose_strategy.micro_batch": {"en": "Micro-batch size (sequences per GPU per step):", "zh": "微批大小（每 GPU 每步的序列数）："},
    "choose_strategy.grad_accum": {"en": "Gradient accumulation steps:", "zh": "梯度累积步数："},
    "choose_strategy.learning_rate": {"en": "Learning rate:", "zh": "学习率："},
    "choose_strategy.max_steps": {"en": "Optimizer steps (0 = train for a number of epochs):", "zh": "优化步数（0 表示按轮数训练）："},
    "choose_strategy.epochs": {"en": "Epochs:", "zh": "训练轮数："},
    "choose_strategy.save_steps": {"en": "Save a checkpoint every N steps:", "zh": "每 N 步保存一次检查点："},
    "choose_strategy.save_total_limit": {"en": "Keep the last K checkpoints:", "zh": "保留最近 K 个检查点："},
    "choose_strategy.sample_question": {"en": "A question to ask the model before and after training:",
                                        "zh": "训练前后用来提问模型的问题："},
    "choose_strategy.no_chat_template": {"en": "{model} has no chat template: choose an instruct/chat model.",
                                         "zh": "{model} 没有对话模板：请选择 instruct/chat 模型。"},
    "choose_strategy.sample": {"en": "Sample {i}, rendered with the model's chat template:\n{text}",
                               "zh": "样例 {i}（按模型的对话模板渲染）：\n{text}"},
    "choose_strategy.dataset_summary": {"en": "{n} records in {format} format from {path}.", "zh": "{path}：{n} 条 {format} 格式的记录。"},
    "choose_strategy.estimate": {"en": "Predicted peak memory for this configuration: {peak} GiB per GPU on {gpu} ({gib} GiB), margin {margin} GiB.",
                                 "zh": "此配置的预测峰值显存：每块 GPU {peak} GiB，{gpu}（{gib} GiB），余量 {margin} GiB。"},
    "choose_strategy.may_not_fit": {"en": "Warning: {peak} GiB may not fit in {gib} GiB with a 10 % margin; "
                                          "lower the micro-batch or sequence length, or turn on checkpointing.",
                                    "zh": "警告：{peak} GiB 在留 10% 余量时可能放不进 {gib} GiB；请减小微批或序列长度，或开启激活检查点。"},
    # train
    "train.device": {"en": "Train on:", "zh": "训练设备："},
    "train.device.auto": {"en": "auto (CUDA when present, else CPU)", "zh": "自动（有 CUDA 用 GPU，否则用 CPU）"},
    "train.no_cuda": {"en": "No CUDA GPU here: choose auto or CPU.", "zh": "本机没有 CUDA GPU：请选择自动或 CPU。"},
    "train.started": {"en": "Trainer started (pid {pid}), log: {log}", "zh": "训练进程已启动（pid {pid}），日志：{log}"},
    "train.reattach": {"en": "Re-attaching to the running trainer (pid {pid}).", "zh": "重新连接到正在运行的训练进程（pid {pid}）。"},
    "train.resume_from": {"en": "Resuming training from {checkpoint}.", "zh": "从 {checkpoint} 继续训练。"},
    "train.live_title": {"en": "Training (pid {pid}) — Ctrl-C detaches, training goes on",
                         "zh": "训练中（pid {pid}）——Ctrl-C 仅断开查看，训练继续"},
    "train.detached": {"en": "Detached: training goes on (pid {pid}). `yichui resume {id}` re-attaches, "
                             "`yichui stop {id}` stops it.",
                       "zh": "已断开：训练仍在继续（pid {pid}）。`yichui resume {id}` 重新连接，`yichui stop {id}` 停止训练。"},
    "train.finished": {"en": "Training finished: {steps} steps, training loop {seconds} s; loss {first} (first 5 logged) → {last} (last 5).",
                       "zh": "训练完成：{steps} 步，训练循环用时 {seconds} 秒；损失 {first}（前 5 次记录）→ {last}（后 5 次）。"},
    "train.failed": {"en": "Training failed: {error}. Log: {log}", "zh": "训练失败：{error}。日志：{log}"},
    "train.died": {"en": "The trainer (pid {pid}) stopped without finishing (its log: {log}); `yichui resume` restarts it from the last checkpoint.",
                   "zh": "训练进程（pid {pid}）未完成就退出了（日志：{log}）；`yichui resume` 会从最近的检查点重启。"},
    # export
    "export.dtype": {"en": "Weights dtype of the merged model:", "zh": "合并后模型的权重精度："},
    "export.dtype.auto": {"en": "auto (as the base model)", "zh": "自动（与基座模型相同）"},
    "export.bnb_4bit": {"en": "Also save a bitsandbytes 4-bit (NF4) copy?", "zh": "同时保存 bitsandbytes 4 位（NF4）副本？"},
    "export.no_adapter": {"en": "No trained adapter at {path}: run the train step first.", "zh": "{path} 处没有训练好的适配器：请先完成训练步骤。"},
    "export.no_space": {"en": "Not enough disk for the export in {path}: about {need} GiB needed.",
                        "zh": "{path} 的磁盘空间不足以导出：约需 {need} GiB。"},
    "export.merging": {"en": "Merging the {method} result into the base model → {path}", "zh": "正在把 {method} 结果合并进基座模型 → {path}"},
    "export.bnb4": {"en": "Quantizing to bitsandbytes NF4 → {path}", "zh": "正在量化为 bitsandbytes NF4 → {path}"},
    "export.table": {"en": "Exports", "zh": "导出结果"},
    # deploy
    "deploy.backend": {"en": "Serving engine:", "zh": "推理服务引擎："},
    "deploy.backend.label": {"en": "{backend} ({state})", "zh": "{backend}（{state}）"},
    "deploy.installed": {"en": "installed", "zh": "已安装"},
    "deploy.not_installed_short": {"en": "not installed", "zh": "未安装"},
    "deploy.not_installed": {"en": "{backend} is not installed: pip install '{pip}'.", "zh": "{backend} 未安装：pip install '{pip}'。"},
    "deploy.backend_later": {"en": "Launching {backend} ({state}) is not supported yet; choose transformers.",
                             "zh": "暂不支持启动 {backend}（{state}）；请选择 transformers。"},
    "deploy.model": {"en": "Which export to serve?", "zh": "部署哪个导出结果？"},
    "deploy.model.merged": {"en": "the merged model", "zh": "合并后的模型"},
    "deploy.model.bnb4": {"en": "the bitsandbytes 4-bit copy", "zh": "bitsandbytes 4 位副本"},
    "deploy.host": {"en": "Bind address:", "zh": "监听地址："},
    "deploy.port": {"en": "Port:", "zh": "端口："},
    "deploy.loopback_only": {"en": "transformers serve has no API key, so it only binds 127.0.0.1 (not {host}).",
                             "zh": "transformers serve 不支持 API 密钥，因此只能绑定 127.0.0.1（而不是 {host}）。"},
    "deploy.port_in_use": {"en": "Port {port} is in use: choose another.", "zh": "端口 {port} 已被占用：请换一个。"},
    "deploy.stopping_old": {"en": "Stopping the previous server (pid {pid}).", "zh": "正在停止之前的服务（pid {pid}）。"},
    "deploy.starting": {"en": "Server starting (pid {pid}), log: {log}", "zh": "服务启动中（pid {pid}），日志：{log}"},
    "deploy.died": {"en": "The server exited during start-up. Log {log} ends with:\n{tail}",
                    "zh": "服务在启动过程中退出。日志 {log} 末尾：\n{tail}"},
    "deploy.timeout": {"en": "The server did not become healthy within {seconds} s; see {log}.",
                       "zh": "服务在 {seconds} 秒内未就绪；请查看 {log}。"},
    "deploy.ready": {"en": "Serving {model} at {endpoint} (pid {pid}).", "zh": "正在 {endpoint} 提供 {model}（pid {pid}）。"},
    "deploy.before": {"en": "Before fine-tuning — {question}\n  {answer}", "zh": "微调前——{question}\n  {answer}"},
    "deploy.after": {"en": "After fine-tuning (from the server) — {question}\n  {answer}",
                     "zh": "微调后（来自服务）——{question}\n  {answer}"},
    "deploy.curl": {"en": "Try it:\n  {curl}", "zh": "试一试：\n  {curl}"},
    "deploy.stop_hint": {"en": "The server keeps running; `yichui stop {id}` stops it.",
                         "zh": "服务会继续运行；`yichui stop {id}` 可停止。"},
    # -- added with the memory model, `estimate`, and the first user trial ----------------------------------------
    "cli.os_error": {"en": "Cannot write {path}: {error}. Nothing was lost; choose a writable place (YICHUI_HOME) or free space.",
                     "zh": "无法写入 {path}：{error}。没有丢失任何内容；请换一个可写的位置（YICHUI_HOME）或释放空间。"},
    "cli.opt.all": {"en": "List every session.", "zh": "列出所有会话。"},
    "cli.show.all_title": {"en": "Sessions", "zh": "会话"},
    "cli.col.task": {"en": "task", "zh": "任务"},
    "cli.col.updated": {"en": "updated (UTC)", "zh": "更新时间（UTC）"},
    "cli.finished": {"en": "finished", "zh": "已完成"},
    "cli.unfinished": {"en": "unfinished", "zh": "未完成"},
    "cli.detail.step": {"en": "step {step}/{total}, loss {loss}", "zh": "第 {step}/{total} 步，损失 {loss}"},
    "cli.detail.done": {"en": "finished", "zh": "已完成"},
    "cli.detail.error": {"en": "failed: {message}", "zh": "失败：{message}"},
    "cli.estimate": {"en": "Predict peak GPU memory per GPU for training (and what fits when serving), from config.json only.",
                     "zh": "仅根据 config.json 预测训练时每块 GPU 的峰值显存（以及部署时能容纳多少）。"},
    "cli.arg.model": {"en": "A local model folder or a hub id (org/name).", "zh": "本地模型目录或仓库 ID（组织/名称）。"},
    "cli.opt.rank": {"en": "LoRA rank.", "zh": "LoRA 秩。"},
    "cli.opt.dropout": {"en": "LoRA dropout.", "zh": "LoRA dropout。"},
    "cli.opt.seq": {"en": "Tokens per sequence.", "zh": "每条序列的 token 数。"},
    "cli.opt.batch": {"en": "Micro-batch size.", "zh": "微批大小。"},
    "cli.opt.ckpt": {"en": "Activation checkpointing.", "zh": "激活检查点。"},
    "cli.opt.gpus": {"en": "GPUs (data parallel).", "zh": "GPU 数量（数据并行）。"},
    "cli.opt.gpu_memory": {"en": "Memory of the target GPU in GiB.", "zh": "目标 GPU 的显存（GiB）。"},
    "cli.opt.gpu": {"en": "A target GPU from the table (t4-16g, a10-24g, …, h200-141g).", "zh": "表中的目标 GPU（t4-16g、a10-24g、……、h200-141g）。"},
    "cli.opt.zero": {"en": "DeepSpeed ZeRO stage (0-3).", "zh": "DeepSpeed ZeRO 阶段（0-3）。"},
    "cli.opt.offload": {"en": "Offload optimizer states (ZeRO-3: also weights) to CPU memory.", "zh": "把优化器状态（ZeRO-3 时还有权重）卸载到 CPU 内存。"},
    "cli.opt.fsdp": {"en": "FSDP full shard.", "zh": "FSDP 全分片。"},
    "cli.opt.utilization": {"en": "Fraction of GPU memory a server may use.", "zh": "推理服务可使用的显存比例。"},
    "cli.opt.endpoint": {"en": "Hub endpoint (mirror URL).", "zh": "模型仓库地址（镜像 URL）。"},
    "cli.opt.revision": {"en": "Branch, tag or commit.", "zh": "分支、标签或提交号。"},
    "cli.opt.json": {"en": "Print one JSON object.", "zh": "输出一个 JSON 对象。"},
    "cli.unknown_gpu": {"en": "Unknown GPU {gpu!r}; known: {gpus} (or give --gpu-memory GIB).",
                        "zh": "未知 GPU {gpu!r}；可选：{gpus}（或用 --gpu-memory 指定 GiB）。"},
    "cli.estimate.title": {"en": "{model} ({n} parameters): {method}, {seq} tokens × micro-batch {batch}",
                           "zh": "{model}（{n} 个参数）：{method}，{seq} 个 token × 微批 {batch}"},
    "cli.estimate.fit": {"en": "Fits on {gpu} ({gib} GiB) with {margin} GiB to spare.", "zh": "可以放进 {gpu}（{gib} GiB），余量 {margin} GiB。"},
    "cli.estimate.nofit": {"en": "Does NOT fit on {gpu} ({gib} GiB) with a 10 % margin (margin {margin} GiB).",
                           "zh": "在留 10% 余量时放不进 {gpu}（{gib} GiB）（余量 {margin} GiB）。"},
    "cli.estimate.instance": {"en": "Smallest common instance it fits on: {instance}.", "zh": "能容纳它的最小常见实例：{instance}。"},
    "cli.estimate.target_gpu": {"en": "the target GPU", "zh": "目标 GPU"},
    "cli.estimate.no_instance": {"en": "It fits on no instance up to 8 × H200 141G.", "zh": "最多 8 × H200 141G 也放不下。"},
    "cli.estimate.serving": {"en": "Serving ({fmt}) at {util} of {gib} GiB: weights {weights} GiB, KV cache for {tokens} tokens, longest context {context}.",
                             "zh": "部署（{fmt}），使用 {gib} GiB 的 {util}：权重 {weights} GiB，KV 缓存可容纳 {tokens} 个 token，最长上下文 {context}。"},
    "session.is_folder": {"en": "{path} is a folder, not a session file.", "zh": "{path} 是目录，不是会话文件。"},
    "session.not_text": {"en": "Session file {path} is not UTF-8 text. It was left untouched; fix it by hand or start a new session.",
                         "zh": "会话文件 {path} 不是 UTF-8 文本。文件未被改动；请手动修复或开始新会话。"},
    "data.not_text": {"en": "Dataset {path} is not UTF-8 text.", "zh": "数据集 {path} 不是 UTF-8 文本。"},
    "data.is_folder": {"en": "{path} is a folder: give a .json or .jsonl file.", "zh": "{path} 是目录：请提供 .json 或 .jsonl 文件。"},
    "ui.select_instruction": {"en": "(arrow keys, Enter)", "zh": "（方向键选择，回车确认）"},
    "ui.confirm_default_yes": {"en": "(Y/n)", "zh": "（是 Y / 否 n）"},
    "ui.confirm_default_no": {"en": "(y/N)", "zh": "（是 y / 否 N）"},
    "ui.on": {"en": "on", "zh": "开"},
    "ui.off": {"en": "off", "zh": "关"},
    "ui.yes": {"en": "yes", "zh": "是"},
    "ui.no": {"en": "no", "zh": "否"},
    "train.stopped": {"en": "Training was stopped (pid {pid}); `yichui resume {id}` continues from the last checkpoint.",
                      "zh": "训练已被停止（pid {pid}）；`yichui resume {id}` 会从最近的检查点继续。"},
    "train.field.step": {"en": "step", "zh": "步数"},
    "train.field.loss": {"en": "loss", "zh": "损失"},
    "train.field.lr": {"en": "learning rate", "zh": "学习率"},
    "train.field.tokens_per_s": {"en": "tokens/s", "zh": "token/秒"},
    "train.field.memory": {"en": "peak memory GiB", "zh": "峰值内存 GiB"},
    "train.field.elapsed": {"en": "elapsed", "zh": "已用时间"},
    "train.field.eta": {"en": "time left", "zh": "剩余时间"},
    "train.mem.cuda_peak_reserved": {"en": "GPU, peak reserved", "zh": "GPU 峰值保留"},
    "train.mem.cpu_peak_rss": {"en": "CPU, peak resident", "zh": "CPU 峰值常驻"},
    "train.mem.None": {"en": "?", "zh": "?"},
    "evaluate_memory.col.method": {"en": "method", "zh": "方法"},
    "evaluate_memory.col.ckpt": {"en": "ckpt", "zh": "检查点"},
    "evaluate_memory.col.peak": {"en": "peak GiB", "zh": "峰值 GiB"},
    "evaluate_memory.col.fits": {"en": "fits", "zh": "可行"},
    "evaluate_memory.col.margin": {"en": "margin", "zh": "余量"},
    "evaluate_memory.col.instance": {"en": "smallest instance", "zh": "最小实例"},
    "evaluate_memory.col.component": {"en": "component", "zh": "组成部分"},
    "evaluate_memory.breakdown": {"en": "Where the memory goes: {method}, checkpointing {ckpt}", "zh": "显存去向：{method}，激活检查点{ckpt}"},
    "evaluate_memory.calibrated": {"en": "Model of yichui's trainer calibrated on an H200 ({params} parameters here; bench/results/). \"fits\" keeps 10 % of the GPU free.",
                                   "zh": "按 yichui 训练流程在 H200 上校准的模型（此处 {params} 个参数；见 bench/results/）。“可行”表示至少留出 10% 显存。"},
    "evaluate_memory.approximate": {"en": "Approximate (not yet calibrated): {what}.", "zh": "近似值（尚未校准）：{what}。"},
    "memory.part.weights": {"en": "weights", "zh": "权重"},
    "memory.part.adapter": {"en": "adapter (LoRA)", "zh": "适配器（LoRA）"},
    "memory.part.gradients": {"en": "gradients", "zh": "梯度"},
    "memory.part.optimizer": {"en": "optimizer states", "zh": "优化器状态"},
    "memory.part.layers": {"en": "activations", "zh": "激活值"},
    "memory.part.attention_scores": {"en": "attention scores (eager)", "zh": "注意力分数（eager）"},
    "memory.part.logits": {"en": "LM head / logits", "zh": "输出层 / logits"},
    "memory.part.allocator": {"en": "allocator slack", "zh": "分配器余量"},
    "memory.part.cuda_context": {"en": "CUDA context", "zh": "CUDA 上下文"},
    "memory.no_model_type": {"en": "config.json has no model_type: it is not a transformers config.", "zh": "config.json 没有 model_type：它不是 transformers 配置。"},
    "memory.unknown_architecture": {"en": "Cannot build {model_type} as a causal language model ({error}): encoder-only and vision-only models are not supported.",
                                    "zh": "无法把 {model_type} 构建为因果语言模型（{error}）：不支持仅编码器或仅视觉的模型。"},
    "memory.missing_fields": {"en": "config.json lacks {fields}.", "zh": "config.json 缺少 {fields}。"},
    "memory.unknown_targets": {"en": "No linear layers named {targets}; this model has: {known}.", "zh": "没有名为 {targets} 的线性层；此模型有：{known}。"},
    "memory.bad_choice": {"en": "{name} {value!r} is not one of: {choices}.", "zh": "{name} {value!r} 不在可选项中：{choices}。"},
    "memory.bad_number": {"en": "{name} = {value} is out of range.", "zh": "{name} = {value} 超出范围。"},
    "choose_strategy.unknown_targets": {"en": "No linear layers named {targets}; this model has: {known}.", "zh": "没有名为 {targets} 的线性层；此模型有：{known}。"},
    "select_model.fetching": {"en": "Reading config.json of {repo} from {endpoint} …", "zh": "正在从 {endpoint} 读取 {repo} 的 config.json……"},
}


def detect_lang(argv: list[str] | None = None, env: dict | None = None) -> str:
    """``--lang X`` / ``--lang=X`` in argv, else the locale variables, else English."""
    argv = argv or []
    for i, a in enumerate(argv):
        if a == "--lang" and i + 1 < len(argv) and argv[i + 1] in LANGS:
            return argv[i + 1]
        if a.startswith("--lang=") and a.split("=", 1)[1] in LANGS:
            return a.split("=", 1)[1]
    env = os.environ if env is None else env
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if env.get(var):
            return "zh" if env[var].lower().startswith("zh") else "en"
    return "en"


def set_lang(lang: str) -> None:
    global _lang
    if lang not in LANGS:
        raise ValueError(f"language must be one of {LANGS}")
    _lang = lang


def get_lang() -> str:
    return _lang


def t(key: str, /, **args: Any) -> str:
    """The text of ``key`` in the current language, formatted; an unknown key shows itself (tests catch it)."""
    entry = CATALOG.get(key)
    if entry is None:
        return key + (f" {args}" if args else "")
    text = entry.get(_lang) or entry["en"]
    try:
        return text.format(**{k: render(v) if hasattr(v, "key") and hasattr(v, "args") else v for k, v in args.items()})
    except (KeyError, IndexError, ValueError):
        return text


def render(m: Any, /, **args: Any) -> str:
    """A recipes.base.Msg (its args may be Msgs too), a catalogue key, or literal text."""
    if hasattr(m, "key") and hasattr(m, "args"):
        return t(m.key, **m.args)
    if isinstance(m, str) and m in CATALOG:
        return t(m, **args)
    return str(m)
