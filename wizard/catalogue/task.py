"""Messages of the tasks the wizard offers (keys ``task.*``), English and Chinese."""

MESSAGES = {
    "task.finetune": {"en": "fine-tune and deploy (all steps, then evaluate)", "zh": "微调并部署（全部步骤，然后评测）"},
    "task.deploy": {"en": "deploy a model as it is", "zh": "直接部署一个模型"},
    "task.quantize": {"en": "quantize a model", "zh": "量化一个模型"},
    "task.evaluate": {"en": "evaluate a model or an endpoint", "zh": "评测一个模型或服务端点"},
    "task.chat": {"en": "chat with a model", "zh": "与模型对话"},
}
