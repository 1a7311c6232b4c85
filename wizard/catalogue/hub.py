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
    "hub.unreachable": {"en": "Cannot reach {endpoint} ({error}). Check the network, use a mirror (e.g. "
                              "https://hf-mirror.com; HF_ENDPOINT / MODELSCOPE_ENDPOINT set the default), or files "
                              "already on disk (a local model folder or dataset file).",
                        "zh": "无法连接 {endpoint}（{error}）。请检查网络、使用镜像（例如 https://hf-mirror.com；"
                              "HF_ENDPOINT / MODELSCOPE_ENDPOINT 可设默认值），或使用本地已有的文件（模型目录或数据集文件）。"},
    "hub.empty_listing": {"en": "{endpoint} lists no files for this repository and revision: check the id and the "
                                "revision on the hub, or use another endpoint.",
                          "zh": "{endpoint} 没有列出该仓库此版本的任何文件：请在 Hub 上核对 ID 和版本，或换一个端点。"},
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
}
