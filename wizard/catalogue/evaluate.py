"""Messages of the evaluate step (keys ``evaluate.*``), English and Chinese."""

MESSAGES = {
    "evaluate.heldout": {"en": "Held-out data for loss, perplexity, exact match and ROUGE-L:", "zh": "用于损失、困惑度、精确匹配和 ROUGE-L 的留出数据："},
    "evaluate.heldout.training": {"en": "the validation split held out from training", "zh": "训练时留出的验证集"},
    "evaluate.heldout.file": {"en": "a file of conversations with reference replies (or of preference pairs: scored "
                                    "as pairs after DPO / KTO)",
                              "zh": "带参考回复的对话文件（或偏好对文件：DPO / KTO 之后按偏好对评分）"},
    "evaluate.heldout.none": {"en": "none (benchmarks only)", "zh": "不用（只跑基准）"},
    "evaluate.heldout_path": {"en": "Held-out file (json, jsonl, csv, parquet):", "zh": "留出数据文件（json、jsonl、csv、parquet）："},
    "evaluate.heldout_samples": {"en": "Held-out conversations to use (at most):", "zh": "最多使用的留出对话数："},
    "evaluate.max_new_tokens": {"en": "Longest generated reply (tokens):", "zh": "生成回复的最大长度（token）："},
    "evaluate.generate_with": {"en": "Which replies should the held-out set and generative benchmarks score?",
                               "zh": "留出集与生成式基准用哪里生成的回复来打分？"},
    "evaluate.generate_with.engine": {"en": "both served by the deployed engine (the base by a second server)",
                                      "zh": "两个模型都由已部署的引擎提供（基座模型另起一个服务）"},
    "evaluate.server_failed": {"en": "The server at {endpoint} stopped answering during the evaluation ({error}); `yichui resume` starts it again and keeps the parts already measured.",
                               "zh": "{endpoint} 上的服务在评测中停止响应（{error}）；`yichui resume` 会重新启动它，并保留已测完的部分。"},
    "evaluate.generate_with.local": {"en": "generated here with transformers (slower; no server needed)",
                                     "zh": "在本进程中用 transformers 生成（更慢；无需服务）"},
    "evaluate.no_server_local": {"en": "The deployed server is not running, so the replies are generated here with transformers; `yichui serve start` and run the evaluation again to score the engine's replies.",
                                 "zh": "已部署的服务未在运行，因此回复改为在本进程用 transformers 生成；如需对引擎的回复打分，先 `yichui serve start` 再重新评测。"},
    "evaluate.serving_base": {"en": "Starting a second {engine} server for the base model (127.0.0.1, stopped after the evaluation)…",
                              "zh": "为基座模型启动第二个 {engine} 服务（127.0.0.1，评测后停止）…"},
    "evaluate.beats": {"en": "The fine-tuned model beats the base on the held-out set ({figures}).",
                       "zh": "微调后的模型在留出集上优于基座模型（{figures}）。"},
    "evaluate.mixed": {"en": "The fine-tuned model is better than the base on {better} and worse on {worse} on the "
                             "held-out set ({figures}): not a clear gain; look at the examples before using it.",
                       "zh": "微调后的模型在留出集上{better}优于基座模型、{worse}差于基座模型（{figures}）：并非明确提升；"
                             "使用前请查看示例。"},
    "evaluate.few_figures": {"en": "On {n} held-out conversation(s), too few to judge, fine-tuned vs base: {figures}.",
                             "zh": "仅 {n} 条留出对话，数量太少，无法下结论；微调后 vs 基座：{figures}。"},
    "evaluate.not_better": {"en": "The fine-tuned model does NOT beat the base on the held-out set ({figures}): check the data, the learning rate and the number of steps before using it.",
                            "zh": "微调后的模型在留出集上并未优于基座模型（{figures}）：使用前请检查数据、学习率和训练步数。"},
    "evaluate.reward_fell": {"en": "The fine-tuned model's summed reward beats the base's ({figures}), but these "
                                   "rewards fell while their sum rose ({fell}): the training traded them for the "
                                   "others. Read the replies below before trusting it — a reward that can be earned "
                                   "without doing the task gets hacked.",
                             "zh": "微调后模型的总奖励超过基座（{figures}），但总和上升的同时这些奖励下降了（{fell}）：训练拿它们"
                                   "换了其他奖励。相信它之前请先读下面的回答——不完成任务也能拿到的奖励会被钻空子。"},
    "evaluate.kto_unranked": {"en": "No held-out preference score: it ranks desirable replies over undesirable ones (or "
                                    "a pair's chosen over its rejected), and the held-out set gives neither: replies of one "
                                    "kind only, or no labelled replies at all. "
                                    "Hold out more when training (choose_strategy.val_ratio), or give a held-out file "
                                    "with both (evaluate.heldout=file).",
                              "zh": "没有留出偏好分数：它比较可取回答与不可取回答（或成对中的 chosen 与 rejected），而留出集两者都"
                                    "没有：回答只有一类，或根本没有带标签的回答。训练时多留出一些（choose_strategy.val_ratio），或提供两类都有的留出文件"
                                    "（evaluate.heldout=file）。"},
    "evaluate.few_heldout": {"en": "Only {n} held-out conversation(s): the comparison of base and fine-tuned is noise at that size (a "
                                   "verdict wants {min} or more). Hold out more when training (choose_strategy."
                                   "val_ratio), or give a held-out file (evaluate.heldout=file).",
                             "zh": "只有 {n} 条留出对话：这么少的样本上，基座与微调模型的对比只是噪声（结论至少需要 {min} 条）。"
                                   "训练时多留出一些（choose_strategy.val_ratio），或提供留出文件（evaluate.heldout=file）。"},
    "evaluate.compare_base": {"en": "Also evaluate the base model, side by side?", "zh": "同时评测基座模型并并列对比？"},
    "evaluate.benchmarks": {"en": "Standard benchmarks (lm-evaluation-harness):", "zh": "标准基准（lm-evaluation-harness）："},
    "evaluate.benchmark.gsm8k": {"en": "GSM8K — grade-school math, generated answers (through the endpoint)", "zh": "GSM8K——小学数学，生成式（经服务端点）"},
    "evaluate.benchmark.mmlu": {"en": "MMLU subjects — multiple choice by log-likelihood (local model)", "zh": "MMLU 科目——按对数似然的多选题（本地模型）"},
    "evaluate.mmlu_subjects": {"en": "MMLU subjects (comma-separated):", "zh": "MMLU 科目（逗号分隔）："},
    "evaluate.benchmark_limit": {"en": "Examples per benchmark task (at most):", "zh": "每个基准任务最多使用的样本数："},
    "evaluate.benchmark_source": {"en": "Fetch benchmark data from:", "zh": "基准数据来源："},
    "evaluate.benchmark_endpoint": {"en": "Hub endpoint for benchmark data:", "zh": "基准数据的 hub 地址："},
    "evaluate.no_split": {"en": "The training run held out no validation records (val_ratio {ratio} of {records} records), so "
                                "there is no training split to evaluate on: choose a held-out file "
                                "(evaluate.heldout=file) or none.",
                          "zh": "训练没有留出验证记录（{records} 条记录，val_ratio {ratio}），没有可评估的训练划分："
                                "请选择留出文件（evaluate.heldout=file）或 none。"},
    "evaluate.no_split_task": {"en": "This task trains nothing, so there is no training split to evaluate on: choose a "
                                     "held-out file (evaluate.heldout=file) or none.",
                               "zh": "此任务不训练，没有可评估的训练划分：请选择留出文件（evaluate.heldout=file）或 none。"},
    "evaluate.nothing_to_measure": {"en": "Nothing to evaluate: no held-out data and no benchmark. Choose a held-out file "
                                          "(evaluate.heldout=file) or a benchmark (evaluate.benchmarks=gsm8k).",
                                    "zh": "没有可评估的内容：既无留出数据也无基准。请选择留出文件（evaluate.heldout=file）"
                                          "或基准（evaluate.benchmarks=gsm8k）。"},
    "evaluate.no_references": {"en": "{path} has no reference replies (no conversation ends with an assistant turn): add them, or choose no held-out data.",
                               "zh": "{path} 没有参考回复（没有以 assistant 结尾的对话）：请补上，或选择不用留出数据。"},
    "evaluate.needs_local_model": {"en": "{benchmark} scores log-likelihoods, which a chat endpoint does not return: evaluate a model with weights for it.",
                                   "zh": "{benchmark} 需要对数似然，聊天服务端点不提供：请用有权重的模型评测它。"},
    "evaluate.data_unavailable": {"en": "The {benchmark} data ({repo}) is not on disk and {endpoint} cannot provide it "
                                        "({reason}). Untick {benchmark}, try another endpoint, or fetch it where a hub "
                                        "answers: yichui download {repo} --repo-type dataset --source {source} (it "
                                        "lands in {dir}, where this step looks).",
                                  "zh": "{benchmark} 的数据（{repo}）不在本地，{endpoint} 也无法提供（{reason}）。请取消勾选 "
                                        "{benchmark}、换一个端点，或在能访问仓库的地方获取：yichui download {repo} "
                                        "--repo-type dataset --source {source}（保存到 {dir}，本步骤会在那里查找）。"},
    "evaluate.no_answer": {"en": "no answer: {error}", "zh": "无应答：{error}"},
    "evaluate.files_absent": {"en": "missing files: {files}", "zh": "缺少文件：{files}"},
    "evaluate.nothing": {"en": "Nothing to evaluate: no model and no endpoint in this session.", "zh": "没有可评测的内容：会话中没有模型也没有服务端点。"},
    "evaluate.resuming": {"en": "Resuming the evaluation: {n} part(s) already measured are kept.", "zh": "继续评测：保留已完成的 {n} 个部分。"},
    "evaluate.no_heldout": {"en": "The held-out data is empty: choose another source or no held-out data.", "zh": "留出数据为空：请换一个来源或不用留出数据。"},
    "evaluate.heldout_running_prompts": {"en": "Held-out metrics of the {model} model on {n} prompts (their reference answers as the replies)…",
                                         "zh": "正在计算 {model} 模型在 {n} 条提示上的留出指标（以参考答案作为回答）…"},
    "evaluate.heldout_running": {"en": "Held-out metrics of the {model} model on {n} conversations…", "zh": "正在计算{model}模型在 {n} 条对话上的留出指标…"},
    "evaluate.preference_running": {"en": "Preference of the {model} model on {n} held-out pairs (log p(chosen) "
                                          "against log p(rejected))…",
                                    "zh": "正在计算 {model} 模型在 {n} 个留出偏好对上的偏好（log p(chosen) 对比 log p(rejected)）…"},
    "evaluate.preference_running_unpaired": {"en": "Preference of the {model} model on {n} held-out labelled replies "
                                                  "(desirable ranked over undesirable, by log p per token)…",
                                            "zh": "正在计算 {model} 模型在 {n} 条留出的标注回答上的偏好（按每 token 对数概率，可取排在不可取之前）…"},
    "evaluate.preference_progress": {"en": "preference · {model}", "zh": "偏好 · {model}"},
    "evaluate.heldout_progress": {"en": "held-out · {model}", "zh": "留出集 · {model}"},
    "evaluate.bench_running": {"en": "{benchmark} on the {model} model ({where})…", "zh": "正在 {model} 模型上跑 {benchmark}（{where}）…"},
    "evaluate.table": {"en": "Evaluation", "zh": "评测结果"},
    "evaluate.col.metric": {"en": "metric", "zh": "指标"},
    "evaluate.report.title": {"en": "# Evaluation — session {id}", "zh": "# 评测——会话 {id}"},
    "evaluate.report.metric": {"en": "metric", "zh": "指标"},
    "evaluate.report.models": {"en": "Models: {models}", "zh": "模型：{models}"},
    "evaluate.report.replies_from": {"en": "Held-out replies from: {where}", "zh": "留出集回复来自：{where}"},
    "evaluate.report.in_process": {"en": "generated in-process", "zh": "进程内生成"},
    "evaluate.term.unpaired_auc": {"en": "(unpaired: AUC)", "zh": "（无配对：AUC）"},
    "evaluate.term.unpaired_token": {"en": "(unpaired: per token)", "zh": "（无配对：每 token）"},
    "evaluate.term.preference_accuracy": {"en": "preference accuracy", "zh": "偏好准确率"},
    "evaluate.term.preference_margin": {"en": "preference margin", "zh": "偏好差值"},
    "evaluate.term.heldout": {"en": "held-out", "zh": "留出集"},
    "evaluate.term.perplexity": {"en": "perplexity", "zh": "困惑度"},
    "evaluate.term.loss": {"en": "loss", "zh": "损失"},
    "evaluate.term.reward": {"en": "reward", "zh": "奖励"},
    "evaluate.term.tie": {"en": "(tie)", "zh": "（持平）"},
    "evaluate.term.vs": {"en": " vs ", "zh": " 对比 "},
    "evaluate.term.sep": {"en": ", ", "zh": "，"},  # between a verdict's figures
    "evaluate.term.exact_match": {"en": "exact_match", "zh": "精确匹配"},
    "evaluate.term.rouge_l": {"en": "rouge_l", "zh": "ROUGE-L"},
    "evaluate.term.base": {"en": "base", "zh": "基座"},
    "evaluate.term.finetuned": {"en": "finetuned", "zh": "微调后"},
    "evaluate.report.tie": {"en": "tie", "zh": "持平"},
    "evaluate.report.warning": {"en": "Warning:", "zh": "注意："},
    "evaluate.report.beats": {"en": "**The fine-tuned model beats the base** on the held-out set ({checks}).",
                              "zh": "**微调后的模型优于基座模型**（留出集：{checks}）。"},
    "evaluate.report.not_beats": {"en": "**The fine-tuned model does NOT beat the base** on the held-out set ({checks}).",
                                  "zh": "**微调后的模型没有优于基座模型**（留出集：{checks}）。"},
    "evaluate.report.examples": {"en": "## Examples (held-out)", "zh": "## 示例（留出集）"},
    "evaluate.report.prompt": {"en": "prompt", "zh": "提示"},
    "evaluate.report.reference": {"en": "reference", "zh": "参考答案"},
    "evaluate.report.footer": {"en": "Held-out metrics: recipes/evaluation/heldout.py.",
                               "zh": "留出集指标：recipes/evaluation/heldout.py。"},
    "evaluate.report.footer_bench": {"en": "Held-out metrics: recipes/evaluation/heldout.py; benchmarks: "
                                           "lm-evaluation-harness (recipes/evaluation/harness.py), first {limit} "
                                           "examples of each task.",
                                     "zh": "留出集指标：recipes/evaluation/heldout.py；基准：lm-evaluation-harness"
                                           "（recipes/evaluation/harness.py），每个任务取前 {limit} 个样例。"},
    "evaluate.example": {"en": "Example {n} — {prompt}\n  reference: {reference}\n  {answers}", "zh": "示例 {n}——{prompt}\n  参考：{reference}\n  {answers}"},
    "evaluate.report": {"en": "Report: {path} (and report.png beside it).", "zh": "报告：{path}（同目录有 report.png）。"},
}
