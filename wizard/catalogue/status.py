"""Messages of a step's status words (keys ``status.*``), English and Chinese."""

MESSAGES = {
    "status.pending": {"en": "pending", "zh": "待办"},
    "status.running": {"en": "running", "zh": "进行中"},
    "status.done": {"en": "done", "zh": "完成"},
    "status.failed": {"en": "failed", "zh": "失败"},
    "status.skipped": {"en": "skipped", "zh": "跳过"},
}
