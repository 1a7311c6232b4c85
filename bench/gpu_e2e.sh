#!/usr/bin/env bash
# On the GPU machine (device tool): yichui's own commands end to end — doctor, the demo, `show` — and then the
# test files given as arguments, with the wheels carried in .whl-e2e/ (bench/README.md says how to fetch them).
#   bash bench/gpu_e2e.sh [PYTEST ARGS...]   → $OUT/doctor.txt, $OUT/demo.txt, $OUT/pytest.txt, $OUT/versions.txt
#   E2E_TESTS_ONLY=1 bash bench/gpu_e2e.sh tests/…   → the tests alone
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .whl-e2e/*.whl || exit 3
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
# the `yichui` command beside this python (the tests start it from there); pip's own build of the project only
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . || exit 3
export YICHUI_HOME=/tmp/yichui-home
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, transformers, peft, trl, bitsandbytes, huggingface_hub; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| transformers', transformers.__version__, '| peft', peft.__version__, '| trl', trl.__version__, '| bitsandbytes', bitsandbytes.__version__, '| huggingface_hub', huggingface_hub.__version__)"
} 2>&1 | tee "$OUT/versions.txt"
if [ -z "${E2E_TESTS_ONLY:-}" ]; then
echo "== yichui doctor"; yichui doctor 2>&1 | tee "$OUT/doctor.txt"; echo "doctor exit ${PIPESTATUS[0]}" | tee -a "$OUT/doctor.txt"
echo "== yichui demo"; s=$(date +%s)
yichui demo 2>&1 | tee "$OUT/demo.txt"; rc=${PIPESTATUS[0]}
echo "demo exit $rc in $(( $(date +%s) - s )) s" | tee -a "$OUT/demo.txt"
yichui show 2>&1 | tee -a "$OUT/demo.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | tee -a "$OUT/demo.txt"
yichui stop 2>&1 | tee -a "$OUT/demo.txt"
cp -r "$YICHUI_HOME/sessions" "$OUT/" 2>/dev/null
fi
if [ $# -gt 0 ]; then
  echo "== pytest $*"; timeout "${E2E_PYTEST_TIMEOUT:-3600}" python3 -m pytest -p no:cacheprovider -rA "$@" 2>&1 \
    | tee "$OUT/pytest.txt"
fi
