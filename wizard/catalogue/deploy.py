"""Messages of the deploy step (keys ``deploy.*``), English and Chinese."""

MESSAGES = {
    "deploy.reply": {"en": "From the server — {question}\n  {answer}", "zh": "来自服务——{question}\n  {answer}"},
    "deploy.not_ours": {"en": "Another server answers on port {port} (it serves {models}), not the one yichui started: choose another port with --set deploy.port=N.",
                        "zh": "端口 {port} 上响应的是另一个服务（提供 {models}），不是 yichui 启动的：请用 --set deploy.port=N 换一个端口。"},
    "deploy.start_title": {"en": "Starting {engine} (pid {pid})", "zh": "正在启动 {engine}（pid {pid}）"},
    "deploy.field.phase": {"en": "phase", "zh": "阶段"},
    "deploy.field.elapsed": {"en": "elapsed", "zh": "已用时间"},
    "deploy.phase.start": {"en": "starting the engine's process (its Python and imports)", "zh": "正在启动引擎进程（Python 与依赖导入）"},
    "deploy.phase.engine": {"en": "setting up the engine", "zh": "正在初始化引擎"},
    "deploy.phase.loading": {"en": "loading the weights", "zh": "正在加载权重"},
    "deploy.phase.compiling": {"en": "compiling the model (torch.compile; cached for the next start)",
                               "zh": "正在编译模型（torch.compile；下次启动使用缓存）"},
    "deploy.phase.kv_cache": {"en": "measuring memory and allocating the KV cache", "zh": "正在测量显存并分配 KV cache"},
    "deploy.phase.warmup": {"en": "warming up: building and tuning kernels on first use (cached for the next start)",
                            "zh": "正在预热：首次使用时构建并调优内核（下次启动使用缓存）"},
    "deploy.phase.graphs": {"en": "capturing CUDA graphs", "zh": "正在捕获 CUDA graphs"},
    "deploy.phase.api": {"en": "starting the HTTP server", "zh": "正在启动 HTTP 服务"},
    "deploy.phase.ready": {"en": "ready (/health answers)", "zh": "就绪（/health 已响应）"},
    "deploy.backend": {"en": "Serving engine:", "zh": "推理服务引擎："},
    "deploy.backend.label": {"en": "{backend} ({state})", "zh": "{backend}（{state}）"},
    "deploy.installed": {"en": "installed", "zh": "已安装"},
    "deploy.not_installed_short": {"en": "not installed", "zh": "未安装"},
    "deploy.not_installed": {"en": "{backend} is not installed: {hint}.", "zh": "{backend} 未安装：{hint}。"},
    "deploy.gpu_only_hint": {"en": "it serves on NVIDIA GPUs and this machine has none, so serve with transformers here; on the GPU machine: {hint}",
                             "zh": "它需要 NVIDIA GPU，而本机没有，这里请用 transformers 部署；在 GPU 机器上：{hint}"},
    "deploy.model": {"en": "Which export to serve?", "zh": "部署哪个导出结果？"},
    "deploy.model.merged": {"en": "the merged model", "zh": "合并后的模型"},
    "deploy.model.downloaded": {"en": "the downloaded model, as it is", "zh": "下载的模型（原样）"},
    "deploy.model.format": {"en": "the {format} copy", "zh": "{format} 副本"},
    "deploy.host": {"en": "Bind address:", "zh": "监听地址："},
    "deploy.port": {"en": "Port:", "zh": "端口："},
    "deploy.custom_code_transformers": {"en": "transformers serve {version} loads only architectures built into transformers, not a repository's own code: serve it with vLLM, SGLang or LMDeploy (they take --trust-remote-code), or use the exported model directly.",
                                        "zh": "transformers serve {version} 只能加载 transformers 内置的架构，不能加载仓库自带的代码：请用 vLLM、SGLang 或 LMDeploy 部署（它们支持 --trust-remote-code），或直接使用导出的模型。"},
    "deploy.port_in_use": {"en": "Port {port} is in use: choose another.", "zh": "端口 {port} 已被占用：请换一个。"},
    "deploy.port_reserved": {"en": "Port {port} is reserved by session {session}, which is still running and will serve on "
                                   "it: choose another.",
                             "zh": "端口 {port} 已被仍在运行的会话 {session} 预留（它将在此端口提供服务）：请换一个。"},
    "deploy.port_moved": {"en": "Port {port} is taken now ({by}); serving on {new} instead.",
                          "zh": "端口 {port} 现已被占用（{by}）；改用端口 {new} 提供服务。"},
    "deploy.taken_by_process": {"en": "another program listens on it", "zh": "另一个程序正在监听它"},
    "deploy.taken_by_session": {"en": "reserved by session {session}", "zh": "已被会话 {session} 预留"},
    "deploy.stopping_old": {"en": "Stopping the previous server (pid {pid}).", "zh": "正在停止之前的服务（pid {pid}）。"},
    "deploy.starting": {"en": "Server starting (pid {pid}), log: {log}", "zh": "服务启动中（pid {pid}），日志：{log}"},
    "deploy.ready": {"en": "Serving {model} — {what} — at {endpoint} (pid {pid}; healthy after {seconds} s).",
                     "zh": "正在 {endpoint} 提供 {model}——{what}（pid {pid}；{seconds} 秒后就绪）。"},
    "deploy.what.merged": {"en": "the merged model, {path}", "zh": "合并后的模型，{path}"},
    "deploy.what.adapter": {"en": "the adapter {adapter} on its base {path}", "zh": "基座 {path} 上的适配器 {adapter}"},
    "deploy.what.format": {"en": "its {format} copy, {path}", "zh": "它的 {format} 副本，{path}"},
    "deploy.what.model": {"en": "the model in {path}", "zh": "{path} 中的模型"},
    "deploy.image": {"en": "The check asked about the image {path} (sent inline: {{\"type\": \"image_url\", \"image_url\": {{\"url\": \"data:image/png;base64,…\"}}}} beside the text part).",
                     "zh": "检查时就图片 {path} 提问（内联发送：{{\"type\": \"image_url\", \"image_url\": {{\"url\": \"data:image/png;base64,…\"}}}}，与文本部分并列）。"},
    "deploy.before": {"en": "Before fine-tuning — {question}\n  {answer}", "zh": "微调前——{question}\n  {answer}"},
    "deploy.after": {"en": "After fine-tuning (from the server) — {question}\n  {answer}",
                     "zh": "微调后（来自服务）——{question}\n  {answer}"},
    "deploy.curl": {"en": "Try it:\n{curl}", "zh": "试一试：\n{curl}"},
    "deploy.model.adapter": {"en": "the LoRA adapter, unmerged, on the base model", "zh": "未合并的 LoRA 适配器（加载在基座模型上）"},
    "deploy.tensor_parallel": {"en": "Tensor-parallel size (GPUs per replica):", "zh": "张量并行数（每个副本的 GPU 数）："},
    "deploy.gpu_memory_utilization": {"en": "GPU memory utilization (fraction for weights + KV cache):",
                                      "zh": "GPU 显存利用率（权重 + KV cache 所占比例）："},
    "deploy.max_model_len": {"en": "Maximum context length (tokens; default: what the KV-cache budget holds):",
                             "zh": "最大上下文长度（token；默认：KV cache 预算能容纳的长度）："},
    "deploy.tp_heads": {"en": "Tensor-parallel size {tp} does not split this model evenly ({heads} attention heads, {kv} KV heads, MLP width {width}; the engines refuse it): choose a size that divides them.",
                        "zh": "张量并行数 {tp} 无法均分此模型（{heads} 个注意力头、{kv} 个 KV 头、MLP 宽度 {width}；推理引擎会拒绝）：请选择能整除它们的数。"},
    "deploy.context_too_long": {"en": "A {tokens}-token context does not fit: the KV-cache budget ({kv} GiB at utilization {util}) holds {most} tokens; lower it or raise the utilization.",
                                "zh": "{tokens} token 的上下文放不下：KV cache 预算（利用率 {util} 时 {kv} GiB）只能容纳 {most} 个 token；请调小或提高利用率。"},
    "deploy.bad_answer": {"en": "The server answered {what} with something that is not the OpenAI API's ({error}); see its log {log}. The server was stopped.",
                          "zh": "服务对 {what} 的回答不符合 OpenAI API（{error}）；请查看日志 {log}。服务已停止。"},
    "deploy.bad_host": {"en": "Cannot listen on {host}: {error}. Give an address of this machine: 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of its own addresses.",
                        "zh": "无法在 {host} 上监听：{error}。请给出本机的地址：127.0.0.1（仅本机）、0.0.0.0（所有网卡）或本机自己的某个地址。"},
    "deploy.table_from_parser": {"en": "{engine} {version} has no committed argument table: its options were read from its own parser ({path}).",
                                 "zh": "{engine} {version} 没有随附的参数表：已从它自己的参数解析器读出选项（{path}）。"},
    "deploy.installed_version": {"en": "installed: {version}", "zh": "已安装：{version}"},
    "deploy.cuda_graphs": {"en": "Capture CUDA graphs (faster decoding; the start takes 1–3 minutes longer)?",
                           "zh": "捕获 CUDA Graph（解码更快；启动多花 1–3 分钟）？"},
    "deploy.engine_args": {"en": "Extra options for the engine, as on its command line (e.g. vLLM's --max-num-seqs 64, SGLang's --attention-backend triton; empty: none). Checked against the installed version's options; no secrets here.",
                           "zh": "引擎的额外选项，按其命令行写法（如 vLLM 的 --max-num-seqs 64、SGLang 的 --attention-backend triton；留空：无）。会按已安装版本的选项检查；不要填密钥。"},
    "deploy.engine_args_bad": {"en": "The extra engine options cannot be split as a shell would ({error}): check the quotes.",
                               "zh": "额外引擎选项无法按 shell 规则拆分（{error}）：请检查引号。"},
    "deploy.never_stops": {"en": "The model served by {engine} does not end its reply within {tokens} tokens, although the merged model does (export check): {why} (log: {log}). The server was stopped.",
                           "zh": "{engine} 提供的模型在 {tokens} 个 token 内没有结束回复，而合并后的模型会结束（导出时的检查）：{why}（日志：{log}）。服务已停止。"},
    "deploy.no_stop": {"en": "The served model does not end its reply within {tokens} tokens; it did not in the export's check either, so the model itself has not learned to stop ({why}).",
                       "zh": "所部署的模型在 {tokens} 个 token 内没有结束回复；导出时的检查中它也没有，所以是模型本身没学会停止（{why}）。"},
    "deploy.stop_cause.eos": {"en": "generation_config.json in {dir} lists EOS ids {eos}, without {token} (id {id}) that ends a turn in the chat template",
                              "zh": "{dir} 中的 generation_config.json 列出的 EOS id 为 {eos}，不含对话模板中结束一轮的 {token}（id {id}）"},
    "deploy.stop_cause.template": {"en": "{dir} has no chat template: the engine falls back to its own",
                                   "zh": "{dir} 中没有对话模板：引擎会用它自己的"},
    "deploy.stop_cause.no_config": {"en": "{dir} lacks generation_config.json or tokenizer_config.json: the engine cannot know which token ends a turn",
                                    "zh": "{dir} 缺少 generation_config.json 或 tokenizer_config.json：引擎无法知道哪个 token 结束一轮"},
    "deploy.stop_cause.engine": {"en": "{dir} names its end-of-turn token among its EOS ids and has a chat template, so the files are not the cause",
                                 "zh": "{dir} 的 EOS id 中已包含结束 token，也有对话模板，所以不是文件的问题"},
    "deploy.kv_cache": {"en": "KV cache: the engine holds {reported} tokens; the memory model predicted {predicted} ({error} %).",
                        "zh": "KV 缓存：引擎可容纳 {reported} 个 token；内存模型预测为 {predicted}（{error} %）。"},
    "deploy.no_adapter": {"en": "No LoRA adapter to serve unmerged (full fine-tune or DoRA): serve the merged model.",
                          "zh": "没有可以未合并部署的 LoRA 适配器（全参微调或 DoRA）：请部署合并后的模型。"},
    "deploy.streamed": {"en": "Streamed completion: {chars} characters (finish reason: {finish}).",
                        "zh": "流式补全：{chars} 个字符（结束原因：{finish}）。"},
    "deploy.parity_ok": {"en": "Train→serve parity: the engine renders the sample question and the held-out ones "
                               "({n} prompts) as training did ({how}).",
                         "zh": "训练→部署一致性：引擎对示例问题和留出问题（{n} 个提示）的渲染与训练时相同（{how}）。"},
    "deploy.parity_by_ids": {"en": "compared token by token", "zh": "逐个 token 比较"},
    "deploy.parity_count_ok": {"en": "Train→serve parity, by count only: each of the {n} prompts is as many tokens "
                                     "on the engine as training rendered (this engine has no tokenize endpoint to "
                                     "compare them token by token).",
                               "zh": "训练→部署一致性（仅按数量）：{n} 个提示在引擎上的 token 数都与训练时相同（此引擎没有 tokenize "
                                     "接口，无法逐个比较）。"},
    "deploy.parity_greedy_ok": {"en": "Greedy replies: {same} of {n} start the same as the merged model's own "
                                      "in-process replies (first {tokens} tokens){lp}",
                                "zh": "贪心回答：{n} 个中有 {same} 个开头与合并模型在进程内的回答相同（前 {tokens} 个 token）{lp}"},
    "deploy.parity_logprobs": {"en": "; their log-probabilities within {diff} nats.",
                               "zh": "；其对数概率相差不超过 {diff} nats。"},
    "deploy.parity_no_logprobs": {"en": "; {engine} reports no log-probabilities to compare.",
                                  "zh": "；{engine} 不报告对数概率，无法比较。"},
    "deploy.parity_logprobs_far": {"en": "The served model's log-probabilities differ from the merged model's own by up "
                                         "to {diff} nats on the same tokens (more than {limit}): the weights or the "
                                         "numerics served are not quite those trained — check the engine's dtype and "
                                         "that the folder served is the export.",
                                   "zh": "部署模型在相同 token 上的对数概率与合并模型相差最多 {diff} nats（超过 {limit}）：部署的"
                                         "权重或数值精度与训练时不完全一致——检查引擎的 dtype，以及部署的目录是否为导出目录。"},
    "deploy.parity_departs": {"en": "{engine} answers \"{question}\" otherwise than the merged model does in-process, "
                                    "from reply token {at} where the trained model was sure (a lead of {margin} "
                                    "nats): {training!r} vs {served!r}. The prompts matched, so the engine does "
                                    "not run the model that was trained. Likely fix: serve the folder the export "
                                    "wrote (not the base), with the adapter enabled on the engine if it is served "
                                    "unmerged, in the dtype it was exported in. Server log: {log}",
                              "zh": "{engine} 对“{question}”的回答与合并模型在进程内的不同，从第 {at} 个回答 token 起，"
                                    "而训练后的模型在那里很确定（领先 {margin} nats）：{training!r} 与 {served!r}。提示"
                                    "一致，因此引擎运行的不是训练出的模型。可能的修复：部署导出步骤写出的目录（不是基座），未"
                                    "合并部署时在引擎上启用适配器，并使用导出时的 dtype。服务日志：{log}"},
    "deploy.parity_prompt": {"en": "{engine} renders \"{question}\" as {served} tokens where training rendered "
                                   "{training}{where}: the served model would see other prompts than it was trained "
                                   "on. Likely fix: serve the folder the export wrote with its own chat template (no "
                                   "--chat-template in the engine's arguments; a template edited since: export again). "
                                   "Server log: {log}",
                             "zh": "{engine} 把“{question}”渲染为 {served} 个 token，训练时为 {training} 个{where}：部署的模型"
                                   "看到的提示将与训练时不同。可能的修复：用导出目录自带的对话模板部署（引擎参数中不要加 "
                                   "--chat-template；模板之后被改过则重新导出）。服务日志：{log}"},
    "deploy.parity_template": {"en": "; the served folder's chat template differs from training's at character {where}",
                               "zh": "；部署目录的对话模板与训练时的在第 {where} 个字符处不同"},
    "deploy.parity_at": {"en": " (first different token at position {pos}: training has {training!r}, the engine "
                               "{served!r})",
                         "zh": "（第一个不同的 token 在位置 {pos}：训练时为 {training!r}，引擎为 {served!r}）"},
    "deploy.parity_no_count": {"en": "Train→serve parity not checked: {engine} reported no prompt token count.",
                               "zh": "未检查训练→部署一致性：{engine} 没有报告提示的 token 数。"},
    "deploy.parity_no_export": {"en": "Train→serve parity: checked for a model this session trains and exports; "
                                      "this one is served as downloaded.",
                                "zh": "训练→部署一致性：只对本会话训练并导出的模型检查；这个模型按下载时的样子部署。"},
    "deploy.parity_unchecked": {"en": "Train→serve parity not checked: the export recorded no in-process rendering of "
                                      "this question (a session exported before this check; export again to have it).",
                                "zh": "未检查训练→部署一致性：导出步骤没有记录此问题在进程内的渲染（较早导出的会话；重新导出即可）。"},
    "deploy.parity_greedy": {"en": "The served greedy reply starts otherwise than the merged model's own in-process "
                                   "one ({training!r} vs {served!r}; the trained model's lead there: {margin} nats). "
                                   "The rendering matched, so this is the engine's numerics breaking a near-tie (or a "
                                   "quantized copy): compare them with `yichui run --task evaluate --from {id}` if it "
                                   "matters.",
                             "zh": "部署的贪心回答开头与合并模型在进程内的回答不同（{training!r} 与 {served!r}；训练后的模型在该处领先 "
                                   "{margin} nats）。渲染一致，因此这是引擎数值精度打破了近似平局（或量化副本所致）：如有必要，用 "
                                   "`yichui run --task evaluate --from {id}` 比较。"},
    "deploy.python": {"en": "From Python (with OpenAI's client: `pip install openai`):\n{code}",
                      "zh": "在 Python 中（使用 OpenAI 的客户端：`pip install openai`）：\n{code}"},
    "deploy.key_file": {"en": "The API key is in {path} (mode 0600; not in the session).",
                        "zh": "API 密钥在 {path}（权限 0600；不在会话文件中）。"},
    "deploy.stop_hint": {"en": "The server keeps running: `yichui chat {id}` talks to it, `yichui serve stop {id}` stops it.",
                         "zh": "服务会继续运行：`yichui chat {id}` 可与它对话，`yichui serve stop {id}` 可停止。"},
    "deploy.stops": {"en": "The reply and the streamed reply to the sample question ended by themselves (finish "
                           "reason: stop) after {tokens} tokens.",
                     "zh": "示例问题的回复和流式回复都自行结束（结束原因：stop），共 {tokens} 个 token。"},
    "deploy.no_stop_unchecked": {"en": "The served model does not end its reply within {tokens} tokens. Nothing was exported here to compare with: a base (not instruction-tuned) model does not end turns; for an instruction model, look at this: {why}.",
                                 "zh": "所部署的模型在 {tokens} 个 token 内没有结束回复。这里没有导出结果可对照：基座（非指令微调）模型本就不会结束一轮；若是指令模型，请检查：{why}。"},
    "deploy.stop_servers": {"en": "yichui servers of earlier sessions are running: stop any first?",
                            "zh": "早先会话的 yichui 服务仍在运行：先停止其中哪些吗？"},
    "deploy.server_label": {"en": "{id} · port {port} · {model} · {gib} GiB RAM",
                            "zh": "{id} · 端口 {port} · {model} · 内存 {gib} GiB"},
    "deploy.stopped_other": {"en": "Stopped the server of session {id} (pid {pid}).",
                             "zh": "已停止会话 {id} 的服务（pid {pid}）。"},
}
