#!/usr/bin/env bash
# On the GPU machine (device tool): yichui and a serving engine from carried parts, then the chain of
# bench/serve_chain.py, detached so that it outlives one device call (bench/README.md, "Serving engines on the GPU").
#
#   bash bench/serve_gpu.sh setup                 join /root/parts-carry/part-*, unpack: yichui's stack into a venv
#                                                 over the image's torch, the engine into envs/<engine>-<version>,
#                                                 llm-compressor's wheels for the export step; a copy of the project
#   bash bench/serve_gpu.sh start [CHAIN ARGS]    serve_chain.py run, detached (setsid). Seen 2026-12-03: the device
#                                                 runner ended it when the call ended (chaos.log stopped then): start
#                                                 and `wait` in one call, and fit the run in it
#   bash bench/serve_gpu.sh one [ONE ARGS]        serve_chain.py one, detached likewise
#   bash bench/serve_gpu.sh vlm [RUN ARGS]        vlm_chain.py run (a vision-language model's chain), detached likewise
#   bash bench/serve_gpu.sh chaos [RUN ARGS]      chaos_gpu.py run (mid-training OOM, kill -9 chaos), detached likewise
#   bash bench/serve_gpu.sh wait SECONDS          follow it until done or SECONDS pass; results to $OUT
#   bash bench/serve_gpu.sh warm [WARM ARGS]      serve_chain.py warm in the foreground (the deploys again, after a
#                                                 `start` in an earlier call on this machine); results to $OUT
set -uo pipefail
R=${YG_ROOT:-/root/yichui-gpu}; PARTS=${YG_PARTS:-/root/parts-carry}
src=$(cd "$(dirname "$0")/.." && pwd)
# YG_HOME / YG_WORK / YG_RESULTS: a second chain beside the first (its own sessions, models and rows), e.g. the
# chaos run next to a serving chain in one device call
RES=${YG_RESULTS:-$R/results}; WORK=${YG_WORK:-$R/work}
export YICHUI_HOME=${YG_HOME:-$R/home} YICHUI_WHEELS=$R/llmc HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 \
       VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
# the image's python3 is itself a venv (/opt/torch/.venv): a venv made from it sees the base interpreter's packages,
# not the image venv's torch, so each venv made here gets the image's site-packages through a .pth, after its own
layer() { python3 -m venv --without-pip "$1" && python3 -c 'import site; print(site.getsitepackages()[0])' \
            > "$(site "$1/bin/python")/image-site.pth"; }
case "${1:?setup|start|one|warm|wait}" in
  setup)
    t0=$(date +%s)
    mkdir -p $R && cat $PARTS/part-* | tar -x -C $R || exit 3   # → $R/carry/{stack,vllm,llmc}.tar.xz
    # split-for-device names the top folder after the one it split (/work/carry-vlm → carry-vlm/)
    for d in $R/carry?*/; do [ -e $R/carry ] || ln -s "$d" $R/carry; done
    [ -f $R/carry/stack.tar.xz ] || { echo "setup: no stack.tar.xz in the joined parts (ls $R)"; exit 3; }
    layer $R/venv || exit 3
    tar -xJf $R/carry/stack.tar.xz -C "$(site $R/venv/bin/python)" --strip-components=1 || exit 3
    for e in $R/carry/*.tar.xz; do
      n=$(basename "$e" .tar.xz)
      case $n in stack|llmc) continue ;; esac
      v=$(ls "$src/bench/carry/$n"-*.txt | head -1 | sed "s/.*$n-//; s/\.txt$//")
      layer "$YICHUI_HOME/envs/$n-$v" || exit 3
      tar -xJf "$e" -C "$(site "$YICHUI_HOME/envs/$n-$v/bin/python")" --strip-components=1 || exit 3
    done
    if [ -f $R/carry/vllm.tar.xz ]; then  # GRPO's replies by vLLM: a trainer environment with the stack and vLLM
      v=$(ls "$src"/bench/carry/vllm-*.txt | head -1 | sed "s/.*vllm-//; s/\.txt$//")   # (backends.py: grpo-vllm-<v>)
      g=$YICHUI_HOME/envs/grpo-vllm-$v
      layer "$g" && tar -xJf $R/carry/stack.tar.xz -C "$(site "$g/bin/python")" --strip-components=1 \
        && tar -xJf $R/carry/vllm.tar.xz -C "$(site "$g/bin/python")" --strip-components=1 || exit 3
    fi
    [ ! -f $R/carry/llmc.tar.xz ] || tar -xJf $R/carry/llmc.tar.xz -C $R || exit 3   # absent: no export step
    rm -rf $R/src && cp -r "$src" $R/src && rm -rf $R/src/.git $R/src/.carry-p*   # runs from its own copy
    # the project on the venv's path and its `yichui` command (what `pip install -e .` gives, without a build backend)
    echo $R/src > "$(site $R/venv/bin/python)/yichui-src.pth"
    # console scripts beside the venv's python (the packed trees carry none): yichui, and transformers (its serve)
    for cmd in "yichui wizard.cli" "transformers transformers.cli.transformers"; do
      set -- $cmd
      printf '#!%s\nimport sys\nfrom %s import main\nsys.exit(main())\n' $R/venv/bin/python $2 > $R/venv/bin/$1
      chmod +x $R/venv/bin/$1
    done
    $R/venv/bin/yichui doctor 2>&1 | tail -25
    echo "setup in $(( $(date +%s) - t0 )) s" ;;
  start|one|vlm|chaos)   # one: serve_chain.py one (an engine alone on random-weight shapes); vlm: bench/vlm_chain.py;
                         # chaos: bench/chaos_gpu.py (mid-training OOM, kill -9 chaos; the stack alone suffices)
    what=$([ "$1" = one ] && echo one || echo run)
    case $1 in vlm) script=vlm_chain ;; chaos) script=chaos_gpu ;; *) script=serve_chain ;; esac; shift
    mkdir -p $RES
    cd $R/src && setsid nohup $R/venv/bin/python bench/$script.py $what --work $WORK --results $RES "$@" \
      > $RES/driver.log 2>&1 < /dev/null &
    echo $! > $RES/driver.pid
    echo "started pid $!" ;;
  warm)
    shift; mkdir -p $RES
    (cd $R/src && $R/venv/bin/python bench/serve_chain.py warm --work $WORK --results $RES "$@" >> $RES/warm.log 2>&1)
    tail -c 2000 $RES/warm.log
    [ -n "${OUT:-}" ] && tar -czf "$OUT/$(basename $RES).tgz" -C "$(dirname $RES)" "$(basename $RES)" && ls -la "$OUT" ;;
  wait)
    end=$(( $(date +%s) + ${2:-60} ))
    # until the driver writes "done", dies (a crashed or never-started driver must not hold the GPU for SECONDS) or
    # SECONDS pass
    while [ "$(date +%s)" -lt "$end" ] && ! grep -q '"phase": "done"' $RES/rows.jsonl 2>/dev/null \
          && kill -0 "$(cat $RES/driver.pid 2>/dev/null)" 2>/dev/null; do sleep 10; done
    RES=$RES python3 - <<'EOF'
import json
import os
for line in open(os.environ["RES"] + "/rows.jsonl"):
    r = json.loads(line)
    print(r["phase"], r.get("seconds"), (r.get("error") or "")[:300])
EOF
    tail -c 3000 $RES/driver.log
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
    [ -n "${OUT:-}" ] && tar -czf "$OUT/$(basename $RES).tgz" -C "$(dirname $RES)" "$(basename $RES)" && ls -la "$OUT" ;;
esac
