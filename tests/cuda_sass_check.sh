#!/usr/bin/env bash
# Reads the machine code of the built CUDA kernels, no GPU needed (make
# cuda-sass, and make test in CUDA builds): every object holds SASS for every target of CUDA_ARCHS,
# the kernels meant for tensor cores use them, the FP32 ones do not (that
# would be TF32, outside FP32's 1e-5 contract), and the channels-last
# convolutions gather 16 bytes at a time. Prints per kernel and target the
# tensor-core and dot-product instructions it holds, and its narrow global
# loads (LDG of at most 4 bytes).
#
#   tests/cuda_sass_check.sh TOOLS_DIR OBJECT...
#
# cuobjdump and nvdisasm come from PATH, else from NVIDIA's PyPI wheels,
# unpacked once into TOOLS_DIR. Where neither can be had the check skips
# with the reason (exit 0).
set -uo pipefail
tools=${1:?usage: cuda_sass_check.sh TOOLS_DIR OBJECT...}
shift
WHEELS="nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37"

# kernel (mangled name, extended regex) | rule: INSTR must be there, !INSTR must not,
#   INSTR<=N at most N of them | why
# [| the oldest target the rule holds for (e.g. 80: sm_80 and later); all when absent]
RULES=(
  'igemm_kernelI6__half|HMMA|FP16 GEMM and convolution run on tensor cores'
  'igemm_kernelIf|!HMMA|FP32 GEMM and convolution never use tensor cores (TF32)'
  'splitk_kernelIf|!HMMA|the few-rows split-K GEMM in FP32 never uses tensor cores (TF32)'
  'q8_mma_kernel|IMMA|INT8 convolution and linear run on tensor cores (IMMA m16n8k32) from sm_80|80'
  'conv2d_q8_kernel|IDP4A|the baseline INT8 convolution (the fallback) uses dp4a'
  'linear_q8_kernel|IDP4A|the baseline INT8 linear (the fallback) uses dp4a'
  'igemm_kernelI[0-9_a-z]*LNS_5ALoadE1E|LDGN<=2|the NHWC convolutions gather 16 bytes at a time (narrow loads: bias and residual only)'
)

if ! command -v cuobjdump >/dev/null || ! command -v nvdisasm >/dev/null; then
  bin="$tools/nvidia/cu13/bin"
  if [ ! -x "$bin/cuobjdump" ] || [ ! -x "$bin/nvdisasm" ]; then
    mkdir -p "$tools"
    pip=$(for p in /usr/bin/python3 python3; do "$p" -m pip --version >/dev/null 2>&1 && { echo "$p -m pip"; break; }; done)
    [ -n "$pip" ] || pip=$(command -v pip3 || command -v pip || true)
    echo "fetching $WHEELS (PyPI) into $tools"
    # shellcheck disable=SC2086
    if [ -z "$pip" ] || ! timeout 300 $pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 -d "$tools" $WHEELS; then
      echo "skip: cuobjdump/nvdisasm are not installed and could not be fetched from PyPI"
      exit 0
    fi
    for w in "$tools"/*.whl; do (cd "$tools" && python3 -m zipfile -e "$(basename "$w")" .) || exit 1; done
    chmod +x "$bin/cuobjdump" "$bin/nvdisasm"
  fi
  export PATH="$bin:$PATH"
fi

failed=0 kernels=0
table=$(mktemp)
trap 'rm -f "$table"' EXIT
for obj in "$@"; do
  sass=$(cuobjdump -sass "$obj" 2>&1) || { echo "FAIL: cuobjdump $obj: $sass"; failed=1; continue; }
  for arch in ${CUDA_ARCHS:-90}; do   # the fat binary's every target (mk/build.mk)
    grep -q "arch = sm_$arch" <<<"$sass" || { echo "FAIL: $obj holds no sm_$arch SASS"; failed=1; }
  done
  # one line per kernel and target: its name, then its instruction counts
  awk -v obj="$(basename "$obj")" '
    function flush() { if (name) print obj, farch, name, h, i, d, n; name = "" }
    /arch = sm_/ { flush(); arch = $3; sub(/^sm_/, "", arch) }
    /Function :/ { flush(); name = $3; farch = arch; h = i = d = n = 0 }
    /HMMA/ { h++ } /IMMA/ { i++ } /IDP\.?4A/ { d++ }
    match($0, /LDG[A-Z0-9_.]*/) { op = substr($0, RSTART, RLENGTH); if (op !~ /\.(64|128)|LDGSTS|LDGDEPBAR/) n++ }
    END { flush() }' <<<"$sass" >> "$table"
done
kernels=$(awk '{print $1, $3}' "$table" | sort -u | wc -l)
printf '%-16s %4s %5s %5s %5s %5s  %s\n' object sm HMMA IMMA IDP4A LDGN kernel
sort -u "$table" | while read -r obj arch name h i d n; do
  printf '%-16s %4s %5d %5d %5d %5d  %s\n' "$obj" "$arch" "$h" "$i" "$d" "$n" "$(c++filt "$name" 2>/dev/null || echo "$name")"
done

for rule in "${RULES[@]}"; do
  IFS='|' read -r pattern instr why min_sm <<<"$rule"
  want=1; [ "${instr:0:1}" = '!' ] && { want=0; instr=${instr:1}; }
  max=-1; [[ $instr == *'<='* ]] && { max=${instr#*<=}; instr=${instr%%<=*}; }
  col=$(case $instr in HMMA) echo 4 ;; IMMA) echo 5 ;; IDP4A) echo 6 ;; LDGN) echo 7 ;; esac)
  # (a target's number, 90a included, compared as its digits)
  sel='$3 ~ p && (m == "" || substr($2, 1, 2) + 0 >= m + 0)'
  matched=$(awk -v p="$pattern" -v m="$min_sm" "$sel" "$table" | wc -l)
  bad=$(awk -v p="$pattern" -v m="$min_sm" -v c="$col" -v w="$want" -v x="$max" \
    "$sel"' && (x >= 0 ? $c > x + 0 : ($c > 0) != (w == 1)) {print $3 " (sm_" $2 ")"}' "$table" | sort -u)
  if [ "$matched" -eq 0 ]; then
    echo "FAIL: no kernel matches '$pattern' ($why)"; failed=1
  elif [ -n "$bad" ]; then
    echo "FAIL: $why: $(wc -l <<<"$bad") kernel(s) break it:"; sed 's/^/  /' <<<"$bad"; failed=1
  else
    echo "ok   $why ($matched kernels)"
  fi
done
echo "$kernels kernels read"
exit $failed
