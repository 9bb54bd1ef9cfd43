"""PyTorch on the GPU: the peer that build/bench_gpu compares inferd with.

    python3 models/bench_torch_gpu.py [--repeats 7] [--batches 1,8,64,256,1024]

Loads model_repository/<name>/model.safetensors into the nn.Module of
models/nets.py and prints one line per measurement on stdout:

    <model> <fp32|fp16> <eager|graph> <batch> <images_per_s> <latency_ms>

Each call is timed host to host as inferd's rt_session_run is: copy a CPU
batch in, run, copy the logits out, synchronise. "eager" runs the module
under inference_mode with cudnn.benchmark on; "graph" replays a CUDA graph
captured per batch size (static input and output buffers). Median over
--repeats windows of 0.2 s after a warm-up.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nets  # noqa: E402
from verify_export import read_safetensors  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name):
    tensors, _, _ = read_safetensors(os.path.join(REPO_ROOT, "model_repository", name, "model.safetensors"))
    sd = {k: torch.from_numpy(np.array(v)) for k, v in tensors.items()}
    if name == "resnet-mini":
        widths = (sd["conv1.weight"].shape[0], sd["layer2.0.conv1.weight"].shape[0],
                  sd["layer3.0.conv1.weight"].shape[0])
        model = nets.ResNetMini(widths=widths)
    else:
        model = nets.build(name)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if unexpected or any(not k.endswith("num_batches_tracked") for k in missing):
        raise SystemExit(f"{name}: weights do not match the module: {missing} {unexpected}")
    return model.eval()


def windows(step, repeats):
    """(images/s factor, seconds per call) medians: calls per second and latency."""
    for _ in range(3):
        step()
    rates, lats = [], []
    for _ in range(repeats):
        calls, t0 = 0, time.perf_counter()
        while True:
            step()
            calls += 1
            t = time.perf_counter() - t0
            if t >= 0.2:
                break
        rates.append(calls / t)
        lats.append(t / calls)
    return statistics.median(rates), statistics.median(lats)


def bench(name, half, batch, repeats, dev):
    model = load(name).to(dev)
    dtype = torch.float16 if half else torch.float32
    model = model.to(dtype)
    x_cpu = torch.randn(batch, 1, 28, 28)
    results = {}

    def eager():
        with torch.inference_mode():
            y = model(x_cpu.to(dev, non_blocking=False).to(dtype))
            return y.float().cpu()

    results["eager"] = windows(eager, repeats)

    static_x = torch.zeros(batch, 1, 28, 28, device=dev, dtype=dtype)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        static_y = model(static_x)

    def replay():
        static_x.copy_(x_cpu.to(dev).to(dtype))
        graph.replay()
        return static_y.float().cpu()

    results["graph"] = windows(replay, repeats)
    for mode, (calls_per_s, latency) in results.items():
        print(f"{name} {'fp16' if half else 'fp32'} {mode} {batch} {calls_per_s * batch:.1f} {latency * 1e3:.4f}",
              flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batches", default="1,8,64,256,1024")
    ap.add_argument("--models", default="lenet5,resnet-mini")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA device")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False   # FP32 means FP32, as in inferd
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}",
          file=sys.stderr)
    for name in args.models.split(","):
        if not os.path.exists(os.path.join(REPO_ROOT, "model_repository", name, "model.safetensors")):
            print(f"# {name}: no weights, skipped", file=sys.stderr)
            continue
        for half in (False, True):
            for batch in (int(b) for b in args.batches.split(",")):
                bench(name, half, batch, args.repeats, dev)


if __name__ == "__main__":
    main()
