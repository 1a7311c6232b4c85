"""Messages of the chat step (keys ``chat.*``), English and Chinese."""

MESSAGES = {
    "chat.question": {"en": "Question to ask the model:", "zh": "要问模型的问题："},
    "chat.one": {"en": "{question}\n  → {answer}", "zh": "{question}\n  → {answer}"},
}
