"""Messages of the command line: commands, options, their one-line failures (keys ``cli.*``), English and Chinese."""

MESSAGES = {
    "cli.help": {"en": "yichui — fine-tune, export and serve a language model in one guided run.",
                 "zh": "一锤定音（yichui）——一次引导完成大模型的微调、导出与部署。"},
    "cli.lang": {"en": "Language of the interface: en or zh (default: from the locale).",
                 "zh": "界面语言：en 或 zh（默认取自系统区域设置）。"},
    "cli.run": {"en": "Start a new session in the interactive wizard (the default command).",
                "zh": "在交互式向导中开始新会话（默认命令）。"},
    "cli.demo": {"en": "Run a task (default: the fine-tune, eight steps) on the bundled tiny model, offline, with no questions.",
                 "zh": "用内置的小模型离线运行一个任务（默认为微调，共八个步骤），不提任何问题。"},
    "cli.resume": {"en": "Continue an interrupted session where it stopped (default: the most recent unfinished one).",
                   "zh": "从中断处继续一个会话（默认：最近一个未完成的会话）。"},
    "cli.replay": {"en": "Run a saved session again as a new session, reusing its answers.",
                   "zh": "以新会话重新运行一个已保存的会话，沿用其答案。"},
    "cli.steps": {"en": "List the steps of the wizard.", "zh": "列出向导的各个步骤。"},
    "cli.delete": {"en": "Delete a session: its file and its run folder (checkpoints, exports, logs).",
                   "zh": "删除会话：会话文件及其运行目录（检查点、导出、日志）。"},
    "cli.delete.running": {"en": "Session {id} still runs its {job} (pid {pid}): stop it first (yichui stop {id}), "
                                 "then delete the session.",
                           "zh": "会话 {id} 的 {job} 仍在运行（pid {pid}）：请先停止（yichui stop {id}），再删除会话。"},
    "cli.delete.confirm": {"en": "Delete {path} and its run folder {run} ({gib} GiB: checkpoints, exports, logs)?",
                           "zh": "删除 {path} 及其运行目录 {run}（{gib} GiB：检查点、导出、日志）？"},
    "cli.delete.no_tty": {"en": "No terminal to ask on: to delete {id} without a question, yichui delete {id} --yes.",
                          "zh": "没有可以提问的终端：要不经确认删除 {id}，请用 yichui delete {id} --yes。"},
    "cli.delete.used_by": {"en": "Sessions made from it use files of its run folder {run}: {ids} — their steps that "
                                 "need them will run again.",
                           "zh": "由它派生的会话使用其运行目录 {run} 中的文件：{ids}——它们需要这些文件的步骤将重新运行。"},
    "cli.delete.kept": {"en": "Nothing deleted: {path} is kept.", "zh": "未删除任何内容：{path} 保留。"},
    "cli.deleted": {"en": "Deleted {path} and its run folder {run} ({gib} GiB).",
                    "zh": "已删除 {path} 及其运行目录 {run}（{gib} GiB）。"},
    "cli.show": {"en": "Show a session's state as a table.", "zh": "以表格显示会话状态。"},
    "cli.status": {"en": "Show what is running for a session (training, server).",
                   "zh": "显示会话正在运行的任务（训练、服务）。"},
    "cli.stop": {"en": "Stop what is running for a session (training, server); without SESSION, the most recent "
                       "session that has something running (named as it stops).",
                 "zh": "停止会话正在运行的任务（训练、服务）；不给会话时，停止最近一个有任务在运行的会话（停止时会写明）。"},
    "cli.opt.set": {"en": "Answer a question: step.key=value (repeatable). Wins over every other source.",
                    "zh": "回答一个问题：step.key=value（可重复），优先于其他来源。"},
    "cli.opt.yes_delete": {"en": "Delete without asking first.", "zh": "不先询问，直接删除。"},
    "cli.opt.yes": {"en": "Ask nothing: use the saved answers, --set values and defaults.",
                    "zh": "不提问：使用已保存的答案、--set 的值与默认值。"},
    "cli.opt.task": {"en": "What to do: finetune | deploy | quantize | evaluate | chat (default: asked; finetune with --yes).",
                     "zh": "要做的事：finetune | deploy | quantize | evaluate | chat（默认：询问；--yes 时为 finetune）。"},
    "cli.opt.from": {"en": "Start from another session: reuse what it finished (model, download, training, export).",
                     "zh": "从另一个会话开始：复用它已完成的内容（模型、下载、训练、导出）。"},
    "cli.task": {"en": "What do you want to do?", "zh": "你想做什么？"},
    "cli.opt.demo_task": {"en": "What to run: finetune (default) | deploy | quantize | evaluate | chat | "
                                "finetune-vlm (the fine-tune of a tiny vision-language model on images) | "
                                "finetune-dpo (DPO on preference pairs; with --set choose_strategy.objective=kto: "
                                "KTO on the same pairs split) | finetune-grpo (GRPO on arithmetic prompts, scored "
                                "by reward functions).",
                          "zh": "要运行的任务：finetune（默认）| deploy | quantize | evaluate | chat | "
                                "finetune-vlm（在图像上微调一个视觉语言小模型）| finetune-dpo（在偏好对上做 DPO；加 "
                                "--set choose_strategy.objective=kto：把同样的偏好对拆开做 KTO）| finetune-grpo"
                                "（在算术提示上做 GRPO，由奖励函数打分）。"},
    "cli.opt.max_tokens": {"en": "Most tokens in one reply.", "zh": "每次回复最多的 token 数。"},
    "cli.bad_lang": {"en": "--lang {value!r}: use en or zh.", "zh": "--lang {value!r}：请用 en 或 zh。"},
    "cli.doctor": {"en": "Check this machine: GPU, driver, CUDA, bf16, disk, RAM, optional engines, hubs.",
                   "zh": "检查本机：GPU、驱动、CUDA、bf16、磁盘、内存、可选引擎、模型仓库。"},
    "cli.doctor.title": {"en": "yichui doctor (* = needed)", "zh": "yichui doctor（* = 必需）"},
    "cli.doctor.col.check": {"en": "check", "zh": "检查项"},
    "cli.doctor.col.verdict": {"en": "verdict", "zh": "结论"},
    "cli.doctor.col.found": {"en": "found", "zh": "情况"},
    "cli.doctor.col.fix": {"en": "to fix", "zh": "修复方法"},
    "cli.doctor.fixes": {"en": "To fix (one command or step per line):", "zh": "修复方法（每行一条命令或步骤）："},
    "cli.doctor.ok": {"en": "ok", "zh": "正常"},
    "cli.doctor.warn": {"en": "warning", "zh": "注意"},
    "cli.doctor.missing": {"en": "missing", "zh": "缺少"},
    "cli.doctor.fail": {"en": "FAIL", "zh": "失败"},
    "cli.doctor.gpu_only": {"en": "not here", "zh": "不适用"},
    "cli.doctor.gpu_only_found": {"en": "{what}: runs on NVIDIA GPUs, none here", "zh": "{what}：需 NVIDIA GPU，本机没有"},
    "cli.doctor.blocked": {"en": "Missing what is needed: {what}. Run the commands in the 'to fix' column, then `yichui doctor` again.",
                           "zh": "缺少必需项：{what}。请执行“修复方法”列中的命令，然后再运行 `yichui doctor`。"},
    "cli.status.tensorboard": {"en": "TensorBoard (loss, learning rate, memory/ allocated, reserved and peaks per step): "
                                     "{python} -m tensorboard.main --logdir {path}",
                               "zh": "TensorBoard（损失、学习率、每步 memory/ 已分配、已保留及峰值显存）："
                                     "{python} -m tensorboard.main --logdir {path}"},
    "cli.preflight": {"en": "Cannot start a session here — {what}: {fix}. (`yichui doctor` checks the whole machine.)",
                      "zh": "无法在此开始会话——{what}：{fix}。（`yichui doctor` 可检查整台机器。）"},
    "cli.doctor.torch_cpu": {"en": "{version} (CPU build)", "zh": "{version}（CPU 版本）"},
    "cli.doctor.no_gpu": {"en": "no NVIDIA GPU (training runs on the CPU: tiny models only)",
                          "zh": "没有 NVIDIA GPU（训练在 CPU 上运行：只适合小模型）"},
    "cli.doctor.no_gpu_fix": {"en": "rent a machine with an NVIDIA GPU for real models",
                              "zh": "训练真实模型请租用带 NVIDIA GPU 的机器"},
    "cli.doctor.gpus": {"en": "{n}× {name} ({gib} GiB)", "zh": "{n}× {name}（{gib} GiB）"},
    "cli.doctor.gpus_driver": {"en": "{n}× {name} ({gib} GiB), driver {driver} (CUDA ≤ {cuda})",
                               "zh": "{n}× {name}（{gib} GiB），驱动 {driver}（CUDA ≤ {cuda}）"},
    "cli.doctor.cpu_torch_on_gpu": {"en": "torch is a CPU build on a GPU machine",
                                    "zh": "GPU 机器上装的是 CPU 版 torch"},
    "cli.doctor.cuda_too_new": {"en": "torch needs CUDA {build}, the driver gives ≤ {cuda}",
                                "zh": "torch 需要 CUDA {build}，驱动只支持到 {cuda}"},
    "cli.doctor.cuda_too_new_fix": {"en": "update the NVIDIA driver, or install a torch built for the driver's CUDA",
                                    "zh": "升级 NVIDIA 驱动，或安装与驱动的 CUDA 版本相符的 torch"},
    "cli.doctor.no_cuda_fix": {"en": "check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES",
                               "zh": "检查驱动（nvidia-smi）与 CUDA_VISIBLE_DEVICES"},
    "cli.doctor.bf16": {"en": "supported", "zh": "支持"},
    "cli.doctor.no_bf16": {"en": "not supported (pre-Ampere GPU)", "zh": "不支持（Ampere 之前的 GPU）"},
    "cli.doctor.no_bf16_fix": {"en": "yichui trains in fp16 with loss scaling on this GPU",
                               "zh": "在此 GPU 上 yichui 用 fp16 加损失缩放训练"},
    "cli.doctor.not_writable": {"en": "{path} is not writable", "zh": "{path} 不可写"},
    "cli.doctor.not_writable_fix": {"en": "set YICHUI_HOME to a writable folder", "zh": "把 YICHUI_HOME 设为可写的文件夹"},
    "cli.doctor.disk": {"en": "{gib} GiB free at {path}", "zh": "{path} 剩余 {gib} GiB"},
    "cli.doctor.disk_fix": {"en": "free space or set YICHUI_HOME elsewhere (≥ {gib} GiB for a 7B model)",
                            "zh": "腾出空间，或把 YICHUI_HOME 设到别处（7B 模型需 ≥ {gib} GiB）"},
    "cli.doctor.ram_unknown": {"en": "unknown (no /proc/meminfo)", "zh": "未知（没有 /proc/meminfo）"},
    "cli.doctor.ram": {"en": "{avail} of {total} GiB available (CPU offload of ZeRO keeps optimizer states here)",
                       "zh": "可用 {avail} / {total} GiB（ZeRO 的 CPU 卸载把优化器状态放在这里）"},
    "cli.doctor.installed": {"en": "installed", "zh": "已安装"},
    "cli.doctor.for_deepspeed": {"en": "ZeRO-1/2/3, CPU offload", "zh": "ZeRO-1/2/3、CPU 卸载"},
    "cli.doctor.for_flash_attn": {"en": "FlashAttention-2 kernels", "zh": "FlashAttention-2 算子"},
    "cli.doctor.for_tensorboard": {"en": "TensorBoard's viewer, for the loss and memory curves training writes",
                                   "zh": "TensorBoard 查看器，用于查看训练写出的损失与显存曲线"},
    "cli.status.tensorboard_events": {"en": "TensorBoard events (loss, learning rate, memory/* per step): {path}",
                                      "zh": "TensorBoard 事件（每步损失、学习率、memory/*）：{path}"},
    "cli.status.demo_building": {"en": "A demo is building its tiny model (pid {pid}, for {seconds} s); its session "
                                       "starts when the build ends.",
                                 "zh": "一个演示正在构建它的小模型（pid {pid}，已 {seconds} 秒）；构建结束后开始它的会话。"},
    "cli.status.tensorboard_install": {"en": "The TensorBoard viewer is not installed here; to install it, then start "
                                             "it on a folder above:\n  {python} -m pip install tensorboard\n"
                                             "  {python} -m tensorboard.main --logdir FOLDER\n"
                                             "(or copy the folder to a machine that has it)",
                                       "zh": "此处未安装 TensorBoard 查看器；安装后对上面的文件夹启动：\n"
                                             "  {python} -m pip install tensorboard\n"
                                             "  {python} -m tensorboard.main --logdir FOLDER\n"
                                             "（或把该文件夹复制到装有它的机器上）"},
    "cli.status.tensorboard_missing": {"en": "TensorBoard events (loss, learning rate and the memory/* scalars, per step): {path} — the "
                                             "viewer is not installed here; to install it, then start it:\n"
                                             "  {python} -m pip install tensorboard\n"
                                             "  {python} -m tensorboard.main --logdir {path}\n"
                                             "(or copy the folder to a machine that has it)",
                                       "zh": "TensorBoard 事件（每步的损失、学习率与 memory/* 显存指标）：{path}——此处未安装查看器；"
                                             "安装并启动：\n  {python} -m pip install tensorboard\n"
                                             "  {python} -m tensorboard.main --logdir {path}\n（或把目录复制到装有它的机器上）"},
    "cli.doctor.for_liger": {"en": "fused RMSNorm/RoPE/SwiGLU/cross-entropy", "zh": "融合的 RMSNorm/RoPE/SwiGLU/交叉熵"},
    "cli.doctor.for_bnb": {"en": "QLoRA (NF4), 8-bit optimizers, bnb exports", "zh": "QLoRA（NF4）、8 位优化器、bnb 导出"},
    "cli.doctor.for_engine": {"en": "serving engine (GPU)", "zh": "推理服务引擎（GPU）"},
    "cli.doctor.for_unsloth": {"en": "training backend (unsloth's kernels, faster QLoRA)",
                               "zh": "训练后端（unsloth 的算子，更快的 QLoRA）"},
    "cli.doctor.for_llmc": {"en": "GPTQ / AWQ / FP8 exports", "zh": "GPTQ / AWQ / FP8 导出"},
    "cli.doctor.llmc_fix": {"en": "built by the export step on first use (about a minute)",
                            "zh": "导出步骤首次使用时自动构建（约一分钟）"},
    "cli.doctor.hub_ok": {"en": "{url} answers", "zh": "{url} 可访问"},
    "cli.doctor.hub_not_hub": {"en": "{url} answers ({answer}), but not as a model hub's API does: check the address "
                                      "(a hub or a mirror's base URL)",
                               "zh": "{url} 有应答（{answer}），但不像模型仓库的 API：请检查地址（应为仓库或镜像的根地址）"},
    "cli.doctor.hub_down": {"en": "{url} unreachable ({why})", "zh": "{url} 无法访问（{why}）"},
    "cli.doctor.hub_fix_hf": {"en": "export HF_ENDPOINT=https://hf-mirror.com (or another mirror you can reach)",
                              "zh": "export HF_ENDPOINT=https://hf-mirror.com（或其他你能访问的镜像）"},
    "cli.doctor.hub_fix": {"en": "set {variable} to a mirror you can reach", "zh": "把 {variable} 设为你能访问的镜像"},
    "cli.doctor.python_fix": {"en": "Python ≥ 3.10", "zh": "需要 Python ≥ 3.10"},
    "cli.doctor.ready": {"en": "Ready: nothing needed is missing.", "zh": "就绪：没有缺少必需项。"},
    "cli.from_reused": {"en": "From session {old}: reusing {steps}.", "zh": "来自会话 {old}：复用 {steps}。"},
    "cli.arg.session": {"en": "Session id (or its last four characters) or path to a session file.",
                        "zh": "会话 ID（或其末四位）或会话文件路径。"},
    "cli.no_tty": {"en": "No terminal here (stdin is not a TTY), so the wizard cannot ask questions. "
                         "Use `yichui resume SESSION --yes`, `yichui replay SESSION --yes`, `yichui run --yes` or "
                         "`yichui demo`.",
                   "zh": "当前没有终端（stdin 不是 TTY），向导无法提问。"
                         "请使用 `yichui resume SESSION --yes`、`yichui replay SESSION --yes`、`yichui run --yes` 或 `yichui demo`。"},
    "cli.bad_set": {"en": "--set expects step.key=value, got {value!r}.",
                    "zh": "--set 的格式应为 step.key=value，收到的是 {value!r}。"},
    "cli.unknown_step": {"en": "--set names an unknown step {step!r}; steps are: {steps}.",
                         "zh": "--set 中的步骤 {step!r} 不存在；可用步骤：{steps}。"},
    "cli.unknown_task": {"en": "Unknown task {task!r}; tasks are: {tasks}.", "zh": "未知任务 {task!r}；可用任务：{tasks}。"},
    "cli.resuming": {"en": "Resuming session {id} ({path}).", "zh": "继续会话 {id}（{path}）。"},
    "cli.replay_how": {"en": "Replay this session:", "zh": "重放此会话："},
    "cli.replay_recorded": {"en": "with its {n} recorded answers, asking nothing (as --yes)",
                            "zh": "使用其记录的 {n} 个回答，不再询问（同 --yes）"},
    "cli.replay_each": {"en": "going through each question, pre-filled with its answer",
                        "zh": "逐个回答问题，已预填原来的回答"},
    "cli.replaying_plain": {"en": "Replaying {path} (its answers)…", "zh": "重放 {path}（沿用其回答）…"},
    "cli.replaying": {"en": "Replaying {path} (its answers, with your --set values)…",
                      "zh": "重放 {path}（沿用其回答，并应用你的 --set 值）…"},
    "cli.new_session": {"en": "New session {id} — saved in {path}.", "zh": "新会话 {id}，保存在 {path}。"},
    "cli.already_finished": {"en": "Session {id} is already finished; `yichui show {id}` shows it, "
                                   "`yichui replay {id} --yes` runs it again.",
                             "zh": "会话 {id} 已经完成；`yichui show {id}` 可查看，`yichui replay {id} --yes` 可重新运行。"},
    "cli.no_jobs": {"en": "Nothing has been started for session {id}.", "zh": "会话 {id} 尚未启动任何任务。"},
    "cli.serve": {"en": "The session's server: start, status, logs, stop.", "zh": "会话的推理服务：启动、状态、日志、停止。"},
    "cli.serve.start": {"en": "Start the session's server again with its recorded deploy answers (after a crash or a stop).",
                        "zh": "用记录的部署答案重新启动会话的推理服务（崩溃或停止之后）。"},
    "cli.serve.no_deploy_step": {"en": "Session {id} (task {task}) has no deploy step: `yichui run --task deploy --from {id}` serves what it made.",
                                 "zh": "会话 {id}（任务 {task}）没有部署步骤：`yichui run --task deploy --from {id}` 可部署它的结果。"},
    "cli.serve.never_deployed": {"en": "Session {id} was never deployed: `yichui resume {id}` runs its steps first.",
                                 "zh": "会话 {id} 从未部署过：请先用 `yichui resume {id}` 运行其步骤。"},
    "cli.serve.already": {"en": "The server of session {id} is already running (pid {pid}).", "zh": "会话 {id} 的推理服务已在运行（pid {pid}）。"},
    "cli.serve.status": {"en": "Show the session's server: pid, state, endpoint, model, log (exit 1 when not running).",
                         "zh": "显示会话的推理服务：pid、状态、地址、模型、日志（未运行时退出码为 1）。"},
    "cli.serve.logs": {"en": "Print the last lines of the session's server log.", "zh": "打印会话推理服务日志的最后几行。"},
    "cli.serve.stop": {"en": "Stop the session's server (training keeps running).", "zh": "停止会话的推理服务（训练不受影响）。"},
    "cli.serve.title": {"en": "Server of session {id}", "zh": "会话 {id} 的推理服务"},
    "cli.serve.title_all": {"en": "yichui servers running under YICHUI_HOME", "zh": "YICHUI_HOME 下运行中的 yichui 推理服务"},
    "cli.opt.status_all": {"en": "Every yichui server running under YICHUI_HOME, whichever session started it.",
                           "zh": "列出 YICHUI_HOME 下所有运行中的 yichui 推理服务，无论由哪个会话启动。"},
    "cli.col.session": {"en": "session", "zh": "会话"},
    "cli.serve.none": {"en": "Session {id} has no server: run its deploy step (yichui resume {id}).",
                       "zh": "会话 {id} 没有推理服务：请运行其部署步骤（yichui resume {id}）。"},
    "cli.opt.lines": {"en": "How many lines.", "zh": "行数。"},
    "cli.chat": {"en": "Chat with the session's running server in the terminal (streaming; /reset, /exit, /image PATH).",
                 "zh": "在终端里与会话正在运行的推理服务对话（流式输出；/reset、/exit、/image 路径）。"},
    "cli.opt.endpoint_chat": {"en": "An OpenAI-compatible endpoint (…/v1) instead of the session's server.",
                              "zh": "指定 OpenAI 兼容的地址（…/v1），而不是会话的推理服务。"},
    "cli.opt.model_chat": {"en": "Model name to ask for (default: the first the endpoint lists).",
                           "zh": "请求的模型名（默认：该地址列出的第一个）。"},
    "cli.chat.no_server": {"en": "Session {id} has no running server: `yichui serve start {id}` starts it again (a session that never deployed: `yichui run --task chat`), or pass --endpoint.",
                           "zh": "会话 {id} 没有运行中的服务：`yichui serve start {id}` 可重新启动（从未部署过的会话：`yichui run --task chat`），或使用 --endpoint。"},
    "cli.show.training_now": {"en": "(training)", "zh": "（训练中）"},
    "cli.attach.session": {"en": "Following the training of session {id}.", "zh": "正在跟随会话 {id} 的训练。"},
    "cli.attach.session_newest": {"en": "Following the training of session {id} (the newest training now; `yichui "
                                        "attach SESSION` picks another).",
                                  "zh": "正在跟随会话 {id} 的训练（当前最新的训练；`yichui attach SESSION` 可选择其他会话）。"},
    "cli.chat.session": {"en": "The server of session {id} (the newest running; `yichui chat SESSION` picks another).",
                         "zh": "会话 {id} 的服务（正在运行的最新一个；`yichui chat SESSION` 可选择其他会话）。"},
    "cli.opt.keys": {"en": "also list every question's key (step.key, for --set), its kind and allowed values",
                     "zh": "同时列出每个问题的键（step.key，供 --set 使用）、类型和可选值"},
    "cli.steps.keys_title": {"en": "Question keys (--set step.key=VALUE)", "zh": "问题键（--set step.key=值）"},
    "cli.steps.keys_hint": {"en": "Checkboxes take a comma-separated list (--set evaluate.benchmarks=gsm8k,mmlu, or "
                                  "empty for none); `yichui show SESSION` lists a session's own answers.",
                            "zh": "多选题取逗号分隔的列表（--set evaluate.benchmarks=gsm8k,mmlu，留空表示不选）；"
                                  "`yichui show SESSION` 列出某个会话自己的回答。"},
    "cli.usage.error": {"en": "{what} — `{command} -h` shows its usage.", "zh": "{what}——`{command} -h` 可查看用法。"},
    "cli.usage.did_you_mean": {"en": " (did you mean {names}?)", "zh": "（是不是 {names}？）"},
    "cli.usage.missing": {"en": "{name} is missing", "zh": "缺少 {name}"},
    "cli.usage.run_option": {"en": "; a new session takes it after run: `yichui run {name} …`",
                             "zh": "；新会话请把它放在 run 之后：`yichui run {name} …`"},
    "cli.usage.no_such_option": {"en": "there is no option {name}", "zh": "没有选项 {name}"},
    "cli.steps.keys_refused": {"en": " (listed to say why not: {values})", "zh": "（列出只为说明为何不支持：{values}）"},
    "cli.steps.keys_range": {"en": " · {lo} … {hi}", "zh": " · {lo} … {hi}"},
    "cli.steps.keys_default": {"en": " · default {default}", "zh": " · 默认 {default}"},
    "cli.steps.keys_at_run": {"en": "known when the step runs (from earlier steps)", "zh": "运行到该步骤时才确定（取决于之前的步骤）"},
    "cli.steps.keys_secret": {"en": "secret: from ${env}, never via --set", "zh": "密钥：取自 ${env}，不可用 --set"},
    "cli.col.model": {"en": "model", "zh": "模型"},
    "cli.col.id_model": {"en": "id / model", "zh": "id / 模型"},
    "cli.col.key": {"en": "key", "zh": "键"},
    "cli.col.kind": {"en": "kind", "zh": "类型"},
    "cli.col.values": {"en": "values", "zh": "取值"},
    "cli.opt.stop_all": {"en": "Stop every yichui server under YICHUI_HOME, whichever session started it.",
                         "zh": "停止 YICHUI_HOME 下所有 yichui 服务，无论由哪个会话启动。"},
    "cli.serve.all_and_session": {"en": "--all stops every server: give it without a session (not {session}).",
                                  "zh": "--all 会停止所有服务：请不要同时指定会话（{session}）。"},
    "cli.serve.none_running_hint": {"en": "No yichui server is running: `yichui serve start SESSION` starts a deployed "
                                          "session's again (`yichui show --all` lists them), `yichui demo` makes one.",
                                    "zh": "没有正在运行的 yichui 服务：`yichui serve start SESSION` 可重新启动已部署会话的服务"
                                          "（`yichui show --all` 列出会话），`yichui demo` 会新建一个。"},
    "cli.serve.more_running": {"en": "{n} more running (other sessions'): yichui serve status --all",
                               "zh": "另有 {n} 个服务在运行（其他会话的）：yichui serve status --all"},
    "cli.serve.none_running": {"en": "No yichui server is running.", "zh": "没有正在运行的 yichui 服务。"},
    "cli.example.serve_stop": {"en": "Examples:\n\n  yichui serve stop\n\n  yichui serve stop 20261201-101500-ab12\n\n"
                                     "  yichui serve stop --all                 # every session's server",
                               "zh": "示例：\n\n  yichui serve stop\n\n  yichui serve stop 20261201-101500-ab12\n\n"
                                     "  yichui serve stop --all                 # 所有会话的服务"},
    "cli.stopped_checkpoint": {"en": "Its last checkpoint is {checkpoint}: `yichui resume {id}` continues from it.",
                               "zh": "其最新检查点为 {checkpoint}：`yichui resume {id}` 会从这里继续。"},
    "cli.stopped": {"en": "Stopped {job} (pid {pid}) of session {id}.", "zh": "已停止会话 {id} 的{job}（pid {pid}）。"},
    "cli.job.server": {"en": "server", "zh": "服务"},
    "cli.job.trainer": {"en": "trainer", "zh": "训练进程"},
    "cli.job.wizard": {"en": "wizard", "zh": "向导"},
    "cli.others_running": {"en": "{n} other session(s) still run jobs: {ids} (`yichui status` lists them, "
                                 "`yichui stop SESSION` stops one).",
                           "zh": "另有 {n} 个会话仍在运行任务：{ids}（`yichui status` 列出它们，"
                                 "`yichui stop SESSION` 逐个停止）。"},
    "cli.job.preflight": {"en": "smoke test", "zh": "冒烟测试"},
    "cli.job.backup": {"en": "adapter backup", "zh": "适配器备份"},
    "cli.nothing_running_any": {"en": "No yichui job is running (trainer, server or other) under this YICHUI_HOME.",
                                "zh": "此 YICHUI_HOME 下没有正在运行的 yichui 任务（训练、服务或其他）。"},
    "cli.nothing_running": {"en": "Nothing is running for session {id}.", "zh": "会话 {id} 没有正在运行的任务。"},
    "cli.col.step": {"en": "step", "zh": "步骤"},
    "cli.col.status": {"en": "status", "zh": "状态"},
    "cli.col.answers": {"en": "answers", "zh": "答案"},
    "cli.col.outputs": {"en": "outputs", "zh": "输出"},
    "cli.col.description": {"en": "description", "zh": "说明"},
    "cli.col.job": {"en": "job", "zh": "任务"},
    "cli.col.state": {"en": "state", "zh": "状态"},
    "cli.show.unreadable_row": {"en": "unreadable (below)", "zh": "无法读取（见下）"},
    "cli.col.detail": {"en": "detail", "zh": "详情"},
    "cli.status.log_of": {"en": "Log of the {job}: {path}", "zh": "{job}的日志：{path}"},
    "cli.col.log": {"en": "log", "zh": "日志"},
    "cli.col.endpoint_model": {"en": "endpoint / model", "zh": "端点 / 模型"},
    "cli.serve.log_of": {"en": "Log of {id}: {path}", "zh": "{id} 的日志：{path}"},
    "cli.state.running": {"en": "running", "zh": "运行中"},
    "cli.state.stopped": {"en": "not running", "zh": "未运行"},
    "cli.show.title": {"en": "Session {id} · task {task} · {path}", "zh": "会话 {id} · 任务 {task} · {path}"},
    "cli.status.title": {"en": "Jobs of session {id}", "zh": "会话 {id} 的任务"},
    "cli.steps.title": {"en": "Steps of the wizard", "zh": "向导步骤"},
    "cli.demo.building": {"en": "Building the tiny demo model (once; cached in {path}) ...",
                          "zh": "正在构建演示用小模型（仅一次，缓存于 {path}）……"},
    "cli.demo.pretraining": {"en": "Pre-training", "zh": "预训练"},  # short: the bar keeps 24 columns at 80
    "cli.demo.build_interrupted": {"en": "Stopped before the tiny model was built; `yichui demo` builds it from the "
                                         "start next time (nothing half-built is kept).",
                                   "zh": "小模型构建前已停止；下次 `yichui demo` 会从头构建（不保留半成品）。"},
    "cli.demo.built": {"en": "The tiny model is built.", "zh": "小模型已构建完成。"},
    "cli.demo.hub": {"en": "Local model hub (Hugging Face API) at {url}, serving {repo}.",
                     "zh": "本地模型仓库（Hugging Face API）位于 {url}，提供 {repo}。"},
    "cli.demo.done": {"en": "Demo finished in {seconds:.0f} s.", "zh": "演示完成，用时 {seconds:.0f} 秒。"},
    "cli.estimate.rule_options": {"en": "{message} (options: {options})", "zh": "{message}（相关选项：{options}）"},
    "cli.option_positive": {"en": "{option} {value}: must be a positive, finite number.",
                            "zh": "{option} {value}：必须是有限的正数。"},
    "cli.seq_over_max": {"en": "--seq-len {seq}: the model's context is {max} tokens (max_position_embeddings); give "
                               "--seq-len {max} or less.",
                         "zh": "--seq-len {seq}：模型的上下文长度为 {max} 个 token（max_position_embeddings），请给出不超过 {max} 的 --seq-len。"},
    "cli.master_weights_full_only": {"en": "--master-weights is for a full fine-tune (--method full or galore), not {method}: leave it out.",
                                     "zh": "--master-weights 只用于全参微调（--method full 或 galore），不适用于 {method}：请去掉它。"},
    "cli.offload_needs_sharding": {"en": "--offload moves ZeRO or FSDP states to CPU memory: add --distribution zero1, zero2, zero3 or fsdp2; or leave it out.",
                                   "zh": "--offload 把 ZeRO 或 FSDP 的状态移到 CPU 内存：请加上 --distribution zero1、zero2、zero3 或 fsdp2；或去掉它。"},
    "cli.delete.no_session": {"en": "Name the session to delete (an id or a path): `yichui show --all` lists them.",
                              "zh": "请指明要删除的会话（ID 或路径）：`yichui show --all` 会列出它们。"},
    "cli.delete.not_in_home": {"en": "{path} is not a session file of this YICHUI_HOME ({sessions}): delete only removes "
                                     "sessions there; remove a copy with rm.",
                               "zh": "{path} 不是当前 YICHUI_HOME 的会话文件（{sessions}）：delete 只删除那里的会话；副本请用 rm 删除。"},
    "cli.resume.odd_run_dir": {"en": "{path} names the run folder {run}, not {expected}: not resumed (a hand-edited "
                                     "file?). Set its run_dir to {expected}, or start a new session.",
                               "zh": "{path} 指向的运行目录是 {run}，而不是 {expected}：未继续（文件被手动修改过？）。"
                                     "请把其 run_dir 改为 {expected}，或开始新会话。"},
    "cli.delete.unreadable_job": {"en": "{file} cannot be read as a job's pid file: a job of session {id} may still "
                                         "run. Check it (ps), stop it, remove the file, then delete the session.",
                                   "zh": "{file} 无法作为任务的 pid 文件读取：会话 {id} 的某个任务可能仍在运行。请检查（ps）、"
                                         "停止它并删除该文件，再删除会话。"},
    "cli.delete.failed": {"en": "Could not delete {run} ({error}); {path} is kept. Fix the cause and delete again.",
                          "zh": "无法删除 {run}（{error}）；{path} 已保留。请排除原因后再删除。"},
    "cli.delete.run_not_folder": {"en": "{run} is a link or a file, not a run folder: nothing deleted. Look at what it "
                                        "is, and remove it yourself if it is not needed.",
                                  "zh": "{run} 是链接或文件，而不是运行目录：未删除任何内容。请查看它是什么，如不需要请自行删除。"},
    "cli.delete.odd_run_dir": {"en": "{path} names the run folder {run}, not {expected}: nothing deleted (a hand-edited "
                                     "file?). Fix its run_dir, or remove the files yourself.",
                               "zh": "{path} 指向的运行目录是 {run}，而不是 {expected}：未删除任何内容（文件被手动修改过？）。"
                                     "请修正其 run_dir，或自行删除文件。"},
    "cli.options_disagree": {"en": "{one} and {other} disagree: give one of them.",
                             "zh": "{one} 与 {other} 相互矛盾：请只给出其中一个。"},
    "cli.chat.bad_endpoint": {"en": "{endpoint!r} is not a valid http(s) URL (a host, and a port from 1 to 65535 if one "
                                    "is given): give the server's base, e.g. http://127.0.0.1:8000/v1.",
                              "zh": "{endpoint!r} 不是有效的 http(s) 网址（需有主机名；若写端口须在 1 到 65535 之间）：请给出服务地址，"
                                    "例如 http://127.0.0.1:8000/v1。"},
    "cli.doctor.name.disk": {"en": "disk", "zh": "磁盘"},
    "cli.doctor.name.host RAM": {"en": "host RAM", "zh": "主机内存"},
    "cli.chat.bad_key": {"en": "OPENAI_API_KEY {what}, and an HTTP header carries printable ASCII only: set it to "
                               "the server's key as given (export OPENAI_API_KEY=…), without quotes or line breaks.",
                         "zh": "OPENAI_API_KEY {what}，而 HTTP 头只能包含可打印的 ASCII 字符：请把它设为服务器给出的密钥"
                               "（export OPENAI_API_KEY=…），不要带引号或换行。"},
    "cli.chat.bad_key_newline": {"en": "contains a line break", "zh": "含有换行"},
    "cli.chat.bad_key_other": {"en": "contains a space, a control character or a non-ASCII letter",
                               "zh": "含有空格、控制字符或非 ASCII 字符"},
    "cli.chat.add_v1": {"en": "{endpoint} answers, but not as an OpenAI-compatible API: the URL usually ends with /v1 ({endpoint}/v1).",
                        "zh": "{endpoint} 有响应，但不是 OpenAI 兼容接口：网址通常以 /v1 结尾（{endpoint}/v1）。"},
    "cli.os_error": {"en": "Cannot write {path}: {error}. Nothing was lost; choose a writable place (--local-dir for a "
                           "download, YICHUI_HOME for sessions) or free space.",
                     "zh": "无法写入 {path}：{error}。没有丢失任何内容；请换一个可写的位置（下载用 --local-dir，会话用 "
                           "YICHUI_HOME）或释放空间。"},
    "cli.opt.all": {"en": "List every session.", "zh": "列出所有会话。"},
    "cli.opt.show_json": {"en": "Print the session file's answers and outputs whole, as JSON.",
                          "zh": "以 JSON 完整打印会话文件中的回答与输出。"},
    "cli.show.cut": {"en": "Long answers and outputs are cut (…) above: `yichui show {id} --json` prints them whole.",
                     "zh": "上表中较长的回答与输出已截断（…）：`yichui show {id} --json` 可完整打印。"},
    "cli.show.all_title": {"en": "Sessions", "zh": "会话"},
    "cli.col.task": {"en": "task", "zh": "任务"},
    "cli.col.server": {"en": "server", "zh": "服务"},
    "cli.col.updated_short": {"en": "updated", "zh": "更新"},
    "cli.show.all_title_utc": {"en": "Sessions (times in UTC)", "zh": "会话（时间为 UTC）"},
    "cli.step_done": {"en": "done", "zh": "完成"},
    "cli.col.updated": {"en": "updated (UTC)", "zh": "更新时间（UTC）"},
    "cli.finished": {"en": "finished", "zh": "已完成"},
    "cli.unfinished": {"en": "unfinished", "zh": "未完成"},
    "cli.detail.step": {"en": "step {step}/{total}, loss {loss}", "zh": "第 {step}/{total} 步，损失 {loss}"},
    "cli.detail.done": {"en": "finished", "zh": "已完成"},
    "cli.detail.done_exiting": {"en": "finished (exiting)", "zh": "已完成（正在退出）"},
    "cli.detail.wizard_step": {"en": "step {i}/{n}: {step}", "zh": "第 {i}/{n} 步：{step}"},
    "cli.detail.wizard_asking": {"en": "waiting for an answer", "zh": "等待回答"},
    "cli.detail.before_first_step": {"en": "before its first step", "zh": "在第一步之前"},
    "cli.detail.waiting_for_copy": {"en": "libraries loaded, waiting for the model's 2-layer copy",
                                    "zh": "库已加载，正在等待模型的两层副本"},
    "cli.detail.starting": {"en": "starting (loading libraries and the model)", "zh": "正在启动（加载库与模型）"},
    "cli.detail.stopped": {"en": "stopped on request, {detail}", "zh": "按要求停止，{detail}"},
    "cli.detail.reward": {"en": ", reward {reward}", "zh": "，奖励 {reward}"},
    "cli.show.backup": {"en": "{detail} → {hub} {repo}", "zh": "{detail} → {hub} {repo}"},
    "cli.detail.backup": {"en": "adapter backup: {n} uploaded (last: {last})", "zh": "适配器备份：已上传 {n} 次（最近：{last}）"},
    "cli.detail.backup_failing": {"en": "; {path} failing: {error}", "zh": "；{path} 上传失败：{error}"},
    "cli.detail.error": {"en": "failed: {message}", "zh": "失败：{message}"},
    "cli.estimate": {"en": "Predict peak GPU memory per GPU for training (and what fits when serving), from config.json only.",
                     "zh": "仅根据 config.json 预测训练时每块 GPU 的峰值显存（以及部署时能容纳多少）。"},
    "cli.arg.model": {"en": "A local model folder or a hub id (org/name).", "zh": "本地模型目录或仓库 ID（组织/名称）。"},
    "cli.opt.gpu_memory": {"en": "Memory of the target GPU in GiB.", "zh": "目标 GPU 的显存（GiB）。"},
    "cli.opt.gpu": {"en": "A target GPU from the table (t4-16g, a10-24g, …, h200-141g), or as its driver names it "
                          "(\"NVIDIA H100 80GB HBM3\").",
                    "zh": "表中的目标 GPU（t4-16g、a10-24g、……、h200-141g），或驱动给出的名称（\"NVIDIA H100 80GB HBM3\"）。"},
    "cli.opt.zero": {"en": "DeepSpeed ZeRO stage (0-3).", "zh": "DeepSpeed ZeRO 阶段（0-3）。"},
    "cli.opt.offload": {"en": "Offload optimizer states (ZeRO-3: also weights) to CPU memory.", "zh": "把优化器状态（ZeRO-3 时还有权重）卸载到 CPU 内存。"},
    "cli.opt.offload_device": {"en": "Where offloaded states go: cpu (memory) or nvme (files on a fast disk; ZeRO-3 only).",
                               "zh": "卸载的状态放在哪里：cpu（内存）或 nvme（高速磁盘上的文件；仅 ZeRO-3）。"},
    "cli.estimate.sharded": {"en": "; {dist} over {n} GPUs", "zh": "；{dist}，{n} 个 GPU"},
    "cli.estimate.sharded_one": {"en": "; {dist} on one GPU", "zh": "；{dist}，单个 GPU"},
    "cli.estimate.tp_divides": {"en": " Tensor parallelism over {tp}, not {gpus}: the most GPUs its {heads} attention heads, {kv} KV heads and MLP width divide evenly.",
                                "zh": "张量并行用 {tp} 个 GPU 而非 {gpus} 个：这是能整除其 {heads} 个注意力头、{kv} 个 KV 头与 MLP 宽度的最大数目。"},
    "cli.estimate.instance_plan": {"en": "Smallest common instance it fits on: {instance} ({how}, peak {peak} GiB per GPU).",
                                   "zh": "能容纳它的最小常见实例：{instance}（{how}，每个 GPU 峰值 {peak} GiB）。"},
    "cli.estimate.instance_same": {"en": "this plan on one GPU", "zh": "此方案，单个 GPU"},
    "cli.estimate.instance_sharded": {"en": "{dist} over {n} GPUs", "zh": "{dist}，{n} 个 GPU"},
    "cli.estimate.offload_cpu": {"en": "; offload to CPU memory", "zh": "；卸载到 CPU 内存"},
    "cli.estimate.speed": {"en": "Predicted speed on {gpu}: ~{tps} tokens/s per GPU (the speed model, fitted on an "
                                 "H200 grid of yichui's trainer; on shapes it was not fitted on 7 % off in the median, "
                                 "26 % at worst{scaled}).",
                           "zh": "在 {gpu} 上的预测速度：每个 GPU 约 {tps} token/秒（速度模型，在 H200 上用 yichui "
                                 "训练器的网格拟合；在未拟合的形状上中位误差 7%，最差 26%{scaled}）。"},
    "cli.estimate.speed_dpo": {"en": "Predicted speed on {gpu}: ~{tps} tokens/s per GPU, chosen and rejected tokens "
                                     "both (~{records} pairs/s; the speed model with the reference's forward as one more "
                                     "pass, derived: 9 % off in the median and 31 % at worst on the H200's DPO rows, "
                                     "6 % and 12 % on shapes they had not seen, over two runs on two H100s{scaled}).",
                               "zh": "在 {gpu} 上的预测速度：每个 GPU 约 {tps} token/秒，chosen 与 rejected 的 token 都计入"
                                     "（约 {records} 对/秒；速度模型把参考模型的前向算作多一遍，推导而来：在 H200 的 DPO "
                                     "测量上中位误差 9%、最差 31%，在未见过的形状上（两台 H100 各跑一次）6% 与 12%{scaled}）。"},
    "cli.estimate.speed_kto": {"en": "Predicted speed on {gpu}: ~{tps} tokens/s per GPU, each reply's tokens once as "
                                     "trl counts them (~{records} replies/s; the speed model with the KL term's and the "
                                     "reference's three no-grad forwards priced term by term, derived: 9 % off in the "
                                     "median and 20 % at worst on the H200's KTO rows; 18 % and 30 % optimistic on shapes "
                                     "they had not seen, over two runs on two H100s{scaled}).",
                               "zh": "在 {gpu} 上的预测速度：每个 GPU 约 {tps} token/秒，按 trl 的计数每条回答的 token 计一次"
                                     "（约 {records} 条回答/秒；速度模型逐项计入 KL 项与参考模型的三次无梯度前向，推导而来："
                                     "在 H200 的 KTO 测量上中位误差 9%、最差 20%；在未见过的形状上（两台 H100 各跑一次）18% 与 30%，预测偏快{scaled}）。"},
    "cli.estimate.dpo": {"en": ", DPO (pairs: chosen + rejected)", "zh": "，DPO（成对：chosen + rejected）"},
    "cli.estimate.kto_micro_batch": {"en": "Micro-batch {mb}: KTO's smallest (its KL term comes from the other "
                                           "replies of a micro-batch; trl refuses 1). --micro-batch sets another.",
                                     "zh": "微批 {mb}：KTO 的最小值（其 KL 项取自同一微批中的其他回答；trl 拒绝 1）。"
                                           "可用 --micro-batch 另设。"},
    "cli.estimate.kto": {"en": ", KTO (labelled replies)", "zh": "，KTO（带标签的回答）"},
    "cli.estimate.grpo": {"en": ", GRPO (generated replies)", "zh": "，GRPO（生成的回答）"},
    "cli.estimate.grpo_micro_batch": {"en": "Micro-batch {mb}: one prompt's replies (--num-generations); "
                                            "--micro-batch and --grad-accum set others (their product a multiple of "
                                            "it).",
                                      "zh": "微批 {mb}：一个提示的全部回答（--num-generations）；--micro-batch 与 "
                                            "--grad-accum 可另设（两者之积须为其倍数）。"},
    "cli.estimate.speed_scaled": {"en": "; other GPUs: scaled from the H200 by their FLOP/s and bandwidth, not measured",
                                  "zh": "；其他 GPU：按算力与带宽从 H200 换算，未实测"},
    "cli.estimate.moe_dropout": {"en": "LoRA on this MoE model's experts (peft adapts their fused weights whole) runs "
                                       "only at LoRA dropout 0, not {dropout}: --lora-dropout 0, or --lora-targets "
                                       "q_proj,k_proj,v_proj,o_proj to keep the dropout on the attention alone.",
                                 "zh": "在此 MoE 模型的专家上做 LoRA（peft 整体适配其融合权重）只支持 LoRA dropout 0，不支持 {dropout}："
                                       "请用 --lora-dropout 0，或 --lora-targets q_proj,k_proj,v_proj,o_proj 只在注意力层上保留 dropout。"},
    "cli.estimate.moe_dora": {"en": "DoRA cannot adapt this MoE model's fused expert weights (peft does not support "
                                    "it): --method lora, or --lora-targets q_proj,k_proj,v_proj,o_proj.",
                              "zh": "DoRA 无法适配此 MoE 模型的融合专家权重（peft 不支持）：请用 --method lora，"
                                    "或 --lora-targets q_proj,k_proj,v_proj,o_proj。"},
    "cli.estimate.moe_dropout_default": {"en": "LoRA dropout 0 (the default for a MoE model whose fused experts LoRA "
                                               "adapts: peft runs no other there).",
                                         "zh": "LoRA dropout 为 0（LoRA 适配融合专家的 MoE 模型的默认值：peft 在这里只支持 0）。"},
    "cli.estimate.dpo_dropout": {"en": "{objective} trains without dropout (trl's disable_dropout): --lora-dropout "
                                       "{value} is not used and the estimate is at dropout 0.",
                                 "zh": "{objective} 训练时不使用 dropout（trl 的 disable_dropout）：--lora-dropout {value} "
                                       "不会生效，估算按 dropout 0。"},
    "cli.estimate.no_speed": {"en": "Speed: not predicted for this plan (the speed model covers yichui's trainer with "
                                     "LoRA, QLoRA, DoRA or a full fine-tune of a dense Qwen, Llama, Mistral, Phi-3 or "
                                     "GLM model on one GPU or plain data parallel — not MoE or Gemma models, GaLore, "
                                     "the plain loop, ZeRO/FSDP2, offload, a sequence split or GRPO).",
                              "zh": "速度：此方案不预测（速度模型覆盖 yichui 训练器在单 GPU 或普通数据并行上的 LoRA、QLoRA、"
                                    "DoRA 或全参微调，限稠密 Qwen、Llama、Mistral、Phi-3、GLM 模型——不含 MoE 或 Gemma 模型、GaLore、"
                                    "朴素训练循环、ZeRO/FSDP2、卸载、序列切分或 GRPO）。"},
    "cli.estimate.sequence_parallel": {"en": "; each sequence split over {sp} GPUs", "zh": "；每条序列切分到 {sp} 个 GPU"},
    "cli.estimate.offload_nvme": {"en": "; offload to NVMe", "zh": "；卸载到 NVMe"},
    "cli.estimate.nvme": {"en": "NVMe offload: DeepSpeed swaps {gib} GiB to disk (all GPUs together); the wizard checks the folder's room and speed.",
                          "zh": "NVMe 卸载：DeepSpeed 向磁盘交换 {gib} GiB（所有 GPU 合计）；向导会检查该文件夹的空间与速度。"},
    "cli.estimate.host_ram": {"en": "Host RAM for the offload, per node: ≈ {gib} GiB ({what}).",
                              "zh": "卸载所需的主机内存（每个节点）：约 {gib} GiB（{what}）。"},
    "cli.estimate.serving_tp": {"en": "Serving ({fmt}) with tensor parallelism over {tp} GPUs, at {util} of {gib} GiB each: weights {weights} GiB per GPU, KV cache for {tokens} tokens, longest context {context}.",
                                "zh": "部署（{fmt}），{tp} 个 GPU 张量并行，每个使用 {gib} GiB 的 {util}：每个 GPU 权重 {weights} GiB，KV 缓存可容纳 {tokens} 个 token，最长上下文 {context}。"},
    "cli.opt.fsdp": {"en": "FSDP full shard.", "zh": "FSDP 全分片。"},
    "cli.opt.serve_format": {"en": "Weights as served: bf16, fp8, awq, gptq, bnb4, bnb8 or prequantized (default: "
                                   "as the checkpoint stores them).",
                             "zh": "推理时的权重格式：bf16、fp8、awq、gptq、bnb4、bnb8 或 prequantized（默认：按检查点存储的格式）。"},
    "cli.opt.utilization": {"en": "Fraction of GPU memory a server may use.", "zh": "推理服务可使用的显存比例。"},
    "cli.opt.endpoint": {"en": "Hub endpoint (mirror URL).", "zh": "模型仓库地址（镜像 URL）。"},
    "cli.opt.revision": {"en": "Branch, tag or commit.", "zh": "分支、标签或提交号。"},
    "cli.opt.json": {"en": "Print one JSON object.", "zh": "输出一个 JSON 对象。"},
    "cli.unknown_gpu": {"en": "Unknown GPU {gpu!r}; known: {gpus} (or give --gpu-memory GIB).",
                        "zh": "未知 GPU {gpu!r}；可选：{gpus}（或用 --gpu-memory 指定 GiB）。"},
    "cli.estimate.title": {"en": "{model} ({n} parameters): {method}, {seq} tokens × micro-batch {batch}, "
                                 "checkpointing {ckpt}",
                           "zh": "{model}（{n} 个参数）：{method}，{seq} 个 token × 微批 {batch}，激活检查点：{ckpt}"},
    "cli.estimate.with_images": {"en": "{seq} + {n} image", "zh": "{seq} + {n}（图像）"},
    "cli.estimate.fit": {"en": "Fits on {gpu} ({gib} GiB) with {margin} GiB to spare.", "zh": "可以放进 {gpu}（{gib} GiB），余量 {margin} GiB。"},
    "cli.estimate.fit_margin": {"en": "Fits on {gpu} ({gib} GiB) with {margin} GiB to spare, within a {pct} % "
                                      "margin{why}.",
                                "zh": "可以放进 {gpu}（{gib} GiB），余量 {margin} GiB，已留 {pct}% 余量{why}。"},
    "cli.estimate.nofit": {"en": "Does NOT fit on {gpu} ({gib} GiB): the predicted {peak} GiB needs {need} GiB with a {pct} % margin{why}.",
                           "zh": "放不进 {gpu}（{gib} GiB）：预测峰值 {peak} GiB，留 {pct}% 余量需要 {need} GiB{why}。"},
    "cli.estimate.margin_why": {"en": " (larger: {what} is approximate)", "zh": "（更大：{what} 为近似值）"},
    "cli.estimate.target_gpu": {"en": "the target GPU", "zh": "目标 GPU"},
    "cli.estimate.gpu_assumed": {"en": "No GPU here and none given: the serving line assumes {gib} GiB and no speed is "
                                       "predicted (--gpu names the GPU: its speed too; --gpu-memory its size).",
                                 "zh": "本机没有 GPU，也未指定：部署一行按 {gib} GiB 估算，也不预测速度（用 --gpu 指定 GPU，"
                                       "同时给出速度；--gpu-memory 指定显存大小）。"},
    "cli.estimate.no_instance": {"en": "It fits on no instance up to 8 × H200 141G.", "zh": "最多 8 × H200 141G 也放不下。"},
    "cli.estimate.serving_nofit": {"en": "Serving ({fmt}) at {util} of {gib} GiB does NOT fit on {tp} GPU(s): the "
                                         "weights ({weights} GiB per GPU) and the engine's own {over} GiB leave nothing "
                                         "for the KV cache. Try a 4-bit format (--serve-format awq or gptq), more GPUs "
                                         "(--gpus), or a larger GPU.",
                                   "zh": "部署（{fmt}），使用 {gib} GiB 的 {util}，在 {tp} 个 GPU 上放不下：权重（每个 GPU "
                                         "{weights} GiB）加上引擎自身的 {over} GiB 之后，KV 缓存已无空间。可改用 4 位格式"
                                         "（--serve-format awq 或 gptq）、更多 GPU（--gpus）或更大的 GPU。"},
    "cli.estimate.no_speed_nofit": {"en": "No speed shown: the plan does not fit this GPU (see above).",
                                    "zh": "不显示速度：该方案放不进这块 GPU（见上）。"},
    "cli.estimate.serving": {"en": "Serving ({fmt}) at {util} of {gib} GiB: weights {weights} GiB, KV cache for {tokens} tokens, longest context {context}.",
                             "zh": "部署（{fmt}），使用 {gib} GiB 的 {util}：权重 {weights} GiB，KV 缓存可容纳 {tokens} 个 token，最长上下文 {context}。"},
    "cli.download": {"en": "Download a model or dataset repository: resumable across runs, every file verified.",
                     "zh": "下载模型或数据集仓库：中断后可续传，每个文件都会校验。"},
    "cli.arg.repo": {"en": "Repository id (org/name).", "zh": "仓库 ID（组织/名称）。"},
    "cli.opt.local_dir": {"en": "Folder to download into (default: under YICHUI_HOME).", "zh": "下载到的目录（默认在 YICHUI_HOME 下）。"},
    "cli.opt.include": {"en": "Only files matching this pattern (repeatable).", "zh": "只下载匹配此模式的文件（可重复）。"},
    "cli.opt.exclude": {"en": "Skip files matching this pattern (repeatable).", "zh": "跳过匹配此模式的文件（可重复）。"},
    "cli.bad_repo_type": {"en": "--repo-type {value!r}: use model or dataset.", "zh": "--repo-type {value!r}：请用 model 或 dataset。"},
    "cli.download.interrupted": {"en": "Stopped. What was fetched of {repo} is kept; the same command continues from there.",
                                 "zh": "已停止。{repo} 已下载的部分都保留；再次运行同一命令即可续传。"},
    "cli.download.no_space": {"en": "Not enough disk in {path}: {need} needed, {free} free. Free space or choose "
                                     "another folder (--local-dir).",
                               "zh": "{path} 磁盘空间不足：需要 {need}，仅剩 {free}。请清理空间或换目录（--local-dir）。"},
    "cli.estimate.unreachable": {"en": "Cannot reach {endpoint} ({error}). Check the network, choose a mirror (--endpoint, "
                                       "or HF_ENDPOINT / MODELSCOPE_ENDPOINT), or give the model's config.json or its "
                                       "folder: yichui estimate ./config.json — common models' are in {configs} "
                                       "(e.g. yichui estimate {configs}/qwen2.5-7b).",
                                 "zh": "无法连接 {endpoint}（{error}）。请检查网络、选择镜像（--endpoint，或 HF_ENDPOINT / "
                                       "MODELSCOPE_ENDPOINT），或直接给出模型的 config.json 或其文件夹：yichui estimate ./config.json"
                                       "——常见模型的配置在 {configs}（如 yichui estimate {configs}/qwen2.5-7b）。"},
    "cli.download.unreachable": {"en": "Cannot reach {endpoint} ({error}). Check the network, or choose a mirror "
                                       "(--endpoint, or HF_ENDPOINT / MODELSCOPE_ENDPOINT).",
                                 "zh": "无法连接 {endpoint}（{error}）。请检查网络，或选择镜像（--endpoint，或 HF_ENDPOINT / "
                                       "MODELSCOPE_ENDPOINT）。"},
    "cli.download.size_unknown": {"en": "The hub gives no size for {file}, neither in its listing nor in the file's "
                                        "headers ({url}): it cannot be verified, so it is not downloaded — use another "
                                        "endpoint (--endpoint).",
                                  "zh": "Hub 没有给出 {file} 的大小（列表和文件头 {url} 中都没有）：无法校验，因此不下载——请换一个端点"
                                        "（--endpoint）。"},
    "cli.download.disk_full": {"en": "{file}: the disk under {path} is full; the partial file is kept — free space, then "
                                     "run the same command again.",
                               "zh": "{file}：{path} 所在磁盘已满；部分文件已保留——释放空间后再次运行同一命令即可续传。"},
    "cli.download.rate_limited": {"en": "The hub keeps answering 429 (too many requests) for {file}; what was fetched is "
                                        "kept — wait about {seconds} s, then run the same command again (a token raises "
                                        "the hub's limits).",
                                  "zh": "Hub 对 {file} 持续返回 429（请求过多）；已下载的部分保留——约 {seconds} 秒后再次运行同一命令"
                                        "（使用 token 可提高 Hub 的限额）。"},
    "cli.download.done": {"en": "Downloaded into {path} (commit {commit}; {size} fetched this run).",
                          "zh": "已下载到 {path}（提交 {commit}；本次传输 {size}）。"},
    "cli.attach": {"en": "Follow a running training's live view (default: the most recent session training now).",
                   "zh": "查看正在进行的训练的实时视图（默认：最近一个正在训练的会话）。"},
    "cli.attach.none_any": {"en": "No training is running under this YICHUI_HOME; `yichui show --all` lists the sessions.",
                            "zh": "此 YICHUI_HOME 下没有正在运行的训练；`yichui show --all` 列出全部会话。"},
    "cli.trainer_died": {"en": "The trainer of session {id} ended before finishing ({at}; last checkpoint: "
                               "{checkpoint}): `yichui resume {id}` continues from it.",
                         "zh": "会话 {id} 的训练进程在完成前结束了（{at}；最近的检查点：{checkpoint}）："
                               "`yichui resume {id}` 从那里继续。"},
    "cli.no_checkpoint": {"en": "none yet, so from step 0", "zh": "尚无，因此从第 0 步开始"},
    "cli.attach.none": {"en": "No training is running for session {id}; `yichui status` shows its jobs.",
                        "zh": "会话 {id} 没有正在运行的训练；`yichui status` 可查看其任务。"},
    "cli.attach.done": {"en": "Training of session {id} finished; `yichui resume {id}` goes on to export and deploy.",
                        "zh": "会话 {id} 的训练已完成；`yichui resume {id}` 继续导出与部署。"},
    "cli.attach.done_held": {"en": "Training of session {id} finished; the yichui that runs it (pid {pid}) goes on to "
                                   "export and deploy by itself.",
                             "zh": "会话 {id} 的训练已完成；运行它的 yichui（pid {pid}）会自行继续导出与部署。"},
    "cli.attach.oom_held": {"en": "The trainer of session {id} ran out of GPU memory; the yichui that runs it (pid "
                                  "{pid}) recovers (smaller micro-batch, checkpointing) and goes on by itself.",
                            "zh": "会话 {id} 的训练显存不足；运行它的 yichui（pid {pid}）会自行调整（更小的微批、激活检查点）后继续。"},
    "cli.attach.compile_failed": {"en": "Compiling the decoder layers failed in the trainer of session {id} ({error}); "
                                        "`yichui resume {id}` goes on without compiling.",
                                  "zh": "会话 {id} 的训练进程编译解码层失败（{error}）；`yichui resume {id}` 会不编译继续。"},
    "cli.attach.compile_failed_held": {"en": "Compiling the decoder layers failed in the trainer of session {id} "
                                             "({error}); the yichui running it (pid {pid}) goes on without compiling.",
                                       "zh": "会话 {id} 的训练进程编译解码层失败（{error}）；运行它的 yichui（pid {pid}）"
                                             "会不编译继续。"},
    "cli.attach.oom": {"en": "The trainer of session {id} ran out of GPU memory; `yichui resume {id}` recovers (smaller micro-batch, checkpointing) and goes on.",
                       "zh": "会话 {id} 的训练显存不足；`yichui resume {id}` 会自动调整（更小的微批、激活检查点）后继续。"},
    "cli.example.run": {"en": "Examples:\n\n  yichui                                  # the wizard, asking each question\n\n  yichui run --task deploy                # serve a model as it is\n\n  yichui run --yes --set select_model.model=qwen2.5-0.5b-instruct\n\n  yichui run --task deploy --from 20261201-101500-ab12   # its training",
                 "zh": "示例：\n\n  yichui                                  # 向导，逐一提问\n\n  yichui run --task deploy                # 直接部署一个模型\n\n  yichui run --yes --set select_model.model=qwen2.5-0.5b-instruct\n\n  yichui run --task deploy --from 20261201-101500-ab12   # 复用它的训练"},
    "cli.example.demo": {"en": "Examples:\n\n  yichui demo                             # the whole fine-tune, offline\n\n  yichui demo --task deploy --set deploy.port=8001",
                 "zh": "示例：\n\n  yichui demo                             # 离线跑完整个微调\n\n  yichui demo --task deploy --set deploy.port=8001"},
    "cli.example.resume": {"en": "Examples:\n\n  yichui resume                           # the latest unfinished session\n\n  yichui resume 20261201-101500-ab12 --yes --set train.device=cpu",
                 "zh": "示例：\n\n  yichui resume                           # 最近一个未完成的会话\n\n  yichui resume 20261201-101500-ab12 --yes --set train.device=cpu"},
    "cli.example.replay": {"en": "Examples:\n\n  yichui replay 20261201-101500-ab12       # its answers pre-filled\n\n  yichui replay ~/.yichui/sessions/20261201-101500-ab12.json --yes",
                 "zh": "示例：\n\n  yichui replay 20261201-101500-ab12       # 预填它的答案\n\n  yichui replay ~/.yichui/sessions/20261201-101500-ab12.json --yes"},
    "cli.example.steps": {"en": "Examples:\n\n  yichui steps\n\n  yichui --lang zh steps",
                 "zh": "示例：\n\n  yichui steps\n\n  yichui --lang zh steps"},
    "cli.example.delete": {"en": "Examples:\n\n  yichui show --all                       # the sessions, to pick one\n\n"
                                 "  yichui delete 20261201-101500-ab12      # asks first\n\n"
                                 "  yichui delete 20261201-101500-ab12 --yes",
                           "zh": "示例：\n\n  yichui show --all                       # 列出会话以便挑选\n\n"
                                 "  yichui delete 20261201-101500-ab12      # 会先确认\n\n"
                                 "  yichui delete 20261201-101500-ab12 --yes"},
    "cli.example.show": {"en": "Examples:\n\n  yichui show                             # the latest session\n\n  yichui show --all                       # every session, servers running\n\n  yichui show 20261201-101500-ab12",
                 "zh": "示例：\n\n  yichui show                             # 最近的会话\n\n  yichui show --all                       # 所有会话及运行中的服务\n\n  yichui show 20261201-101500-ab12"},
    "cli.example.doctor": {"en": "Examples:\n\n  yichui doctor                           # what this machine can do\n\n  yichui doctor 20261201-101500-ab12      # what that session needs",
                 "zh": "示例：\n\n  yichui doctor                           # 本机能做什么\n\n  yichui doctor 20261201-101500-ab12      # 该会话需要什么"},
    "cli.example.estimate": {"en": "Examples:\n\n  yichui estimate Qwen/Qwen2.5-7B-Instruct --method qlora --gpu a10-24g\n\n  yichui estimate ./my-model --lora-rank 64 --seq-len 4096 --micro-batch 4\n\n  yichui estimate meta-llama/Llama-3.1-8B --method full --processes 8 --distribution zero3\n\n  yichui estimate Qwen/Qwen2.5-7B-Instruct --gpu-memory 80 --json",
                 "zh": "示例：\n\n  yichui estimate Qwen/Qwen2.5-7B-Instruct --method qlora --gpu a10-24g\n\n  yichui estimate ./my-model --lora-rank 64 --seq-len 4096 --micro-batch 4\n\n  yichui estimate meta-llama/Llama-3.1-8B --method full --processes 8 --distribution zero3\n\n  yichui estimate Qwen/Qwen2.5-7B-Instruct --gpu-memory 80 --json"},
    "cli.example.download": {"en": "Examples:\n\n  yichui download Qwen/Qwen2.5-0.5B-Instruct\n\n  yichui download Qwen/Qwen2.5-7B-Instruct --source modelscope --local-dir ./q7\n\n  yichui download org/data --repo-type dataset --include '*.jsonl'",
                 "zh": "示例：\n\n  yichui download Qwen/Qwen2.5-0.5B-Instruct\n\n  yichui download Qwen/Qwen2.5-7B-Instruct --source modelscope --local-dir ./q7\n\n  yichui download org/data --repo-type dataset --include '*.jsonl'"},
    "cli.example.attach": {"en": "Examples:\n\n  yichui attach                           # the training running now\n\n  yichui attach 20261201-101500-ab12",
                 "zh": "示例：\n\n  yichui attach                           # 正在运行的训练\n\n  yichui attach 20261201-101500-ab12"},
    "cli.example.status": {"en": "Examples:\n\n  yichui status                           # every running job\n\n  yichui status 20261201-101500-ab12",
                 "zh": "示例：\n\n  yichui status                           # 所有运行中的任务\n\n  yichui status 20261201-101500-ab12"},
    "cli.example.stop": {"en": "Examples:\n\n  yichui stop                             # the most recent session with a running job\n\n  yichui stop 20261201-101500-ab12",
                 "zh": "示例：\n\n  yichui stop                             # 最近一个有任务在运行的会话\n\n  yichui stop 20261201-101500-ab12"},
    "cli.example.serve": {"en": "Examples:\n\n  yichui serve status\n\n  yichui serve logs -n 100\n\n  yichui serve stop\n\n  yichui serve stop --all\n\n  yichui serve start 20261201-101500-ab12",
                 "zh": "示例：\n\n  yichui serve status\n\n  yichui serve logs -n 100\n\n  yichui serve stop\n\n  yichui serve stop --all\n\n  yichui serve start 20261201-101500-ab12"},
    "cli.example.chat": {"en": "Examples:\n\n  yichui chat                             # the session's server\n\n  yichui chat --endpoint http://127.0.0.1:8000/v1 --model my-model",
                 "zh": "示例：\n\n  yichui chat                             # 该会话的服务\n\n  yichui chat --endpoint http://127.0.0.1:8000/v1 --model my-model"},
    "cli.steps.keys_checkbox": {"en": "{what} · any of {values}, as a,b (none: none)",
                                "zh": "{what} · 可选 {values}，写作 a,b（都不选：none）"},
}
