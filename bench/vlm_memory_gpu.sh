#!/usr/bin/env bash
# On the GPU machine (device tool), after `bash bench/serve_gpu.sh setup` with yichui's stack carried: the VLM memory
# rows of bench/vlm_memory.py, detached (setsid) so that they outlive one device call.
#
#   bash bench/vlm_memory_gpu.sh start [MEASURE ARGS]   vlm_memory.py measure → $R/vlm/rows.jsonl, driver.log
#   bash bench/vlm_memory_gpu.sh wait SECONDS           follow it until done or SECONDS pass; rows and logs to $OUT
set -uo pipefail
R=${YG_ROOT:-/root/yichui-gpu}; V=$R/vlm
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
case "${1:?start|wait}" in
  start)
    shift; mkdir -p $V
    cd $R/src && setsid nohup $R/venv/bin/python bench/vlm_memory.py measure --out $V/rows.jsonl --work $V/work "$@" \
      > $V/driver.log 2>&1 < /dev/null &
    echo "started pid $!" ;;
  wait)
    end=$(( $(date +%s) + ${2:-60} ))
    while [ "$(date +%s)" -lt "$end" ] && ! grep -q '"phase": "done"' $V/driver.log 2>/dev/null; do sleep 5; done
    grep -v '^{"date"' $V/driver.log | tail -40
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
    if [ -n "${OUT:-}" ]; then
      cp $V/rows.jsonl $V/driver.log "$OUT/" 2>/dev/null
      (cd $V/work/runs 2>/dev/null && tar -czf "$OUT/trainer-logs.tgz" */trainer.log */events.jsonl 2>/dev/null)
      ls -la "$OUT"
    fi ;;
esac
