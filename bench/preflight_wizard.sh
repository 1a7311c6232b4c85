#!/usr/bin/env bash
# The smoke run as the wizard runs it, two trees side by side, interleaved: `yichui run --yes` on a local model folder
# (no hub) up to "Smoke test passed", killed there; its own figure and the time from the command's start.
#   bash bench/preflight_wizard.sh BEFORE_TREE AFTER_TREE MODEL_DIR OUT.jsonl [ROUNDS]
# BEFORE_TREE / AFTER_TREE: checkouts (git worktree add) run with this repository's .venv; MODEL_DIR: the tiny model
# (.cache/tiny/<key>) on a CPU. Results: bench/results/2026-12-06-preflight-warm-cpu.md.
set -u
before=$1 after=$2 model=$(readlink -f "$3") out=$4 rounds=${5:-4}
py=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
home=$(mktemp -d); log=$home.log
: > "$out"
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    tree=$([ $side = before ] && echo "$before" || echo "$after")
    rm -rf "$home"; mkdir -p "$home"
    t0=$(date +%s.%N)
    (cd "$tree" && YICHUI_HOME=$home HF_HUB_OFFLINE=1 setsid "$py" -m wizard.cli run --yes \
      --set select_model.source=local --set select_model.path="$model" > "$log" 2>&1) &
    for _ in $(seq 1 480); do sleep 0.5; grep -q "Smoke test passed\|rror" "$log" && break; done
    t1=$(date +%s.%N)
    pkill -f "wizard.cli run --yes --set select_model.source=local" ; pkill -f "recipes.training.worker $home"; sleep 2
    s=$(grep -o "Smoke test passed in [0-9.]* s" "$log" | grep -o "[0-9.]*" | head -1)
    loaded=$(cat "$home"/runs/*/preflight/preflight.log 2>/dev/null | grep -o "libraries loaded in [0-9.]* s" \
             | grep -o "[0-9.]*" | head -1)
    printf '{"round": %s, "side": "%s", "tree": "%s", "smoke_s": %s, "preload_s": %s, "command_to_passed_s": %s}\n' \
      "$round" "$side" "$(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet || echo +)" \
      "${s:-null}" "${loaded:-null}" "$(python3 -c "print(round($t1 - $t0, 1))")" >> "$out"
  done
done
rm -rf "$home" "$log"
cat "$out"
