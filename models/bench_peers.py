"""inferd against onnxruntime and OpenVINO on the CPU, FP32 and INT8 (`make bench-peers`).

    build/peers-venv/bin/python models/bench_peers.py [--quick] [--repeats R]
        [--window S] [--threads 2] [--models lenet5,resnet-mini,resnet50,mobilenet_v2]

Run by `make bench-peers`, which builds build/bench_peer_inferd and
build/inferctl and makes the virtual environment build/peers-venv (Debian's
torch, numpy and PIL through --system-site-packages; onnxruntime, openvino
and onnx pinned from PyPI: mk/peers.mk).

For each model the same weights run on three engines, each limited to
--threads threads:

- inferd: build/bench_peer_inferd (its C API, CPU backend, `threads`),
  driven over a pipe; FP32 is model_repository/<name>, INT8 inferd's own
  INT8 model: model_repository/<name>-int8 where it ships (lenet5,
  resnet-mini), else `inferctl quantize --method max` over the calibration
  pictures below, written to build/peers/<name>-int8.
- onnxruntime: the PyTorch definition with those weights exported by
  torch.onnx.export (opset 13, dynamic batch; build/peers/<name>/fp32.onnx);
  INT8 is that file through quant_pre_process and quantize_static (QDQ,
  per-channel, activations QUInt8, weights QInt8, MinMax: int8-qdq.onnx;
  on a CPU without VNNI with reduce_range, 7-bit weights, as onnxruntime's
  documentation advises: its U8S8 kernels there add pairs of products in
  16 bits, which saturate and moved its logits 0.16-0.23 from the others'
  on lenet5 and resnet-mini at batch 64 on an AVX2 machine:
  int8-qdq-rr.onnx).
  intra_op_num_threads = threads, inter_op_num_threads = 1, sequential,
  all graph optimisations; runs through an IOBinding bound once.
- OpenVINO: the same two ONNX files, reshaped to the static batch,
  compiled for "CPU" with INFERENCE_NUM_THREADS = threads,
  PERFORMANCE_HINT = LATENCY, NUM_STREAMS = 1, INFERENCE_PRECISION_HINT =
  f32 (this CPU has AVX512_BF16; without the hint FP32 could run in bf16);
  one infer request with its input set once.

Inputs, the same for all engines: Fashion-MNIST test images (the first B,
normalised as the model's preprocessing does) for lenet5 and resnet-mini;
for ResNet-50 and MobileNetV2 (seeded random weights) seeded random smooth
pictures (colour fields on 2, 7 and 28-cell grids plus noise, 256x256,
centre-cropped to 224, ImageNet-normalised). Calibration: 1000 shuffled
Fashion-MNIST training images (the shipped INT8 models used 1000 too), or
32 pictures of the same family with other seeds (PNG files for inferctl).

Before a cell is timed every engine's logits are checked on its batch:
FP32, max |peer - inferd| / max |inferd| <= 1e-4. INT8 (different
quantisers differ): each engine against inferd's FP32 logits of the same
inputs, and the two peers (the same QDQ model) against each other, in that
relative measure <= 0.1 on Fashion-MNIST, with top-1 agreement with FP32
>= 90% over the batch-64 images; <= 0.8 on the random-weight ImageNet
models, which magnify rounding (test_large_imagenet's bound: unrelated or
all-zero logits score 1 or more). A failed check leaves the cell out and
the exit status 1.

Timing: after a warm-up (about 0.2 s per engine, which also sets each
engine's iterations per window of --window seconds, at least one batch),
R rounds each time one window of inferd, then onnxruntime, then OpenVINO,
so all see the same machine load. Each engine runs in its own process
(inferd's bench_peer_inferd; onnxruntime and OpenVINO each in a spawned
Python process), and while one is timed the others are stopped
(SIGSTOP, SIGCONT after): all three are loaded at once, and an idle
engine's threads kept spinning (onnxruntime's intra-op pool, through
pauses of 0.3 s between windows), which on two cores halved some of the
engine cells timed beside them (inferd's INT8 ResNet-50 b16: 40 images/s
beside onnxruntime, 60 alone or with its spinning off; 2026-11-26). A
continued engine first runs a sixth of a window untimed, so that its
threads are spread over the cores again before the timed window.
Tables: the median images/s of each
engine and the median of the per-round ratios inferd / peer, with their
geometric mean; the load average before and after.
"""

import argparse
import math
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fashion_mnist as fm  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(REPO_ROOT, "build")
WORK = os.path.join(BUILD, "peers")
MODELS = {  # name: (batches, kind)
    "lenet5": ((1, 64), "fashion"),
    "resnet-mini": ((1, 64), "fashion"),
    "resnet50": ((1, 16), "imagenet"),
    "mobilenet_v2": ((1, 16), "imagenet"),
}
SHORT = {"lenet5": "lenet5", "resnet-mini": "resnet-mini", "resnet50": "ResNet-50", "mobilenet_v2": "MobileNetV2"}
FP32_LIMIT = 1e-4
# INT8, by kind of model: each engine against FP32, and the peers (the same
# QDQ model) against each other. The trained Fashion-MNIST models measure
# 0.02-0.04; the random-weight ImageNet ones magnify rounding (0.2-0.75),
# where top-1 means little and the bound only catches a broken model
# (unrelated or all-zero logits score 1 or more).
INT8_REL_MAX = {"fashion": 0.1, "imagenet": 0.8}
INT8_TOP1_MIN = {"fashion": 0.90, "imagenet": 0.0}   # batches of more than one image
FASHION_CALIB = 1000
IMAGENET_CALIB = 32
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------


def fashion_inputs(n):
    images, _ = fm.load_split("test")
    return fm.normalize(images[:n])


def fashion_calib(n):
    images, _ = fm.load_split("train")
    order = np.random.default_rng(0).permutation(len(images))[:n]
    return fm.normalize(images[order])


def pictures(n, seed, side=256):
    """uint8 [n, side, side, 3]: smooth colour fields on 2, 7 and 28-cell grids plus noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, side, side, 3), np.float32)
    for i in range(n):
        v = 0.15 * rng.random((side, side, 3), np.float32)
        for cells, weight in ((2, 0.35), (7, 0.3), (28, 0.2)):
            grid = rng.random((cells, cells, 3), np.float32)
            pos = np.clip((np.arange(side) + 0.5) * cells / side - 0.5, 0, cells - 1)
            lo = np.floor(pos).astype(int)
            hi = np.minimum(lo + 1, cells - 1)
            t = (pos - lo).astype(np.float32)
            rows = grid[lo] * (1 - t)[:, None, None] + grid[hi] * t[:, None, None]
            v += weight * (rows[:, lo] * (1 - t)[None, :, None] + rows[:, hi] * t[None, :, None])
        out[i] = v
    return np.clip(np.rint(out * 255), 0, 255).astype(np.uint8)


def imagenet_tensor(pics, size=224):
    """Centre crop, /255, ImageNet mean and std: what the models' preprocessing does to a 256x256 picture."""
    off = (pics.shape[1] - size) // 2
    x = pics[:, off:off + size, off:off + size, :].astype(np.float32).transpose(0, 3, 1, 2) / np.float32(255)
    return np.ascontiguousarray((x - IMAGENET_MEAN) / IMAGENET_STD, dtype=np.float32)


def inputs_for(name, n):
    return fashion_inputs(n) if MODELS[name][1] == "fashion" else imagenet_tensor(pictures(n, seed=1))


# ---------------------------------------------------------------------------
# model files (cached in build/peers, remade when the weights are newer)
# ---------------------------------------------------------------------------


def stale(path, *sources):
    return not os.path.exists(path) or any(os.path.getmtime(s) > os.path.getmtime(path) for s in sources)


def weights_of(name):
    return os.path.join(REPO_ROOT, "model_repository", name, "model.safetensors")


def export_fp32(name):
    path = os.path.join(WORK, name, "fp32.onnx")
    if not stale(path, weights_of(name)):
        return path
    import torch

    import bench_torch  # the same weights in the PyTorch definitions

    model, sample_shape = bench_torch.load(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, torch.zeros(1, *sample_shape), path + ".tmp", input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                          opset_version=13, do_constant_folding=True)
    os.replace(path + ".tmp", path)
    log(f"exported {name} -> {path}")
    return path


def calibration(name):
    if MODELS[name][1] == "fashion":
        return fashion_calib(FASHION_CALIB)
    return imagenet_tensor(pictures(IMAGENET_CALIB, seed=2))


def cpu_has_vnni():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return True   # unknown: quantise as for the machines measured so far
    return "avx512_vnni" in flags or "avx_vnni" in flags


def quantize_qdq(name, fp32_path):
    reduce_range = not cpu_has_vnni()
    path = os.path.join(WORK, name, "int8-qdq-rr.onnx" if reduce_range else "int8-qdq.onnx")
    if not stale(path, fp32_path, __file__):   # (the calibration settings live here)
        return path
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    calib = calibration(name)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter(calib[i:i + 8] for i in range(0, len(calib), 8))

        def get_next(self):
            x = next(self.batches, None)
            return None if x is None else {"input": x}

    pre = os.path.join(WORK, name, "fp32-pre.onnx")
    quant_pre_process(fp32_path, pre, skip_symbolic_shape=True)
    quantize_static(pre, path + ".tmp", Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, reduce_range=reduce_range,
                    calibrate_method=CalibrationMethod.MinMax)
    os.replace(path + ".tmp", path)
    log(f"quantised {name} (quantize_static, QDQ, per-channel, U8S8, MinMax{', reduce_range' if reduce_range else ''}, "
        f"{len(calib)} images) -> {path}")
    return path


def inferd_int8_dir(name):
    shipped = os.path.join(REPO_ROOT, "model_repository", name + "-int8")
    if os.path.isdir(shipped):
        return shipped
    out = os.path.join(WORK, name + "-int8")
    if not stale(os.path.join(out, "model.safetensors"), weights_of(name)):
        return out
    from PIL import Image

    pics_dir = os.path.join(WORK, "calib-pictures")
    os.makedirs(pics_dir, exist_ok=True)
    for i, pic in enumerate(pictures(IMAGENET_CALIB, seed=2)):
        Image.fromarray(pic).save(os.path.join(pics_dir, f"{i:03d}.png"))
    cmd = [os.path.join(BUILD, "inferctl"), "quantize", os.path.join(REPO_ROOT, "model_repository", name), "-o", out,
           "--method", "max", "--calib", str(IMAGENET_CALIB), "--calib-data", pics_dir]
    log(" ".join(cmd))
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    return out


# ---------------------------------------------------------------------------
# engines: load(x) runs batch x once and returns the logits; run(n) times n runs
# ---------------------------------------------------------------------------


class Inferd:
    name = "inferd"

    def __init__(self, model_dir, threads):
        self.proc = subprocess.Popen([os.path.join(BUILD, "bench_peer_inferd"), model_dir, "--threads", str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "ready":
            raise SystemExit(f"bench_peer_inferd could not load {model_dir}")
        self.out_elems = int(ready[2])

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise SystemExit(f"bench_peer_inferd failed on: {line}")
        return answer.strip()

    def load(self, x):
        in_path, out_path = os.path.join(WORK, "inferd-in.bin"), os.path.join(WORK, "inferd-out.bin")
        np.ascontiguousarray(x, np.float32).tofile(in_path)
        self.ask(f"load {len(x)} {in_path} {out_path}")
        return np.fromfile(out_path, np.float32).reshape(len(x), self.out_elems)

    def run(self, n):
        return float(self.ask(f"time {n}"))

    @property
    def pid(self):
        return self.proc.pid

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class OnnxRuntime:
    name = "onnxruntime"

    def __init__(self, path, threads):
        import onnxruntime as ort

        self.ort = ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    def load(self, x):
        self.x = self.ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(x, np.float32))
        self.binding = self.sess.io_binding()
        self.binding.bind_ortvalue_input("input", self.x)
        self.binding.bind_output("logits")
        self.sess.run_with_iobinding(self.binding)
        self.y = self.binding.get_outputs()[0]
        self.binding.bind_ortvalue_output("logits", self.y)   # the same buffer from now on
        return self.y.numpy().copy()

    def run(self, n):
        t = time.perf_counter()
        for _ in range(n):
            self.sess.run_with_iobinding(self.binding)
        return time.perf_counter() - t

    def close(self):
        pass


class OpenVino:
    name = "OpenVINO"

    def __init__(self, path, threads):
        import openvino as ov

        self.ov, self.path, self.threads = ov, path, threads
        self.core = ov.Core()

    def load(self, x):
        model = self.core.read_model(self.path)
        model.reshape({"input": list(x.shape)})
        config = {"INFERENCE_NUM_THREADS": str(self.threads), "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
                  "INFERENCE_PRECISION_HINT": "f32"}
        self.req = self.core.compile_model(model, "CPU", config).create_infer_request()
        self.x = np.ascontiguousarray(x, np.float32)
        self.req.set_input_tensor(self.ov.Tensor(self.x, shared_memory=True))
        self.req.infer()
        return self.req.get_output_tensor().data.copy()

    def run(self, n):
        t = time.perf_counter()
        for _ in range(n):
            self.req.infer()
        return time.perf_counter() - t

    def close(self):
        pass


def serve_engine(conn, cls, args):
    """The loop of an Isolated engine's process: (method, args) in, result out."""
    engine = cls(*args)
    while True:
        method, margs = conn.recv()
        try:
            conn.send(getattr(engine, method)(*margs))
        except Exception as exc:  # noqa: BLE001 - the driver re-raises it
            conn.send(exc)
        if method == "close":
            return


class Isolated:
    """A peer engine (OnnxRuntime, OpenVino) in a spawned process of its own,
    so that interleaved() can stop it while another engine is timed."""

    def __init__(self, cls, *args):
        self.name = cls.name
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=serve_engine, args=(child, cls, args), daemon=True)
        self.proc.start()

    def call(self, method, *args):
        self.conn.send((method, args))
        result = self.conn.recv()
        if isinstance(result, Exception):
            raise result
        return result

    def load(self, x):
        return self.call("load", x)

    def run(self, n):
        return self.call("run", n)

    def close(self):
        self.call("close")
        self.proc.join()

    @property
    def pid(self):
        return self.proc.pid


def alone(engines, i):
    """Lets engine i run and stops the others (i None: lets all run)."""
    for k, e in enumerate(engines):
        os.kill(e.pid, signal.SIGCONT if i is None or k == i else signal.SIGSTOP)


# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------


def rel_err(a, ref):
    return float(np.max(np.abs(a - ref)) / max(float(np.max(np.abs(ref))), 1e-30))


def top1_agree(a, ref):
    return float(np.mean(a.argmax(1) == ref.argmax(1)))


def check_cell(name, precision, logits, fp32_ref):
    """logits: engine name -> logits of the cell's batch; fp32_ref: inferd's FP32 logits of the same inputs.
    Returns (ok, text)."""
    if precision == "fp32":
        errs = {e: rel_err(y, logits["inferd"]) for e, y in logits.items() if e != "inferd"}
        text = ", ".join(f"{e} {v:.1e}" for e, v in errs.items())
        return all(v <= FP32_LIMIT for v in errs.values()), \
            f"max |peer - inferd| / max |inferd|: {text} (limit {FP32_LIMIT:.0e})"
    rel_max, top1_min = INT8_REL_MAX[MODELS[name][1]], INT8_TOP1_MIN[MODELS[name][1]]
    parts, ok = [], True
    for engine, y in logits.items():
        e, agree = rel_err(y, fp32_ref), top1_agree(y, fp32_ref)
        ok &= e <= rel_max and (len(y) == 1 or agree >= top1_min)
        parts.append(f"{engine} top-1 {agree:.0%} rel {e:.2f}")
    peers = rel_err(logits["onnxruntime"], logits["OpenVINO"])
    ok &= peers <= rel_max
    return ok, (f"against FP32: {', '.join(parts)}; onnxruntime vs OpenVINO rel {peers:.3f} "
                f"(limits: rel {rel_max}" + (f", top-1 {top1_min:.0%})" if top1_min else ")"))


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


def interleaved(engines, batch, window, repeats, windows=False):
    """Median images/s per engine and the median per-round ratio inferd / engine;
    with windows, each window's rate printed too."""
    iters = []
    try:
        for i, e in enumerate(engines):   # warm-up, and iterations per window
            alone(engines, i)
            t0, per_run = time.perf_counter(), None
            while time.perf_counter() - t0 < 0.2 or per_run is None:
                per_run = e.run(1)
            iters.append(max(1, round(window / max(per_run, 1e-9))))
        rates = [[] for _ in engines]
        for _ in range(repeats):
            for i, e in enumerate(engines):
                alone(engines, i)
                # A sixth of a window untimed first. Why: inferd's
                # resnet-mini INT8 at batch 1 ran 4.1k images/s in one
                # window in five right after SIGCONT, 8.3k in the others;
                # the guess (not confirmed) is that a continued process's
                # threads start on one core until the scheduler spreads
                # them. Harness runs since still show such cells.
                e.run(max(1, iters[i] // 6))
                rates[i].append(iters[i] * batch / e.run(iters[i]))
    finally:
        alone(engines, None)
    if windows:
        for e, r in zip(engines, rates):
            log(f"  windows, {e.name}: " + " ".join(f"{v:.0f}" for v in r))
    medians = [statistics.median(r) for r in rates]
    ratios = [statistics.median(rates[0][k] / r[k] for k in range(repeats)) for r in rates]
    return medians, ratios


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def table(precision, cells, results, versions):
    head = [f"{SHORT[m]} b{b}" for m, b in cells]
    lines = [f"| {precision.upper()} | " + " | ".join(head) + " | geomean |",
             "|---|" + "--:|" * (len(head) + 1)]
    for i, engine in enumerate(("inferd", "onnxruntime", "OpenVINO")):
        row = [f"{results[c][0][i]:,.0f}" if c in results else "-" for c in cells]
        lines.append(f"| {engine} images/s | " + " | ".join(row) + " | |")
    for i, engine in ((1, "onnxruntime"), (2, "OpenVINO")):
        ratios = [results[c][1][i] for c in cells if c in results]
        row = [f"{results[c][1][i]:.2f}" if c in results else "-" for c in cells]
        lines.append(f"| inferd / {engine} {versions[engine]} | " + " | ".join(row) + f" | {geomean(ratios):.2f} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds of 0.1 s windows")
    ap.add_argument("--repeats", type=int, default=None, help="rounds (default 7, 3 with --quick)")
    ap.add_argument("--window", type=float, default=None, help="seconds per window (default 0.3, 0.1 with --quick)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--windows", action="store_true", help="print every window's images/s, per engine")
    args = ap.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    window = args.window or (0.1 if args.quick else 0.3)
    names = args.models.split(",")
    if any(n not in MODELS for n in names):
        ap.error(f"models are among {', '.join(MODELS)}")
    os.makedirs(WORK, exist_ok=True)

    import onnxruntime
    import openvino

    versions = {"onnxruntime": onnxruntime.__version__, "OpenVINO": openvino.__version__.split("-")[0]}
    load_before = os.getloadavg()
    log(f"onnxruntime {versions['onnxruntime']}, OpenVINO {versions['OpenVINO']}, {args.threads} threads each, "
        f"{repeats} rounds of {window} s windows, each engine alone; load average {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}")

    cells = [(m, b) for m in names for b in MODELS[m][0]]
    results = {"fp32": {}, "int8": {}}
    checks, failed = [], False
    for name in names:
        fp32_onnx = export_fp32(name)
        files = {"fp32": (os.path.join(REPO_ROOT, "model_repository", name), fp32_onnx),
                 "int8": (inferd_int8_dir(name), quantize_qdq(name, fp32_onnx))}
        x_all = inputs_for(name, max(MODELS[name][0]))
        fp32_ref = {}
        for precision in ("fp32", "int8"):
            inferd_dir, onnx_path = files[precision]
            engines = [Inferd(inferd_dir, args.threads), Isolated(OnnxRuntime, onnx_path, args.threads),
                       Isolated(OpenVino, onnx_path, args.threads)]
            for batch in MODELS[name][0]:
                x = x_all[:batch]
                logits = {e.name: e.load(x) for e in engines}
                if precision == "fp32":
                    fp32_ref[batch] = logits["inferd"]
                ok, text = check_cell(name, precision, logits, fp32_ref[batch])
                checks.append(f"{name} b{batch} {precision}: {'ok' if ok else 'FAILED'}: {text}")
                log(checks[-1])
                if not ok:
                    failed = True
                    continue
                results[precision][(name, batch)] = interleaved(engines, batch, window, repeats, args.windows)
                med = results[precision][(name, batch)][0]
                log(f"  images/s: inferd {med[0]:.1f}, onnxruntime {med[1]:.1f}, OpenVINO {med[2]:.1f}")
            for e in engines:
                e.close()

    load_after = os.getloadavg()
    print()
    for precision in ("fp32", "int8"):
        print(table(precision, cells, results[precision], versions))
        print()
    print(f"{args.threads} threads per engine; median of {repeats} interleaved windows of {window} s, the other engines stopped; ratios are "
          f"medians of per-round ratios. INT8: inferd's own INT8 models against onnxruntime quantize_static "
          f"(QDQ, per-channel, U8S8) run by onnxruntime and by OpenVINO.")
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print("logits checked before timing:")
    for line in checks:
        print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
