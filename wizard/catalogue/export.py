"""Messages of the export step (keys ``export.*``), English and Chinese."""

MESSAGES = {
    "export.dtype": {"en": "Weights dtype of the merged model:", "zh": "合并后模型的权重精度："},
    "export.dtype.auto": {"en": "auto (as the base model)", "zh": "自动（与基座模型相同）"},
    "export.serve_with": {"en": "Which engine will serve the model? (only the formats it loads are offered)",
                          "zh": "将用哪个引擎部署模型？（只提供它能加载的格式）"},
    "export.engine_not_deployed": {"en": "yichui's deploy step does not start {engine}, so this session could not "
                                         "serve that export: choose one it starts ({engines}), or export for {engine} "
                                         "with `yichui run --task quantize --from {session}` and serve the copy yourself.",
                                   "zh": "yichui 的部署步骤不会启动 {engine}，本会话无法服务该导出：请选择它能启动的引擎（{engines}），或用 "
                                         "`yichui run --task quantize --from {session}` 为 {engine} 导出后自行服务。"},
    "export.engine_needs_gpu": {"en": "{engine} serves on NVIDIA GPUs and this machine has none, so this session's "
                                      "deploy step could not start it: choose transformers (serves on the CPU), or "
                                      "export for {engine} with `yichui run --task quantize --from {session}` and "
                                      "serve the copy on a GPU machine.",
                                "zh": "{engine} 需要 NVIDIA GPU 才能服务，而本机没有，本会话的部署步骤无法启动它：请选择 transformers"
                                      "（可在 CPU 上服务），或用 `yichui run --task quantize --from {session}` 为 {engine} 导出，"
                                      "再在有 GPU 的机器上服务该副本。"},
    "export.engine.vllm": {"en": "vLLM", "zh": "vLLM"},
    "export.engine.sglang": {"en": "SGLang", "zh": "SGLang"},
    "export.engine.lmdeploy": {"en": "LMDeploy (the merged model only)", "zh": "LMDeploy（仅合并后的模型）"},
    "export.engine.transformers": {"en": "transformers serve (also on a CPU)", "zh": "transformers serve（CPU 上也能用）"},
    "export.formats": {"en": "Quantized copies to make besides the merged model:", "zh": "除合并后的模型外，还要生成哪些量化副本："},
    "export.format.bnb-4bit": {"en": "bitsandbytes NF4 4-bit (no calibration)", "zh": "bitsandbytes NF4 4 位（无需校准）"},
    "export.format.bnb-8bit": {"en": "bitsandbytes LLM.int8() 8-bit (no calibration)", "zh": "bitsandbytes LLM.int8() 8 位（无需校准）"},
    "export.format.gptq-w4a16": {"en": "GPTQ W4A16 with llm-compressor (calibrated on your data)",
                                 "zh": "GPTQ W4A16，llm-compressor（用你的数据校准）"},
    "export.format.awq-w4a16": {"en": "AWQ W4A16 with llm-compressor (calibrated; needs a GPU)",
                                "zh": "AWQ W4A16，llm-compressor（需校准；需要 GPU）"},
    "export.format.fp8-dynamic": {"en": "FP8 weights, dynamic FP8 activations with llm-compressor (no calibration)",
                                  "zh": "FP8 权重 + 动态 FP8 激活，llm-compressor（无需校准）"},
    "export.engine.llama.cpp": {"en": "llama.cpp / Ollama (GGUF; yichui does not launch it)", "zh": "llama.cpp / Ollama（GGUF；yichui 不负责启动）"},
    "export.format.gguf-f16": {"en": "GGUF f16 (llama.cpp's converter)", "zh": "GGUF f16（llama.cpp 转换器）"},
    "export.format.gguf-q8_0": {"en": "GGUF q8_0 (llama.cpp's converter)", "zh": "GGUF q8_0（llama.cpp 转换器）"},
    "export.format.gguf-q4_k_m": {"en": "GGUF q4_k_m (needs llama.cpp's llama-quantize)", "zh": "GGUF q4_k_m（需要 llama.cpp 的 llama-quantize）"},
    "export.calibration_samples": {"en": "Calibration samples (from the training data):", "zh": "校准样本数（取自训练数据）："},
    "export.calibration_seq_len": {"en": "Tokens per calibration sample (at most):", "zh": "每个校准样本的最大 token 数："},
    "export.quality_samples": {"en": "Held-out samples for the quality check (KL divergence, perplexity):",
                               "zh": "质量检查用的留出样本数（KL 散度、困惑度）："},
    "export.too_few_calibration": {"en": "{n} calibration samples are too few: use at least {min}.",
                                   "zh": "{n} 个校准样本太少：至少需要 {min} 个。"},
    "export.calibration_over": {"en": "{n} calibration samples, but the training split has {records} records: use at most {records}.",
                                "zh": "需要 {n} 个校准样本，但训练集只有 {records} 条记录：最多用 {records} 个。"},
    "export.adapter_mismatch": {
        "en": "{n} of the {total} tensors of the adapter in {path} match no module of the base model (e.g. {example}): the merge would drop them. The adapter was trained on another model class or architecture; train again, or export with the yichui that trained it.",
        "zh": "{path} 中适配器的 {total} 个张量有 {n} 个在基座模型中找不到对应模块（例如 {example}）：合并会丢掉它们。该适配器是在另一种模型类或架构上训练的；请重新训练，或用训练它的 yichui 版本导出。"},
    "export.env": {"en": "llm-compressor runs in its own environment ({name}).", "zh": "llm-compressor 在独立环境中运行（{name}）。"},
    "export.env_building": {"en": "Building it once (about a minute): {path}", "zh": "首次创建（约一分钟）：{path}"},
    "export.quantizing": {"en": "Making {format} → {path}", "zh": "正在生成 {format} → {path}"},
    "export.quantizing_still": {"en": "  … still making {format} ({seconds} s)", "zh": "  … 仍在生成 {format}（{seconds} 秒）"},
    "export.few_quality_samples": {"en": "Only {n} held-out sample(s) to check the quantized copies on: their KL and perplexity figures are noise at that size. Hold out "
                                         "more when training (choose_strategy.val_ratio).",
                                   "zh": "只有 {n} 个留出样本可用于检查量化副本：这个规模下 KL 与困惑度"
                                         "只是噪声。请在训练时留出更多（choose_strategy.val_ratio）。"},
    "export.checking": {"en": "Checking {format} against the merged model on {n} held-out samples", "zh": "正在用 {n} 个留出样本对比 {format} 与合并后的模型"},
    "export.merge_check": {"en": "Merge check: largest logit difference to the adapter model {diff} ({dtype}).",
                           "zh": "合并校验：与适配器模型的最大 logit 差 {diff}（{dtype}）。"},
    "export.no_held_out": {"en": "No held-out sample has two tokens or more: add records or a validation split.",
                           "zh": "没有长度至少为 2 个 token 的留出样本：请增加数据或设置验证集。"},
    "export.held_out.validation": {"en": "the validation split", "zh": "验证集"},
    "export.held_out.after_calibration": {"en": "training records not used for calibration (no validation split)",
                                          "zh": "未用于校准的训练记录（没有验证集）"},
    "export.held_out.training": {"en": "training records (too few records to hold any out)", "zh": "训练记录（记录太少，无法留出）"},
    "export.engine_cannot_load": {"en": "{engine} does not load {format}; engines that do: {engines}. Choose another engine first (export.serve_with).",
                                  "zh": "{engine} 不能加载 {format}；能加载的引擎：{engines}。请先换一个引擎（export.serve_with）。"},
    "export.col.ppl_ratio": {"en": "perplexity ratio", "zh": "困惑度比"},
    "export.col.stops": {"en": "stops", "zh": "能停止"},
    "export.merged_stops": {"en": "The merged model ends its reply by itself ({tokens} tokens): “{reply}”",
                            "zh": "合并后的模型会自行结束回复（{tokens} 个 token）：“{reply}”"},
    "export.merged_runs_on": {"en": "The merged model does not end its reply within {limit} tokens (“{reply}…”): it has not learned where a turn ends — train longer, or check the data's replies. Copies are not held to stopping.",
                              "zh": "合并后的模型在 {limit} 个 token 内没有结束回复（“{reply}…”）：它还没学会在哪里结束一轮——请多训练一些，或检查数据的回复。各副本不再检查能否停止。"},
    "export.downloaded_runs_on": {"en": "The downloaded model does not end its reply within {limit} tokens (“{reply}…”): a base (not instruction-tuned) model does not end turns; an instruction model that does not has a chat template or EOS ids to check. Copies are not held to stopping.",
                                  "zh": "下载的模型在 {limit} 个 token 内没有结束回复（“{reply}…”）：基座（非指令微调）模型不会结束对话轮次；若是指令模型，请检查其对话模板或 EOS id。各副本不再检查能否停止。"},
    "export.downloaded_stops": {"en": "The downloaded model ends its reply by itself ({tokens} tokens): “{reply}”",
                                "zh": "下载的模型会自行结束回复（{tokens} 个 token）：“{reply}”"},
    "export.checking_progress": {"en": "checking {format}", "zh": "正在检查 {format}"},
    "export.checking_downloaded": {"en": "Checking {format} against the downloaded model on {n} held-out samples",
                                   "zh": "正在用 {n} 个留出样本对比 {format} 与下载的模型"},
    "export.never_stops": {"en": "The {format} copy does not end its reply within {tokens} tokens where the merged model does: {why}. Drop the format (--set export.formats={formats}) or train longer.",
                           "zh": "{format} 副本在 {tokens} 个 token 内没有结束回复，而合并后的模型会：{why}。请去掉该格式（--set export.formats={formats}）或多训练一些。"},
    "export.stop_cause.eos": {"en": "its generation_config.json lacks the EOS ids {ids}", "zh": "它的 generation_config.json 缺少 EOS id {ids}"},
    "export.stop_cause.template": {"en": "its chat template renders the question differently from the merged model's",
                                   "zh": "它的对话模板渲染问题的方式与合并后的模型不同"},
    "export.stop_cause.quantization": {"en": "quantization moved the end of the turn (mean KL {kl} nats to the merged model)",
                                       "zh": "量化改变了结束一轮的位置（与合并模型的平均 KL 为 {kl} nats）"},
    "export.no_adapter": {"en": "No trained adapter at {path}: run the train step first.", "zh": "{path} 处没有训练好的适配器：请先完成训练步骤。"},
    "export.disk_full": {"en": "The disk filled while the export was written in {path} ({free} free now): free some "
                                "space (older sessions: yichui delete SESSION), then resume — the copies finished "
                                "before are kept.",
                         "zh": "导出写入 {path} 时磁盘已满（现在可用 {free}）：请释放空间（旧会话：yichui delete SESSION），然后 "
                               "resume——之前已完成的副本会保留。"},
    "export.no_space": {"en": "Not enough disk for the export in {path}: about {need} needed, {free} free. Free some "
                              "space (older sessions: yichui delete SESSION), or choose fewer formats.",
                        "zh": "{path} 的磁盘空间不足以导出：约需 {need}，可用 {free}。请释放空间（旧会话：yichui delete SESSION），"
                              "或少选几种格式。"},
    "export.merging": {"en": "Merging the {method} result into the base model → {path}", "zh": "正在把 {method} 结果合并进基座模型 → {path}"},
    "export.as_is": {"en": "Saving the downloaded model as it is → {path}", "zh": "按原样保存下载的模型 → {path}"},
    "export.calibration_data": {"en": "Calibration and quality-check data (a conversations file):", "zh": "校准与质量检查数据（对话文件）："},
    "export.table": {"en": "Exports", "zh": "导出结果"},
    "export.table_in": {"en": "Exports, in {folder}", "zh": "导出结果（位于 {folder}）"},
}
