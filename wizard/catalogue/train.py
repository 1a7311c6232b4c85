"""Messages of the train step (keys ``train.*``), English and Chinese."""

MESSAGES = {
    "train.device": {"en": "Train on:", "zh": "训练设备："},
    "train.device.auto": {"en": "auto (CUDA when present, else CPU)", "zh": "自动（有 CUDA 用 GPU，否则用 CPU）"},
    "train.no_cuda": {"en": "No CUDA GPU here: choose auto or CPU.", "zh": "本机没有 CUDA GPU：请选择自动或 CPU。"},
    "train.started": {"en": "Trainer started (pid {pid}), log: {log}", "zh": "训练进程已启动（pid {pid}），日志：{log}"},
    "train.reattach": {"en": "Re-attaching to the running trainer (pid {pid}).", "zh": "重新连接到正在运行的训练进程（pid {pid}）。"},
    "train.resume_from": {"en": "Resuming training from {checkpoint}.", "zh": "从 {checkpoint} 继续训练。"},
    "train.detached": {"en": "Detached: training goes on (pid {pid}). `yichui resume {id}` re-attaches, "
                             "`yichui stop {id}` stops it.",
                       "zh": "已断开：训练仍在继续（pid {pid}）。`yichui resume {id}` 重新连接，`yichui stop {id}` 停止训练。"},
    "train.finished": {"en": "Training finished: {steps} steps, training loop {seconds} s; loss {first} (first 5 logged) → {last} (last 5).",
                       "zh": "训练完成：{steps} 步，训练循环用时 {seconds} 秒；损失 {first}（前 5 次记录）→ {last}（后 5 次）。"},
    "train.no_optimizer_state": {"en": "{checkpoint} holds no optimizer state (optimizer.pt is missing): training goes "
                                       "on from its weights with a fresh optimizer (Adam's moments start again).",
                                 "zh": "{checkpoint} 中没有优化器状态（缺少 optimizer.pt）：训练将从其权重继续，但优化器重新"
                                       "开始（Adam 的动量从零累积）。"},
    "train.tracker_store": {"en": "{tracker}: this run is in {path} — {command}",
                            "zh": "{tracker}：本次运行记录在 {path}——{command}"},
    "train.finished_few": {"en": "Training finished: {steps} steps, training loop {seconds} s; loss {first} (first logged step) → {last} (last).",
                           "zh": "训练完成：{steps} 步，训练循环用时 {seconds} 秒；损失 {first}（第一次记录）→ {last}（最后一次）。"},
    "train.finished_rewards_few": {"en": "Reward {first} (first logged step) → {last} (last); each function's is in the events (reward_<function>).",
                                   "zh": "奖励 {first}（第一次记录）→ {last}（最后一次）；各奖励函数的数值见事件（reward_<函数名>）。"},
    "train.finished_rewards": {"en": "Reward {first} (first 5 logged) → {last} (last 5); each function's is in the "
                                     "events (reward_<function>).",
                               "zh": "奖励 {first}（前 5 次记录）→ {last}（后 5 次）；各奖励函数的数值见事件（reward_<函数名>）。"},
    "train.oom_recovered": {"en": "Out of GPU memory at step {step}: resuming from the last checkpoint with micro-batch {micro_batch}, gradient accumulation {grad_accum}, activation checkpointing on (same effective batch).",
                            "zh": "第 {step} 步显存不足：从最近的检查点继续，微批 {micro_batch}，梯度累积 {grad_accum}，开启激活检查点（有效批量不变）。"},
    "train.incomplete_checkpoint": {"en": "{checkpoint} was being written when the trainer stopped: set aside as incomplete-{checkpoint}; resuming from the last complete checkpoint.",
                                    "zh": "训练进程停止时 {checkpoint} 正在写入：已改名为 incomplete-{checkpoint} 留存；从最近的完整检查点继续。"},
    "train.damaged_checkpoint": {"en": "{checkpoint} cannot be read ({what}): set aside as damaged-{checkpoint}; "
                                       "resuming from the last intact checkpoint.",
                                 "zh": "{checkpoint} 无法读取（{what}）：已改名为 damaged-{checkpoint} 留存；从最近的完好检查点继续。"},
    "train.oom_recovered_first": {"en": "Out of GPU memory before the first step: starting again with micro-batch {micro_batch}, gradient accumulation {grad_accum}, activation checkpointing on (same effective batch).",
                                  "zh": "第一步之前显存不足：重新开始，微批 {micro_batch}，梯度累积 {grad_accum}，开启激活检查点（有效批量不变）。"},
    "train.backup_started": {"en": "Adapter backup to {hub} {repo}: one checkpoint in {every} and the final adapter, in the background (log: {log}).",
                             "zh": "适配器备份到 {hub} {repo}：每 {every} 个检查点一次及最终适配器，后台上传（日志：{log}）。"},
    "train.backup_started_all": {"en": "Adapter backup to {hub} {repo}: every checkpoint and the final adapter, in the background (log: {log}).",
                                 "zh": "适配器备份到 {hub} {repo}：每个检查点及最终适配器，后台上传（日志：{log}）。"},
    "train.backup_final": {"en": "final adapter (repository root)", "zh": "最终适配器（仓库根目录）"},
    "train.backup_waiting": {"en": "Training is done; waiting up to {seconds} s for the final adapter's upload to {hub}…",
                             "zh": "训练已完成；最多等待 {seconds} 秒，等最终适配器上传到 {hub}……"},
    "train.backup_summary": {"en": "Adapter backup: {n} upload(s) to {hub} {repo}: {paths}.",
                             "zh": "适配器备份：已上传 {n} 次到 {hub} {repo}：{paths}。"},
    "train.backup_gave_up": {"en": "Adapter backup of {path} gave up: {error} (log: {log}). It stays on disk; training was not affected; `yichui resume` tries again.",
                             "zh": "适配器 {path} 的备份已放弃：{error}（日志：{log}）。它仍保存在本地，训练未受影响；`yichui resume` 会重试。"},
    "train.backup_failing": {"en": "Adapter backup of {path}: attempt {attempt} of {attempts} failed: {error}",
                             "zh": "适配器 {path} 备份：第 {attempt}/{attempts} 次尝试失败：{error}"},
    "train.backup_pending": {"en": "The backup goes on in the background: `yichui status {id}` shows it.",
                             "zh": "备份仍在后台进行：`yichui status {id}` 可查看。"},
    "train.compile_failed": {"en": "Compiling the decoder layers failed ({error}; log: {log}): resuming from the last checkpoint without compiling (slower, same result).",
                             "zh": "编译解码层失败（{error}；日志：{log}）：从最近的检查点继续，不再编译（较慢，结果相同）。"},
    "train.oom_no_room": {"en": "Out of GPU memory even at micro-batch {micro_batch} with activation checkpointing (log: {log}): use QLoRA, a shorter sequence or a larger GPU (`yichui estimate` sizes it).",
                          "zh": "即使微批 {micro_batch} 且开启激活检查点仍显存不足（日志：{log}）：请改用 QLoRA、缩短序列或换更大的 GPU（`yichui estimate` 可估算）。"},
    "train.result_stale": {"en": "The training's result names {adapter}, which is gone: training again from the last "
                                 "intact checkpoint (a finished run only saves its final adapter again).",
                           "zh": "训练结果指向的 {adapter} 已不存在：从最后一个完整的检查点重新训练（已完成的训练只会重新保存最终适配器）。"},
    "train.answers_changed": {"en": "The training answers changed since this run trained ({changes}): training again "
                                    "from step 0; the earlier run is kept in {aside}.",
                              "zh": "自上次训练以来训练答案已更改（{changes}）：从第 0 步重新训练；之前的训练保留在 {aside}。"},
    "train.changed_while_running": {"en": "The training answers changed, but the trainer (pid {pid}) still runs with "
                                          "the earlier ones: stop it first (`yichui stop {id}`), then resume.",
                                    "zh": "训练答案已更改，但训练进程（pid {pid}）仍按之前的答案运行：请先停止它"
                                          "（`yichui stop {id}`），再继续。"},
    "train.from_source_checkpoint": {"en": "The source session's {checkpoint} is intact ({path}): training resumes "
                                           "from it instead of from step 0.",
                                     "zh": "源会话的 {checkpoint} 完好（{path}）：从它继续训练，而不是从第 0 步开始。"},
    "train.curve_no_viewer": {"en": "Loss curve: {png}; TensorBoard events: {tb}. The viewer is not installed "
                                    "(`yichui doctor` lists it); to install it:\n  {python} -m pip install tensorboard",
                              "zh": "损失曲线：{png}；TensorBoard 事件：{tb}。未安装查看器（`yichui doctor` 会列出）；"
                                    "安装：\n  {python} -m pip install tensorboard"},
    "train.curve": {"en": "Loss curve: {png}; TensorBoard: {python} -m tensorboard.main --logdir {tb}",
                    "zh": "损失曲线：{png}；TensorBoard：{python} -m tensorboard.main --logdir {tb}"},
    "train.on_backend": {"en": "Training on the {backend} backend ({python}): its model and kernels, yichui's events and checkpoints.",
                         "zh": "使用 {backend} 后端训练（{python}）：它的模型与内核，yichui 的事件与检查点。"},
}
