"""The catalogue of popular chat models the wizard offers, with their ids on Hugging Face and ModelScope."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    key: str
    label: str
    hf: str | None
    modelscope: str | None
    params_b: float  # billions, for the label only; exact counts come from the config
    tag: str | None = None  # what the label adds in the user's language: "vision" (select_model.tag.vision), "demo"


CATALOGUE = (
    Entry("qwen2.5-0.5b-instruct", "Qwen2.5 0.5B Instruct", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", 0.5),
    Entry("qwen2.5-1.5b-instruct", "Qwen2.5 1.5B Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", 1.5),
    Entry("qwen2.5-7b-instruct", "Qwen2.5 7B Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 7.6),
    Entry("qwen3-0.6b", "Qwen3 0.6B", "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B", 0.6),
    Entry("qwen3-4b", "Qwen3 4B", "Qwen/Qwen3-4B", "Qwen/Qwen3-4B", 4.0),
    Entry("qwen3-8b", "Qwen3 8B", "Qwen/Qwen3-8B", "Qwen/Qwen3-8B", 8.2),
    Entry("llama-3.2-1b-instruct", "Llama 3.2 1B Instruct", "meta-llama/Llama-3.2-1B-Instruct",
          "LLM-Research/Llama-3.2-1B-Instruct", 1.2),
    Entry("llama-3.2-3b-instruct", "Llama 3.2 3B Instruct", "meta-llama/Llama-3.2-3B-Instruct",
          "LLM-Research/Llama-3.2-3B-Instruct", 3.2),
    Entry("llama-3.1-8b-instruct", "Llama 3.1 8B Instruct", "meta-llama/Llama-3.1-8B-Instruct",
          "LLM-Research/Meta-Llama-3.1-8B-Instruct", 8.0),
    Entry("glm-4-9b-chat", "GLM-4 9B Chat", "THUDM/glm-4-9b-chat-hf", "ZhipuAI/glm-4-9b-chat-hf", 9.4),
    Entry("mistral-7b-instruct-v0.3", "Mistral 7B Instruct v0.3", "mistralai/Mistral-7B-Instruct-v0.3",
          "LLM-Research/Mistral-7B-Instruct-v0.3", 7.2),
    Entry("deepseek-r1-distill-qwen-1.5b", "DeepSeek-R1 Distill Qwen 1.5B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
          "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.8),
    Entry("deepseek-r1-distill-qwen-7b", "DeepSeek-R1 Distill Qwen 7B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
          "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 7.6),
    # vision-language models (image-text-to-text): the trainer fine-tunes their language model on image records
    Entry("qwen2.5-vl-3b-instruct", "Qwen2.5-VL 3B Instruct", "Qwen/Qwen2.5-VL-3B-Instruct",
          "Qwen/Qwen2.5-VL-3B-Instruct", 3.8, tag="vision"),
    Entry("qwen2.5-vl-7b-instruct", "Qwen2.5-VL 7B Instruct", "Qwen/Qwen2.5-VL-7B-Instruct",
          "Qwen/Qwen2.5-VL-7B-Instruct", 8.3, tag="vision"),
    Entry("qwen2-vl-2b-instruct", "Qwen2-VL 2B Instruct", "Qwen/Qwen2-VL-2B-Instruct",
          "Qwen/Qwen2-VL-2B-Instruct", 2.2, tag="vision"),
    Entry("llava-1.5-7b", "LLaVA 1.5 7B", "llava-hf/llava-1.5-7b-hf", None, 7.1, tag="vision"),
    Entry("tinyllama-1.1b-chat", "TinyLlama 1.1B Chat", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
          "AI-ModelScope/TinyLlama-1.1B-Chat-v1.0", 1.1),
    Entry("yichui-tiny", "yichui tiny", "yichui/tiny-qwen2-chat", "yichui/tiny-qwen2-chat", 0.0007, tag="demo"),
    Entry("yichui-tiny-vlm", "yichui tiny LLaVA", "yichui/tiny-llava-shapes", "yichui/tiny-llava-shapes", 0.0003,
          tag="demo_vision"),
)


def by_key(key: str) -> Entry | None:
    return next((e for e in CATALOGUE if e.key == key), None)


def repo_id(entry: Entry, source: str) -> str | None:
    return entry.modelscope if source == "modelscope" else entry.hf
