#!/usr/bin/env bash
# Packs programs built here for a GPU machine that has the NVIDIA driver,
# CUDA libraries and PyTorch but none of our Debian -dev packages (`make
# gpu-bundle`; tests/gpu_check.sh runs them there).
#
#   tests/gpu_bundle.sh OUT_DIR PROGRAM...
#
# OUT_DIR/bin   the programs, stripped, each with DT_RPATH $ORIGIN/../lib so
#               they find our libraries without LD_LIBRARY_PATH
# OUT_DIR/lib   the shared libraries they need that such a machine lacks
#               (libmicrohttpd, cJSON, libpng, libjpeg, libcurl, ...), stripped
# OUT_DIR/data  the Fashion-MNIST test split
# OUT_DIR/onnx  the ONNX backend test cases the CPU backend passes (the
#               supported ops) and that are under 1 MiB, for the ONNX suite
#               on CUDA (SUITE: the onnx-suite program that lists them,
#               default build/onnx-suite)
# OUT_DIR/env.sh  sourced there: puts OUT_DIR/bin on PATH and the machine's
#               own CUDA libraries (pip's nvidia wheels, the toolkit) on
#               LD_LIBRARY_PATH, for cuDNN, which inferd opens with dlopen.
#               Our libraries are never on it: python3 and PyTorch keep theirs.
#
# Fails when the bundle exceeds BUNDLE_LIMIT_MIB (default 54), or when it
# and the working tree's tracked files (about 7 MiB, read with git where
# there is a checkout) exceed 62 MiB: the device tool carries 64 MiB in all,
# untracked files included. The five CUDA programs each hold the fat binary
# (about 3 MiB compressed), which is what grows with every kernel form.
set -euo pipefail
out=${1:?usage: gpu_bundle.sh OUT_DIR PROGRAM...}
shift
limit_mib=${BUNDLE_LIMIT_MIB:-54}
for tool in patchelf strip readelf; do
  command -v $tool >/dev/null || { echo "gpu_bundle: $tool is missing (make gpu-bundle installs it)" >&2; exit 2; }
done
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/data" "$out/onnx"

# Libraries the GPU machine provides itself: the C runtime, the driver, and
# the CUDA/cuDNN/cuBLAS libraries.
# (glibc's own parts, libresolv among them, must match that machine's glibc.)
# Written into the bundle for tests/gpu_bundle_check.sh.
system_re='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libanl|libutil|libnss_[a-z]+|libgcc_s|libstdc\+\+|libcuda|libnvidia|libcudnn|libcublas|libcublasLt|libcudart|libnvrtc|libnvJitLink|libcurand|libcufft)\.'

for prog in "$@"; do
  [ -f "$prog" ] || { echo "gpu_bundle: no such file: $prog" >&2; exit 2; }
  dst="$out/bin/$(basename "$prog")"
  cp "$prog" "$dst"
  strip --strip-unneeded "$dst"
  # DT_RPATH (not RUNPATH): it also serves the libraries' own dependencies
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$dst"
  ldd "$prog" | awk '/=> \//{print $1" "$3}' | while read -r name path; do
    [[ $name =~ $system_re ]] && continue
    [ -f "$out/lib/$name" ] && continue
    cp -L "$path" "$out/lib/$name"
    chmod u+w "$out/lib/$name"
    strip --strip-unneeded "$out/lib/$name"
    patchelf --force-rpath --set-rpath '$ORIGIN' "$out/lib/$name"
  done
done

printf '%s\n' "$system_re" > "$out/system-libs.re"
cp /usr/share/datasets/fashion-mnist/t10k-* "$out/data/"

# The ONNX cases the CPU backend passes: the ops inferd supports.
suite_root=/usr/share/libonnx-testdata/data
suite=${SUITE:-build/onnx-suite}
if [ -x "$suite" ] && [ -d "$suite_root" ]; then
  "$suite" --backend cpu --verbose 2>/dev/null | awk '$1 == "passed" {print $2}' |
    while read -r case; do
      # the few cases over 1 MiB repeat ops that smaller cases cover
      [ "$(du -sb "$suite_root/$case" | cut -f1)" -le 1048576 ] || continue
      mkdir -p "$out/onnx/$(dirname "$case")"
      cp -r "$suite_root/$case" "$out/onnx/$case"
    done
fi

cat > "$out/env.sh" <<'EOF'
# Sourced on the GPU machine. Our programs find our libraries through their
# RPATH; LD_LIBRARY_PATH gets only that machine's own CUDA libraries (pip's
# nvidia wheels first, as PyTorch loads them, then the toolkit), so that
# inferd's dlopen of cuDNN succeeds and nothing else changes for python3.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
extra=""
for d in $(python3 -c 'import glob, os, site
dirs = []
for s in site.getsitepackages():
    dirs += sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib")) + glob.glob(os.path.join(s, "nvidia", "*", "*", "lib")))
print(" ".join(dirs))' 2>/dev/null) /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && extra="${extra:+$extra:}$d"
done
[ -n "$extra" ] && export LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$here/bin:$PATH"
EOF

size=$(du -sb "$out" | cut -f1)
printf 'gpu_bundle: %s: %s MiB (limit %d MiB): %d programs, %d libraries, %d ONNX cases\n' "$out" \
  "$(awk -v b="$size" 'BEGIN {printf "%.1f", b / 1048576}')" "$limit_mib" "$(ls "$out/bin" | wc -l)" "$(ls "$out/lib" | wc -l)" \
  "$(find "$out/onnx" -name model.onnx | wc -l)"
if [ "$size" -gt $((limit_mib * 1048576)) ]; then
  echo "gpu_bundle: over the limit" >&2
  exit 1
fi
if tree=$(git ls-files -z 2>/dev/null | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1) && [ -n "$tree" ]; then
  printf 'gpu_bundle: with the working tree (%s MiB): %s MiB of the 62 MiB allowed\n' \
    "$(awk -v b="$tree" 'BEGIN {printf "%.1f", b / 1048576}')" "$(awk -v b="$((size + tree))" 'BEGIN {printf "%.1f", b / 1048576}')"
  if [ $((size + tree)) -gt $((62 * 1048576)) ]; then
    echo "gpu_bundle: the bundle and the working tree exceed what the device tool carries" >&2
    exit 1
  fi
fi
