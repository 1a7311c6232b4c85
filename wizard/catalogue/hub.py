"""Messages of the model hubs (keys ``hub.*``), English and Chinese."""

MESSAGES = {
    "hub.no_such_model": {"en": "No such model: {repo} on {endpoint}. Check the id (org/name) or the source.",
                          "zh": "没有这个模型：{endpoint} 上不存在 {repo}。请检查 ID（组织/名称）或来源。"},
    "hub.no_such_dataset": {"en": "No such dataset: {repo} on {endpoint}. Check the id (org/name) or the source.",
                            "zh": "没有这个数据集：{endpoint} 上不存在 {repo}。请检查 ID（组织/名称）或来源。"},
    "hub.denied": {"en": "{endpoint} refuses access to {repo}: set {token} to a token that may read it.",
                   "zh": "{endpoint} 拒绝访问 {repo}：请把 {token} 设为有读取权限的令牌。"},
    "hub.missing_or_private": {"en": "{endpoint} shows no {repo} without a token: check the id (org/name), or, for a "
                                     "private repository, set {token} to a token that may read it.",
                               "zh": "未带令牌时 {endpoint} 上看不到 {repo}：请检查 ID（组织/名称）；若是私有仓库，请把 {token} "
                                     "设为有读取权限的令牌。"},
    "hub.token_refused": {"en": "{endpoint} refuses the token in {token} for {repo}: check that it is valid and may read "
                                "this repository (and that the id is right).",
                          "zh": "{endpoint} 不接受 {token} 中的令牌访问 {repo}：请确认令牌有效且有读取权限（并核对 ID）。"},
    "hub.gated": {"en": "{repo} on {endpoint} is gated: ask for access at {endpoint}/{repo} (accept its licence "
                        "there), then set HF_TOKEN to a token of that account.",
                  "zh": "{repo}（{endpoint}）需要授权：请在 {endpoint}/{repo} 申请访问（同意其许可），再把 HF_TOKEN "
                        "设为该账号的令牌。"},
    "hub.no_such_revision": {"en": "{repo} has no revision {revision!r}: use a branch, tag or commit that exists.",
                             "zh": "{repo} 没有版本 {revision!r}：请使用存在的分支、标签或提交号。"},
    "hub.no_config": {"en": "{repo} has no config.json: it is not a transformers model.",
                      "zh": "{repo} 没有 config.json：它不是 transformers 模型。"},
    "hub.cache_unwritable": {"en": "The hub client cannot write its cache: {path} ({error}). Make that folder "
                                   "writable, or point {var} at one that is.",
                             "zh": "hub 客户端无法写入其缓存：{path}（{error}）。请让该文件夹可写，或把 {var} 指向可写的文件夹。"},
    "hub.offline": {"en": "{repo} is not on this machine and offline mode is on (HF_HUB_OFFLINE=1): unset "
                          "HF_HUB_OFFLINE to download it, or give a local model folder.",
                    "zh": "{repo} 不在本机，且已开启离线模式（HF_HUB_OFFLINE=1）：取消 HF_HUB_OFFLINE 以下载，"
                          "或指定本地模型文件夹。"},
    "hub.unreachable": {"en": "Cannot reach {endpoint} ({error}). Check the network, use a mirror (e.g. "
                              "https://hf-mirror.com; HF_ENDPOINT / MODELSCOPE_ENDPOINT set the default), or files "
                              "already on disk (a local model folder or dataset file).",
                        "zh": "无法连接 {endpoint}（{error}）。请检查网络、使用镜像（例如 https://hf-mirror.com；"
                              "HF_ENDPOINT / MODELSCOPE_ENDPOINT 可设默认值），或使用本地已有的文件（模型目录或数据集文件）。"},
    "hub.empty_listing": {"en": "{endpoint} lists no files for this repository and revision: check the id and the "
                                "revision on the hub, or use another endpoint.",
                          "zh": "{endpoint} 没有列出该仓库此版本的任何文件：请在 Hub 上核对 ID 和版本，或换一个端点。"},
    "hub.api_rate_limited": {"en": "{endpoint} is limiting requests (HTTP 429 Too Many Requests, {tries} tries): wait a "
                               "few minutes and resume, or set a token ({var}): logged-in requests get a higher limit.",
                         "zh": "{endpoint} 正在限制请求频率（HTTP 429 Too Many Requests，已尝试 {tries} 次）：请等几分钟后 "
                               "resume，或设置令牌（{var}）：登录后的请求限额更高。"},
    "hub.bad_answer": {"en": "{endpoint} answers, but not as a model hub does ({error}): check that it is a "
                             "hub or a mirror's base URL (e.g. https://hf-mirror.com).",
                       "zh": "{endpoint} 有应答，但不像模型仓库（{error}）：请确认它是模型仓库或镜像的根地址（例如 https://hf-mirror.com）。"},
    "hub.file_not_folder": {"en": "{path} is a file, not a folder: give the folder of a transformers model (the one "
                                  "holding config.json, e.g. {folder}).",
                            "zh": "{path} 是文件而不是文件夹：请给出 transformers 模型的文件夹（包含 config.json 的那个，例如 {folder}）。"},
    "hub.not_a_folder": {"en": "{path} is not a folder: give the folder of a transformers model (the one holding "
                               "config.json).",
                         "zh": "{path} 不是文件夹：请给出 transformers 模型的文件夹（包含 config.json 的那个）。"},
    "hub.no_such_folder": {"en": "{path} does not exist: give the folder of a transformers model.",
                           "zh": "{path} 不存在：请给出 transformers 模型所在的目录。"},
    "hub.no_local_model": {"en": "{path} holds no config.json: give the folder of a transformers model.",
                           "zh": "{path} 中没有 config.json：请给出 transformers 模型所在的目录。"},
    "hub.unknown_source": {"en": "Unknown source {source!r}; sources are: {sources}.",
                           "zh": "未知来源 {source!r}；可用来源：{sources}。"},
    "hub.bad_config": {"en": "config.json of {repo} is not valid JSON: {error}.", "zh": "{repo} 的 config.json 不是有效的 JSON：{error}。"},
    "hub.metadata_progress": {"en": "Small files of {repo} (config, tokenizer, chat template; no weights)",
                                   "zh": "{repo} 的小文件（配置、分词器、对话模板；不含权重）"},
    "hub.plan": {"en": "{n} file(s), {size}, of {repo} at commit {commit} into {path} ({left} still to fetch).",
                      "zh": "{repo}（提交 {commit}）的 {n} 个文件，共 {size}，下载到 {path}（还需下载 {left}）。"},
    "hub.resuming": {"en": "{size} already on disk (fetched earlier) are kept, not fetched again.",
                          "zh": "磁盘上已有的 {size}（之前下载的）保留，不再重新下载。"},
    "hub.progress": {"en": "Downloading {repo}", "zh": "正在下载 {repo}"},
    "hub.verify": {"en": "Checking the files of {repo} (nothing left to fetch)",
                        "zh": "正在校验 {repo} 的文件（无需再下载）"},
    "hub.no_space": {"en": "Not enough disk in {path}: {need} needed, {free} free. Free space or choose "
                                "another folder (--set download.local_dir=...).",
                          "zh": "{path} 磁盘空间不足：需要 {need}，仅剩 {free}。请清理空间或换目录（--set download.local_dir=...）。"},
    "hub.bad_hash": {"en": "{file} did not match its hash twice; it was removed — the hub may be serving a broken file; run again later.",
                          "zh": "{file} 两次校验都不符，已删除——仓库可能提供了损坏的文件；请稍后再试。"},
    "hub.nothing_selected": {"en": "No file of {repo} ({n} listed) matches the selection: check --include / --exclude.",
                                  "zh": "{repo} 的文件（共 {n} 个）都不符合选择条件：请检查 --include / --exclude。"},
    "hub.describing": {"en": "The hub's listing gives no size for {n} file(s); asking the hub for each (HEAD).",
                            "zh": "Hub 的文件列表没有给出 {n} 个文件的大小；逐个向 Hub 查询（HEAD）。"},
    "hub.broken_in_repo": {"en": "{file} arrived exactly as the hub lists it (its hash matches), but it is not a "
                                      "valid safetensors file: the repository itself holds a broken file. Choose "
                                      "another revision or model, or tell its authors; fetching again will not help.",
                                "zh": "{file} 与 hub 列出的完全一致（哈希吻合），但不是有效的 safetensors 文件：仓库本身的文件已损坏。"
                                      "请换一个版本或模型，或告知其作者；重新下载也无济于事。"},
    "hub.bad_weights": {"en": "{file} arrived twice with a header that does not parse as safetensors; it was "
                                   "removed — the hub may be serving a broken file; run again later, or another "
                                   "endpoint (a mirror).",
                             "zh": "{file} 两次下载后其头部都无法按 safetensors 解析，已删除——hub 可能提供了损坏的文件；"
                                   "请稍后重试，或换一个端点（镜像）。"},
    "hub.size_only": {"en": "No hash is known for {n} file(s) ({files}): they are checked by size only.",
                           "zh": "{n} 个文件（{files}）没有可用的哈希值：只按大小校验。"},
    "hub.size_unknown": {"en": "The hub gives no size for {file}, neither in its listing nor in the file's headers "
                                    "({url}): it cannot be verified, so it is not downloaded — use another endpoint "
                                    "(HF_ENDPOINT / MODELSCOPE_ENDPOINT or select_model.endpoint).",
                              "zh": "Hub 没有给出 {file} 的大小（列表和文件头 {url} 中都没有）：无法校验，因此不下载——请换一个端点"
                                    "（HF_ENDPOINT / MODELSCOPE_ENDPOINT 或 select_model.endpoint）。"},
    "hub.rate_limited": {"en": "The hub keeps answering 429 (too many requests) for {file}; what was fetched is "
                                    "kept — wait about {seconds} s, then resume (a token raises the hub's limits).",
                              "zh": "Hub 对 {file} 持续返回 429（请求过多）；已下载的部分保留——约 {seconds} 秒后再继续"
                                    "（使用 token 可提高 Hub 的限额）。"},
    "hub.link_expired": {"en": "Storage at {host} keeps refusing {file} (HTTP {status}) through fresh links from "
                                    "the hub; what was fetched is kept — check the machine's clock, then resume.",
                              "zh": "存储服务 {host} 持续拒绝 {file}（HTTP {status}），即使 Hub 给了新的链接；已下载的部分保留——"
                                    "请检查本机时钟，然后继续。"},
    "hub.busy": {"en": "Another process (pid {pid}) is downloading into {path}; let it finish (or stop it), then "
                            "run this again — nothing was touched.",
                      "zh": "另一个进程（pid {pid}）正在向 {path} 下载；请等它结束（或停止它）后再运行——未做任何改动。"},
    "hub.size_mismatch": {"en": "{file}: the hub described it as {expected} bytes but serves another size ({got}); "
                                      "what was fetched is kept — the listing or the server is inconsistent: try again "
                                      "later or use another endpoint.",
                                "zh": "{file}：Hub 描述其大小为 {expected} 字节，实际提供的却是另一个大小（{got}）；已下载的部分保留——"
                                      "列表或服务器前后不一致：请稍后重试或换一个端点。"},
    "hub.refetch": {"en": "{file} did not match its hash; fetching it again once.", "zh": "{file} 校验不符，重新下载一次。"},
    "hub.unsafe_path": {"en": "The hub lists a file named {path!r}, which is no safe file name (it leaves the model folder, or has an empty, '.' or '..' part); refused: the listing is damaged or hostile — use another endpoint.",
                             "zh": "仓库列出的文件名 {path!r} 不是安全的文件名（会写到模型目录之外，或含空、'.'、'..' 段）；已拒绝：列表已损坏或不可信——请换一个地址。"},
    "hub.range_ignored": {"en": "{file}: the server ignores Range requests and the whole-file stream broke {n} times; it cannot be fetched in pieces from there — use another endpoint (the other files are kept).",
                               "zh": "{file}：服务器忽略 Range 请求，整文件下载又中断了 {n} 次，无法从那里分段获取——请换一个地址（其他文件已保留）。"},
    "hub.download_gated": {"en": "{file}: access to this repository must be requested first ({url}); then set HF_TOKEN.",
                       "zh": "{file}：需要先申请此仓库的访问权限（{url}），然后设置 HF_TOKEN。"},
    "hub.download_denied": {"en": "{file}: access denied (HTTP {status}) by {url}: set a token with access (HF_TOKEN / MODELSCOPE_API_TOKEN).",
                        "zh": "{file}：{url} 拒绝访问（HTTP {status}）：请设置有权限的令牌（HF_TOKEN / MODELSCOPE_API_TOKEN）。"},
    "hub.not_found": {"en": "{file} is not on the hub ({url}): the repository or revision changed.",
                           "zh": "仓库中没有 {file}（{url}）：仓库或版本已改变。"},
    "hub.http": {"en": "{file}: unexpected HTTP {status} from the hub.", "zh": "{file}：仓库返回了意外的 HTTP {status}。"},
    "hub.network": {"en": "{file}: fetching failed several times in a row ({error}); what was fetched is kept — run the same command again to continue.",
                         "zh": "{file}：连续多次获取失败（{error}）；已下载的部分保留——再次运行同一命令即可续传。"},
    "hub.disk_full": {"en": "{file}: the disk under {path} is full; the partial file is kept — free space, then resume.",
                           "zh": "{file}：{path} 所在磁盘已满；部分文件已保留——释放空间后续传。"},
}
