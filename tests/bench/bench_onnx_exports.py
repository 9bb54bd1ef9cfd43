"""inferd against onnxruntime on PyTorch's own ONNX exports (make test-onnx-exports writes them under
build/onnx-exports/): each model at batch 1 on two threads, inferd through build/bench_peer_inferd (its C API,
the CPU backend) and onnxruntime through its Python API (intra-op threads 2, inter-op 1, spinning off so that
an idle engine takes no core from the one being timed). The two outputs for one seeded random image are
compared first (max |inferd - onnxruntime| / max |onnxruntime|, at most 1e-4); then rounds alternate the
engines, each timing a window of runs, and the table gives the median ms per image and the median of the
per-round ratios.

    make bench-onnx-exports                               (about a minute once the exports exist)
    build/peers-venv/bin/python tests/bench/bench_onnx_exports.py [--rounds 7] [--runs 5] [MODEL...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

MODELS = ["lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "mobilenet_v3_small", "efficientnet_b0",
          "resnet18", "convnext_tiny"]


class Inferd:
    """build/bench_peer_inferd driven over its pipe (tests/bench/bench_peer_inferd.c)."""

    def __init__(self, build, folder):
        self.p = subprocess.Popen([os.path.join(build, "bench_peer_inferd"), folder, "--threads", "2"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if not self.p.stdout.readline().startswith("ready"):
            raise RuntimeError(f"bench_peer_inferd refused {folder}")

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def run_once(self, x):
        with tempfile.TemporaryDirectory() as t:
            xi, yo = os.path.join(t, "x"), os.path.join(t, "y")
            x.tofile(xi)
            if self.ask(f"load 1 {xi} {yo}") != "ok":
                raise RuntimeError("bench_peer_inferd: load failed")
            return np.fromfile(yo, np.float32)

    def seconds(self, runs):
        return float(self.ask(f"time {runs}"))

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5, help="runs per timed window")
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows, failed = [], False
    for name in args.models:
        folder = os.path.join(args.build, "onnx-exports", name)
        if not os.path.exists(os.path.join(folder, "model.onnx")):
            print(f"{name}: no {folder}/model.onnx (make test-onnx-exports writes it)", file=sys.stderr)
            return 1
        x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 2, 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(os.path.join(folder, "model.onnx"), so, providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: x}
        want = sess.run(None, feed)[0]
        inferd = Inferd(args.build, folder)
        got = inferd.run_once(x).reshape(want.shape)
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        if not rel <= 1e-4:
            print(f"{name}: outputs differ (relative {rel:.2e}); not timed", file=sys.stderr)
            inferd.close()
            failed = True
            continue
        mine, theirs = [], []
        for r in range(args.rounds):
            mine.append(inferd.seconds(args.runs) / args.runs * 1e3)
            t0 = time.perf_counter()
            for _ in range(args.runs):
                sess.run(None, feed)
            theirs.append((time.perf_counter() - t0) / args.runs * 1e3)
        inferd.close()
        ratio = statistics.median(t / m for m, t in zip(mine, theirs))
        rows.append((name, list(want.shape), rel, statistics.median(mine), statistics.median(theirs), ratio))
        print(f"  {name}: inferd {rows[-1][3]:.2f} ms, onnxruntime {rows[-1][4]:.2f} ms", flush=True)
    print(f"\n| model (batch 1, 2 threads) | output | rel. diff | inferd ms | onnxruntime {ort.__version__} ms | "
          "onnxruntime / inferd |\n| --- | --- | --: | --: | --: | --: |")
    for name, shape, rel, m, t, ratio in rows:
        print(f"| {name} | {'x'.join(map(str, shape))} | {rel:.1e} | {m:.2f} | {t:.2f} | {ratio:.2f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
