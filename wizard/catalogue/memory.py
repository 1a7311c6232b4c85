"""Messages of the memory model (keys ``memory.*``), English and Chinese."""

MESSAGES = {
    "memory.duration.s": {"en": "{n} s", "zh": "{n} 秒"},
    "memory.duration.min": {"en": "{n} min", "zh": "{n} 分钟"},
    "memory.duration.h_min": {"en": "{h} h {m} min", "zh": "{h} 小时 {m} 分钟"},
    "memory.duration.d_h": {"en": "{d} d {h} h", "zh": "{d} 天 {h} 小时"},
    "memory.part.weights": {"en": "weights", "zh": "权重"},
    "memory.approx.vision": {"en": "vision", "zh": "视觉部分"},
    "memory.approx.moe": {"en": "moe", "zh": "MoE"},
    "memory.approx.sharding": {"en": "sharding", "zh": "多 GPU 分片"},
    "memory.approx.offload": {"en": "offload", "zh": "卸载"},
    "memory.approx.grpo": {"en": "grpo", "zh": "GRPO"},
    "memory.approx.plain_loop": {"en": "plain loop", "zh": "普通训练循环"},
    "memory.approx.galore": {"en": "galore", "zh": "GaLore"},
    "memory.approx.compile": {"en": "compile", "zh": "编译层"},
    "memory.approx.paged": {"en": "paged", "zh": "分页优化器"},
    "memory.approx.flash": {"en": "flash", "zh": "FlashAttention"},
    "memory.approx.packing": {"en": "packing", "zh": "打包"},
    "memory.approx.vision_trained": {"en": "vision-trained", "zh": "训练视觉部分"},
    "memory.approx.unsloth": {"en": "unsloth", "zh": "unsloth"},
    "memory.approx.loss_chunked": {"en": "loss-chunked", "zh": "分块损失"},
    "memory.approx.nvme": {"en": "nvme", "zh": "NVMe 卸载"},
    "memory.approx.vllm_generation": {"en": "vllm-generation", "zh": "vLLM 生成"},
    "memory.approx.sequence_parallel": {"en": "sequence-parallel", "zh": "序列并行"},
    "memory.approx.loss_full": {"en": "loss-full", "zh": "完整 logits 损失"},
    "memory.approx.no_ckpt": {"en": "{family} without checkpointing", "zh": "{family}（不开检查点）"},
    "memory.approx.ckpt": {"en": "{family} with checkpointing", "zh": "{family}（开检查点）"},
    "memory.approx.quantized": {"en": "quantized:{method}", "zh": "预量化：{method}"},
    "memory.approx.other": {"en": "{name}", "zh": "{name}"},
    "memory.part.reference": {"en": "reference model (frozen copy)", "zh": "参考模型（冻结副本）"},
    "memory.part.adapter": {"en": "adapter (LoRA)", "zh": "适配器（LoRA）"},
    "memory.part.gradients": {"en": "gradients", "zh": "梯度"},
    "memory.part.optimizer": {"en": "optimizer states", "zh": "优化器状态"},
    "memory.part.layers": {"en": "activations", "zh": "激活值"},
    "memory.experts_per_token": {"en": "config.json routes each token to num_experts_per_tok={value} experts of "
                                       "{experts}: it must be a whole number from 1 to {experts}. Fix config.json or "
                                       "choose another model.",
                                 "zh": "config.json 让每个 token 路由到 num_experts_per_tok={value} 个专家（共 {experts} 个）："
                                       "它必须是 1 到 {experts} 之间的整数。请修正 config.json 或换一个模型。"},
    "memory.part.merged_experts": {"en": "merged expert weights (MoE LoRA)", "zh": "合并后的专家权重（MoE LoRA）"},
    "memory.part.attention_scores": {"en": "attention scores (eager)", "zh": "注意力分数（eager）"},
    "memory.part.logits": {"en": "LM head / logits", "zh": "输出层 / logits"},
    "memory.part.allocator": {"en": "allocator slack", "zh": "分配器余量"},
    "memory.part.cuda_context": {"en": "CUDA context", "zh": "CUDA 上下文"},
    "memory.part.compile": {"en": "compiled layers", "zh": "编译层"},
    "memory.part.dequantized_layer": {"en": "one layer dequantized", "zh": "单层反量化"},
    "memory.part.step_temporaries": {"en": "optimizer step temporaries", "zh": "优化器步临时量"},
    "memory.part.masters": {"en": "fp32 master weights", "zh": "fp32 主权重"},
    "memory.part.comm_buffers": {"en": "communication buckets", "zh": "通信桶"},
    "memory.part.gathered": {"en": "gathered layers", "zh": "聚合的层"},
    "memory.part.sp_buffers": {"en": "sequence-parallel all-to-all", "zh": "序列并行 all-to-all"},
    "memory.part.holes": {"en": "allocator holes (1st step)", "zh": "分配器空洞（首步）"},
    "memory.phase.generation": {"en": "generate GiB", "zh": "生成 GiB"},
    "memory.phase.generation_peak": {"en": "generate GiB (peak)", "zh": "生成 GiB（峰值）"},
    "memory.part.kv_cache": {"en": "KV cache (GRPO replies)", "zh": "KV 缓存（GRPO 回答）"},
    "memory.part.generation_logits": {"en": "sampling logits", "zh": "采样 logits"},
    "memory.part.vllm": {"en": "vLLM (weights, KV cache, profile)", "zh": "vLLM（权重、KV 缓存、预分析）"},
    "memory.vllm_needs_gpu": {"en": "vLLM takes a share of the GPU's memory for GRPO's replies: name the GPU (--gpu) to "
                                    "price it.",
                              "zh": "vLLM 为 GRPO 的回答占用一部分显存：请指定 GPU（--gpu）后再估算。"},
    "memory.vllm_share_too_small": {"en": "vLLM's share {util} of the GPU leaves no room for one reply's KV cache after "
                                          "its copy of the weights: give at least {need}, or 0 to let yichui size it.",
                                    "zh": "vLLM 占 GPU 的 {util} 在放下它的权重副本后，连一条回答的 KV 缓存都放不下：请至少给 "
                                          "{need}，或给 0 由 yichui 计算。"},
    "memory.phase.reference": {"en": "reference GiB", "zh": "参考前向 GiB"},
    "memory.phase.reference_peak": {"en": "reference GiB (peak)", "zh": "参考前向 GiB（峰值）"},
    "memory.part.reference_forward": {"en": "reference forward (one layer)", "zh": "参考模型前向（单层）"},
    "memory.phase.load": {"en": "load GiB", "zh": "加载 GiB"},
    "memory.phase.load_peak": {"en": "load GiB (peak)", "zh": "加载 GiB（峰值）"},
    "memory.phase.forward_backward": {"en": "fwd/bwd GiB", "zh": "前向/反向 GiB"},
    "memory.phase.forward_backward_peak": {"en": "fwd/bwd GiB (peak)", "zh": "前向/反向 GiB（峰值）"},
    "memory.phase.optimizer_step": {"en": "optim. step GiB", "zh": "优化器步 GiB"},
    "memory.phase.optimizer_step_peak": {"en": "optim. step GiB (peak)", "zh": "优化器步 GiB（峰值）"},
    "memory.no_model_type": {"en": "config.json has no model_type: it is not a transformers config.", "zh": "config.json 没有 model_type：它不是 transformers 配置。"},
    "memory.weights_unreadable": {"en": "{model}: the weights file {file} is broken ({error}): copy it again or choose "
                                        "another model.",
                                  "zh": "{model}：权重文件 {file} 已损坏（{error}）：请重新复制或换一个模型。"},
    "memory.bad_config": {"en": "config.json of this {model_type} model does not pass transformers' own checks ({error}): "
                                "the file is broken or written for another transformers version; fix it or choose "
                                "another model.",
                          "zh": "这个 {model_type} 模型的 config.json 未通过 transformers 自身的校验（{error}）：文件已损坏或为其他 "
                                "transformers 版本编写；请修正它或换一个模型。"},
    "memory.unknown_architecture": {"en": "Cannot build {model_type} as a causal language model ({error}): encoder-only and vision-only models are not supported.",
                                    "zh": "无法把 {model_type} 构建为因果语言模型（{error}）：不支持仅编码器或仅视觉的模型。"},
    "memory.bad_dimension": {"en": "config.json's {field} is {value}: it must be a whole number from 1 to {limit}. The file is broken: fix it or choose another model.",
                             "zh": "config.json 的 {field} 为 {value}：它必须是 1 到 {limit} 之间的整数。文件已损坏：请修正它或换一个模型。"},
    "memory.kv_heads": {"en": "config.json's num_key_value_heads ({kv}) does not divide num_attention_heads ({heads}): the file is broken; fix it or choose another model.",
                        "zh": "config.json 的 num_key_value_heads（{kv}）不能整除 num_attention_heads（{heads}）：文件已损坏；请修正它或换一个模型。"},
    "memory.missing_fields": {"en": "config.json lacks {fields}.", "zh": "config.json 缺少 {fields}。"},
    "memory.weights_disagree": {"en": "{model}: config.json does not match its weights (config ≠ weights: {pairs}; a field "
                                      "the config leaves out takes transformers' default). Use the config.json these "
                                      "weights came with.",
                                "zh": "{model}：config.json 与其权重不符（配置 ≠ 权重：{pairs}；配置未写明的字段取 transformers "
                                      "的默认值）。请使用与这些权重配套的 config.json。"},
    "memory.unknown_targets": {"en": "No linear layers named {targets}; this model has: {known}.", "zh": "没有名为 {targets} 的线性层；此模型有：{known}。"},
    "memory.host_ram.cpu": {"en": "optimizer states and fp32 gradients; calibrated on one H200 run",
                                     "zh": "优化器状态与 fp32 梯度；基于一次 H200 测量校准"},
    "memory.host_ram.cpu_all": {"en": "weights, optimizer states and fp32 gradients; calibrated on one H200 run",
                                         "zh": "权重、优化器状态与 fp32 梯度；基于一次 H200 测量校准"},
    "memory.host_ram.nvme": {"en": "each process's pinned swap buffers, as the DeepSpeed config yichui writes sizes them (the whole largest parameter); the states themselves are on the disk; not measured",
                                      "zh": "每个进程锁定的交换缓冲区，按 yichui 写出的 DeepSpeed 配置的大小（整个最大参数）；状态本身在磁盘上；未经测量"},
    "memory.sp_heads": {"en": "Sequence parallelism over {sp} does not split this model's {heads} attention heads and {kv} KV heads evenly. Degrees that work here: {ok}.",
                                "zh": '{sp} 路序列并行无法均分此模型的 {heads} 个注意力头和 {kv} 个 KV 头。这里可用的并行度：{ok}。'},
    "memory.sp_window": {"en": "The model uses sliding-window attention, which sequence parallelism does not "
                                        "split: choose sequence parallelism 1.",
                                  "zh": "模型使用滑动窗口注意力，序列并行无法切分它：请把序列并行设为 1。"},
    "memory.moe_dropout": {"en": "LoRA on this MoE model's experts (peft adapts their fused weights whole) "
                                          "runs only at LoRA dropout 0, not {dropout}: set the dropout to 0, or "
                                          "target the attention layers only (q_proj,k_proj,v_proj,o_proj).",
                                    "zh": "在此 MoE 模型的专家上做 LoRA（peft 整体适配其融合权重）只支持 LoRA dropout 0，"
                                          "不支持 {dropout}：请把 dropout 设为 0，或只以注意力层为目标"
                                          "（q_proj,k_proj,v_proj,o_proj）。"},
    "memory.moe_dora": {"en": "DoRA cannot adapt this MoE model's fused expert weights (peft does not "
                                       "support it): choose LoRA, or target the attention layers only "
                                       "(q_proj,k_proj,v_proj,o_proj).",
                                 "zh": "DoRA 无法适配此 MoE 模型的融合专家权重（peft 不支持）：请选择 LoRA，或只以注意力层为目标"
                                       "（q_proj,k_proj,v_proj,o_proj）。"},
    "memory.col.peak": {"en": "peak GiB", "zh": "峰值 GiB"},
    "memory.col.component": {"en": "component", "zh": "组成部分"},
    "memory.bad_choice": {"en": "{name} {value!r} is not one of: {choices}.", "zh": "{name} {value!r} 不在可选项中：{choices}。"},
    "memory.bad_number": {"en": "{name} = {value} is out of range: give {lo} to {hi}.",
                          "zh": "{name} = {value} 超出范围：请给出 {lo} 到 {hi} 之间的值。"},
}
