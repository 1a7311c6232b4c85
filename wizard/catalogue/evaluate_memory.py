"""Messages of the evaluate_memory step (keys ``evaluate_memory.*``), English and Chinese."""

MESSAGES = {
    "evaluate_memory.target_gpu_serve": {"en": "Which GPU will serve it?", "zh": "用哪种 GPU 部署？"},
    "evaluate_memory.target_gpu_serve_none": {"en": "Which GPU will serve it? (No NVIDIA GPU here: the estimate is "
                                                    "for the one you choose.)",
                                              "zh": "用哪种 GPU 部署？（本机没有 NVIDIA GPU：按所选 GPU 估算。）"},
    "evaluate_memory.target_gpu": {"en": "Which GPU will train it?", "zh": "用哪种 GPU 训练？"},
    "evaluate_memory.target_gpu_none": {"en": "Which GPU will train it? (No NVIDIA GPU here: memory, plans and speed "
                                              "are for the one you choose; training on this machine runs on the CPU.)",
                                        "zh": "用哪种 GPU 训练？（本机没有 NVIDIA GPU：显存、方案与速度均按所选 GPU "
                                              "估算；在本机训练将使用 CPU。）"},
    "evaluate_memory.gpu_count": {"en": "How many GPUs?", "zh": "使用几块 GPU？"},
    "evaluate_memory.no_gpu_serving": {"en": "No NVIDIA GPU detected here; estimating serving on the GPU you choose.",
                                       "zh": "此处未检测到 NVIDIA GPU；按你选择的 GPU 估算部署。"},
    "evaluate_memory.no_gpu": {"en": "No NVIDIA GPU detected here; estimating for the GPU you choose. "
                                     "Training here runs on the CPU.",
                               "zh": "本机未检测到 NVIDIA GPU；按所选 GPU 估算。在本机训练将使用 CPU。"},
    "evaluate_memory.table": {"en": "Peak memory per GPU for supervised fine-tuning (SFT) on {n} × {gpu} ({gib} GiB), "
                                    "micro-batch 1, {seq} tokens, LoRA rank 8",
                              "zh": "监督微调（SFT）时每块 GPU 的峰值显存：{n} × {gpu}（{gib} GiB），微批 1，{seq} 个 token，"
                                    "LoRA 秩 8"},
    "evaluate_memory.nothing_fits": {"en": "No strategy fits on {gpu}; QLoRA with checkpointing is preselected — "
                                           "shorten the sequence or use more or larger GPUs.",
                                     "zh": "在 {gpu} 上没有可行的策略；已预选 QLoRA + 激活检查点——请缩短序列或使用更多、更大的 GPU。"},
    "evaluate_memory.col.method": {"en": "method", "zh": "方法"},
    "evaluate_memory.col.ckpt": {"en": "ckpt", "zh": "检查点"},
    "evaluate_memory.col.fits": {"en": "fits", "zh": "可行"},
    "evaluate_memory.serving_table": {"en": "Serving on {n}× {gpu} ({gib} GiB), GPU memory utilization 0.9, tensor parallel over {n}",
                                      "zh": "在 {n}× {gpu}（{gib} GiB）上部署，显存利用率 0.9，张量并行 {n}"},
    "evaluate_memory.col.format": {"en": "weights", "zh": "权重格式"},
    "evaluate_memory.col.weights": {"en": "weights GiB/GPU", "zh": "权重 GiB/GPU"},
    "evaluate_memory.col.kv": {"en": "KV cache GiB/GPU", "zh": "KV cache GiB/GPU"},
    "evaluate_memory.col.kv_tokens": {"en": "KV tokens", "zh": "KV token 数"},
    "evaluate_memory.col.longest": {"en": "longest context", "zh": "最长上下文"},
    "evaluate_memory.col.margin": {"en": "margin", "zh": "余量"},
    "evaluate_memory.col.instance": {"en": "smallest instance", "zh": "最小实例"},
    "evaluate_memory.breakdown": {"en": "Where the memory goes: {method}, checkpointing {ckpt}{plan}", "zh": "显存去向：{method}，激活检查点{ckpt}{plan}"},
    "evaluate_memory.breakdown_sharded": {"en": ", {dist} over {n} GPUs (the strategy step chooses the distribution)",
                                          "zh": "，{dist}，{n} 个 GPU（分布方式在策略步骤中选择）"},
    "evaluate_memory.calibrated": {"en": "Model of yichui's trainer calibrated on an H200 ({params} parameters here; bench/results/). \"fits\" keeps 10 % of the GPU free. "
                                         "Preference tuning (DPO, KTO) and GRPO, asked at the strategy step, add a "
                                         "reference model's passes, DPO two replies per pair, GRPO the generation of "
                                         "its replies: priced there.",
                                   "zh": "按 yichui 训练流程在 H200 上校准的模型（此处 {params} 个参数；见 bench/results/）。“可行”表示至少留出 10% 显存。"
                                         "偏好训练（DPO、KTO）与 GRPO 在策略步骤中选择，会增加参考模型的计算、DPO 每对数据的两条回复、GRPO 的回答生成：在那一步估算。"},
    "evaluate_memory.approximate": {"en": "Approximate (not yet calibrated): {what}.", "zh": "近似值（尚未校准）：{what}。"},
}
