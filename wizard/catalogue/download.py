"""Messages of the download step (keys ``download.*``), English and Chinese."""

MESSAGES = {
    "download.code_changed": {"en": "{repo} moved from commit {approved}, whose code you approved, to {now}: its code may have changed and was not run. Choose the model again (yichui run), or pin the revision to {approved}.",
                              "zh": "{repo} 已从你同意运行其代码的提交 {approved} 变为 {now}：代码可能已改变，未被运行。请重新选择模型（yichui run），或把版本固定为 {approved}。"},
    "download.local_dir": {"en": "Download into folder:", "zh": "下载到目录："},
    "download.local": {"en": "Using the local model in {path}; nothing to download.", "zh": "使用本地模型 {path}，无需下载。"},
    "download.compare_mirrors": {"en": "Compare the speed of other endpoints first (comma-separated URLs, or none):",
                                 "zh": "先比较其他地址的速度（以逗号分隔的 URL，或 none）："},
    "download.mirrors": {"en": "Endpoints, fastest first (one small file each)", "zh": "各地址速度（每个取一个小文件），快者在前"},
    "download.faster_mirror": {"en": "{endpoint} answered faster; to use it: yichui replay {id} --set select_model.endpoint={endpoint}",
                               "zh": "{endpoint} 更快；如需改用：yichui replay {id} --set select_model.endpoint={endpoint}"},
}
