"""Messages of session files (keys ``session.*``), English and Chinese."""

MESSAGES = {
    "session.invalid": {"en": "Session file {path} is not a valid yichui session: {what}. It was left untouched; "
                              "fix it by hand or start a new session.",
                        "zh": "会话文件 {path} 不是有效的 yichui 会话：{what}。文件未被改动；请手动修复或开始新会话。"},
    "session.unreadable": {"en": "Cannot read the session file {path}: {error}. Check the path (a link that points "
                                 "at itself?) and its permissions.",
                           "zh": "无法读取会话文件 {path}：{error}。请检查路径（是否为指向自身的链接？）及其权限。"},
    "session.ambiguous": {"en": "{path} is part of several session ids ({ids}): give more of the one you mean.",
                          "zh": "{path} 同时是多个会话 ID 的一部分（{ids}）：请多给出几位。"},
    "session.not_found": {"en": "No session {path}: give a session id or a path (`yichui show --all` lists them).",
                          "zh": "找不到会话 {path}：请给出会话 ID 或路径（`yichui show --all` 列出全部会话）。"},
    "session.not_json": {"en": "Session file {path} is not valid JSON (line {line}, column {col}: {error}). "
                               "It was left untouched; fix it by hand or start a new session.",
                         "zh": "会话文件 {path} 不是有效的 JSON（第 {line} 行第 {col} 列：{error}）。文件未被改动；请手动修复或开始新会话。"},
    "session.newer": {"en": "Session file {path} has schema version {version}, newer than this yichui knows ({known}): "
                            "upgrade yichui to open it.",
                      "zh": "会话文件 {path} 的格式版本为 {version}，比当前 yichui 支持的（{known}）更新：请升级 yichui 后再打开。"},
    "session.no_migration": {"en": "Session file {path} has schema version {version}, which no migration covers.",
                             "zh": "会话文件 {path} 的格式版本为 {version}，没有对应的迁移。"},
    "session.locked": {"en": "Session {path} is open in another yichui (pid {pid}); close that one first.",
                       "zh": "会话 {path} 正被另一个 yichui（pid {pid}）使用；请先关闭它。"},
    "session.none": {"en": "No sessions in {home} yet: start one with `yichui` or `yichui demo`.",
                     "zh": "{home} 中还没有会话：用 `yichui` 或 `yichui demo` 开始。"},
    "session.none_unfinished": {"en": "No unfinished session in {home}: `yichui` starts a new one.",
                                "zh": "{home} 中没有未完成的会话：运行 `yichui` 开始新会话。"},
    "session.not_a_file": {"en": "{path} is not a regular file (a device, pipe or socket): give a session id or a "
                                 "session file's path (`yichui show --all` lists them).",
                           "zh": "{path} 不是普通文件（设备、管道或套接字）：请给出会话 id 或会话文件路径（`yichui show --all` 会列出）。"},
    "session.too_large": {"en": "{path} is {mib} MiB, larger than any session file ({limit} MiB at most): it was not "
                                "read. Give a session id or a session file's path (`yichui show --all` lists them).",
                          "zh": "{path} 有 {mib} MiB，超过任何会话文件的大小（最多 {limit} MiB），未读取。请给出会话 id 或会话文件路径"
                                "（`yichui show --all` 会列出）。"},
    "session.is_folder": {"en": "{path} is a folder, not a session file.", "zh": "{path} 是目录，不是会话文件。"},
    "session.not_text": {"en": "Session file {path} is not UTF-8 text. It was left untouched; fix it by hand or start a new session.",
                         "zh": "会话文件 {path} 不是 UTF-8 文本。文件未被改动；请手动修复或开始新会话。"},
}
