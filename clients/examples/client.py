#!/usr/bin/env python3
"""client.py - talk to inferd from Python with the standard library only.

Classifies image files (one image as the raw body; several as one
multipart/form-data batch), then runs the same model through the KServe v2
infer endpoint twice on a synthetic input: once with JSON tensors, once with
Triton's binary tensor extension, and checks both answers agree.

    python3 clients/examples/client.py --url http://127.0.0.1:8000 shoe.png bag.png

Exit status: 0 ok, 1 the server answered with an error, 3 no server there.
"""
import argparse
import json
import struct
import sys
import urllib.error
import urllib.request
import uuid

# Loopback needs no proxy, whatever the environment says.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def request(url, body=None, headers=None):
    """Returns (status, headers, body bytes); raises ServerError on 4xx/5xx."""
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with OPENER.open(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        # inferd's errors are JSON: {"error": "..."}
        try:
            message = json.loads(e.read())["error"]
        except (ValueError, KeyError):
            message = e.reason
        raise ServerError(e.code, message) from None


class ServerError(Exception):
    def __init__(self, status, message):
        super().__init__(f"{message} (HTTP {status})")


def classify(base, model, paths, top_k):
    images = [open(p, "rb").read() for p in paths]
    url = f"{base}/v2/models/{model}/classify?top_k={top_k}"
    if len(images) == 1:
        _, _, body = request(url, images[0], {"Content-Type": "application/octet-stream"})
    else:
        boundary = uuid.uuid4().hex
        parts = []
        for path, data in zip(paths, images):
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="image"; '
                         f'filename="{path.rsplit("/", 1)[-1]}"\r\n'
                         "Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
        payload = b"".join(parts) + f"--{boundary}--\r\n".encode()
        _, _, body = request(url, payload,
                             {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    for path, result in zip(paths, json.loads(body)["results"]):
        print(path)
        for p in result["predictions"]:
            print(f"  {p['score']:.4f}  {p['label']} ({p['index']})")


def infer_json(base, model, name, shape, values):
    req = {"inputs": [{"name": name, "datatype": "FP32", "shape": shape, "data": values}]}
    _, _, body = request(f"{base}/v2/models/{model}/infer", json.dumps(req).encode(),
                         {"Content-Type": "application/json"})
    out = json.loads(body)["outputs"][0]
    return out["name"], out["data"]


def infer_binary(base, model, name, shape, values):
    raw = struct.pack(f"<{len(values)}f", *values)
    header = json.dumps({
        "inputs": [{"name": name, "datatype": "FP32", "shape": shape,
                    "parameters": {"binary_data_size": len(raw)}}],
        "parameters": {"binary_data_output": True},
    }).encode()
    _, headers, body = request(f"{base}/v2/models/{model}/infer", header + raw, {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(header)),
    })
    # The answer: a JSON header of Inference-Header-Content-Length bytes,
    # then each output's raw little-endian data in order.
    json_len = int(headers["Inference-Header-Content-Length"])
    out = json.loads(body[:json_len])["outputs"][0]
    size = out["parameters"]["binary_data_size"]
    data = body[json_len:json_len + size]
    return out["name"], list(struct.unpack(f"<{size // 4}f", data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--model", default="lenet5")
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("images", nargs="+")
    args = ap.parse_args()
    base = args.url.rstrip("/")
    try:
        request(f"{base}/v2/health/ready")
        classify(base, args.model, args.images, args.top_k)
        meta = json.loads(request(f"{base}/v2/models/{args.model}")[2])
        tensor = meta["inputs"][0]
        shape = [1] + tensor["shape"][1:]          # -1 is the batch dimension
        count = 1
        for d in shape:
            count *= d
        values = [((i * 37) % 255) / 255.0 for i in range(count)]
        name, by_json = infer_json(base, args.model, tensor["name"], shape, values)
        _, by_binary = infer_binary(base, args.model, tensor["name"], shape, values)
        worst = max(abs(a - b) for a, b in zip(by_json, by_binary))
        print(f"infer {name}: {len(by_json)} values; JSON and binary agree within {worst:.2g}")
        if len(by_json) != len(by_binary) or worst > 1e-5 * max(1.0, max(map(abs, by_json))):
            print("JSON and binary answers differ", file=sys.stderr)
            return 1
    except ServerError as e:
        print(f"client.py: {e}", file=sys.stderr)
        return 1
    except urllib.error.URLError as e:
        print(f"client.py: cannot connect to {base}: {e.reason}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
