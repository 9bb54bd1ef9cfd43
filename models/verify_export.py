"""Check an exported model folder independently of the exporter.

    /usr/bin/python3 models/verify_export.py model_repository/lenet5 [--fixture tests/data/lenet5.fixture.safetensors]

Reads model.safetensors with its own reader (struct + json: header length,
dtypes, shapes against byte lengths, offsets inside the data, alignment, no
overlaps), runs the model.json node list with torch.nn.functional (not the
nn.Module), and compares the result with the fixture's logits for the first
256 test images and with its predictions / accuracy over the whole test set.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fashion_mnist as fm  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "F64": np.float64, "I8": np.int8,
          "U8": np.uint8, "I16": np.int16, "I32": np.int32, "I64": np.int64, "BOOL": np.bool_}
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I8": 1, "U8": 1, "I16": 2, "I32": 4, "I64": 8,
         "BOOL": 1}


def read_safetensors(path):
    """Return (tensors {name: ndarray}, metadata, info) after validating the layout."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} beyond the file")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not an object")
    data = blob[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta is not None:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())
    ranges = []
    tensors = {}
    for name, h in header.items():
        dt, shape, (b, e) = h["dtype"], h["shape"], h["data_offsets"]
        if dt not in SIZES:
            raise ValueError(f"{path}: {name}: unknown dtype {dt}")
        if any((not isinstance(d, int)) or d < 0 for d in shape):
            raise ValueError(f"{path}: {name}: bad shape {shape}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * SIZES[dt]
        if not (0 <= b <= e <= len(data)) or e - b != nbytes:
            raise ValueError(f"{path}: {name}: offsets {b},{e} vs {nbytes} bytes / {len(data)}")
        if b % SIZES[dt]:
            raise ValueError(f"{path}: {name}: offset {b} not aligned to {SIZES[dt]}")
        ranges.append((b, e, name))
        tensors[name] = np.frombuffer(data, dtype=np.dtype(DTYPES[dt]).newbyteorder("<"),
                                      count=nbytes // SIZES[dt], offset=b).reshape(shape)
    ranges.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(ranges, ranges[1:]):
        if b1 < e0:
            raise ValueError(f"{path}: {n0} and {n1} overlap")
    contiguous = (not ranges or ranges[0][0] == 0) and all(
        r0[1] == r1[0] for r0, r1 in zip(ranges, ranges[1:])) and (
        not ranges or ranges[-1][1] == len(data))
    info = {
        "header_len": n,
        "data_start": 8 + n,
        "data_bytes": len(data),
        "contiguous": contiguous,
        "all_offsets_8_aligned": all(b % 8 == 0 for b, _, _ in ranges),
    }
    return tensors, meta, info


def run_graph(cfg, weights, x):
    env = {cfg["inputs"][0]["name"]: x}
    pending = list(cfg["nodes"])
    while pending:  # nodes may come in any order
        progressed = False
        for node in list(pending):
            if not all(i in env for i in node["inputs"]):
                continue
            ins = [env[i] for i in node["inputs"]]
            w = {r: torch.from_numpy(weights[t].copy()) for r, t in node.get("weights", {}).items()}
            a = node.get("attrs", {})
            op = node["op"]
            if op == "conv2d":
                pad = a.get("padding", [0, 0])
                if len(pad) == 4:
                    assert pad[0] == pad[2] and pad[1] == pad[3]
                    pad = pad[:2]
                y = F.conv2d(ins[0], w["weight"], w.get("bias"), a.get("stride", [1, 1]), pad,
                             a.get("dilation", [1, 1]), a.get("groups", 1))
            elif op == "batch_norm":
                y = F.batch_norm(ins[0], w["running_mean"], w["running_var"], w["weight"],
                                 w["bias"], False, 0.0, a.get("eps", 1e-5))
            elif op == "linear":
                y = F.linear(ins[0], w["weight"], w.get("bias"))
            elif op == "relu":
                y = F.relu(ins[0])
            elif op == "max_pool2d":
                y = F.max_pool2d(ins[0], a["kernel"], a.get("stride", a["kernel"]),
                                 a.get("padding", [0, 0]), a.get("dilation", [1, 1]),
                                 a.get("ceil_mode", False))
            elif op == "global_avg_pool":
                y = ins[0].mean(dim=(2, 3), keepdim=True)
            elif op == "add":
                assert ins[0].shape == ins[1].shape, node["name"]
                y = ins[0] + ins[1]
            elif op == "flatten":
                assert a.get("start_dim", 1) == 1
                y = torch.flatten(ins[0], 1)
            else:
                raise ValueError(f"op {op} not handled by this checker")
            env[node["outputs"][0]] = y
            pending.remove(node)
            progressed = True
        if not progressed:
            raise ValueError(f"graph stuck; unresolved nodes {[n['name'] for n in pending]}")
    return env[cfg["outputs"][0]["name"]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--fixture")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    folder = os.path.normpath(args.folder)
    name = os.path.basename(folder)
    fixture = args.fixture or os.path.join(REPO_ROOT, "tests", "data", f"{name}.fixture.safetensors")

    with open(os.path.join(folder, "model.json")) as f:
        cfg = json.load(f)
    assert cfg["format_version"] == 1 and cfg["name"] == name
    names = [n["name"] for n in cfg["nodes"]]
    assert len(names) == len(set(names)), "duplicate node names"
    outs = [o for n in cfg["nodes"] for o in n["outputs"]]
    assert len(outs) == len(set(outs)), "a tensor produced twice"
    weights, _, info = read_safetensors(os.path.join(folder, "model.safetensors"))
    used = {t for n in cfg["nodes"] for t in n.get("weights", {}).values()}
    assert used == set(weights), f"unused/missing tensors: {used ^ set(weights)}"
    assert all(w.dtype == np.float32 for w in weights.values())
    nparams = sum(w.size for w in weights.values())
    print(f"{folder}/model.safetensors: {len(weights)} tensors, {nparams} params, "
          f"{info['data_bytes']} data bytes, header {info['header_len']} B "
          f"(data at {info['data_start']}), contiguous={info['contiguous']}, "
          f"8-aligned={info['all_offsets_8_aligned']}")
    print("ops:", " ".join(n["op"] for n in cfg["nodes"]))
    with open(os.path.join(folder, cfg["labels"])) as f:
        labels_txt = f.read().splitlines()
    assert labels_txt == fm.CLASS_NAMES, labels_txt

    fx, meta, finfo = read_safetensors(fixture)
    assert fx["logits"].shape == (256, 10) and fx["logits"].dtype == np.float32
    assert fx["predictions"].shape == (10000,) and fx["predictions"].dtype == np.uint8
    assert meta["model"] == name
    print(f"{fixture}: metadata {meta}, contiguous={finfo['contiguous']}")

    images, labels = fm.load_split("test")
    pre = cfg["preprocessing"]
    x = ((images.astype(np.float32) * np.float32(pre["scale"]) - np.float32(pre["mean"][0]))
         / np.float32(pre["std"][0]))[:, None]
    assert np.array_equal(x, fm.normalize(images)), "normalisation not bit-identical"
    with torch.no_grad():
        logits = torch.cat([run_graph(cfg, weights, torch.from_numpy(x[i:i + 1000]))
                            for i in range(0, len(x), 1000)]).numpy()
    diff = np.abs(logits[:256] - fx["logits"]).max()
    preds = logits.argmax(1)
    agree = int((preds == fx["predictions"]).sum())
    acc = float((fx["predictions"] == labels).mean())
    print(f"graph vs fixture: max |dlogits| {diff:.3g} (first 256), predictions agree "
          f"{agree}/10000, fixture accuracy {acc:.4f}, graph accuracy {(preds == labels).mean():.4f}")
    assert diff < 1e-3, diff
    assert agree >= 9990
    assert f"{acc:.4f}" == meta["accuracy"]
    print("OK")


if __name__ == "__main__":
    main()
