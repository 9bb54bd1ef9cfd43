#!/bin/sh
# curl.sh - inferd's HTTP API with nothing but curl and the shell: health,
# metadata, classify (raw body and multipart), infer (JSON and Triton's
# binary tensor extension) and metrics. Every step is one plain command to
# copy from; the script stops at the first failure.
#
#   clients/examples/curl.sh [URL] [IMAGE]
#   clients/examples/curl.sh http://127.0.0.1:8000 tests/data/images/gray1.png
set -eu
URL=${1:-http://127.0.0.1:8000}
IMAGE=${2:-tests/data/images/gray1.png}
MODEL=${MODEL:-lenet5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# --fail-with-body: exit non-zero on 4xx/5xx, still showing {"error": ...};
# --noproxy: a proxy from the environment has no business on loopback
c() { curl -sS --fail-with-body --noproxy '*' "$@"; }

echo "== health"
c "$URL/v2/health/live"; echo
c "$URL/v2/health/ready"; echo

echo "== model metadata"
c "$URL/v2/models/$MODEL"; echo

echo "== classify: the image as the body"
c -H "Content-Type: image/png" --data-binary "@$IMAGE" "$URL/v2/models/$MODEL/classify?top_k=3"; echo

echo "== classify: multipart, two images in one batch"
c -F "image=@$IMAGE" -F "image=@$IMAGE" "$URL/v2/models/$MODEL/classify?top_k=1"; echo

echo "== infer: JSON tensor (784 values of 0.5 for the 1x1x28x28 input)"
DATA=$(yes 0.5 | head -n 784 | paste -sd, -)
printf '{"inputs":[{"name":"input","datatype":"FP32","shape":[1,1,28,28],"data":[%s]}],' "$DATA" > "$TMP/req.json"
printf '"outputs":[{"name":"logits","parameters":{"classification":3}}]}' >> "$TMP/req.json"
c -H "Content-Type: application/json" --data-binary "@$TMP/req.json" "$URL/v2/models/$MODEL/infer"; echo

echo "== infer: binary tensors (JSON header, then 784 little-endian FP32 zeros)"
printf '{"inputs":[{"name":"input","datatype":"FP32","shape":[1,1,28,28],"parameters":{"binary_data_size":3136}}],"outputs":[{"name":"logits","parameters":{"binary_data":true}}]}' > "$TMP/bin.req"
HEADER_LEN=$(wc -c < "$TMP/bin.req")
head -c 3136 /dev/zero >> "$TMP/bin.req"
c -H "Content-Type: application/octet-stream" -H "Inference-Header-Content-Length: $HEADER_LEN" \
    --data-binary "@$TMP/bin.req" -D "$TMP/headers" -o "$TMP/bin.resp" "$URL/v2/models/$MODEL/infer"
# the answer is a JSON header of Inference-Header-Content-Length bytes, then 10 raw FP32 logits
RESP_LEN=$(tr -d '\r' < "$TMP/headers" | awk -F': ' 'tolower($1) == "inference-header-content-length" {print $2}')
head -c "$RESP_LEN" "$TMP/bin.resp"; echo
echo "($(($(wc -c < "$TMP/bin.resp") - RESP_LEN)) bytes of binary output follow the header)"

echo "== metrics (successful requests per model)"
c "$URL/metrics" | grep '^nv_inference_request_success'
