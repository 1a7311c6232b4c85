"""Messages of GRPO's reward functions (keys ``rewards.*``: recipes/training/rewards.py), English and Chinese."""

MESSAGES = {
    "rewards.no_file": {"en": "Reward file {path} does not exist: give the path of a Python file that defines "
                              "reward(prompt, completion, answer) or reward_* functions.",
                        "zh": "奖励文件 {path} 不存在：请给出一个定义了 reward(prompt, completion, answer) 或 reward_* "
                              "函数的 Python 文件路径。"},
    "rewards.load": {"en": "Reward file {path} could not be loaded: {detail}. Fix the file and run again.",
                     "zh": "无法加载奖励文件 {path}：{detail}。请修正文件后再运行。"},
    "rewards.none_defined": {"en": "Reward file {path} defines no reward function: name one reward, or reward_<name> "
                                   "for several, each taking (prompt, completion, answer) and returning a number.",
                             "zh": "奖励文件 {path} 中没有奖励函数：请定义 reward，或多个 reward_<名称>，每个接受 "
                                   "(prompt, completion, answer) 并返回一个数。"},
    "rewards.raised": {"en": "Reward function {function} in {path} raised {detail}. Fix it and run again (a "
                             "training already under way resumes from its last checkpoint).",
                       "zh": "{path} 中的奖励函数 {function} 抛出了 {detail}。请修正后再运行（已开始的训练会从最近的检查点继续）。"},
    "rewards.not_a_number": {"en": "Reward function {function} in {path} returned {detail}: it must return a finite "
                                   "number (or None to give no score).",
                             "zh": "{path} 中的奖励函数 {function} 返回了 {detail}：它必须返回有限的数（或 None 表示不打分）。"},
    "rewards.timeout": {"en": "Reward file {path} gave no answer within {s} s for one batch of replies: make it faster "
                              "(it runs once per reply).",
                        "zh": "奖励文件 {path} 在 {s} 秒内没有为一批回答给出结果：请让它更快（它对每个回答运行一次）。"},
    "rewards.died": {"en": "Reward file {path} stopped its process (exit {code}; over its 4 GiB of memory, or it exited): "
                           "fix it and run again.",
                     "zh": "奖励文件 {path} 的进程退出了（退出码 {code}；内存超过 4 GiB，或它自行退出）：请修正后再运行。"},
    "rewards.garbled": {"en": "Reward file {path} wrote to the output yichui reads its scores from (\"{line}\"): print "
                              "with print() only, or to sys.stderr, and run again.",
                        "zh": "奖励文件 {path} 向 yichui 读取分数的输出写入了内容（“{line}”）：请只用 print() 或写到 "
                              "sys.stderr，然后再运行。"},
    "rewards.is_folder": {"en": "Reward file {path} is a folder: give the path of the Python file in it.",
                          "zh": "奖励文件 {path} 是一个文件夹：请给出其中 Python 文件的路径。"},
}
