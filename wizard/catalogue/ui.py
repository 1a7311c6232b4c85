"""Messages of words the tables share (on/off, yes/no) (keys ``ui.*``), English and Chinese."""

MESSAGES = {
    "ui.error_prefix": {"en": "error: ", "zh": "错误："},
    "ui.step_already_done": {"en": "done earlier, not asked again", "zh": "此前已完成，不再询问"},
    "ui.col.field": {"en": "field", "zh": "字段"},
    "ui.col.value": {"en": "value", "zh": "值"},
    "ui.col.format": {"en": "format", "zh": "格式"},
    "ui.col.path": {"en": "path", "zh": "路径"},
    "ui.select_instruction": {"en": "(arrow keys, Enter)", "zh": "（方向键选择，回车确认）"},
    "ui.checkbox_instruction": {"en": "(arrow keys, Space to tick, Enter)", "zh": "（方向键移动，空格勾选，回车确认）"},
    "ui.confirm_default_yes": {"en": "(Y/n)", "zh": "（是 Y / 否 n）"},
    "ui.confirm_default_no": {"en": "(y/N)", "zh": "（是 y / 否 N）"},
    "ui.on": {"en": "on", "zh": "开"},
    "ui.off": {"en": "off", "zh": "关"},
    "ui.yes": {"en": "yes", "zh": "是"},
    "ui.no": {"en": "no", "zh": "否"},
    "ui.col.endpoint": {"en": "endpoint", "zh": "地址"},
}
