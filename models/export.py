"""Export a trained Fashion-MNIST classifier to an inferd model folder.

    /usr/bin/python3 models/export.py --model lenet5 --weights /tmp/inferd-models/lenet5.pt \
        --out model_repository/lenet5

writes model_repository/<name>/{model.json,model.safetensors,labels.txt} (schema:
docs/model-format.md) and the test fixture tests/data/<name>.fixture.safetensors:
"logits" F32 [256,10] for the first 256 test images, "predictions" U8 [10000] for
the whole test set, metadata {"accuracy", "model"}.

It also writes the same weights as ONNX through torch.onnx.export, a folder
inferd loads natively (docs/onnx.md): tests/data/onnx/<name>/{model.onnx,
model.json (serving settings only), labels.txt}, kept apart from the shipped
folder, whose model.json holds the graph. From an existing folder's weights:

    /usr/bin/python3 models/export.py --model lenet5 --onnx-from model_repository/lenet5

The graph is written by hand per net (one function per architecture walking its
modules), not by a generic tracer: the node list is small and this keeps the
file readable. batch_norm stays a separate node; the C loader folds it.
"""

import argparse
import json
import os
import re
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fashion_mnist as fm  # noqa: E402
import nets  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FIXTURE_DIR = os.path.join(REPO_ROOT, "tests", "data")
FIXTURE_LOGITS = 256
ONNX_OPSET = 13

# ---------------------------------------------------------------------------
# safetensors writer
# ---------------------------------------------------------------------------

_DTYPES = {
    np.dtype(np.float32): "F32",
    np.dtype(np.float16): "F16",
    np.dtype(np.float64): "F64",
    np.dtype(np.int8): "I8",
    np.dtype(np.uint8): "U8",
    np.dtype(np.int16): "I16",
    np.dtype(np.int32): "I32",
    np.dtype(np.int64): "I64",
    np.dtype(np.bool_): "BOOL",
}

ALIGN = 8


def write_safetensors(path, tensors, metadata=None):
    """Write {name: np.ndarray} in the public safetensors layout.

    8-byte little-endian header length n, n bytes of JSON (padded with spaces so
    the data starts at a multiple of 8), then the tensors' little-endian bytes,
    contiguous, in the given order. Offsets are relative to the data start.
    For tensors whose byte sizes are multiples of 8 (all of ours) every offset is
    then 8-byte aligned; otherwise zero padding is inserted to keep each offset
    aligned to 8 (the file stays valid for inferd's loader, which allows gaps).
    """
    header = {}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        if name == "__metadata__":
            raise ValueError("tensor name __metadata__ is reserved")
        arr = np.asarray(arr)
        if arr.dtype not in _DTYPES:
            raise ValueError(f"{name}: unsupported dtype {arr.dtype}")
        pad = (-offset) % ALIGN
        if pad:
            blobs.append(b"\0" * pad)
            offset += pad
        data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {
            "dtype": _DTYPES[arr.dtype],
            "shape": [int(d) for d in arr.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    if metadata:
        meta = {}
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError("safetensors metadata must map strings to strings")
            meta[k] = v
        header = {"__metadata__": meta, **header}
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-(8 + len(hjson))) % ALIGN)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    return offset


def state_dict_tensors(module):
    """state_dict as float32 numpy arrays, skipping num_batches_tracked."""
    out = {}
    for name, t in module.state_dict().items():
        if name.endswith("num_batches_tracked"):
            continue
        out[name] = t.detach().cpu().to(torch.float32).contiguous().numpy()
    return out


# ---------------------------------------------------------------------------
# graph emission, one function per architecture
# ---------------------------------------------------------------------------


class Graph:
    def __init__(self):
        self.nodes = []
        self.names = set()

    def add(self, name, op, inputs, output=None, weights=None, attrs=None):
        if name in self.names:
            raise ValueError(f"duplicate node name {name}")
        self.names.add(name)
        out = output or name
        node = {"name": name, "op": op, "inputs": list(inputs), "outputs": [out]}
        if weights:
            node["weights"] = weights
        if attrs:
            node["attrs"] = attrs
        self.nodes.append(node)
        return out

    def conv(self, name, x, m, output=None):
        assert isinstance(m, nn.Conv2d)
        weights = {"weight": f"{name}.weight"}
        if m.bias is not None:
            weights["bias"] = f"{name}.bias"
        pad = m.padding
        if isinstance(pad, str):
            raise ValueError(f"{name}: string padding {pad!r} unsupported")
        attrs = {
            "stride": list(m.stride),
            "padding": list(pad),
            "dilation": list(m.dilation),
            "groups": m.groups,
        }
        return self.add(name, "conv2d", [x], output, weights, attrs)

    def bn(self, name, x, m, output=None):
        assert isinstance(m, nn.BatchNorm2d)
        weights = {r: f"{name}.{r}" for r in ("weight", "bias", "running_mean", "running_var")}
        return self.add(name, "batch_norm", [x], output, weights, {"eps": float(m.eps)})

    def linear(self, name, x, m, output=None):
        assert isinstance(m, nn.Linear)
        weights = {"weight": f"{name}.weight"}
        if m.bias is not None:
            weights["bias"] = f"{name}.bias"
        return self.add(name, "linear", [x], output, weights)

    def relu(self, name, x, output=None):
        return self.add(name, "relu", [x], output)


def lenet5_graph(m):
    g = Graph()
    x = g.conv("conv1", "input", m.conv1)
    x = g.relu("relu1", x)
    x = g.add("pool1", "max_pool2d", [x], attrs={"kernel": [2, 2], "stride": [2, 2]})
    x = g.conv("conv2", x, m.conv2)
    x = g.relu("relu2", x)
    x = g.add("pool2", "max_pool2d", [x], attrs={"kernel": [2, 2], "stride": [2, 2]})
    x = g.add("flatten", "flatten", [x], output="flat")
    x = g.linear("fc1", x, m.fc1)
    x = g.relu("relu3", x)
    x = g.linear("fc2", x, m.fc2)
    x = g.relu("relu4", x)
    g.linear("fc3", x, m.fc3, output="logits")
    return g.nodes


def basic_block(g, prefix, x, blk):
    y = g.conv(f"{prefix}.conv1", x, blk.conv1)
    y = g.bn(f"{prefix}.bn1", y, blk.bn1)
    y = g.relu(f"{prefix}.relu1", y)
    y = g.conv(f"{prefix}.conv2", y, blk.conv2)
    y = g.bn(f"{prefix}.bn2", y, blk.bn2)
    if blk.downsample is not None:
        conv, bn = blk.downsample[0], blk.downsample[1]
        s = g.conv(f"{prefix}.downsample.0", x, conv)
        s = g.bn(f"{prefix}.downsample.1", s, bn)
    else:
        s = x
    y = g.add(f"{prefix}.add", "add", [y, s])
    return g.relu(f"{prefix}.relu2", y)


def resnet_mini_graph(m):
    g = Graph()
    x = g.conv("conv1", "input", m.conv1)
    x = g.bn("bn1", x, m.bn1)
    x = g.relu("relu", x)
    for lname in ("layer1", "layer2", "layer3"):
        for i, blk in enumerate(getattr(m, lname)):
            x = basic_block(g, f"{lname}.{i}", x, blk)
    x = g.add("avgpool", "global_avg_pool", [x])
    x = g.add("flatten", "flatten", [x], output="flat")
    g.linear("fc", x, m.fc, output="logits")
    return g.nodes


GRAPHS = {"lenet5": lenet5_graph, "resnet-mini": resnet_mini_graph}


def build_from_state_dict(model_name, sd, strict=True):
    """Build the module matching a saved state_dict (resnet-mini widths are read from it).
    strict=False accepts a state_dict without num_batches_tracked (the
    safetensors files skip it; it plays no part in inference)."""
    if model_name == "resnet-mini":
        widths = (
            sd["conv1.weight"].shape[0],
            sd["layer2.0.conv1.weight"].shape[0],
            sd["layer3.0.conv1.weight"].shape[0],
        )
        m = nets.ResNetMini(widths=widths)
    else:
        m = nets.build(model_name)
    missing, unexpected = m.load_state_dict(sd, strict=strict)
    if unexpected or any(not k.endswith("num_batches_tracked") for k in missing):
        raise ValueError(f"state_dict mismatch: missing {missing}, unexpected {unexpected}")
    return m


# ---------------------------------------------------------------------------
# model.json
# ---------------------------------------------------------------------------


def model_config(name, nodes):
    return {
        "format_version": 1,
        "name": name,
        "precision": "fp32",
        "max_batch_size": 64,
        "dynamic_batching": {
            "preferred_batch_sizes": [16, 64],
            "max_queue_delay_us": 500,
            "max_queue_size": 1024,
            "default_timeout_us": 0,
        },
        "instances": {"count": 1, "kind": "auto"},
        "labels": "labels.txt",
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 1, 28, 28]}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, fm.NUM_CLASSES]}],
        "preprocessing": {
            "input": "input",
            "width": fm.IMAGE_SIZE,
            "height": fm.IMAGE_SIZE,
            "color": "gray",
            "invert": False,
            "scale": fm.SCALE,
            "mean": [fm.MEAN],
            "std": [fm.STD],
        },
        "nodes": nodes,
    }


def dump_config(cfg):
    """JSON with 2-space indent, but one node per line (readable diffs)."""
    nodes = cfg["nodes"]
    head = dict(cfg)
    head["nodes"] = "@NODES@"
    text = json.dumps(head, indent=2)
    # keep short lists of scalars on one line: "shape": [-1, 1, 28, 28]
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]",
                  lambda mo: "[" + ", ".join(v.strip() for v in mo.group(1).split(",")) + "]", text)
    lines = ",\n".join("    " + json.dumps(n, separators=(", ", ": ")) for n in nodes)
    text = text.replace('"@NODES@"', "[\n" + lines + "\n  ]")
    json.loads(text)  # sanity
    return text + "\n"


def check_graph(nodes, tensors):
    """Cheap consistency checks: unique names, every input produced, weights exist."""
    produced = {"input"}
    names = set()
    for n in nodes:
        if n["name"] in names:
            raise ValueError(f"duplicate node {n['name']}")
        names.add(n["name"])
        for i in n["inputs"]:
            if i not in produced:
                raise ValueError(f"node {n['name']}: input {i} not produced before")
        for o in n["outputs"]:
            if o in produced:
                raise ValueError(f"node {n['name']}: tensor {o} produced twice")
            produced.add(o)
        for role, w in n.get("weights", {}).items():
            if w not in tensors:
                raise ValueError(f"node {n['name']}: weight {w} missing")
            if w in produced:
                raise ValueError(f"weight name {w} collides with an activation name")
    if "logits" not in produced:
        raise ValueError("graph does not produce logits")
    used = {w for n in nodes for w in n.get("weights", {}).values()}
    unused = set(tensors) - used
    if unused:
        raise ValueError(f"tensors not used by any node: {sorted(unused)}")


# ---------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------


def export_onnx(model, name, out_dir, quiet=False):
    """Write out_dir/{model.onnx, model.json, labels.txt}: the graph and weights
    by torch.onnx.export with a dynamic batch dimension, model.json with the
    serving settings only (the graph comes from the ONNX file)."""
    model = model.cpu().float().eval()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    x = torch.zeros(1, 1, fm.IMAGE_SIZE, fm.IMAGE_SIZE)
    with torch.no_grad():
        torch.onnx.export(model, x, path + ".tmp", input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                          opset_version=ONNX_OPSET, do_constant_folding=True)
    os.replace(path + ".tmp", path)
    cfg = model_config(name, [])
    for key in ("inputs", "outputs", "nodes"):
        del cfg[key]
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2) + "\n")
    with open(os.path.join(out_dir, "labels.txt"), "w") as f:
        f.write("\n".join(fm.CLASS_NAMES) + "\n")
    if not quiet:
        print(f"exported {name} as ONNX (opset {ONNX_OPSET}) -> {path}")


def model_from_folder(model_name, folder):
    """The nn.Module with the weights of folder/model.safetensors."""
    from verify_export import read_safetensors  # noqa: E402 (sibling script)
    tensors, _, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
    sd = {k: torch.from_numpy(np.array(v)) for k, v in tensors.items()}
    return build_from_state_dict(model_name, sd, strict=False)


# ---------------------------------------------------------------------------
# fixture
# ---------------------------------------------------------------------------


@torch.no_grad()
def predict_all(model, images, batch=500):
    model.eval()
    outs = []
    for i in range(0, len(images), batch):
        x = torch.from_numpy(fm.normalize(images[i:i + batch]))
        outs.append(model(x).numpy())
    return np.concatenate(outs).astype(np.float32)


def export(model, model_name, out_dir, fixture_dir=DEFAULT_FIXTURE_DIR, name=None, quiet=False):
    """Write the model folder and the fixture. Returns the test accuracy."""
    out_dir = os.path.normpath(out_dir)
    name = name or os.path.basename(out_dir)
    model = model.cpu().float().eval()
    os.makedirs(out_dir, exist_ok=True)

    tensors = state_dict_tensors(model)
    nodes = GRAPHS[model_name](model)
    check_graph(nodes, tensors)

    param_bytes = write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        f.write(dump_config(model_config(name, nodes)))
    with open(os.path.join(out_dir, "labels.txt"), "w") as f:
        f.write("\n".join(fm.CLASS_NAMES) + "\n")

    images, labels = fm.load_split("test")
    logits = predict_all(model, images)
    preds = logits.argmax(axis=1).astype(np.uint8)
    correct = int((preds == labels).sum())
    acc = correct / len(labels)
    os.makedirs(fixture_dir, exist_ok=True)
    fixture = os.path.join(fixture_dir, f"{name}.fixture.safetensors")
    write_safetensors(
        fixture,
        {"logits": logits[:FIXTURE_LOGITS], "predictions": preds},
        metadata={"accuracy": f"{acc:.4f}", "model": name},
    )
    if not quiet:
        print(f"exported {name}: {len(nodes)} nodes, {len(tensors)} tensors, "
              f"{param_bytes} param bytes -> {out_dir}")
        print(f"fixture {fixture}: test accuracy {acc:.4f} ({correct}/{len(labels)})")
    export_onnx(model, name, os.path.join(fixture_dir, "onnx", name), quiet=quiet)
    return acc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(GRAPHS))
    ap.add_argument("--weights", help="state_dict saved by train.py (torch.save)")
    ap.add_argument("--out", help="model folder, e.g. model_repository/lenet5")
    ap.add_argument("--fixture-dir", default=DEFAULT_FIXTURE_DIR)
    ap.add_argument("--onnx-from", metavar="FOLDER",
                    help="only write the ONNX copy, from FOLDER/model.safetensors")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    if args.onnx_from:
        name = os.path.basename(os.path.normpath(args.onnx_from))
        model = model_from_folder(args.model, args.onnx_from)
        export_onnx(model, name, os.path.join(args.fixture_dir, "onnx", name))
        return
    if not args.weights or not args.out:
        ap.error("--weights and --out are required (or --onnx-from)")
    sd = torch.load(args.weights, map_location="cpu")
    model = build_from_state_dict(args.model, sd)
    export(model, args.model, args.out, args.fixture_dir)


if __name__ == "__main__":
    main()
