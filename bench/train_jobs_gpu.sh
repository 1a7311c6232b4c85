#!/usr/bin/env bash
# On the GPU machine (device tool), after `bash bench/serve_gpu.sh setup` with the stack and unsloth carried: issue
# 21's QLoRA-8B and 1.5B-full jobs against the plain loop and unsloth, GaLore's memory rows, then the 8B QLoRA
# 50-step losses — detached, so that it outlives one device call (bench/README.md, "The speed peer").
#
#   bash bench/train_jobs_gpu.sh start [STEP…]  needs .peer/plain_hf_train.py (carried); STEPs in order,
#                                               default "jobs galore jobs-loss8b": a train_throughput.py plan
#                                               (jobs, jobs-loss8b, best, pairs, backend, …), galore (the memory
#                                               rows) or unsloth-backend (bench/unsloth_backend_gpu.py)
#   bash bench/train_jobs_gpu.sh wait SECONDS   follow it until done or SECONDS pass; rows and logs to $OUT
set -uo pipefail
R=/root/yichui-gpu; T=/root/tb; V=$R/venv/bin/python; U=$R/home/envs/unsloth-2026.10.9/bin/python
case "${1:?start|wait}" in
  start)
    mkdir -p $T/out && cp -r .peer $T/ && cd $R/src
    export HF_HUB_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1 YICHUI_UNSLOTH_PYTHON=$U TOKENIZERS_PARALLELISM=false \
           PYTHONUNBUFFERED=1
    shift; steps=${*:-jobs galore jobs-loss8b}
    script=""
    for st in $steps; do
      if [ "$st" = unsloth-backend ]; then   # the unsloth backend through yichui's commands: OOM, kill -9, resume
        script+="$V bench/unsloth_backend_gpu.py --out $T/out/unsloth-backend --work $T/ub --envs $R/home/envs; "
      elif [ "$st" = galore ]; then
        script+="$V bench/memory_accuracy.py measure --grid 4 --methods galore --gpus 0 --steps 3 \
          --out $T/out/memory-galore.jsonl --work $T/mem; "
      else
        script+="$V bench/train_throughput.py measure --plan $st --gpus 0 --out $T/out/train-$st.jsonl \
          --peer $T/.peer/plain_hf_train.py --work $T/work; "
      fi
    done
    setsid nohup bash -c "$script echo ALL-DONE" > $T/out/driver.log 2>&1 < /dev/null &
    echo "started pid $!" ;;
  wait)
    end=$(( $(date +%s) + ${2:-60} ))
    while [ "$(date +%s)" -lt "$end" ] && ! grep -q ALL-DONE $T/out/driver.log; do sleep 10; done
    grep -v "Token indices" $T/out/driver.log | tail -40
    mkdir -p $T/out/logs
    for d in $T/work/runs/* $T/mem/runs/*; do
      [ -f "$d/trainer.log" ] && grep -v "Token indices" "$d/trainer.log" | tail -80 > "$T/out/logs/$(basename $d).log"
    done
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
    [ -n "${OUT:-}" ] && cp -r $T/out/. "$OUT/" ;;
esac
