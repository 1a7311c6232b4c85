#!/usr/bin/env bash
# On the GPU machine (device tool): install the carried wheels (.whl/, see bench/README.md), then run a benchmark.
#   bash bench/gpu_run.sh memory [--only SHAPES]     → $OUT/memory.jsonl, $OUT/memory.log
#   bash bench/gpu_run.sh preflight                  → $OUT/preflight.jsonl, $OUT/preflight.log
set -uo pipefail
cd "$(dirname "$0")/.."
# once per machine: two benchmarks started side by side (one per GPU) share the installation
( flock 9; [ -e /tmp/site/.done ] || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl && touch /tmp/site/.done; } ) 9>/tmp/site.lock || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers, trl, peft, bitsandbytes, datasets; print('versions', torch.__version__, transformers.__version__, trl.__version__, peft.__version__, bitsandbytes.__version__, datasets.__version__)" || exit 4
what=$1; shift
case "$what" in
  memory) python3 bench/memory_accuracy.py measure --out "$OUT/memory.jsonl" --work /tmp/membench "$@" 2>&1 | tee -a "$OUT/memory.log" ;;
  dist) python3 bench/distributed.py measure --out "$OUT/dist.jsonl" --work /tmp/distbench "$@" 2>&1 | tee -a "$OUT/dist.log" ;;
  export) YICHUI_WHEELS="$PWD/.whl-llmc:$PWD/.whl" python3 bench/export_quality.py measure --out "$OUT/export.jsonl" --work /tmp/exportbench "$@" 2>&1 | tee -a "$OUT/export.log" ;;
  preflight) python3 bench/preflight_cost.py --out "$OUT/preflight.jsonl" "$@" 2>&1 | tee -a "$OUT/preflight.log" ;;
  oom) python3 bench/oom_recovery.py --out "$OUT/oom.jsonl" "$@" 2>&1 | tee -a "$OUT/oom.log" ;;
  train) python3 bench/train_throughput.py measure --out "$OUT/train.jsonl" --peer .peer/plain_hf_train.py --work /tmp/membench "$@" 2>&1 | tee -a "$OUT/train.log" ;;
  *) echo "unknown benchmark $what"; exit 2 ;;
esac
