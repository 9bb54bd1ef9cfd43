"""Talking to inferd with NVIDIA's stock Triton HTTP client (KServe v2).

    python3 -m venv /tmp/tc && /tmp/tc/bin/pip install "tritonclient[http]"
    /tmp/tc/bin/python clients/examples/triton_client.py [localhost:8000]

Health, metadata, infer with JSON and with binary tensors, the classification
extension and statistics: the same calls a Triton user already makes. Needs
numpy (pulled in by tritonclient) and Debian's dataset-fashion-mnist.
"""

import gzip
import sys

import numpy as np
import tritonclient.http as httpclient

url = sys.argv[1] if len(sys.argv) > 1 else "localhost:8000"
client = httpclient.InferenceServerClient(url)
print("live", client.is_server_live(), "ready", client.is_server_ready())
print("lenet5 inputs", client.get_model_metadata("lenet5")["inputs"])

# Four Fashion-MNIST test images, normalised as model.json's preprocessing says.
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    raw = np.frombuffer(f.read()[16:16 + 4 * 784], np.uint8)
x = ((raw.astype(np.float32) * np.float32(1 / 255) - np.float32(0.286)) / np.float32(0.353)).reshape(4, 1, 28, 28)

for binary in (False, True):
    inp = httpclient.InferInput("input", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    out = httpclient.InferRequestedOutput("logits", binary_data=binary)
    result = client.infer("lenet5", [inp], outputs=[out])
    print("binary" if binary else "json  ", "top-1:", result.as_numpy("logits").argmax(1))

top2 = httpclient.InferRequestedOutput("logits", binary_data=True, class_count=2)
result = client.infer("resnet-mini", [inp], outputs=[top2])
print("classification:", result.as_numpy("logits")[0])
print("lenet5 inference count:", client.get_inference_statistics("lenet5")["model_stats"][0]["inference_count"])
