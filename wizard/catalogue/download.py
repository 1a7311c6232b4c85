"""Messages of the download step (keys ``download.*``), English and Chinese."""

MESSAGES = {
    "download.code_changed": {"en": "{repo} moved from commit {approved}, whose code you approved, to {now}: its code may have changed and was not run. Choose the model again (yichui run), or pin the revision to {approved}.",
                              "zh": "{repo} 已从你同意运行其代码的提交 {approved} 变为 {now}：代码可能已改变，未被运行。请重新选择模型（yichui run），或把版本固定为 {approved}。"},
    "download.local_dir": {"en": "Download into folder:", "zh": "下载到目录："},
    "download.local": {"en": "Using the local model in {path}; nothing to download.", "zh": "使用本地模型 {path}，无需下载。"},
    "download.metadata_progress": {"en": "Small files of {repo} (config, tokenizer, chat template; no weights)",
                                   "zh": "{repo} 的小文件（配置、分词器、对话模板；不含权重）"},
    "download.plan": {"en": "{n} file(s), {size}, of {repo} at commit {commit} into {path} ({left} still to fetch).",
                      "zh": "{repo}（提交 {commit}）的 {n} 个文件，共 {size}，下载到 {path}（还需下载 {left}）。"},
    "download.resuming": {"en": "{size} already on disk (fetched earlier) are kept, not fetched again.",
                          "zh": "磁盘上已有的 {size}（之前下载的）保留，不再重新下载。"},
    "download.progress": {"en": "Downloading {repo}", "zh": "正在下载 {repo}"},
    "download.verify": {"en": "Checking the files of {repo} (nothing left to fetch)",
                        "zh": "正在校验 {repo} 的文件（无需再下载）"},
    "download.no_space": {"en": "Not enough disk in {path}: {need} needed, {free} free. Free space or choose "
                                "another folder (--set download.local_dir=...).",
                          "zh": "{path} 磁盘空间不足：需要 {need}，仅剩 {free}。请清理空间或换目录（--set download.local_dir=...）。"},
    "download.bad_hash": {"en": "{file} did not match its hash twice; it was removed — the hub may be serving a broken file; run again later.",
                          "zh": "{file} 两次校验都不符，已删除——仓库可能提供了损坏的文件；请稍后再试。"},
    "download.nothing_selected": {"en": "No file of {repo} ({n} listed) matches the selection: check --include / --exclude.",
                                  "zh": "{repo} 的文件（共 {n} 个）都不符合选择条件：请检查 --include / --exclude。"},
    "download.describing": {"en": "The hub's listing gives no size for {n} file(s); asking the hub for each (HEAD).",
                            "zh": "Hub 的文件列表没有给出 {n} 个文件的大小；逐个向 Hub 查询（HEAD）。"},
    "download.broken_in_repo": {"en": "{file} arrived exactly as the hub lists it (its hash matches), but it is not a "
                                      "valid safetensors file: the repository itself holds a broken file. Choose "
                                      "another revision or model, or tell its authors; fetching again will not help.",
                                "zh": "{file} 与 hub 列出的完全一致（哈希吻合），但不是有效的 safetensors 文件：仓库本身的文件已损坏。"
                                      "请换一个版本或模型，或告知其作者；重新下载也无济于事。"},
    "download.bad_weights": {"en": "{file} arrived twice with a header that does not parse as safetensors; it was "
                                   "removed — the hub may be serving a broken file; run again later, or another "
                                   "endpoint (a mirror).",
                             "zh": "{file} 两次下载后其头部都无法按 safetensors 解析，已删除——hub 可能提供了损坏的文件；"
                                   "请稍后重试，或换一个端点（镜像）。"},
    "download.size_only": {"en": "No hash is known for {n} file(s) ({files}): they are checked by size only.",
                           "zh": "{n} 个文件（{files}）没有可用的哈希值：只按大小校验。"},
    "download.size_unknown": {"en": "The hub gives no size for {file}, neither in its listing nor in the file's headers "
                                    "({url}): it cannot be verified, so it is not downloaded — use another endpoint "
                                    "(HF_ENDPOINT / MODELSCOPE_ENDPOINT or select_model.endpoint).",
                              "zh": "Hub 没有给出 {file} 的大小（列表和文件头 {url} 中都没有）：无法校验，因此不下载——请换一个端点"
                                    "（HF_ENDPOINT / MODELSCOPE_ENDPOINT 或 select_model.endpoint）。"},
    "download.rate_limited": {"en": "The hub keeps answering 429 (too many requests) for {file}; what was fetched is "
                                    "kept — wait about {seconds} s, then resume (a token raises the hub's limits).",
                              "zh": "Hub 对 {file} 持续返回 429（请求过多）；已下载的部分保留——约 {seconds} 秒后再继续"
                                    "（使用 token 可提高 Hub 的限额）。"},
    "download.link_expired": {"en": "Storage at {host} keeps refusing {file} (HTTP {status}) through fresh links from "
                                    "the hub; what was fetched is kept — check the machine's clock, then resume.",
                              "zh": "存储服务 {host} 持续拒绝 {file}（HTTP {status}），即使 Hub 给了新的链接；已下载的部分保留——"
                                    "请检查本机时钟，然后继续。"},
    "download.busy": {"en": "Another process (pid {pid}) is downloading into {path}; let it finish (or stop it), then "
                            "run this again — nothing was touched.",
                      "zh": "另一个进程（pid {pid}）正在向 {path} 下载；请等它结束（或停止它）后再运行——未做任何改动。"},
    "download.size_mismatch": {"en": "{file}: the hub described it as {expected} bytes but serves another size ({got}); "
                                      "what was fetched is kept — the listing or the server is inconsistent: try again "
                                      "later or use another endpoint.",
                                "zh": "{file}：Hub 描述其大小为 {expected} 字节，实际提供的却是另一个大小（{got}）；已下载的部分保留——"
                                      "列表或服务器前后不一致：请稍后重试或换一个端点。"},
    "download.refetch": {"en": "{file} did not match its hash; fetching it again once.", "zh": "{file} 校验不符，重新下载一次。"},
    "download.unsafe_path": {"en": "The hub lists a file named {path!r}, which is no safe file name (it leaves the model folder, or has an empty, '.' or '..' part); refused: the listing is damaged or hostile — use another endpoint.",
                             "zh": "仓库列出的文件名 {path!r} 不是安全的文件名（会写到模型目录之外，或含空、'.'、'..' 段）；已拒绝：列表已损坏或不可信——请换一个地址。"},
    "download.range_ignored": {"en": "{file}: the server ignores Range requests and the whole-file stream broke {n} times; it cannot be fetched in pieces from there — use another endpoint (the other files are kept).",
                               "zh": "{file}：服务器忽略 Range 请求，整文件下载又中断了 {n} 次，无法从那里分段获取——请换一个地址（其他文件已保留）。"},
    "download.gated": {"en": "{file}: access to this repository must be requested first ({url}); then set HF_TOKEN.",
                       "zh": "{file}：需要先申请此仓库的访问权限（{url}），然后设置 HF_TOKEN。"},
    "download.denied": {"en": "{file}: access denied (HTTP {status}) by {url}: set a token with access (HF_TOKEN / MODELSCOPE_API_TOKEN).",
                        "zh": "{file}：{url} 拒绝访问（HTTP {status}）：请设置有权限的令牌（HF_TOKEN / MODELSCOPE_API_TOKEN）。"},
    "download.not_found": {"en": "{file} is not on the hub ({url}): the repository or revision changed.",
                           "zh": "仓库中没有 {file}（{url}）：仓库或版本已改变。"},
    "download.http": {"en": "{file}: unexpected HTTP {status} from the hub.", "zh": "{file}：仓库返回了意外的 HTTP {status}。"},
    "download.network": {"en": "{file}: fetching failed several times in a row ({error}); what was fetched is kept — run the same command again to continue.",
                         "zh": "{file}：连续多次获取失败（{error}）；已下载的部分保留——再次运行同一命令即可续传。"},
    "download.disk_full": {"en": "{file}: the disk under {path} is full; the partial file is kept — free space, then resume.",
                           "zh": "{file}：{path} 所在磁盘已满；部分文件已保留——释放空间后续传。"},
    "download.compare_mirrors": {"en": "Compare the speed of other endpoints first (comma-separated URLs, or none):",
                                 "zh": "先比较其他地址的速度（以逗号分隔的 URL，或 none）："},
    "download.mirrors": {"en": "Endpoints, fastest first (one small file each)", "zh": "各地址速度（每个取一个小文件），快者在前"},
    "download.faster_mirror": {"en": "{endpoint} answered faster; to use it: yichui replay {id} --set select_model.endpoint={endpoint}",
                               "zh": "{endpoint} 更快；如需改用：yichui replay {id} --set select_model.endpoint={endpoint}"},
}
