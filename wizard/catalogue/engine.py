"""Messages of the engine that runs the steps (keys ``engine.*``), English and Chinese."""

MESSAGES = {
    "engine.redo.deploy": {"en": "The server of this session is not running; starting it again with the recorded answers.",
                           "zh": "此会话的服务未在运行；按记录的答案重新启动。"},
    "engine.redo_missing": {"en": "The outputs of {step} are gone from disk ({path} is missing); running it again.",
                            "zh": "{step} 的输出已不在磁盘上（缺少 {path}）；将重新运行。"},
    "engine.redo": {"en": "The outputs of {step} are gone from disk; running it again.",
                    "zh": "{step} 的输出已不在磁盘上，重新运行该步骤。"},
    "engine.replay_gives_way": {"en": "The saved {name}={value!r} does not fit this machine now ({reason}); its default "
                                      "here is used instead (--set {name}=VALUE to choose).",
                                "zh": "已保存的 {name}={value!r} 此刻不适用于本机（{reason}）；改用本机的默认值（可用 --set {name}=VALUE 指定）。"},
    "engine.resumed_gives_way": {"en": "The saved {name}={value!r} is no longer valid ({reason}): the default is used "
                                       "instead (--set {name}=VALUE to choose).",
                                 "zh": "已保存的 {name}={value!r} 已不再有效（{reason}）：改用默认值（可用 --set {name}=VALUE 指定）。"},
    "engine.resumed_invalid": {"en": "The saved {name}={value!r} is no longer valid ({reason}): choose again.",
                               "zh": "已保存的 {name}={value!r} 已不再有效（{reason}）：请重新选择。"},
    "engine.interrupted": {"en": "Interrupted. Answers so far are saved. Continue with: yichui resume {id}{yes}",
                           "zh": "已中断，已保存目前的答案。继续请运行：yichui resume {id}{yes}"},
    "engine.os_error": {"en": "{step} could not write or read {path}: {error}. Nothing was lost (the session and what earlier "
                              "steps made are kept); make that place writable, free space or choose a shorter path, then "
                              "`yichui resume {id}`.",
                        "zh": "{step} 无法读写 {path}：{error}。没有丢失任何内容（会话与之前各步骤的产物都保留）；请让该位置可写、"
                              "腾出空间或改用更短的路径，然后运行 `yichui resume {id}`。"},
    "engine.crashed": {"en": "{step} failed: {error} (traceback in {log}).", "zh": "{step} 失败：{error}（调用栈见 {log}）。"},
    "engine.finished_with_warnings": {"en": "All steps ran, with {n} warning(s) to read first (session {id}, saved in {path}):",
                                      "zh": "全部步骤已运行，但有 {n} 条警告需要先看（会话 {id}，保存在 {path}）："},
    "engine.finished": {"en": "All steps done. Session {id} is saved in {path}.", "zh": "全部步骤完成。会话 {id} 保存在 {path}。"},
    "engine.resume_hint": {"en": "Fix the cause, then continue with: yichui resume {id}{yes}",
                           "zh": "排除原因后继续：yichui resume {id}{yes}"},
    "engine.resume_hint_set": {"en": "Continue with another answer: yichui resume {id}{yes} --set {name}=VALUE",
                               "zh": "换一个答案后继续：yichui resume {id}{yes} --set {name}=VALUE"},
    "engine.resume_hint_plain": {"en": "Continue with: yichui resume {id}{yes}", "zh": "继续：yichui resume {id}{yes}"},
    "engine.after_refusal": {"en": "What now?", "zh": "接下来？"},
    "engine.answer_again": {"en": "Answer again", "zh": "重新回答"},
    "engine.use_alternative": {"en": "Use {choice}", "zh": "改用 {choice}"},
    "engine.after_failure": {"en": "What now?", "zh": "接下来？"},
    "engine.failed_before": {"en": "{step} failed last time: {error}", "zh": "{step} 上次失败：{error}"},
    "engine.retry_how": {"en": "Run it again:", "zh": "再次运行："},
    "engine.retry_same": {"en": "with the answers {step} ran with", "zh": "沿用 {step} 上次运行时的回答"},
    "engine.keep_how": {"en": "Its questions were being answered when the run stopped. Go on:",
                        "zh": "上次运行停止时正在回答它的问题。继续："},
    "engine.kept_many": {"en": "{step}: {n} answers kept as given before ({keys}); `yichui show {id}` lists their "
                               "values, `yichui resume {id} --set {step}.KEY=…` changes one.",
                         "zh": "{step}：保留此前给出的 {n} 个回答（{keys}）；`yichui show {id}` 列出其值，"
                               "`yichui resume {id} --set {step}.KEY=…` 可更改其中之一。"},
    "engine.keep_continue": {"en": "from where it stopped (answers given so far kept: {n})",
                             "zh": "从停下的地方继续（保留已给出的 {n} 个回答）"},
    "engine.retry_change": {"en": "answering its questions again (pre-filled)", "zh": "重新回答它的问题（已预填）"},
    "engine.back_to_step": {"en": "Go back to {step} and answer again", "zh": "返回 {step} 重新回答"},
    "engine.stop_here": {"en": "Stop here (`yichui resume` asks it later)", "zh": "到此为止（之后 `yichui resume` 会再询问）"},
    "engine.go_back": {"en": "Go back: {question}", "zh": "返回：{question}"},
    "engine.answered_kept": {"en": "{name} = {value} (answered before; resume --set {name}=… changes it)",
                             "zh": "{name} = {value}（此前已回答；resume --set {name}=… 可更改）"},
    "engine.resumed_kept": {"en": "{name} = {value} (as the step started with; resume --set {name}=… changes it)",
                            "zh": "{name} = {value}（沿用该步骤开始时的回答；resume --set {name}=… 可更改）"},
    "engine.reopened": {"en": "--set changes {keys}, answered when {step} ran: {step} runs again, and the steps done "
                              "after it ({later}).",
                        "zh": "--set 更改了 {keys}（{step} 运行时已回答）：{step} 将重新运行，其后已完成的步骤（{later}）也会重新运行。"},
    "engine.reopen_undone": {"en": "Nothing changed: the session stays as it was ({step} and the steps after it done). "
                                   "Give a valid value with --set to run them again.",
                             "zh": "未做任何更改：会话保持原样（{step} 及其后的步骤仍为已完成）。请用 --set 给出有效值以重新运行它们。"},
    "engine.reopen_interrupted": {"en": "Interrupted: nothing changed, the session stays as it was ({step} and the "
                                        "steps after it done); the same resume with its --set runs them again.",
                                  "zh": "已中断：未做任何更改，会话保持原样（{step} 及其后的步骤仍为已完成）；再次执行同样的 "
                                        "resume 和 --set 即可重新运行它们。"},
    "engine.reopened_asked": {"en": "{step}'s other questions come again, each pre-filled with its answer (Enter keeps "
                                    "it); with --yes they are kept without asking.",
                              "zh": "{step} 的其他问题会再次询问，均已预填原答案（回车保留）；加 --yes 则不询问直接保留。"},
    "engine.reopened_alone": {"en": "--set changes {keys}, answered when {step} ran: {step} runs again.",
                              "zh": "--set 更改了 {keys}（{step} 运行时已回答）：{step} 将重新运行。"},
    "engine.preset": {"en": "{name} = {value} (preset by --set)", "zh": "{name} = {value}（由 --set 指定）"},
    "engine.preset_demo": {"en": "{name} = {value} (the demo's local hub, started for this run)",
                           "zh": "{name} = {value}（演示为本次运行启动的本地模型仓库）"},
    "engine.preset_invalid": {"en": "--set {name}={value!r} is not valid ({reason}): choose here.",
                              "zh": "--set {name}={value!r} 无效（{reason}）：请在此选择。"},
    "engine.reask": {"en": "This comes from the answers of {step}: resume asks them again.",
                     "zh": "原因在于 {step} 的答案：继续时会重新询问它们。"},
    "engine.implied": {"en": "{name} = {value} (as {source}; --set {name}=VALUE for another)",
                       "zh": "{name} = {value}（沿用 {source}；如需其他值：--set {name}=VALUE）"},
    "engine.implied_invalid": {"en": "{source}={value!r} cannot be used for {name} here ({reason}): choose here.",
                               "zh": "{source}={value!r} 在此无法用于 {name}（{reason}）：请在此选择。"},
}
