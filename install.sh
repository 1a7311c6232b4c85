#!/usr/bin/env bash
# Set up yichui in ./.venv: a torch build that fits this machine, the pinned stack, and yichui itself (editable).
#   ./install.sh          for users
#   ./install.sh --dev    also the test tools (pytest, pexpect, openai)
#   ./install.sh --link   only put `yichui` on PATH (below), nothing installed
# TORCH_SPEC overrides the torch requirement (e.g. TORCH_SPEC="torch==2.11.0").
# `yichui` on PATH: a user install links ~/.local/bin/yichui to .venv/bin/yichui when ~/.local/bin is on PATH and
# holds no other yichui (YICHUI_NO_LINK=1: not); otherwise, and for --dev, it prints the line that puts it there.
set -euo pipefail
cd "$(dirname "$0")"
link() {
  local bin="$HOME/.local/bin" target="$PWD/.venv/bin/yichui"
  if [ -z "${YICHUI_NO_LINK:-}" ] && [ "$1" = user ] && [[ ":$PATH:" == *":$bin:"* ]] && mkdir -p "$bin" 2>/dev/null \
     && { [ ! -e "$bin/yichui" ] || [ "$(readlink "$bin/yichui")" = "$target" ]; }; then
    ln -sf "$target" "$bin/yichui"
    echo "install.sh: linked $bin/yichui → $target: \`yichui\` works from any folder"
  else
    echo "install.sh: to type \`yichui\` from any folder: export PATH=\"$PWD/.venv/bin:\$PATH\" (or use .venv/bin/yichui)"
  fi
}
if [ "${1:-}" = "--link" ]; then link user; exit 0; fi
quiet() {  # a pip phase, with a line every 10 s so none is silent past 10 s (issue 46 item 13)
  "$@" &
  local pid=$! t0=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( (SECONDS - t0) % 10 == 0 )) && kill -0 "$pid" 2>/dev/null; then echo "  … $((SECONDS - t0)) s"; fi
  done
  wait "$pid"
}
extras=""
[ "${1:-}" = "--dev" ] && extras="[dev]"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
if [ -z "${TORCH_SPEC:-}" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    TORCH_SPEC="torch>=2.11,<2.14"   # a CUDA build
  else
    TORCH_SPEC="torch==2.13.0"       # the CPU build
  fi
fi
echo "install.sh: $TORCH_SPEC (about a minute)"
quiet .venv/bin/python -m pip install -q --disable-pip-version-check "$TORCH_SPEC"
echo "install.sh: yichui and its pinned stack${extras:+ with $extras} (one to two minutes)"
# setuptools' 10-line "Editable installation … be careful with folders" notice is information only (issue 46 trial I)
PYTHONWARNINGS="ignore:Editable installation" quiet .venv/bin/python -m pip install -q --disable-pip-version-check -e ".$extras"
.venv/bin/yichui --help >/dev/null
echo "install.sh: ready — .venv/bin/yichui demo"
link "$([ -n "$extras" ] && echo dev || echo user)"
