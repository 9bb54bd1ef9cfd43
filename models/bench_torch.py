"""PyTorch side of `make bench`: images/s of the shipped models on the CPU.

    /usr/bin/python3 models/bench_torch.py [--threads 2] [--repeats 7]

Loads the same weights inferd serves (model_repository/<name>/model.safetensors)
into the PyTorch definitions in nets.py, and for batch 1 and 64 prints one line
"<model> <batch> <images_per_s>": the median over `repeats` timed windows of
about 0.3 s each, after a warm-up, under torch.no_grad() in eval mode. Run by
build/bench_models_cpu, which prints the ratios.
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nets  # noqa: E402
from verify_export import read_safetensors  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name):
    model = nets.build(name)
    tensors, _, _ = read_safetensors(os.path.join(REPO_ROOT, "model_repository", name, "model.safetensors"))
    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    missing = model.load_state_dict(state, strict=False)
    if missing.unexpected_keys or any(not k.endswith("num_batches_tracked") for k in missing.missing_keys):
        raise SystemExit(f"{name}: weights do not match the definition: {missing}")
    return model.eval()


def measure(model, batch, repeats):
    x = torch.rand(batch, 1, 28, 28) * 2 - 1
    with torch.no_grad():
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
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)
    for name in args.models.split(","):
        model = load(name)
        for batch in (1, 64):
            print(f"{name} {batch} {measure(model, batch, args.repeats):.1f}", flush=True)


if __name__ == "__main__":
    main()
