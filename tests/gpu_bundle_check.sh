#!/usr/bin/env bash
# Checks a bundle made by tests/gpu_bundle.sh, here, without a GPU (make
# test runs it on a fresh bundle; gpu_check.sh's `bundle` step on the GPU
# machine):
#   - under the size limit;
#   - every program carries RPATH $ORIGIN/../lib and, with LD_LIBRARY_PATH
#     empty, finds each library it needs that is not the machine's own
#     (C runtime, driver, CUDA) inside the bundle;
#   - env.sh puts no bundled library folder on LD_LIBRARY_PATH (python3 and
#     PyTorch keep their own libraries) and the bundle's bin/ first on PATH;
#   - the test data is there: the Fashion-MNIST test split and at least 100
#     ONNX cases, each a model with its test data.
#
#   tests/gpu_bundle_check.sh BUNDLE_DIR
set -uo pipefail
dir=$(cd "${1:?usage: gpu_bundle_check.sh BUNDLE_DIR}" && pwd)
limit_mib=${BUNDLE_LIMIT_MIB:-54}   # as gpu_bundle.sh
failed=0 checked=0
check() {   # check WHAT CONDITION-EXIT-STATUS
  checked=$((checked + 1))
  if [ "$2" -ne 0 ]; then echo "FAIL: $1"; failed=$((failed + 1)); else echo "ok   $1"; fi
}
system_re=$(cat "$dir/system-libs.re")   # the machine's own libraries, as gpu_bundle.sh chose

size=$(du -sb "$dir" | cut -f1)
[ "$size" -le $((limit_mib * 1048576)) ]; check "size $((size / 1048576)) MiB within $limit_mib MiB" $?

have_readelf=0; command -v readelf >/dev/null && have_readelf=1
[ $have_readelf -eq 1 ] || echo "skip: readelf is not installed here: RPATH and static-runtime checks left out"
for prog in "$dir"/bin/*; do
  name=$(basename "$prog")
  if [ $have_readelf -eq 1 ]; then
    readelf -d "$prog" | grep -q '(RPATH).*\[\$ORIGIN/../lib\]'; check "$name: RPATH \$ORIGIN/../lib" $?
    readelf -d "$prog" | grep -q 'NEEDED.*libcudart'; [ $? -ne 0 ]; check "$name: CUDA runtime linked statically" $?
  fi
  bad=$(env -u LD_LIBRARY_PATH ldd "$prog" | awk -v re="$system_re" -v lib="$dir/lib/" -v rel="$dir/bin/../lib/" '
    /=>/ { if ($1 ~ re) next
           if ($3 == "not" || (index($3, lib) != 1 && index($3, rel) != 1)) print $1 " -> " $3 $4 }')
  [ -z "$bad" ]; check "$name: every non-system library from the bundle${bad:+ (not: $bad)}" $?
done

env_out=$(env -i HOME="$HOME" PATH=/usr/bin:/bin bash -c "source '$dir/env.sh'; echo \"\$LD_LIBRARY_PATH\"; echo \"\$PATH\"")
ld=$(sed -n 1p <<<"$env_out"); path=$(sed -n 2p <<<"$env_out")
[[ ":$ld:" != *":$dir/"* ]]; check "env.sh keeps the bundle's libraries off LD_LIBRARY_PATH ($ld)" $?
[[ $path == "$dir/bin:"* ]]; check "env.sh puts the bundle's bin/ first on PATH" $?

ls "$dir"/data/t10k-images-idx3-ubyte.gz "$dir"/data/t10k-labels-idx1-ubyte.gz >/dev/null 2>&1
check "Fashion-MNIST test split" $?
cases=$(find "$dir/onnx" -name model.onnx | wc -l)
without=$(find "$dir/onnx" -name model.onnx -printf '%h\n' | while read -r c; do
  [ -f "$c/test_data_set_0/input_0.pb" ] || echo "$c"; done | wc -l)
[ "$cases" -ge 100 ] && [ "$without" -eq 0 ]; check "ONNX cases: $cases, $without without test data" $?

echo "$((checked - failed)) passed, $failed failed"
[ $failed -eq 0 ]
