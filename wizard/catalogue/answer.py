"""Messages of why an answer is refused (keys ``answer.*``), English and Chinese."""

MESSAGES = {
    "answer.int_too_long": {"en": "{value!r} is a whole number of {digits} digits: far beyond any setting's range.",
                            "zh": "{value!r} 是一个 {digits} 位的整数：远超任何设置的范围。"},
    "answer.not_int": {"en": "{value!r} is not a whole number.", "zh": "{value!r} 不是整数。"},
    "answer.not_float": {"en": "{value!r} is not a number.", "zh": "{value!r} 不是数字。"},
    "answer.not_bool": {"en": "{value!r} is not yes/no (use yes or no).", "zh": "{value!r} 不是是/否（请用 yes 或 no）。"},
    "answer.not_a_choice": {"en": "{value!r} is not one of: {choices}.", "zh": "{value!r} 不在可选项中：{choices}。"},
    "answer.empty": {"en": "An answer is needed here.", "zh": "此处需要填写。"},
    "answer.out_of_range": {"en": "Must be between {lo} and {hi}.", "zh": "必须介于 {lo} 与 {hi} 之间。"},
    "answer.missing": {"en": "No answer for {name}: supply it with --set {name}=VALUE.",
                       "zh": "{name} 没有答案：请用 --set {name}=VALUE 提供。"},
    "answer.missing_secret": {"en": "No value for the secret {name}: set the environment variable {env} "
                                    "(secrets never go through --set or the session file).",
                              "zh": "机密项 {name} 没有值：请设置环境变量 {env}（机密不经过 --set，也不写入会话文件）。"},
    "answer.secret_via_set": {"en": "{name} is a secret and cannot be given with --set: set the environment variable {env}.",
                              "zh": "{name} 是机密项，不能用 --set 提供：请设置环境变量 {env}。"},
    "answer.clipped": {"en": "…({n} characters)", "zh": "…（共 {n} 个字符）"},
    "answer.the_value": {"en": "the value", "zh": "该值"},
    "answer.invalid": {"en": "{name}={value!r} is not valid: {reason} Change it with --set {name}=VALUE.",
                       "zh": "{name}={value!r} 无效：{reason} 请用 --set {name}=VALUE 修改。"},
    "answer.step_not_in_task": {"en": "--set {name}: step {step} is not part of task {task}; drop it or choose another --task.",
                                "zh": "--set {name}：步骤 {step} 不属于任务 {task}；请去掉它或换一个 --task。"},
    "answer.unknown_key": {"en": "--set {name}: step {step} has no question {key!r}; its questions are: {keys}.",
                           "zh": "--set {name}：步骤 {step} 没有问题 {key!r}；它的问题有：{keys}。"},
    "answer.unknown_key_many": {"en": "--set {name}: step {step} has no question {key!r}{close}; `yichui steps --keys` "
                                      "lists its {count} questions.",
                                "zh": "--set {name}：步骤 {step} 没有问题 {key!r}{close}；`yichui steps --keys` 列出它的 "
                                      "{count} 个问题。"},
    "answer.did_you_mean": {"en": " (did you mean {keys}?)", "zh": "（是否想写 {keys}？）"},
    "answer.no_choices": {"en": "There is nothing to choose here ('{value}' given): leave it empty.", "zh": "这里没有可选项（给出了 '{value}'）：请留空。"},
    "answer.set_not_asked": {"en": "--set {name} is not used: that question is asked only {why}. Drop it, or change "
                                   "the answer it depends on.",
                             "zh": "--set {name} 未被使用：该问题仅在{why}时才会询问。请去掉它，或修改它所依赖的答案。"},
    "answer.asked_if_generic": {"en": "when the earlier answers of its step call for it",
                                "zh": "该步骤之前的答案需要它"},
}
