#!/usr/bin/env python3
"""peer_layers.py - where the time goes, layer by layer: inferd against
onnxruntime and OpenVINO on the same model, batch and thread count.

    build/peers-venv/bin/python models/peer_layers.py MODEL \
        [--precision fp32|int8] [--batch B] [--threads T] [--runs N]

MODEL is one of bench_peers.py's (lenet5, resnet-mini, resnet50,
mobilenet_v2); run `make bench-peers` once first, which exports the ONNX
files (build/peers/MODEL/fp32.onnx, int8-qdq.onnx), makes the venv and
builds inferd. Per layer: inferd's median step time (`inferctl profile`),
onnxruntime's mean node time from its profiler (enable_profiling), and
OpenVINO's per-node real time (PERF_COUNT) from its last of N runs. The
peers' node names (/layer1/layer1.0/conv1/Conv) are matched to inferd's
step names (layer1.0.conv1); a node that matches no step (a separate
Relu or Add, which inferd fuses into the convolution) counts under the
step whose name prefixes it, else under "(other)". The engines are
configured as bench_peers.py does. Profilers add their own overhead, so
read the per-layer shares, and the wall-clock rates from `make
bench-peers`.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "build", "peers")


def inferd_dir(model, precision):
    if precision == "fp32":
        return os.path.join(ROOT, "model_repository", model)
    shipped = os.path.join(ROOT, "model_repository", model + "-int8")
    return shipped if os.path.isdir(shipped) else os.path.join(PEERS, model + "-int8")


def inferd_steps(model, precision, batch, threads, runs):
    """Step name -> median us per call, from inferctl profile's table."""
    inferctl = os.environ.get("INFERCTL", os.path.join(ROOT, "build", "inferctl"))
    out = subprocess.run([inferctl, "profile", inferd_dir(model, precision),
                          "--batch", str(batch), "--threads", str(threads), "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    steps, order = {}, []
    for line in out.splitlines():
        f = line.split()
        # rows: index, name, op, ... median, share, GFLOP/s, GB/s, %peak, %gemm, %bw
        if len(f) > 8 and f[0].isdigit():
            steps[f[1]] = float(f[-7])
            order.append(f[1])
        if line.startswith("per sample:"):
            per_sample = float(f[2])
    return steps, order, per_sample


def step_name(path):
    """/layer2/layer2.0/downsample/downsample.0/Conv -> layer2.0.downsample.0 (scopes
    that the next scope repeats are PyTorch's module nesting)."""
    segs = [s for s in path.split("/") if s]
    keep = [s for i, s in enumerate(segs) if not (i + 1 < len(segs) and segs[i + 1].startswith(s + "."))]
    return ".".join(keep)


def assign(node, steps):
    """The step a peer's node belongs to: the step it names, or, for a node
    inferd fuses into a convolution (a Clip or Relu beside it, named in the
    same scope), the one step of that scope; None when no step or several
    share the scope."""
    segs = [s for s in node.split("/") if s]
    for i in range(len(segs), 0, -1):
        name = step_name("/".join(segs[:i]))
        if name in steps:
            return name
        kids = [s for s in steps if s.startswith(name + ".")]
        if kids:
            return kids[0] if len(kids) == 1 else None
    return None


def input_array(path, batch):
    import onnx
    m = onnx.load(path, load_external_data=False)
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    return np.random.default_rng(1).random([batch] + dims[1:], dtype=np.float32)


def ort_nodes(path, x, threads, runs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    for _ in range(10):
        s.run(None, {name: x})
    t = time.perf_counter()
    for _ in range(runs):
        s.run(None, {name: x})
    wall = (time.perf_counter() - t) / runs
    prof = s.end_profiling()
    with open(prof) as f:
        events = json.load(f)
    total, counts = {}, {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            n = e["name"][: -len("_kernel_time")]
            total[n] = total.get(n, 0.0) + e["dur"]
            counts[n] = counts.get(n, 0) + 1
    calls = max(counts.values()) if counts else 1
    return {n: us / calls for n, us in total.items()}, wall


def ov_nodes(path, x, threads, runs):
    import openvino as ov
    core = ov.Core()
    model = core.read_model(path)
    model.reshape({model.inputs[0].any_name: list(x.shape)})
    config = {"INFERENCE_NUM_THREADS": str(threads), "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
              "INFERENCE_PRECISION_HINT": "f32", "PERF_COUNT": "YES"}
    req = core.compile_model(model, "CPU", config).create_infer_request()
    for _ in range(10):
        req.infer({0: x})
    t = time.perf_counter()
    for _ in range(runs):
        req.infer({0: x})
    wall = (time.perf_counter() - t) / runs
    return {p.node_name: p.real_time.total_seconds() * 1e6 for p in req.get_profiling_info()}, wall


def by_step(nodes, steps):
    out = {}
    for node, us in nodes.items():
        s = assign(node, steps) or "(other)"
        out[s] = out.get(s, 0.0) + us
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--precision", choices=["fp32", "int8"], default="fp32")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    onnx_path = os.path.join(PEERS, a.model, "fp32.onnx" if a.precision == "fp32" else "int8-qdq.onnx")
    if not os.path.exists(onnx_path):
        sys.exit(f"peer_layers: {onnx_path} is missing: run `make bench-peers` first")
    print(f"{a.model} {a.precision}, batch {a.batch}, {a.threads} thread(s), {a.runs} runs; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    steps, order, ours_sample = inferd_steps(a.model, a.precision, a.batch, a.threads, a.runs)
    x = input_array(onnx_path, a.batch)
    ort_raw, ort_wall = ort_nodes(onnx_path, x, a.threads, a.runs)
    ov_raw, ov_wall = ov_nodes(onnx_path, x, a.threads, a.runs)
    ort, ovs = by_step(ort_raw, steps), by_step(ov_raw, steps)
    print(f"\n| step | inferd us | onnxruntime us | OpenVINO us | inferd / best peer |")
    print("|---|--:|--:|--:|--:|")
    for s in order + ["(other)"]:
        ours = steps.get(s, 0.0)
        o, v = ort.get(s, 0.0), ovs.get(s, 0.0)
        best = min([t for t in (o, v) if t > 0], default=0)
        ratio = f"{best / ours:.2f}" if ours > 0 and best > 0 else "-"
        print(f"| {s} | {ours:.1f} | {o:.1f} | {v:.1f} | {ratio} |")
    print(f"| sum of steps | {sum(steps.values()):.1f} | {sum(ort.values()):.1f} | {sum(ovs.values()):.1f} | |")
    print(f"| wall, per call | {ours_sample * a.batch:.1f} | {ort_wall * 1e6:.1f} | {ov_wall * 1e6:.1f} | |")


if __name__ == "__main__":
    main()
