"""PyTorch side of `make bench` and `make bench-imagenet`: images/s on the CPU.

    /usr/bin/python3 models/bench_torch.py [--threads 2] [--repeats 7]
        [--models lenet5,resnet-mini] [--batches 1,64]

Loads the same weights inferd serves (model_repository/<name>/model.safetensors)
into the PyTorch definitions (models/nets.py for the Fashion-MNIST models,
torchvision's for resnet50 and mobilenet_v2) and prints, per model and batch,
one line "<model> <batch> <images_per_s>": the median over `repeats` timed
windows of about 0.3 s each (at least one batch), after a warm-up, eager mode
under torch.no_grad() in eval mode, with random inputs of the shape in the
model's model.json. Run by build/bench_models_cpu, which prints the ratios.
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nets  # noqa: E402
from verify_export import read_safetensors  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(name):
    if name in nets.MODELS:
        return nets.build(name)
    import torchvision  # only the ImageNet-scale models need it

    builders = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2}
    if name not in builders:
        raise SystemExit(f"unknown model {name!r}")
    return builders[name](weights=None)


def load(name):
    folder = os.path.join(REPO_ROOT, "model_repository", name)
    model = build(name)
    tensors, _, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    missing = model.load_state_dict(state, strict=False)
    if missing.unexpected_keys or any(not k.endswith("num_batches_tracked") for k in missing.missing_keys):
        raise SystemExit(f"{name}: weights do not match the definition: {missing}")
    with open(os.path.join(folder, "model.json")) as f:
        sample_shape = json.load(f)["inputs"][0]["shape"][1:]
    return model.eval(), sample_shape


def measure(model, sample_shape, batch, repeats):
    x = torch.rand(batch, *sample_shape) * 2 - 1
    with torch.no_grad():
        model(x)
        iters = 1
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.2:
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
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--models", default="lenet5,resnet-mini")
    ap.add_argument("--batches", default="1,64")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)
    for name in args.models.split(","):
        model, sample_shape = load(name)
        for batch in (int(b) for b in args.batches.split(",")):
            print(f"{name} {batch} {measure(model, sample_shape, batch, args.repeats):.2f}", flush=True)


if __name__ == "__main__":
    main()
