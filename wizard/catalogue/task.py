"""Messages of the tasks the wizard offers (keys ``task.*``), English and Chinese."""

MESSAGES = {
    "task.finetune": {"en": "fine-tune and deploy (all steps, then evaluate)", "zh": "微调并部署（全部步骤，然后评测）"},
    "task.deploy": {"en": "deploy a model as it is", "zh": "直接部署一个模型"},
    "task.quantize": {"en": "quantize a model", "zh": "量化一个模型"},
    "task.evaluate": {"en": "evaluate a model or an endpoint", "zh": "评测一个模型或服务端点"},
    "task.chat": {"en": "chat with a model", "zh": "与模型对话"},
    # a session's task where it is listed (show): the id `--task` takes, and in Chinese its name beside it
    "task.name.finetune": {"en": "finetune", "zh": "微调（finetune）"},
    "task.name.deploy": {"en": "deploy", "zh": "部署（deploy）"},
    "task.name.quantize": {"en": "quantize", "zh": "量化（quantize）"},
    "task.name.evaluate": {"en": "evaluate", "zh": "评测（evaluate）"},
    "task.name.chat": {"en": "chat", "zh": "对话（chat）"},
}
