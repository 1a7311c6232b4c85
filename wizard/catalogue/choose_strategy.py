"""Messages of the choose_strategy step (keys ``choose_strategy.*``), English and Chinese."""

MESSAGES = {
    "choose_strategy.method": {"en": "Fine-tuning method:", "zh": "微调方法："},
    "choose_strategy.method.lora": {"en": "LoRA (bf16 base, small adapters)", "zh": "LoRA（bf16 基座 + 小型适配器）"},
    "choose_strategy.method.qlora": {"en": "QLoRA (NF4 4-bit base, double quantization)", "zh": "QLoRA（NF4 4 位基座，双重量化）"},
    "choose_strategy.method.full": {"en": "Full fine-tuning (all parameters)", "zh": "全参数微调"},
    "choose_strategy.lora_rank": {"en": "LoRA rank r:", "zh": "LoRA 秩 r："},
    "choose_strategy.lora_alpha": {"en": "LoRA alpha:", "zh": "LoRA alpha："},
    "choose_strategy.lora_dropout": {"en": "LoRA dropout:", "zh": "LoRA dropout："},
    "choose_strategy.lora_targets": {"en": "LoRA target modules (all-linear or q_proj,v_proj,...):",
                                     "zh": "LoRA 目标模块（all-linear 或 q_proj,v_proj,...）："},
    "choose_strategy.activation_checkpointing": {"en": "Activation checkpointing (less memory, ~30 % slower)?",
                                                 "zh": "启用激活检查点（省显存，约慢 30%）？"},
    "choose_strategy.dataset": {"en": "Training data:", "zh": "训练数据："},
    "choose_strategy.dataset.bundled": {"en": "The bundled demo instructions (306 examples)", "zh": "内置演示指令集（306 条）"},
    "choose_strategy.dataset.local": {"en": "A local file (.json / .jsonl / .csv / .parquet: alpaca, sharegpt, messages, prompt/completion)",
                                      "zh": "本地文件（.json / .jsonl / .csv / .parquet：alpaca、sharegpt、messages、prompt/completion）"},
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
    "choose_strategy.preflight": {"en": "Smoke-test this strategy before the weights download (2 steps on a 2-layer copy with random weights)?",
                                  "zh": "下载权重前先冒烟测试此策略（在随机权重的 2 层副本上训练 2 步）？"},
    "choose_strategy.template_failed": {"en": "The chat template fails on record {record}: {error}. Fix or drop that record, or choose a model whose template accepts it.",
                                        "zh": "对话模板在第 {record} 条记录上出错：{error}。请修正或删除该记录，或选择模板能接受它的模型。"},
    "choose_strategy.no_chat_template": {"en": "{model} has no chat template: choose an instruct/chat model.",
                                         "zh": "{model} 没有对话模板：请选择 instruct/chat 模型。"},
    "choose_strategy.sample": {"en": "Sample {i}, rendered with the model's chat template:\n{text}",
                               "zh": "样例 {i}（按模型的对话模板渲染）：\n{text}"},
    "choose_strategy.dataset_summary": {"en": "{n} records in {format} format from {path}: {train} for training, {val} held out for validation.",
                                        "zh": "{path}：{n} 条 {format} 格式的记录；{train} 条用于训练，{val} 条留作验证。"},
    "choose_strategy.estimate": {"en": "Predicted peak memory for this configuration ({basis}): {peak} GiB per GPU on {gpu} ({gib} GiB), margin {margin} GiB.",
                                 "zh": "此配置的预测峰值显存（{basis}）：每块 GPU {peak} GiB，{gpu}（{gib} GiB），余量 {margin} GiB。"},
    "choose_strategy.seq_longest": {"en": "sequences as long as the data's longest record, {tokens} tokens",
                                    "zh": "序列按数据中最长的一条记录计，{tokens} 个 token"},
    "choose_strategy.seq_setting": {"en": "sequences of the sequence length, {tokens} tokens",
                                    "zh": "序列按设定的序列长度计，{tokens} 个 token"},
    "choose_strategy.may_not_fit": {"en": "Warning: {peak} GiB may not fit in {gib} GiB with a {pct} % margin; "
                                          "lower the micro-batch or sequence length, or turn on checkpointing.",
                                    "zh": "警告：{peak} GiB 在留 {pct}% 余量时可能放不进 {gib} GiB；请减小微批或序列长度，或开启激活检查点。"},
    "choose_strategy.plan.approximate": {"en": "{label} — approximate: {what}",
                                         "zh": "{label} —— 近似值：{what}"},
    "choose_strategy.unknown_targets": {"en": "No linear layers named {targets}; this model has: {known}.", "zh": "没有名为 {targets} 的线性层；此模型有：{known}。"},
    "choose_strategy.method.q_galore": {"en": "Q-GaLore (not supported: choose it to see why)", "zh": "Q-GaLore（不支持：选择它查看原因）"},
    "choose_strategy.q_galore_unsupported": {
        "en": "Q-GaLore is not supported: q-galore-torch 1.0, its only release, fails at its first optimizer step with bitsandbytes 0.50 (KeyError 'percentile_clipping': it relies on bitsandbytes internals that were removed) and ships no INT8 weight layers. Choose GaLore (galore) or QLoRA (qlora).",
        "zh": "不支持 Q-GaLore：其唯一版本 q-galore-torch 1.0 在 bitsandbytes 0.50 下第一步优化即失败（KeyError 'percentile_clipping'：它依赖 bitsandbytes 已移除的内部实现），且未提供 INT8 权重层。请选择 GaLore（galore）或 QLoRA（qlora）。"},
    "choose_strategy.prequantized_lora_only": {
        "en": "{model} is pre-quantized ({label}): only LoRA trains on it, with the base kept quantized in memory (the merged export dequantizes it). Choose lora, or the unquantized model for {method}.",
        "zh": "{model} 是预量化模型（{label}）：只能用 LoRA 训练，基座在显存中保持量化（合并导出时反量化）。请选择 lora，或改用未量化的模型进行 {method}。"},
    "choose_strategy.prequantized_sharded": {
        "en": "{model} is pre-quantized: ZeRO-3 and FSDP2 cannot shard its packed weights. Choose ddp, zero1 or zero2.",
        "zh": "{model} 是预量化模型：ZeRO-3 与 FSDP2 无法切分其打包的量化权重。请选择 ddp、zero1 或 zero2。"},
    "choose_strategy.prequantized_unsupported": {
        "en": "{model} is pre-quantized ({what}), which yichui cannot train on: LoRA on a quantized base reads compressed-tensors checkpoints with integer or FP8 weights (llm-compressor's format); GPTQ/AWQ checkpoints need gptqmodel, which yichui does not carry. Choose a compressed-tensors copy of the model or the unquantized one.",
        "zh": "{model} 是预量化模型（{what}），yichui 无法在其上训练：量化基座上的 LoRA 支持整数或 FP8 权重的 compressed-tensors 检查点（llm-compressor 的格式）；GPTQ/AWQ 检查点需要 gptqmodel，yichui 未附带它。请选择该模型的 compressed-tensors 版本或未量化版本。"},
    "choose_strategy.method.dora": {"en": "DoRA (weight-decomposed LoRA)", "zh": "DoRA（权重分解的 LoRA）"},
    "choose_strategy.dataset.hub": {"en": "A dataset repository on the hub (the model's hub; Hugging Face for a local model)",
                                    "zh": "模型仓库站点上的数据集仓库（与模型同一来源；本地模型则为 Hugging Face）"},
    "choose_strategy.dataset_repo": {"en": "Dataset repository (org/name):", "zh": "数据集仓库（组织/名称）："},
    "choose_strategy.dataset_file": {"en": "Which file of it (a pattern; append #N for a random sample of N):", "zh": "使用其中哪个文件（通配模式；加 #N 表示随机抽取 N 条）："},
    "choose_strategy.bad_records": {"en": "Some records are malformed. Skip them or stop?", "zh": "部分记录格式有误。跳过它们还是停止？"},
    "choose_strategy.bad_records.abort": {"en": "stop, I will fix the file", "zh": "停止，我来修正文件"},
    "choose_strategy.bad_records.skip": {"en": "skip them and train on the rest", "zh": "跳过它们，用其余记录训练"},
    "choose_strategy.val_ratio": {"en": "Fraction held out for validation (0 = none):", "zh": "留作验证集的比例（0 表示不留）："},
    "choose_strategy.no_data_file": {"en": "Dataset {repo} has no .json/.jsonl/.csv/.parquet file matching {pattern}.", "zh": "数据集 {repo} 中没有匹配 {pattern} 的 .json/.jsonl/.csv/.parquet 文件。"},
    "choose_strategy.processes_over_gpus": {
        "en": "{n} processes, but this machine has {gpus} GPU(s): one process per GPU, at most {gpus} per node "
              "(CUDA_VISIBLE_DEVICES narrows the GPUs yichui sees).",
        "zh": "{n} 个进程，但本机只有 {gpus} 块 GPU：每块 GPU 一个进程，每个节点最多 {gpus} 个（CUDA_VISIBLE_DEVICES 可限定 yichui 看到的 GPU）。"},
    "choose_strategy.processes": {"en": "Training processes (one per GPU; data parallel):", "zh": "训练进程数（每块 GPU 一个；数据并行）："},
    "choose_strategy.batch_size": {"en": "Sequences per optimizer step per process (micro-batch × accumulation):",
                                   "zh": "每个进程每个优化步的序列数（微批 × 累积步数）："},
    "choose_strategy.plan": {"en": "Plan (fitting ones first, then the soonest done, compiling included; tokens/s "
                                   "per GPU on {gpu}; every knob can still be changed):",
                             "zh": "训练方案（可行的在前，其次是最早训完的，含编译时间；速度为 {gpu} 上每个 GPU 的 token/秒；之后每项仍可修改）："},
    # what decides first (fits, peak, speed), so that an 80-column list cuts only the knobs' tail (issue 20, item 4)
    "choose_strategy.plan.label": {"en": "{fits} {gib} GiB, ~{tps} tok/s: micro-batch {mb} × {ga}, checkpointing {ckpt}, Liger {liger}, compiled layers {compiled}",
                                   "zh": "{fits} {gib} GiB，约 {tps} token/秒：微批 {mb} × {ga}，检查点{ckpt}，Liger {liger}，编译{compiled}"},
    "choose_strategy.plan.label_eta": {"en": "{fits} {gib} GiB, ~{tps} tok/s, ~{eta}: micro-batch {mb} × {ga}, checkpointing {ckpt}, Liger {liger}, compiled layers {compiled}",
                                       "zh": "{fits} {gib} GiB，约 {tps} token/秒，约 {eta}：微批 {mb} × {ga}，检查点{ckpt}，Liger {liger}，编译{compiled}"},
    # no speed model for the family or layout (planner.speed_modelled): no figure rather than a wrong one
    "choose_strategy.plan.label_unmodelled": {"en": "{fits} {gib} GiB: micro-batch {mb} × {ga}, checkpointing {ckpt}, Liger {liger}, compiled layers {compiled}",
                                              "zh": "{fits} {gib} GiB：微批 {mb} × {ga}，检查点{ckpt}，Liger {liger}，编译{compiled}"},
    "choose_strategy.sample_question_default": {"en": "What is LoRA?", "zh": "什么是 LoRA？"},
    "choose_strategy.targets_long": {"en": "The LoRA targets have {n} characters; at most {max}: name each module once "
                                           "(e.g. q_proj,v_proj), or all-linear.",
                                     "zh": "LoRA 目标模块有 {n} 个字符，最多 {max} 个：每个模块名写一次（如 q_proj,v_proj），或用 all-linear。"},
    "choose_strategy.sample_question_empty": {"en": "The sample question is empty: type a question to ask the model before and after training.", "zh": "示例问题为空：请输入一个在训练前后向模型提问的问题。"},
    "choose_strategy.sample_question_long": {"en": "The sample question has {n} characters; at most {max}: it is asked at every check, so keep it a question.", "zh": "示例问题有 {n} 个字符，最多 {max} 个：每次检查都会提问，请保持为一个问题。"},
    "choose_strategy.plan.fits": {"en": "fits", "zh": "可行"},
    "choose_strategy.plan.too_big": {"en": "TOO BIG", "zh": "放不下"},
    "choose_strategy.master_weights": {"en": "Master weights of the full fine-tune (what the optimizer updates)?",
                                       "zh": "全参微调的主权重精度（优化器更新的权重）？"},
    "choose_strategy.master_weights.fp32": {"en": "fp32 + bf16 autocast: small updates are kept (16 bytes per parameter)",
                                            "zh": "fp32 + bf16 自动混合精度：小更新不丢失（每参数 16 字节）"},
    "choose_strategy.master_weights.bf16": {"en": "pure bf16: 8 bytes per parameter, small updates round away",
                                            "zh": "纯 bf16：每参数 8 字节，小更新会被舍入掉"},
    "choose_strategy.liger": {"en": "Use Liger kernels (fused RMSNorm, SwiGLU, RoPE)?", "zh": "使用 Liger 内核（融合的 RMSNorm、SwiGLU、RoPE）？"},
    "choose_strategy.compile_layers": {"en": "Compile each decoder layer with torch.compile (fewer, fused kernels; the first step waits for the compiler)?",
                                       "zh": "用 torch.compile 编译每个解码层（更少、融合的内核；第一步要等编译）？"},
    "choose_strategy.optim": {"en": "Optimizer:", "zh": "优化器："},
    "choose_strategy.optim.adamw": {"en": "AdamW (torch, fused)", "zh": "AdamW（torch 融合实现）"},
    "choose_strategy.optim.adamw8bit": {"en": "AdamW 8-bit (bitsandbytes)", "zh": "8 位 AdamW（bitsandbytes）"},
    "choose_strategy.optim.paged": {"en": "Paged AdamW 8-bit (bitsandbytes; states may spill to CPU memory)", "zh": "分页 8 位 AdamW（bitsandbytes；状态可溢出到 CPU 内存）"},
    "choose_strategy.nodes": {"en": "Nodes (machines; 1 = this one only):", "zh": "节点数（机器数；1 = 仅本机）："},
    "choose_strategy.hosts": {"en": "Host names or addresses of all nodes, comma-separated, this machine first:",
                              "zh": "所有节点的主机名或地址，逗号分隔，本机在前："},
    "choose_strategy.master_port": {"en": "Rendezvous port on this machine (open between the nodes):",
                                    "zh": "本机上的汇合端口（节点之间需可访问）："},
    "choose_strategy.bad_host": {"en": "'{host}' is not a host name or address: give e.g. 10.0.0.1,10.0.0.2",
                                 "zh": "“{host}”不是主机名或地址：例如 10.0.0.1,10.0.0.2"},
    "choose_strategy.hosts_count": {"en": "{count} host(s) given for {nodes} nodes: give one per node, this machine first",
                                    "zh": "给了 {count} 个主机，但节点数为 {nodes}：每个节点一个，本机在前"},
    "choose_strategy.distribution": {"en": "How the processes share the model:", "zh": "进程之间如何分担模型："},
    "choose_strategy.distribution.ddp": {"en": "Data parallel (every GPU holds the whole model states)",
                                         "zh": "数据并行（每块 GPU 持有完整模型状态）"},
    "choose_strategy.distribution.zero1": {"en": "DeepSpeed ZeRO-1 (optimizer states sharded)", "zh": "DeepSpeed ZeRO-1（切分优化器状态）"},
    "choose_strategy.distribution.zero2": {"en": "DeepSpeed ZeRO-2 (optimizer states and gradients sharded)",
                                           "zh": "DeepSpeed ZeRO-2（切分优化器状态和梯度）"},
    "choose_strategy.distribution.zero3": {"en": "DeepSpeed ZeRO-3 (weights too)", "zh": "DeepSpeed ZeRO-3（权重也切分）"},
    "choose_strategy.distribution.fsdp2": {"en": "PyTorch FSDP2 full shard (GPUs only)", "zh": "PyTorch FSDP2 全切分（仅 GPU）"},
    "choose_strategy.distribution.megatron": {"en": "Megatron-LM tensor/pipeline parallel (not offered)",
                                              "zh": "Megatron-LM 张量/流水线并行（不提供）"},
    "choose_strategy.megatron_out_of_scope": {
        "en": "Megatron-LM is out of yichui's scope: choose ZeRO-3 or FSDP2 here, or use Megatron-Bridge / ms-swift's Megatron backend",
        "zh": "Megatron-LM 不在 yichui 的范围内：这里请选 ZeRO-3 或 FSDP2，或使用 Megatron-Bridge / ms-swift 的 Megatron 后端"},
    "choose_strategy.fsdp_needs_gpus": {"en": "FSDP2 runs on GPUs only (accelerate has no CPU FSDP): choose DeepSpeed ZeRO-3 here",
                                        "zh": "FSDP2 只能在 GPU 上运行（accelerate 不支持 CPU FSDP）：这里请选 DeepSpeed ZeRO-3"},
    "choose_strategy.offload": {"en": "Offload to CPU memory (slower, frees GPU memory):", "zh": "卸载到 CPU 内存（更慢，省显存）："},
    "choose_strategy.offload.none": {"en": "None", "zh": "不卸载"},
    "choose_strategy.offload.optimizer": {"en": "Optimizer states", "zh": "优化器状态"},
    "choose_strategy.offload.all": {"en": "Optimizer states and weights (ZeRO-3 / FSDP2)", "zh": "优化器状态和权重（ZeRO-3 / FSDP2）"},
    "choose_strategy.custom_code_needs_gpu_engine": {
        "en": "This model runs its own code: the deploy step can serve it with vLLM or SGLang only (transformers serve "
              "loads only architectures built into transformers), and neither is installed here. Training goes on; "
              "before the deploy step: {hint}",
        "zh": "该模型运行其自带代码：部署步骤只能用 vLLM 或 SGLang 提供服务（transformers serve 只加载 transformers "
              "内置的架构），而本机两者都未安装。训练照常进行；在部署步骤之前：{hint}"},
    "choose_strategy.serve_on_a_gpu_machine": {
        "en": "this machine has no NVIDIA GPU, so serve the exported model on one (`yichui run --task deploy`)",
        "zh": "本机没有 NVIDIA GPU，请在有 GPU 的机器上部署导出的模型（`yichui run --task deploy`）"},
    "choose_strategy.objective": {"en": "Training objective:", "zh": "训练目标："},
    "choose_strategy.objective.sft": {"en": "SFT — supervised fine-tuning on conversations (prompt → reply)",
                                      "zh": "SFT——在对话上做监督微调（提示 → 回答）"},
    "choose_strategy.objective.dpo": {"en": "DPO — preference pairs (a chosen and a rejected reply per prompt)",
                                      "zh": "DPO——偏好对（每个提示一个选中回答、一个拒绝回答）"},
    "choose_strategy.objective.kto": {"en": "KTO — replies labelled desirable or not (unpaired, or pairs split "
                                            "into one of each)",
                                      "zh": "KTO——标注为可取或不可取的回答（无配对，或把偏好对拆成各一条）"},
    "choose_strategy.kto_beta": {"en": "KTO β (how far the model may move from the reference; trl's default 0.1):",
                                 "zh": "KTO β（模型可偏离参考模型的程度；trl 默认 0.1）："},
    "choose_strategy.kto_loss": {"en": "KTO with β {beta} on {desirable} desirable and {undesirable} undesirable "
                                       "replies, weighted {wd} and {wu} so that both sides count alike (KTO's paper, "
                                       "eq. 8). Its KL term comes from the other replies of a micro-batch, so the "
                                       "micro-batch is at least 2.",
                                 "zh": "KTO，β {beta}，{desirable} 条可取回答与 {undesirable} 条不可取回答，权重分别为 "
                                       "{wd} 和 {wu}，使两边同等计入（KTO 论文式 8）。其 KL 项取自同一微批中的其他回答，"
                                       "因此微批至少为 2。"},
    "choose_strategy.kto_one_sided": {"en": "{path} has {desirable} desirable and {undesirable} undesirable replies: "
                                            "KTO needs some of each. Add the missing kind, or train with SFT.",
                                      "zh": "{path} 有 {desirable} 条可取回答和 {undesirable} 条不可取回答：KTO 两类都需要。"
                                            "请补上缺少的一类，或改用 SFT 训练。"},
    "choose_strategy.sample_unpaired": {"en": "The first desirable and the first undesirable reply, rendered with the "
                                              "model's chat template — desirable:\n{chosen}\nundesirable:\n{rejected}",
                                        "zh": "第一条可取回答与第一条不可取回答（按模型的对话模板渲染）——可取：\n{chosen}\n"
                                              "不可取：\n{rejected}"},
    "choose_strategy.dpo_beta": {"en": "DPO β (how far the model may move from the reference; trl's default 0.1):",
                                 "zh": "DPO β（模型可偏离参考模型的程度；trl 默认 0.1）："},
    "choose_strategy.sft_loss_weight": {"en": "Weight of an SFT loss on the chosen reply added to DPO's (RPO; 0: DPO "
                                              "alone, which may lower both replies' likelihood):",
                                        "zh": "在 DPO 损失上叠加的选中回答 SFT 损失权重（RPO；0：仅 DPO，它可能同时降低两个回答的似然）："},
    "choose_strategy.dataset.local_pairs": {"en": "A local file of pairs (.json / .jsonl / .csv / .parquet: prompt / chosen "
                                                  "/ rejected as text or messages, or chosen / rejected conversations)",
                                            "zh": "本地偏好对文件（.json / .jsonl / .csv / .parquet：prompt / chosen / rejected "
                                                  "为文本或消息，或 chosen / rejected 完整对话）"},
    "choose_strategy.dpo_loss": {"en": "DPO with β {beta}: its loss starts at ln 2 ≈ 0.693 (policy = reference) and falls as the chosen replies win.",
                                 "zh": "DPO，β {beta}：损失从 ln 2 ≈ 0.693 开始（策略 = 参考模型），选中回答胜出时下降。"},
    "choose_strategy.dpo_loss_sft": {"en": "DPO with β {beta} plus {weight} × the SFT loss on the chosen reply (RPO): the loss shown is their sum, so it starts well above DPO's ln 2 ≈ 0.693; reward accuracy (in the live line) is DPO's own.",
                                     "zh": "DPO，β {beta}，加上 {weight} × 选中回答的 SFT 损失（RPO）：显示的损失是两者之和，因此起点远高于 DPO 的 ln 2 ≈ 0.693；实时行中的奖励准确率是 DPO 自己的。"},
    "choose_strategy.dataset.bundled_pairs": {"en": "The bundled demo pairs (306: each reply with its sign-off "
                                                    "preferred over the same reply without it)",
                                              "zh": "内置演示偏好对（306 对：带结束语的回答优于去掉结束语的同一回答）"},
    "choose_strategy.dataset.local_kto": {"en": "A local file of labelled replies (.json / .jsonl / .csv / .parquet: "
                                                "prompt / completion / label true or false) or of pairs (prompt / "
                                                "chosen / rejected)",
                                          "zh": "本地带标签回答文件（.json / .jsonl / .csv / .parquet：prompt / completion / "
                                                "label 为 true 或 false）或偏好对文件（prompt / chosen / rejected）"},
    "choose_strategy.unpaired_for_dpo": {"en": "{path} holds unpaired labelled replies (KTO's prompt / completion / "
                                               "label), not pairs: {objective} needs prompt / chosen / rejected "
                                               "records. Choose another file, or the objective KTO (it trains on "
                                               "labelled replies).",
                                         "zh": "{path} 是无配对的带标签回答（KTO 的 prompt / completion / label），"
                                               "不是偏好对：{objective} 需要 prompt / chosen / rejected 记录。请换一个文件，或把训练目标改为 KTO"
                                               "（它在带标签的回答上训练）。"},
    "choose_strategy.sample_pair": {"en": "The first pair, rendered with the model's chat template — chosen:\n{chosen}\n"
                                          "rejected:\n{rejected}",
                                    "zh": "第一个偏好对（按模型的对话模板渲染）——选中：\n{chosen}\n拒绝：\n{rejected}"},
    "choose_strategy.objective.grpo": {"en": "GRPO — prompts with checkable answers: the model writes several replies "
                                             "per prompt, reward functions score them",
                                       "zh": "GRPO——带可校验答案的提示：模型为每个提示生成多个回答，由奖励函数打分"},
    "choose_strategy.method.galore": {"en": "GaLore (every weight trained, optimizer states in a low-rank projection)",
                                      "zh": "GaLore（训练全部权重，优化器状态在低秩投影中）"},
    "choose_strategy.galore_rank": {"en": "GaLore projection rank:", "zh": "GaLore 投影秩："},
    "choose_strategy.packing": {"en": "Pack sequences padding-free (no pad tokens; fewer steps per epoch)?",
                                "zh": "无填充打包序列（没有填充 token；每轮步数更少）？"},
    "choose_strategy.freeze_vision_tower": {
        "en": "Keep the vision tower frozen (the language model learns; no = LoRA on the tower too, or its weights in a full fine-tune)?",
        "zh": "冻结视觉编码器吗（只训练语言模型；否 = 编码器也加 LoRA，全参微调时训练其权重）？"},
    "choose_strategy.freeze_projector": {
        "en": "Keep the projector (vision-to-language aligner) frozen (no = it trains whole, saved with the adapter)?",
        "zh": "冻结投影层（视觉到语言的对齐层）吗（否 = 整层训练，随适配器保存）？"},
    "choose_strategy.image_size": {
        "en": "Most pixels per image, as a side N (images resized to at most N × N pixels; fewer image tokens, less memory; 0 = the model's own setting):",
        "zh": "每张图片的最大像素，以边长 N 表示（图片缩放到不超过 N × N 像素；图像 token 更少、显存更省；0 = 模型自身设置）："},
    "choose_strategy.images_need_vlm": {
        "en": "Dataset {path} has {n} image-text record(s) (images checked) and the chosen model reads text only: choose a text dataset, or a vision-language model (config.json with a vision_config) in step 1.",
        "zh": "数据集 {path} 含 {n} 条图文记录（图片已检查），而所选模型只读文本：请选择文本数据集，或在第 1 步选择视觉语言模型（config.json 含 vision_config）。"},
    "choose_strategy.no_processor": {
        "en": "{model} has no processor this machine can load for its images ({error}): the model folder needs its processor files (preprocessor_config.json or processor_config.json).",
        "zh": "{model} 没有本机可加载的图像处理器（{error}）：模型目录需要其处理器文件（preprocessor_config.json 或 processor_config.json）。"},
    "choose_strategy.plan.on_unsloth": {"en": "{label}, on unsloth", "zh": "{label}，使用 unsloth"},
    "choose_strategy.training_backend": {"en": "Training backend:", "zh": "训练后端："},
    "choose_strategy.training_backend.transformers": {"en": "yichui's trainer (transformers + peft)",
                                                      "zh": "yichui 的训练器（transformers + peft）"},
    "choose_strategy.training_backend.unsloth": {"en": "unsloth {version} (its kernels, in its own environment)",
                                                 "zh": "unsloth {version}（它自己的内核，在独立环境中）"},
    "choose_strategy.asked_if.training_backend": {
        "en": "when unsloth {version} is installed in {env} (install: {command})",
        "zh": "unsloth {version} 已安装在 {env}（安装：{command}）"},
    "choose_strategy.asked_if.compile_layers": {
        "en": "for LoRA, or a full fine-tune with bf16 master weights, in one process on a CUDA GPU, without Liger (elsewhere: yichui estimate --compile-layers)",
        "zh": "单进程、CUDA GPU 上的 LoRA 或 bf16 主权重的全参微调且未启用 Liger（其他情况：yichui estimate --compile-layers）"},
    "choose_strategy.asked_if.dpo": {"en": "with DPO (choose_strategy.objective=dpo)", "zh": "选择 DPO 时（choose_strategy.objective=dpo）"},
    "choose_strategy.asked_if.kto": {"en": "with KTO (choose_strategy.objective=kto)", "zh": "选择 KTO 时（choose_strategy.objective=kto）"},
    "choose_strategy.asked_if.grpo": {"en": "with GRPO (choose_strategy.objective=grpo)", "zh": "选择 GRPO 时（choose_strategy.objective=grpo）"},
    "choose_strategy.asked_if.grpo_gpu": {"en": "with GRPO on a machine with a CUDA GPU (vLLM generates there only)",
                                          "zh": "在有 CUDA GPU 的机器上选择 GRPO 时（vLLM 只在那里生成）"},
    "choose_strategy.asked_if.vllm": {"en": "with GRPO's replies generated by vLLM (choose_strategy.generation=vllm)",
                                      "zh": "GRPO 的回答由 vLLM 生成时（choose_strategy.generation=vllm）"},
    "choose_strategy.asked_if.reward_file": {"en": "when GRPO's rewards include your file (choose_strategy.rewards=…,file)",
                                             "zh": "GRPO 的奖励包含你的文件时（choose_strategy.rewards=…,file）"},
    "choose_strategy.asked_if.galore": {"en": "with GaLore (choose_strategy.method=galore)", "zh": "选择 GaLore 时（choose_strategy.method=galore）"},
    "choose_strategy.asked_if.full": {"en": "for a full fine-tune (choose_strategy.method=full or galore)",
                                      "zh": "全参微调时（choose_strategy.method=full 或 galore）"},
    "choose_strategy.asked_if.lora": {"en": "for an adapter (choose_strategy.method=lora, qlora or dora)",
                                      "zh": "训练适配器时（choose_strategy.method=lora、qlora 或 dora）"},
    "choose_strategy.asked_if.lora_sft": {"en": "for an adapter trained with SFT (trl turns dropout off for DPO, KTO and GRPO)",
                                          "zh": "用 SFT 训练适配器时（DPO、KTO 与 GRPO 下 trl 会关闭 dropout）"},
    "choose_strategy.asked_if.local_data": {"en": "for a local file (choose_strategy.dataset=local)",
                                            "zh": "使用本地文件时（choose_strategy.dataset=local）"},
    "choose_strategy.asked_if.hub_data": {"en": "for a hub dataset (choose_strategy.dataset=hub)",
                                          "zh": "使用 Hub 数据集时（choose_strategy.dataset=hub）"},
    "choose_strategy.asked_if.bad_records": {"en": "when the local file has malformed records",
                                             "zh": "本地文件含格式错误的记录时"},
    "choose_strategy.asked_if.vision": {"en": "for a vision-language model", "zh": "视觉语言模型时"},
    "choose_strategy.asked_if.liger": {"en": "on a CUDA GPU with liger-kernel installed, on yichui's own trainer (not unsloth)",
                                       "zh": "在装有 liger-kernel 的 CUDA GPU 上、使用 yichui 自己的训练器（非 unsloth）时"},
    "choose_strategy.asked_if.sft": {"en": "with SFT (choose_strategy.objective=sft)", "zh": "选择 SFT 时（choose_strategy.objective=sft）"},
    "choose_strategy.asked_if.not_galore": {"en": "unless the method is GaLore (it brings its own optimizer)",
                                            "zh": "方法不是 GaLore 时（GaLore 自带优化器）"},
    "choose_strategy.asked_if.epochs": {"en": "when training by epochs (choose_strategy.max_steps=0)",
                                        "zh": "按轮数训练时（choose_strategy.max_steps=0）"},
    "choose_strategy.asked_if.several_processes": {
        "en": "when training runs in 2 or more processes (choose_strategy.processes × nodes), or one GPU cannot hold the plain plan",
        "zh": "训练进程总数（choose_strategy.processes × nodes）≥ 2，或单块 GPU 放不下普通方案时"},
    "choose_strategy.asked_if.zero3_offload": {"en": "with ZeRO-3 and an offload (choose_strategy.distribution=zero3)",
                                               "zh": "选择 ZeRO-3 并开启卸载时（choose_strategy.distribution=zero3）"},
    "choose_strategy.asked_if.nvme": {"en": "when offloading to NVMe (choose_strategy.offload_device=nvme)",
                                      "zh": "卸载到 NVMe 时（choose_strategy.offload_device=nvme）"},
    "choose_strategy.offload_device": {"en": "Offload to:", "zh": "卸载到："},
    "choose_strategy.host_ram": {"en": "Host RAM for the offload ({what}): ≈ {need} GiB; this machine has {avail} of {total} GiB available.",
                                 "zh": "卸载所需的主机内存（{what}）：约 {need} GiB；本机可用 {avail} / {total} GiB。"},
    "choose_strategy.host_ram_short": {"en": "The offload needs ≈ {need} GiB of host RAM ({what}), more than the {avail} GiB available here (of {total}): DeepSpeed would fail to pin it, or the trainer be killed, after the download. Free memory, offload to NVMe, shard over more GPUs or nodes, or choose a LoRA method.",
                                       "zh": "卸载需要约 {need} GiB 主机内存（{what}），超过本机可用的 {avail} GiB（共 {total} GiB）：下载之后 DeepSpeed 会无法锁定这些内存，或训练进程被系统杀死。请释放内存、改为卸载到 NVMe、分片到更多 GPU 或节点，或选择 LoRA 类方法。"},
    "choose_strategy.offload_device.cpu": {"en": "CPU memory", "zh": "CPU 内存"},
    "choose_strategy.offload_device.nvme": {"en": "NVMe files (ZeRO-Infinity: for states larger than CPU memory; as fast as the disk)",
                                            "zh": "NVMe 文件（ZeRO-Infinity：状态超出 CPU 内存时使用；速度取决于磁盘）"},
    "choose_strategy.nvme_path": {"en": "Folder on the NVMe disk for the swap files:", "zh": "NVMe 磁盘上存放交换文件的目录："},
    "choose_strategy.nvme_speed": {"en": "Swap folder {path}: writes at {gbps} GB/s (below {slow} GB/s every step waits on the disk).",
                                   "zh": "交换目录 {path}：写入速度 {gbps} GB/s（低于 {slow} GB/s 时每一步都要等磁盘）。"},
    "choose_strategy.asked_if.sharded": {"en": "with a sharded distribution (ZeRO or FSDP)",
                                         "zh": "选择分片方式（ZeRO 或 FSDP）"},
    "choose_strategy.trackers": {"en": "Also log to these experiment trackers (TensorBoard always; each writes to a "
                                       "store on this machine, nothing is uploaded):",
                                 "zh": "同时记录到这些实验跟踪工具（TensorBoard 始终记录；各自写入本机存储，不上传）："},
    "choose_strategy.tracker.wandb": {"en": "Weights & Biases (offline run; `wandb sync` uploads it later)",
                                      "zh": "Weights & Biases（离线运行；之后用 `wandb sync` 上传）"},
    "choose_strategy.tracker.mlflow": {"en": "MLflow (local file store; `mlflow ui` shows it)",
                                       "zh": "MLflow（本地文件存储；用 `mlflow ui` 查看）"},
    "choose_strategy.tracker.swanlab": {"en": "SwanLab (offline run; `swanlab sync` uploads it later)",
                                        "zh": "SwanLab（离线运行；之后用 `swanlab sync` 上传）"},
    "choose_strategy.tracker_not_installed": {"en": "{tracker} — not installed", "zh": "{tracker}——未安装"},
    "choose_strategy.tracker_missing": {"en": "{tracker} is not installed in yichui's environment: install it with "
                                              "`{command}` (or ./install.sh --dev installs all three), or leave it out.",
                                        "zh": "yichui 的环境中未安装 {tracker}：请用 `{command}` 安装（./install.sh --dev 会装上"
                                              "全部三个），或不选它。"},
    "choose_strategy.backup": {"en": "Back up the adapter to a hub while training (every Nth checkpoint and the final one, in the background)?",
                               "zh": "训练时把适配器备份到模型仓库吗（每 N 个检查点及最终结果，后台上传）？"},
    "choose_strategy.backup.none": {"en": "No backup", "zh": "不备份"},
    "choose_strategy.backup.hf": {"en": "Hugging Face (token from HF_TOKEN)", "zh": "Hugging Face（令牌取自 HF_TOKEN）"},
    "choose_strategy.backup.modelscope": {"en": "ModelScope (token from MODELSCOPE_API_TOKEN)", "zh": "ModelScope（令牌取自 MODELSCOPE_API_TOKEN）"},
    "choose_strategy.backup_repo": {"en": "Repository to back up to (org/name; created private if missing):",
                                    "zh": "备份到的仓库（组织/名称；不存在则创建为私有）："},
    "choose_strategy.backup_every": {"en": "Back up every Nth checkpoint, N =", "zh": "每 N 个检查点备份一次，N ="},
    "choose_strategy.backup_no_token": {"en": "A backup to {hub} needs a token in {var}: export {var}=… in this shell, then answer again (or choose no backup).",
                                        "zh": "备份到 {hub} 需要令牌 {var}：请在当前 shell 中 export {var}=… 后重新回答（或选择不备份）。"},
    "choose_strategy.asked_if.adapter": {"en": "for an adapter method (LoRA, QLoRA, DoRA)", "zh": "适配器方法（LoRA、QLoRA、DoRA）"},
    "choose_strategy.asked_if.backup": {"en": "when backing up to a hub (choose_strategy.backup)", "zh": "选择了备份到模型仓库（choose_strategy.backup）"},
    "choose_strategy.asked_if.several_nodes": {"en": "when training spans 2 or more nodes (choose_strategy.nodes)",
                                               "zh": "训练跨 2 台或更多节点（choose_strategy.nodes）"},
    "choose_strategy.sequence_parallel": {"en": "Sequence parallelism: split each sequence over how many GPUs? (1: off; "
                                                "Ulysses, the activations per GPU divide by it)",
                                          "zh": "序列并行：每条序列切分到几个 GPU？（1：关闭；Ulysses，每个 GPU 的激活值按它均分）"},
    "choose_strategy.asked_if.sequence_parallel": {"en": "with ZeRO-3 over several processes "
                                                         "(choose_strategy.processes=N, choose_strategy.distribution=zero3)",
                                                   "zh": "在多进程的 ZeRO-3 下（choose_strategy.processes=N，"
                                                         "choose_strategy.distribution=zero3）"},
    "choose_strategy.batch_over_data": {"en": "The effective batch ({batch} = micro-batch {mb} × gradient accumulation "
                                              "{ga} × {gpus} GPU(s)) is larger than the {n} training records: every "
                                              "optimizer step repeats some of them. Fine for a smoke test; for a real "
                                              "run, a smaller batch or more data.",
                                        "zh": "有效批量（{batch} = 微批 {mb} × 梯度累积 {ga} × {gpus} 个 GPU）大于 {n} 条训练记录："
                                              "每个优化器步都会重复其中一些记录。冒烟测试无妨；正式训练请减小批量或增加数据。"},
    "choose_strategy.eta": {"en": "Predicted speed on {gpu} at {seq} tokens per sequence: ~{tps} tokens/s per GPU × {n} "
                                  "→ {steps} optimizer step(s) in about {eta} (the speed model's; on a GPU the train step "
                                  "compares it with the measured rate).",
                            "zh": "在 {gpu} 上、每条序列 {seq} 个 token 时的预测速度：每个 GPU 约 {tps} token/秒 × {n} → "
                                  "{steps} 个优化器步约需 {eta}（速度模型的预测；在 GPU 上训练步骤会与实测速度比较）。"},
    "choose_strategy.eta_compile": {"en": "That includes ~{seconds} s compiling the layers before the first step.",
                                    "zh": "其中包括第一步之前编译各层的约 {seconds} 秒。"},
    "choose_strategy.eta_recompile": {"en": "That includes ~{seconds} s compiling the layers: without packing each "
                                            "micro-batch has its own length, and the layers compiled again {n} times "
                                            "(~{each} s each, measured on an H100); packing avoids it.",
                                      "zh": "其中包括编译各层的约 {seconds} 秒：不打包时每个微批长度各不相同，各层又重新编译了 {n} 次"
                                            "（每次约 {each} 秒，在 H100 上实测）；打包可以避免。"},
    "choose_strategy.eta_unknown": {"en": "{steps} optimizer step(s) planned; their time is not predicted for this "
                                          "model family or plan (the speed model covers dense Qwen, Llama, Mistral, "
                                          "Phi-3 and GLM models on one GPU or plain data parallel).",
                                    "zh": "计划 {steps} 个优化器步；此模型系列或方案下不预测耗时（速度模型只覆盖单 GPU "
                                          "或普通数据并行上的稠密 Qwen、Llama、Mistral、Phi-3 与 GLM 模型）。"},
    "choose_strategy.eta_unknown_grpo": {"en": "{steps} optimizer step(s) planned; GRPO's time is not predicted (most "
                                               "of it is generating the replies, token by token, which the speed "
                                               "model has no term for).",
                                         "zh": "计划 {steps} 个优化器步；GRPO 的耗时不做预测（大部分时间花在逐 token 生成回答上，"
                                               "速度模型没有这一项）。"},
    "choose_strategy.rewards": {"en": "Reward functions (summed; each scores every generated reply):",
                                "zh": "奖励函数（相加；每个都为每条生成的回答打分）："},
    "choose_strategy.reward.accuracy": {"en": "accuracy — the final answer equals the record's answer (numbers as "
                                              "numbers)",
                                        "zh": "accuracy——最终答案等于记录中的答案（数字按数值比较）"},
    "choose_strategy.reward.format": {"en": "format — the reply marks its final answer ('#### N' or \\boxed{N})",
                                      "zh": "format——回答标出最终答案（“#### N”或 \\boxed{N}）"},
    "choose_strategy.reward.stops": {"en": "stops — the reply ends before the completion length",
                                     "zh": "stops——回答在最大生成长度之前结束"},
    "choose_strategy.reward.file": {"en": "file — your own Python file (reward(prompt, completion, answer) → number)",
                                    "zh": "file——你自己的 Python 文件（reward(prompt, completion, answer) → 数值）"},
    "choose_strategy.reward_file": {"en": "Your reward file (.py; run in its own process):",
                                    "zh": "你的奖励文件（.py；在单独的进程中运行）："},
    "choose_strategy.num_generations": {"en": "Replies generated per prompt (GRPO compares each with its group's "
                                              "mean; trl's default 8):",
                                        "zh": "每个提示生成的回答数（GRPO 把每条回答与同组均值比较；trl 默认 8）："},
    "choose_strategy.completion_length": {"en": "Longest generated reply, in tokens:",
                                          "zh": "生成回答的最大长度（token）："},
    "choose_strategy.grpo_beta": {"en": "GRPO β, the KL penalty against the reference (trl's default 0: none, and no "
                                        "reference model held):",
                                  "zh": "GRPO β，相对参考模型的 KL 惩罚（trl 默认 0：不惩罚，也不加载参考模型）："},
    "choose_strategy.generation": {"en": "Who generates GRPO's replies between optimizer steps?",
                                   "zh": "优化器步之间由谁生成 GRPO 的回答？"},
    "choose_strategy.generation.transformers": {"en": "transformers' generate in the trainer (no second copy; slow "
                                                      "for long replies)",
                                                "zh": "训练进程中的 transformers generate（无第二份权重；长回答较慢）"},
    "choose_strategy.generation.vllm": {"en": "vLLM on the same GPU (trl's colocate mode: its own copy of the weights "
                                              "and KV cache; much faster generation)",
                                        "zh": "同一块 GPU 上的 vLLM（trl 的 colocate 模式：自带一份权重和 KV 缓存；生成快得多）"},
    "choose_strategy.vllm_memory_utilization": {"en": "vLLM's share of the GPU's memory (0: yichui sizes it for the "
                                                      "replies of one optimizer step):",
                                                "zh": "vLLM 占用的显存比例（0：由 yichui 按一个优化器步的回答计算）："},
    "choose_strategy.vllm_needs_gpu": {"en": "vLLM generates on a CUDA GPU and this machine has none: choose "
                                             "transformers.",
                                       "zh": "vLLM 需要 CUDA GPU 才能生成，本机没有：请选择 transformers。"},
    "choose_strategy.vllm_share": {"en": "vLLM takes {util} of the {gpu}'s memory ({gib} GiB): its copy of the weights "
                                         "{weights} GiB and a KV cache of {kv} GiB for {replies} replies of up to {seq} "
                                         "tokens at once.",
                                   "zh": "vLLM 占用 {gpu} 显存的 {util}（{gib} GiB）：权重副本 {weights} GiB，KV 缓存 {kv} GiB，"
                                         "可同时容纳 {replies} 条最长 {seq} token 的回答。"},
    "choose_strategy.dataset.bundled_prompts": {"en": "The bundled demo prompts (240 arithmetic questions with their "
                                                      "answers)",
                                                "zh": "内置演示提示（240 道带答案的算术题）"},
    "choose_strategy.dataset.local_prompts": {"en": "A local file of prompts (.json / .jsonl / .csv / .parquet: prompt "
                                                    "as text or messages, with an answer; or GSM8K's question / "
                                                    "answer)",
                                              "zh": "本地提示文件（.json / .jsonl / .csv / .parquet：prompt 为文本或消息，"
                                                    "附 answer；或 GSM8K 的 question / answer）"},
    "choose_strategy.grpo_no_answers": {"en": "{path} has no reference answers, and the accuracy reward needs them: "
                                              "add an answer to the records, or choose other reward functions.",
                                        "zh": "{path} 中没有参考答案，而 accuracy 奖励需要它：请为记录补上 answer，或选择其他奖励函数。"},
    "choose_strategy.reward_file_ok": {"en": "Reward file {path}: {functions} — loaded in its own process and tried "
                                             "on the data's answers.",
                                       "zh": "奖励文件 {path}：{functions}——已在单独进程中加载，并用数据中的答案试过。"},
    "choose_strategy.grpo_plan": {"en": "GRPO on {n} prompts ({answered} with a reference answer): {g} replies of up "
                                        "to {c} tokens per prompt, {p} prompt(s) per optimizer step, scored by {rewards}; "
                                        "β {beta}.",
                                  "zh": "GRPO，{n} 个提示（{answered} 个带参考答案）：每个提示 {g} 条回答，每条最多 {c} 个 "
                                        "token，每个优化器步 {p} 个提示，由 {rewards} 打分；β {beta}。"},
    "choose_strategy.grpo_prompt_too_long": {"en": "The longest prompt (record {record} of the data) has {tokens} tokens; "
                                                   "with replies of up to {completion} that exceeds the sequence "
                                                   "length {seq}: raise the sequence length (this model takes at "
                                                   "most {most}), shorten the replies, or shorten or remove that "
                                                   "prompt.",
                                             "zh": "最长的提示（数据中的第 {record} 条记录）有 {tokens} 个 token；加上最长 {completion} 的"
                                                   "回答会超过序列长度 {seq}：请增大序列长度（此模型最多 {most}）、缩短回答，或缩短/删除"
                                                   "那条提示。"},
}
