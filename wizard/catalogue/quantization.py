"""Messages of quantized copies and their tools (recipes/quantization/) (keys ``quantization.*``), English and Chinese."""

MESSAGES = {
    "quantization.env_still": {"en": "  … still building it ({seconds} s)", "zh": "  … 仍在构建（{seconds} 秒）"},
    "quantization.gguf_custom_code": {"en": "{format}: llama.cpp's converter cannot read a model that ships its own code (auto_map); choose another format.",
                                "zh": "{format}：llama.cpp 的转换器无法读取自带代码（auto_map）的模型；请选择其他格式。"},
    "quantization.gguf_not_installed": {"en": "{format} needs the GGUF extra: .venv/bin/pip install -e '.[gguf]' (gguf, sentencepiece).",
                                  "zh": "{format} 需要 GGUF 扩展：.venv/bin/pip install -e '.[gguf]'（gguf、sentencepiece）。"},
    "quantization.gguf_needs_quantize": {"en": "{format} needs llama.cpp's llama-quantize on PATH (build llama.cpp); gguf-q8_0 and gguf-f16 do not.",
                                   "zh": "{format} 需要 PATH 中有 llama.cpp 的 llama-quantize（需编译 llama.cpp）；gguf-q8_0 和 gguf-f16 不需要。"},
    "quantization.gguf_unknown_tokenizer": {"en": "llama.cpp's converter does not know this model's tokenizer (its pre-tokenizer), so {format} cannot be made; the other formats can (log: {log}).",
                                      "zh": "llama.cpp 转换器不认识此模型的分词器（预分词规则），无法生成 {format}；其他格式可以（日志：{log}）。"},
    "quantization.vision_formats": {
        "en": "{format}: yichui quantizes text models only so far; a vision-language model is exported merged (bf16), which transformers serves. Leave the formats empty (--set export.formats=).",
        "zh": "{format}：yichui 目前只量化文本模型；视觉语言模型以合并后（bf16）的形式导出，由 transformers 部署。请不选量化格式（--set export.formats=）。"},
    "quantization.needs_gpu": {"en": "{format} needs a CUDA GPU (llm-compressor's AWQ does not run on a CPU): choose gptq-w4a16 here.",
                         "zh": "{format} 需要 CUDA GPU（llm-compressor 的 AWQ 不能在 CPU 上运行）：这里请选 gptq-w4a16。"},
    "quantization.group_size": {"en": "{format} cannot quantize this model: its {name} ({value}) is not a multiple of the group size {group}; choose bnb-4bit or fp8-dynamic.",
                          "zh": "{format} 无法量化此模型：{name}（{value}）不是分组大小 {group} 的整数倍；请选 bnb-4bit 或 fp8-dynamic。"},
    "quantization.env_failed": {"en": "Could not build the quantizer environment {env}: {last} (full log: {log}). Check the network or set YICHUI_WHEELS to a folder of wheels.",
                          "zh": "无法创建量化环境 {env}：{last}（完整日志：{log}）。请检查网络，或把 YICHUI_WHEELS 设为装有 wheel 的目录。"},
    "quantization.quantize_failed": {"en": "Quantizing to {format} failed: {last} (log: {log}). The merged model is kept; `yichui resume` retries.",
                               "zh": "量化为 {format} 失败：{last}（日志：{log}）。合并后的模型已保留；`yichui resume` 会重试。"},
}
