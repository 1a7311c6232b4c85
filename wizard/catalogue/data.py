"""Messages of datasets (keys ``data.*``), English and Chinese."""

MESSAGES = {
    "data.not_a_file": {"en": "Dataset {path} is not a regular file (a pipe, socket or device): give a .json, .jsonl, "
                                ".csv or .parquet file.",
                        "zh": "数据集 {path} 不是普通文件（而是管道、套接字或设备）：请给出 .json、.jsonl、.csv 或 .parquet 文件。"},
    "data.no_file": {"en": "Dataset {path} does not exist: give a .json, .jsonl, .csv or .parquet file.",
                     "zh": "数据集 {path} 不存在：请提供 .json、.jsonl、.csv 或 .parquet 文件。"},
    "data.bad_sample": {"en": "Dataset {path}#{value}: after # comes the number of records to sample (a whole number ≥ 1).",
                        "zh": "数据集 {path}#{value}：# 后应为要抽样的记录数（≥ 1 的整数）。"},
    "data.has_images": {"en": "Dataset {path} has {n} image-text record(s): this step takes text records only. Give a text dataset.",
                        "zh": "数据集 {path} 含 {n} 条图文记录：此步骤只接受文本记录。请提供文本数据集。"},
    "data.empty": {"en": "Dataset {path} has no records.", "zh": "数据集 {path} 没有任何记录。"},
    "data.bad_json": {"en": "Dataset {path} is not valid JSON (line {line}: {error}).",
                      "zh": "数据集 {path} 不是有效的 JSON（第 {line} 行：{error}）。"},
    "data.not_a_list": {"en": "Dataset {path} must hold a JSON list of records.", "zh": "数据集 {path} 必须是 JSON 记录列表。"},
    "data.no_json": {"en": "Dataset {path}: no line is valid JSON (line {line} is the first): a .jsonl file holds one "
                           "JSON object per line, e.g. {{\"messages\": [...]}}.",
                     "zh": "数据集 {path}：没有一行是合法的 JSON（第 {line} 行起）：.jsonl 文件每行一个 JSON 对象，"
                           "例如 {{\"messages\": [...]}}。"},
    "data.unknown_format": {"en": "Dataset {path}: unknown record format; supported: {formats} "
                                  "(alpaca: instruction/input/output; sharegpt: conversations of from/value; "
                                  "messages: role/content; prompt/completion).",
                            "zh": "数据集 {path}：无法识别的记录格式；支持：{formats}"
                                  "（alpaca：instruction/input/output；sharegpt：from/value 对话；messages：role/content；prompt/completion）。"},
    "data.bad_records": {"en": "Dataset {path}: {count} malformed record(s), e.g. {where}. Fix them, or train on the "
                               "others: run the same command again with --set choose_strategy.bad_records=skip added.",
                         "zh": "数据集 {path}：{count} 条记录格式有误，例如 {where}。请修正它们，或只用其余记录训练："
                               "在同一条命令后加上 --set choose_strategy.bad_records=skip 再运行一次。"},
    "data.bad_at": {"en": "{at} ({why})", "zh": "{at}（{why}）"},
    "data.all_bad": {"en": "Dataset {path}: all {count} record(s) are malformed, so skipping them leaves none, e.g. "
                           "{where}. Fix the records.",
                     "zh": "数据集 {path}：全部 {count} 条记录格式有误，跳过后一条不剩，例如 {where}。请修正这些记录。"},
    "data.not_prompts": {"en": "Dataset {path} holds no prompts for GRPO: give records with prompt (text or messages) "
                               "and an optional answer (also solution or ground_truth), or GSM8K's question/answer — "
                               "without replies of their own.",
                         "zh": "数据集 {path} 中没有可用于 GRPO 的提示：请给出含 prompt（文本或消息）及可选 answer"
                               "（或 solution、ground_truth）的记录，或 GSM8K 的 question/answer——不带现成回答。"},
    "data.why.not_a_prompt": {"en": "not a prompt record (keys {keys}): a reply of its own makes it SFT or preference "
                                    "data",
                              "zh": "不是提示记录（字段 {keys}）：自带回答的记录属于 SFT 或偏好数据"},
    "data.why.answer_not_text": {"en": "'answer' is {value}, not text or a number",
                                 "zh": "“answer”为 {value}，不是文本或数字"},
    "data.why.answer_too_long": {"en": "the answer has {n} characters, more than {most}",
                                 "zh": "答案有 {n} 个字符，超过 {most}"},
    "data.why.gsm8k_no_mark": {"en": "a GSM8K answer without its final '#### N'",
                               "zh": "GSM8K 答案缺少结尾的“#### N”"},
    "data.why.not_json": {"en": "not JSON", "zh": "不是 JSON"},
    "data.why.not_object": {"en": "not a JSON object", "zh": "不是 JSON 对象"},
    "data.why.lacks": {"en": "a record of format {format} without {fields}", "zh": "缺少 {fields} 的 {format} 格式记录"},
    "data.why.other_format": {"en": "format {found} in a file of format {format} (keys {keys}): one format per file",
                              "zh": "{format} 文件中的 {found} 格式记录（字段 {keys}）：每个文件只能有一种格式"},
    "data.why.empty": {"en": "'{field}' is empty or missing", "zh": "“{field}”为空或缺失"},
    "data.why.not_text": {"en": "'{field}' is not text", "zh": "“{field}”不是文本"},
    "data.why.turn_not_object": {"en": "a turn that is not an object", "zh": "某个对话轮次不是对象"},
    "data.why.no_role": {"en": "a turn without '{key}'", "zh": "某个对话轮次缺少“{key}”"},
    "data.why.no_format": {"en": "keys {keys}: not a record of format {format} (nor of another format yichui reads)",
                           "zh": "字段 {keys}：不是 {format} 格式的记录（也不是 yichui 能读的其他格式）"},
    "data.why.bad_role": {"en": "{key} {role!r} is not one of {roles}", "zh": "{key} {role!r} 不是 {roles} 之一"},
    "data.why.bad_part": {"en": "a content part of type {kind!r} (text or image only)",
                          "zh": "类型为 {kind!r} 的内容片段（只能是 text 或 image）"},
    "data.why.no_user_turn": {"en": "no user turn", "zh": "没有用户轮次"},
    "data.why.last_not_assistant": {"en": "the last turn is the {role}'s, not the assistant's",
                                    "zh": "最后一轮属于 {role}，而不是 assistant"},
    "data.why.bad_unicode": {"en": "'{field}' holds text that is not valid Unicode (a lone surrogate such as \\ud800)",
                             "zh": "“{field}”包含无效的 Unicode 文本（例如单独的代理项 \\ud800）"},
    "data.why.last_not": {"en": "'{field}' ends with the {role}'s turn, not the {wanted}'s",
                          "zh": "“{field}”以 {role} 的轮次结尾，而不是 {wanted} 的"},
    "data.why.label_not_bool": {"en": "'label' is {value}, not true or false", "zh": "“label”为 {value}，不是 true 或 false"},
    "data.why.no_shared_prompt": {"en": "chosen and rejected share no prompt ending with the user's turn",
                                  "zh": "chosen 与 rejected 没有以用户轮次结尾的共同提示"},
    "data.why.chosen_is_rejected": {"en": "chosen and rejected are the same", "zh": "chosen 与 rejected 完全相同"},
    "data.not_preference": {"en": "Dataset {path} holds no preference records: give prompt/chosen/rejected (text or "
                                  "messages), chosen/rejected conversations, or prompt/completion/label.",
                            "zh": "数据集 {path} 中没有偏好数据：请给出 prompt/chosen/rejected（文本或消息列表）、"
                                  "chosen/rejected 对话，或 prompt/completion/label。"},
    "data.why.shape": {"en": "an unexpected shape ({error})", "zh": "结构不符合预期（{error}）"},
    "data.why.placeholders_over_images": {"en": "more image placeholders than images", "zh": "图片占位符多于图片"},
    "data.why.images_over_placeholders": {"en": "{n} image(s) more than placeholders", "zh": "图片比占位符多 {n} 张"},
    "data.why.inline_not_base64": {"en": "an inline data: image that is not base64", "zh": "内嵌 data: 图片不是 base64"},
    "data.why.remote_image": {"en": "remote image {src} (download it and give the file)",
                              "zh": "远程图片 {src}（请下载后给出文件）"},
    "data.why.image_not_found": {"en": "image {src} not found", "zh": "找不到图片 {src}"},
    "data.why.image_not_path": {"en": "an image that is neither a path nor bytes", "zh": "图片既不是路径也不是字节"},
    "data.why.image_unreadable": {"en": "image {name} unreadable ({error})", "zh": "图片 {name} 无法读取（{error}）"},
    "data.not_text_at": {"en": "Dataset {path} is not UTF-8 text: line {line} (byte {byte}) is not. Save it as UTF-8 "
                               "(e.g. iconv -f GBK -t UTF-8), or remove that line.",
                         "zh": "数据集 {path} 不是 UTF-8 文本：第 {line} 行（第 {byte} 字节）不是。请另存为 UTF-8"
                               "（如 iconv -f GBK -t UTF-8），或删除该行。"},
    "data.is_folder": {"en": "{path} is a folder without a metadata.jsonl (or .json, .csv, .parquet) naming its images: give a .json, .jsonl, .csv or .parquet file, or an image folder with one.",
                       "zh": "{path} 是目录，且没有列出图片的 metadata.jsonl（或 .json、.csv、.parquet）：请提供 .json、.jsonl、.csv 或 .parquet 文件，或带此文件的图片目录。"},
    "data.bad_records_found": {"en": "{count} of {total} records are malformed, e.g. {where}.", "zh": "{total} 条记录中有 {count} 条格式有误，例如 {where}。"},
    "data.bad_table": {"en": "Dataset {path} cannot be read as a table: {error}", "zh": "数据集 {path} 无法按表格读取：{error}"},
    "data.bad_suffix": {"en": "Dataset {path}: use one of {suffixes} (append #N for a random sample).", "zh": "数据集 {path}：请使用 {suffixes} 之一（加 #N 表示随机抽样）。"},
}
