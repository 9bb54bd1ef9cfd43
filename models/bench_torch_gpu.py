"""PyTorch on the GPU: the peer that build/bench_gpu compares inferd with.

    python3 models/bench_torch_gpu.py [--models lenet5,resnet-mini,resnet50,mobilenet_v2]
        [--batches 1,8,64,256] [--repeats 5] [--window 0.1] [--budget 90]
        [--compile-limit 60] [--no-compile]

Prints one line per measurement on stdout, as soon as it is made (bench_gpu
reads them; notes go to stderr):

    <model> <fp32|fp16> <eager|graph|compile> <batch> <images_per_s> <latency_ms>

The modules: lenet5 and resnet-mini are models/nets.py's; resnet50 and
mobilenet_v2 are torchvision's own definitions (torchvision.models.resnet50
and mobilenet_v2, the ones models/export_imagenet.py exports). Each takes
the weights of model_repository/<name>/model.safetensors, whose tensor names
are the module's state_dict names for all four; where the file is missing or
its names or shapes do not fit, the module keeps a seeded random
initialisation instead, and a note on stderr says which it is. For timing the
arithmetic is the same either way.

Each call is timed host to host, as inferd's rt_session_run is: the FP32 batch
copied in from CPU memory (and converted to FP16 on the device for FP16), the
forward pass, the logits copied out as FP32, synchronised. Three ways of
running the forward pass:

    eager    the module under inference_mode, torch.backends.cudnn.benchmark on
    graph    a CUDA graph captured per batch size (static input and output
             buffers), replayed
    compile  torch.compile(module), its default mode (inductor), under
             inference_mode

FP32 is FP32 (TF32 off for matmuls and cuDNN); FP16 is module.half(). Each
figure is the median over --repeats windows of --window seconds, after 3
warm-up calls.

Time: eager and graph run first, every model, every batch (cuDNN's autotuning
of each new shape included). torch.compile runs last, with what is left of
--budget seconds (counted from the start of main): model after model, FP32
then FP16; a model's compiles stop after batch 1 FP32 when that first
compile took over --compile-limit seconds; none starts with under 10 s left;
and an alarm stops the phase when the budget runs out (the figures printed
so far stand). Without torch.compile (torch before 2.0) the phase is skipped.
"""

import argparse
import copy
import os
import signal
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nets  # noqa: E402
from verify_export import read_safetensors  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = {"lenet5": (1, 28, 28), "resnet-mini": (1, 28, 28), "resnet50": (3, 224, 224), "mobilenet_v2": (3, 224, 224)}
TORCHVISION = ("resnet50", "mobilenet_v2")
SEED = 19
MIN_COMPILE_S = 10   # no model's compile starts with less of the budget left


class OutOfTime(BaseException):
    """The budget's alarm. A BaseException, so that the `except Exception`
    handlers inside torch.compile let it through."""


def note(text):
    print(f"# {text}", file=sys.stderr, flush=True)


def report(name, half, mode, batch, figures):
    calls_per_s, latency = figures
    print(f"{name} {'fp16' if half else 'fp32'} {mode} {batch} {calls_per_s * batch:.1f} {latency * 1e3:.4f}",
          flush=True)


# ---------------------------------------------------------------------------
# the modules
# ---------------------------------------------------------------------------


def build(name, state):
    """name's module with seeded random weights; state (the file's tensors,
    or None) sizes resnet-mini's widths."""
    torch.manual_seed(SEED)
    if name in TORCHVISION:
        import torchvision  # only these two need it
        return getattr(torchvision.models, name)()
    if name == "resnet-mini" and state is not None:
        widths = tuple(state[k].shape[0] for k in ("conv1.weight", "layer2.0.conv1.weight", "layer3.0.conv1.weight"))
        return nets.ResNetMini(widths=widths)
    return nets.build(name)


def load(name):
    """(the module in eval mode on the CPU, where its weights come from)."""
    path = os.path.join(REPO_ROOT, "model_repository", name, "model.safetensors")
    if not os.path.exists(path):
        return build(name, None).eval(), "seeded random weights (no model.safetensors)"
    tensors, _, _ = read_safetensors(path)
    state = {k: torch.from_numpy(np.array(v)) for k, v in tensors.items()}
    try:
        model = build(name, state)
        missing, unexpected = model.load_state_dict(state, strict=False)
    except (KeyError, RuntimeError) as e:   # resnet-mini's widths not in the file, or shapes that differ
        return build(name, None).eval(), f"seeded random weights (the file's tensors do not fit: {e})"
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        return build(name, None).eval(), (f"seeded random weights (the file's names do not map: {len(missing)} "
                                          f"missing, {len(unexpected)} unexpected)")
    return model.eval(), os.path.relpath(path, REPO_ROOT)


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


def windows(step, args):
    """(calls per second, seconds per call): medians over args.repeats windows
    of args.window seconds, after 3 warm-up calls."""
    for _ in range(3):
        step()
    rates, lats = [], []
    for _ in range(args.repeats):
        calls, t0 = 0, time.perf_counter()
        while True:
            step()
            calls += 1
            t = time.perf_counter() - t0
            if t >= args.window:
                break
        rates.append(calls / t)
        lats.append(t / calls)
    return statistics.median(rates), statistics.median(lats)


def eager_step(model, x_cpu, dtype, dev):
    """One host-to-host call of model (a module or a compiled one)."""

    def step():
        with torch.inference_mode():
            return model(x_cpu.to(dev).to(dtype)).float().cpu()

    return step


def graph_step(model, x_cpu, dtype, dev):
    """One host-to-host call replaying a CUDA graph of model at x_cpu's shape."""
    static_x = torch.zeros(x_cpu.shape, device=dev, dtype=dtype)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        for _ in range(3):   # cudnn.benchmark's choices before the capture
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        static_y = model(static_x)

    def step():
        static_x.copy_(x_cpu.to(dev).to(dtype))
        graph.replay()
        return static_y.float().cpu()

    return step


def batch_input(batch, shape):
    return torch.randn(batch, *shape, generator=torch.Generator().manual_seed(batch))


def on_device(model, half, dev):
    return copy.deepcopy(model).to(dev, torch.float16 if half else torch.float32)


# ---------------------------------------------------------------------------
# the two phases
# ---------------------------------------------------------------------------


def eager_and_graph(name, model, args, dev):
    for half in (False, True):
        dtype = torch.float16 if half else torch.float32
        m = on_device(model, half, dev)
        for batch in args.batches:
            x_cpu = batch_input(batch, INPUTS[name])
            report(name, half, "eager", batch, windows(eager_step(m, x_cpu, dtype, dev), args))
            report(name, half, "graph", batch, windows(graph_step(m, x_cpu, dtype, dev), args))
        del m
        torch.cuda.empty_cache()


def compile_model(name, model, args, dev):
    """torch.compile's figures for one model (batch 1 compiles for its
    shape, the next batch once more with the batch dimension dynamic)."""
    for half in (False, True):
        dtype = torch.float16 if half else torch.float32
        compiled = torch.compile(on_device(model, half, dev))
        for batch in args.batches:
            step = eager_step(compiled, batch_input(batch, INPUTS[name]), dtype, dev)
            t0 = time.monotonic()
            step()
            took = time.monotonic() - t0
            note(f"compile {name} {'fp16' if half else 'fp32'} batch {batch}: first call {took:.1f} s")
            report(name, half, "compile", batch, windows(step, args))
            if not half and batch == args.batches[0] and took > args.compile_limit:
                note(f"compile {name}: its first compile took over {args.compile_limit:.0f} s; the rest skipped")
                return
        del compiled
        torch.cuda.empty_cache()


def compile_phase(loaded, args, dev, deadline):
    """compile_model for each loaded (name, module) until deadline (monotonic
    seconds); True when the alarm cut it short."""
    if not hasattr(torch, "compile"):
        note(f"compile: torch {torch.__version__} has no torch.compile; skipped")
        return False

    def on_alarm(signum, frame):
        raise OutOfTime()

    signal.signal(signal.SIGALRM, on_alarm)
    try:
        for name, model in loaded:
            left = deadline - time.monotonic()
            if left < MIN_COMPILE_S:
                note(f"compile: {name} and the models after it skipped: {max(left, 0):.0f} s of the budget left")
                return False
            # repeating: an alarm raised inside a finaliser is dropped by Python
            signal.setitimer(signal.ITIMER_REAL, left, 2.0)
            try:
                compile_model(name, model, args, dev)
            except Exception as e:   # one model inductor cannot compile; the next may
                if time.monotonic() >= deadline:   # the alarm, wrapped by torch
                    raise OutOfTime() from e
                first_line = (str(e).strip().splitlines() or [""])[0]
                note(f"compile {name}: failed: {type(e).__name__}: {first_line}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except OutOfTime:
        note("compile: stopped, the budget ran out")
        return True
    return False


def main(argv=None):
    start = time.monotonic()
    # bench_gpu gone (its step killed): end at the next write, not carry on
    # compiling with nobody reading
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(INPUTS))
    ap.add_argument("--batches", default="1,8,64,256")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--window", type=float, default=0.1, help="seconds per timed window")
    ap.add_argument("--budget", type=float, default=90, help="seconds for everything; compile gets what is left")
    ap.add_argument("--compile-limit", type=float, default=60,
                    help="a model's first compile taking longer stops that model's compiles")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args(argv)
    args.batches = [int(b) for b in args.batches.split(",")]
    names = args.models.split(",")
    unknown = [n for n in names if n not in INPUTS]
    if unknown:
        raise SystemExit(f"unknown models {unknown}; known: {', '.join(INPUTS)}")
    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA device")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False   # FP32 means FP32, as in inferd
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    note(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")

    loaded = []
    for name in names:
        try:
            model, source = load(name)
        except ImportError as e:   # torchvision missing
            note(f"{name}: skipped: {e}")
            continue
        note(f"{name}: {source}; eager and graph from {time.monotonic() - start:.0f} s")
        eager_and_graph(name, model, args, dev)
        loaded.append((name, model))
    if args.no_compile:
        note("compile: skipped (--no-compile)")
        return
    note(f"compile: {start + args.budget - time.monotonic():.0f} s of the budget left")
    if compile_phase(loaded, args, dev, start + args.budget):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)   # not waiting for the compile workers the alarm left behind


if __name__ == "__main__":
    main()
