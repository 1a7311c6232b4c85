"""Export formats: merging, quantizing (bitsandbytes, llm-compressor in its own environment, GGUF) and the
quality check of each copy (quantize.py, quality.py; worker.py is the quantizer process)."""
