#!/usr/bin/env bash
# Build what the GPU machine (no package registry, Python 3.12, torch 2.11 + CUDA 13) needs to run yichui and a
# serving engine, as installed trees packed with xz (a third smaller than the wheels), ready to split into parts.
#
#   bash bench/carry.sh stack  OUT   # yichui's pinned stack minus what the image already has (bench/carry/image-packages.txt)
#   bash bench/carry.sh vllm   OUT   # vLLM 0.26.0 + dependencies (bench/carry/vllm-0.26.0.txt; the newest vLLM that pins torch 2.11)
#   bash bench/carry.sh llmc   OUT   # llm-compressor's wheels, for the export step's own environment (YICHUI_WHEELS)
#   bash bench/carry.sh sglang OUT | lmdeploy OUT   # the other engines, from their lists (SGLang without its FA3
#                                                   # library, LMDeploy without TurboMind: see install_tree)
#   bash bench/carry.sh unsloth OUT  # unsloth + what the image lacks (bench/carry/unsloth-*.txt): the speed peer
#
# Each writes OUT/<name>.tar.xz holding one folder <name>/ (an installed site-packages tree, or wheels for llmc).
# Then, in the project's root: ../shared/tools/split-for-device OUT parts  → one ignored folder per ≤ 58 MiB part, and
# the device calls that carry them one after another (see bench/README.md, "Serving engines on the GPU").
set -euo pipefail
what=${1:?stack|vllm|llmc|sglang|lmdeploy|unsloth}; out=${2:?output folder}
here=$(cd "$(dirname "$0")" && pwd); root=$(dirname "$here")
mkdir -p "$out"; out=$(cd "$out" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp)
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64 \
         manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 manylinux1_x86_64 any; do PLAT+=(--platform "$p"); done
fetch() {  # fetch WHEELDIR REQUIREMENT… : one wheel each, no dependencies (the lists name every one)
  local d=$1; shift
  python3 -m pip download -q --no-deps "${PLAT[@]}" -d "$d" "$@" 2>&1 | grep -v "^WARNING: Location" || true
}
install_tree() {  # install_tree WHEELDIR TREE: unpack the wheels as pip installs them for the GPU machine's Python
  python3 -m pip install -q --no-deps --no-compile --ignore-requires-python --target "$2" "${PLAT[@]}" "$1"/*.whl 2>&1 \
    | grep -v "^WARNING: \(Location\|Running pip\|Target directory\)" || true
  rm -rf "$2"/bin  # console scripts with this machine's interpreter path: yichui starts engines by module
  # bitsandbytes ships a library per CUDA version, ROCm and XPU: keep the CUDA 13.0 one and the CPU one
  [ -d "$2/bitsandbytes" ] && find "$2/bitsandbytes" -maxdepth 1 -name 'libbitsandbytes_*' ! -name '*cuda130*' ! -name '*cpu*' -delete
  # sglang-kernel: its FA3 library (1.1 GB; SGLang then runs with --attention-backend triton), Blackwell's ops and
  # DeepSeek's FlashMLA (imported only when used); LMDeploy: TurboMind (a CUDA 12 build that cannot run on CUDA 13)
  rm -rf "$2"/sgl_kernel/flash_ops.abi3.so "$2"/sgl_kernel/sm100 "$2"/sgl_kernel/flashmla_ops.abi3.so \
         "$2"/lmdeploy/turbomind/_turbomind.*.so "$2"/lmdeploy/turbomind/lib64
  return 0
}
pack() {  # pack FOLDER NAME
  tar -C "$(dirname "$1")" -cf - "$(basename "$1")" | xz -6 -T0 > "$out/$2.tar.xz"
  echo "$out/$2.tar.xz: $(du -h "$out/$2.tar.xz" | cut -f1) packed, $(du -sh "$1" | cut -f1) unpacked"
}
case "$what" in
  stack)
    # every distribution of yichui's own environment that the image lacks, or has at another version yichui pins
    pins=$(python3 - "$root/pyproject.toml" <<'EOF'
import re, sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print(" ".join(re.split(r"[\[=<>!~ ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps))
EOF
)
    image=" $(tr '\n' ' ' < "$here/carry/image-packages.txt" | tr 'A-Z_' 'a-z-') "
    reqs=()
    while IFS= read -r line; do
      name=$(echo "${line%%==*}" | tr 'A-Z_' 'a-z-')
      case "$name" in pip|wheel|torch|triton|nvidia-*|yichui|pytest|pluggy|iniconfig|pexpect|ptyprocess|"#"*|-e*) continue ;; esac
      if [[ "$image" == *" $name "* && " $pins " != *" $name "* ]]; then continue; fi
      reqs+=("$line")
    done < <("$root/.venv/bin/pip" freeze --all --exclude-editable)
    # no wheels on PyPI: built here (pure Python; deepspeed compiles its ops on first use, not at install)
    sdist_only=" deepspeed rouge-score sqlitedict word2number "
    wheels=(); built=()
    for r in "${reqs[@]}"; do
      n=$(echo "${r%%==*}" | tr 'A-Z_' 'a-z-')
      if [[ "$sdist_only" == *" $n "* ]]; then built+=("$r"); else wheels+=("$r"); fi
    done
    fetch "$work/w" "${wheels[@]}"
    for r in "${built[@]}"; do python3 -m pip wheel -q --no-deps -w "$work/w" "$r" >/dev/null; done
    install_tree "$work/w" "$work/stack"
    pack "$work/stack" stack ;;
  vllm|sglang|lmdeploy|unsloth)
    list=$(ls "$here/carry/$what"-*.txt | head -1)
    fetch "$work/w" $(grep -v '^#' "$list")
    install_tree "$work/w" "$work/$what"
    pack "$work/$what" "$what" ;;
  llmc)
    fetch "$work/llmc" $(grep -v '^#' "$here"/carry/llmcompressor-*.txt)
    pack "$work/llmc" llmc ;;
  *) echo "unknown: $what (stack, vllm, llmc, sglang, lmdeploy, unsloth)"; exit 2 ;;
esac
