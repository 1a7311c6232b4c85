#!/usr/bin/env bash
# Set up yichui in ./.venv: a torch build that fits this machine, the pinned stack, and yichui itself (editable).
#   ./install.sh          for users
#   ./install.sh --dev    also the test tools (pytest, pexpect, openai)
# TORCH_SPEC overrides the torch requirement (e.g. TORCH_SPEC="torch==2.11.0").
set -euo pipefail
cd "$(dirname "$0")"
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
echo "install.sh: $TORCH_SPEC"
.venv/bin/python -m pip install -q --disable-pip-version-check "$TORCH_SPEC"
echo "install.sh: yichui and its pinned stack${extras:+ with $extras}"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".$extras"
.venv/bin/yichui --help >/dev/null
echo "install.sh: ready — .venv/bin/yichui demo"
