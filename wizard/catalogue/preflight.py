"""Messages of the preflight smoke run (keys ``preflight.*``), English and Chinese."""

MESSAGES = {
    "preflight.start": {"en": "Smoke test: {steps} training steps of this strategy on a {layers}-layer copy with random weights ({params} M parameters), on the first {records} records…",
                        "zh": "冒烟测试：在随机权重的 {layers} 层副本（{params} M 参数）上用前 {records} 条记录按此策略训练 {steps} 步……"},
    "preflight.passed": {"en": "Smoke test passed in {seconds} s: loss {losses}, peak {peak} GiB ({kind}). The weights come next.",
                         "zh": "冒烟测试通过，用时 {seconds} 秒：损失 {losses}，峰值 {peak} GiB（{kind}）。接下来下载权重。"},
    "preflight.failed": {"en": "The smoke test of this strategy failed before any weights were downloaded: {error} (log: {log}). Change the strategy when resuming, or skip the test with --set choose_strategy.preflight=no.",
                         "zh": "此策略的冒烟测试失败（尚未下载任何权重）：{error}（日志：{log}）。继续会话时请修改策略，或用 --set choose_strategy.preflight=no 跳过测试。"},
    "preflight.no_records_fit": {"en": "The smoke test found no record whose reply fits in {seq_len} tokens: every record was cut away (log: {log}). Raise choose_strategy.seq_len, or use shorter records.",
                                 "zh": "冒烟测试发现没有任何记录的回复能放进 {seq_len} 个 token：所有记录都被截掉了（日志：{log}）。请增大 choose_strategy.seq_len，或使用更短的记录。"},
    "preflight.copy_failed": {"en": "The 2-layer copy for the smoke test cannot be built: {error}. Skip the test with --set choose_strategy.preflight=no, or choose another model.",
                              "zh": "无法为冒烟测试构建 2 层副本：{error}。可用 --set choose_strategy.preflight=no 跳过测试，或选择其他模型。"},
    "preflight.live_title": {"en": "Smoke test (pid {pid}) — Ctrl-C stops it", "zh": "冒烟测试（pid {pid}）——Ctrl-C 停止"},
    "preflight.oom": {"en": "The smoke test ran out of memory already with 2 layers (log: {log}). Choose a smaller micro-batch or sequence length, activation checkpointing or more sharding when resuming.",
                      "zh": "冒烟测试在仅 2 层时就已显存不足（日志：{log}）。继续会话时请减小微批次或序列长度，打开激活检查点或增加分片。"},
    "preflight.unknown_architecture": {"en": "transformers cannot build this architecture for the smoke test: {error}. Upgrade transformers, or skip the test with --set choose_strategy.preflight=no.",
                                       "zh": "transformers 无法为冒烟测试构建此架构：{error}。请升级 transformers，或用 --set choose_strategy.preflight=no 跳过测试。"},
}
