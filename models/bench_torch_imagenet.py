"""PyTorch side of `make bench-imagenet`: images/s of ResNet-50 and MobileNetV2
on the CPU.

    /usr/bin/python3 models/bench_torch_imagenet.py [--threads 2] [--repeats 5] [--batches 1,32]

Loads the weights inferd serves (model_repository/<name>/model.safetensors,
written by export_imagenet.py) into torchvision's definitions and prints, per
model and batch, one line "<model> <batch> <images_per_s>": the median over
`repeats` timed windows of at least 0.3 s (and at least one batch), after a
warm-up, eager mode under torch.no_grad() in eval mode, NCHW float32 input.
Run by build/bench_imagenet_cpu, which prints the ratios.
"""

import argparse
import os
import sys
import time

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from verify_export import read_safetensors  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILDERS = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2}


def load(name):
    model = BUILDERS[name](weights=None)
    tensors, _, _ = read_safetensors(os.path.join(REPO_ROOT, "model_repository", name, "model.safetensors"))
    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    missing = model.load_state_dict(state, strict=False)
    if missing.unexpected_keys or any(not k.endswith("num_batches_tracked") for k in missing.missing_keys):
        raise SystemExit(f"{name}: weights do not match the definition: {missing}")
    return model.eval()


def measure(model, batch, repeats):
    x = torch.rand(batch, 3, 224, 224) * 2 - 1
    with torch.no_grad():
        model(x)
        iters = 1
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.5:
            t = time.perf_counter()
            model(x)
            iters = int(0.3 / max(time.perf_counter() - t, 1e-9)) + 1
        rates = []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(iters):
                model(x)
            rates.append(iters * batch / (time.perf_counter() - t))
    rates.sort()
    return rates[len(rates) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--batches", default="1,32")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"pytorch {torch.__version__}, torchvision {torchvision.__version__}, {torch.get_num_threads()} threads",
          file=sys.stderr)
    for name in args.models.split(","):
        model = load(name)
        for batch in (int(b) for b in args.batches.split(",")):
            print(f"{name} {batch} {measure(model, batch, args.repeats):.2f}", flush=True)


if __name__ == "__main__":
    main()
