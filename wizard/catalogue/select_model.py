"""Messages of the select_model step (keys ``select_model.*``), English and Chinese."""

MESSAGES = {
    "select_model.local_incomplete": {"en": "{path} is not a whole model: no {missing}. A local model needs config.json, "
                                            "a tokenizer with a chat template, and its weights.",
                                      "zh": "{path} 不是完整的模型：缺少 {missing}。本地模型需要 config.json、带对话模板的分词器以及权重。"},
    "select_model.missing_fields": {"en": "{model}: config.json does not state {fields}; transformers would use its "
                                          "own default (another model's size). Use the model's complete config.json.",
                                    "zh": "{model}：config.json 未写明 {fields}；transformers 会改用其默认值（另一个模型的尺寸）。"
                                          "请使用该模型完整的 config.json。"},
    "select_model.source": {"en": "Where does the model come from?", "zh": "模型来自哪里？"},
    "select_model.source.hf": {"en": "Hugging Face (or a mirror)", "zh": "Hugging Face（或镜像）"},
    "select_model.source.modelscope": {"en": "ModelScope", "zh": "ModelScope（魔搭）"},
    "select_model.source.local": {"en": "A local folder", "zh": "本地目录"},
    "select_model.source.endpoint": {"en": "An OpenAI-compatible endpoint (no weights)", "zh": "一个 OpenAI 兼容的服务端点（无权重）"},
    "select_model.endpoint_url": {"en": "Endpoint URL (…/v1):", "zh": "服务端点网址（…/v1）："},
    "select_model.custom_code": {"en": "{repo} ships its own Python code (auto_map: {classes}); yichui runs it only after an explicit yes: read the code, then answer yes (--set select_model.trust_remote_code=yes), or choose a model transformers supports natively.",
                                 "zh": "{repo} 自带 Python 代码（auto_map：{classes}）；yichui 只在明确同意后才运行它：请先阅读代码，再回答 yes（--set select_model.trust_remote_code=yes），或选择 transformers 原生支持的模型。"},
    "select_model.trust_remote_code": {"en": "This model ships its own Python code (auto_map), which runs with your user's rights in every step that loads the model. Read it first. Run it?",
                                       "zh": "此模型自带 Python 代码（auto_map），凡加载模型的步骤都会以你的用户权限运行它。请先阅读代码。要运行它吗？"},
    "select_model.custom_code_trusted": {"en": "Running the model's own code, as you answered: {files} of {repo} at commit {commit} (recorded in the session with their sha256).",
                                         "zh": "按你的回答运行模型自带代码：{repo} 在提交 {commit} 的 {files}（已连同 sha256 记入会话）。"},
    "select_model.endpoint_unreachable": {"en": "No OpenAI-compatible server answers at {url} ({error}): start it, or check the URL (it ends with /v1).",
                                          "zh": "{url} 没有 OpenAI 兼容服务响应（{error}）：请先启动它，或检查网址（以 /v1 结尾）。"},
    "select_model.endpoint": {"en": "Hub endpoint (mirror URL):", "zh": "仓库地址（镜像 URL）："},
    "select_model.model": {"en": "Which model?", "zh": "选择哪个模型？"},
    "select_model.model.other": {"en": "Another hub id …", "zh": "其他仓库 ID……"},
    "select_model.model_id": {"en": "Hub id (org/name):", "zh": "仓库 ID（组织/名称）："},
    "select_model.path": {"en": "Folder of the model:", "zh": "模型所在目录："},
    "select_model.revision": {"en": "Revision (branch, tag or commit):", "zh": "版本（分支、标签或提交号）："},
    "select_model.table": {"en": "Model", "zh": "模型"},
    "select_model.bad_id": {"en": "{value!r} is not a hub id: write it as org/name.", "zh": "{value!r} 不是仓库 ID：格式应为 组织/名称。"},
    "select_model.bad_revision": {"en": "{value!r} is not a revision: give a branch, tag or commit hash (e.g. main, "
                                        "v1.0, 4f3c2a1).",
                                  "zh": "{value!r} 不是有效的版本：请给出分支、标签或提交哈希（如 main、v1.0、4f3c2a1）。"},
    "select_model.bad_endpoint": {"en": "{value!r} is not a valid http(s) URL (a host, and a port from 1 to 65535 if one "
                                        "is given).",
                                  "zh": "{value!r} 不是有效的 http(s) 网址（需有主机名；若写端口须在 1 到 65535 之间）。"},
    "select_model.not_on_source": {"en": "{model} is not published on {source}.", "zh": "{model} 未在 {source} 上发布。"},
    "select_model.tag.vision": {"en": "(vision-language)", "zh": "（视觉语言）"},
    "select_model.tag.demo": {"en": "(demo model, local demo hub)", "zh": "（演示模型，本地演示 Hub）"},
    "select_model.tag.demo_vision": {"en": "(vision-language demo model, local demo hub)",
                                     "zh": "（视觉语言演示模型，本地演示 Hub）"},
    "select_model.asked_if.other": {"en": "with select_model.model=other (then select_model.model_id is the hub id)",
                                    "zh": "select_model.model=other（此时 select_model.model_id 为仓库 ID）"},
    "select_model.id_as_model": {"en": "{model} is a hub id, not a name of the catalogue: give it as "
                                       "--set select_model.model=other --set select_model.model_id={model}",
                                 "zh": "{model} 是仓库 ID，不是目录中的名称：请写作 "
                                       "--set select_model.model=other --set select_model.model_id={model}"},
    "select_model.fetching_offline": {"en": "Looking for config.json of {repo} in the local cache (HF_HUB_OFFLINE is "
                                            "set) …",
                                      "zh": "正在本地缓存中查找 {repo} 的 config.json（已设置 HF_HUB_OFFLINE）……"},
    "select_model.fetching": {"en": "Reading config.json of {repo} from {endpoint} …", "zh": "正在从 {endpoint} 读取 {repo} 的 config.json……"},
}
