"""Messages of the evaluation harness (recipes/evaluation/) (keys ``evaluation.*``), English and Chinese."""

MESSAGES = {
    "evaluation.no_endpoint": {"en": "{benchmark} needs a running server or a local model: start one with `yichui serve start`.",
                             "zh": "{benchmark} 需要运行中的服务或本地模型：请用 `yichui serve start` 启动。"},
    "evaluation.no_local_model": {"en": "{benchmark} needs a local model (log-likelihoods).", "zh": "{benchmark} 需要本地模型（对数似然）。"},
}
