"""Export seeded, randomly initialised ImageNet-scale models for inferd.

    /usr/bin/python3 models/export_imagenet.py [--models resnet50,mobilenet_v2] [--threads 2]

No pretrained ImageNet weights can be downloaded here, so each model is
torchvision's own definition (python3-torchvision: ResNet-50 v1.5, the stride
on the 3x3 convolution; MobileNetV2 with depthwise convolutions, ReLU6 and
inverted residuals) with seeded random weights: right shapes and arithmetic,
meaningless labels. Writes

    model_repository/<name>/{model.json,model.safetensors,labels.txt}
    tests/data/<name>.fixture.safetensors

The batch norms are made non-trivial so that folding them is really tested:
gamma and beta are drawn from a seeded distribution, then the running
statistics are accumulated (cumulative average) over a few train-mode
forward passes on seeded random images, so every layer sees realistic
normalisation instead of the identity (mean 0, var 1).

The fixture holds "input" F32 [8, 3, 224, 224] (seeded random images,
ImageNet-normalised) and "logits" F32 [8, 1000] from the eval-mode module.
Neither is committed: the running statistics come out of float forward
passes whose summation order depends on the CPU's kernels and thread count,
so another machine generates weights that differ in the last bits, and a
fixture is only valid for the weights it was made with.

The node list is written by walking the module tree (Graph and the
safetensors writer come from export.py); batch_norm stays a node of its own
and Dropout, an identity in eval mode, is left out.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.mobilenetv2 import InvertedResidual
from torchvision.models.resnet import Bottleneck

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import export  # noqa: E402

REPO_ROOT = export.REPO_ROOT
IMAGE_SIZE = 224
RESIZE_SHORTER = 256
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
NUM_CLASSES = 1000
FIXTURE_IMAGES = 8
CALIB_PASSES = 3
CALIB_BATCH = 8
SEEDS = {"resnet50": 50, "mobilenet_v2": 2}
BUILDERS = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2}


# ---------------------------------------------------------------------------
# the graph, by walking the module tree
# ---------------------------------------------------------------------------


class Walker:
    """Emits export.Graph nodes for a module, recursively; node names are the
    modules' state_dict prefixes, so weight names follow from them."""

    def __init__(self):
        self.g = export.Graph()

    def module(self, name, m, x):
        if isinstance(m, nn.Conv2d):
            return self.g.conv(name, x, m)
        if isinstance(m, nn.BatchNorm2d):
            return self.g.bn(name, x, m)
        if isinstance(m, nn.ReLU):
            return self.g.relu(name, x)
        if isinstance(m, nn.ReLU6):
            return self.g.add(name, "relu6", [x])
        if isinstance(m, nn.Dropout):
            return x
        if isinstance(m, nn.MaxPool2d):
            return self.max_pool(name, m, x)
        if isinstance(m, nn.AdaptiveAvgPool2d):
            if tuple(np.atleast_1d(m.output_size)) not in ((1,), (1, 1)):
                raise ValueError(f"{name}: only global average pooling is supported")
            return self.g.add(name, "global_avg_pool", [x])
        if isinstance(m, nn.Linear):
            return self.g.linear(name, x, m)
        if isinstance(m, Bottleneck):
            return self.bottleneck(name, m, x)
        if isinstance(m, InvertedResidual):
            y = self.module(f"{name}.conv", m.conv, x)
            return self.g.add(f"{name}.add", "add", [x, y]) if m.use_res_connect else y
        if isinstance(m, nn.Sequential):   # also Conv2dNormActivation
            for child_name, child in m.named_children():
                x = self.module(f"{name}.{child_name}" if name else child_name, child, x)
            return x
        raise ValueError(f"{name}: no export rule for {type(m).__name__}")

    def max_pool(self, name, m, x):
        pair = lambda v: [v, v] if isinstance(v, int) else list(v)  # noqa: E731
        attrs = {"kernel": pair(m.kernel_size), "stride": pair(m.stride), "padding": pair(m.padding),
                 "dilation": pair(m.dilation), "ceil_mode": bool(m.ceil_mode)}
        return self.g.add(name, "max_pool2d", [x], attrs=attrs)

    def bottleneck(self, name, m, x):
        # The shortcut first: its nodes then precede conv3 in the plan, which
        # lets the loader fuse conv3 + bn3 + add + relu into one step.
        s = self.module(f"{name}.downsample", m.downsample, x) if m.downsample is not None else x
        y = x
        for i in (1, 2, 3):
            y = self.module(f"{name}.conv{i}", getattr(m, f"conv{i}"), y)
            y = self.module(f"{name}.bn{i}", getattr(m, f"bn{i}"), y)
            if i < 3:
                y = self.g.relu(f"{name}.relu{i}", y)
        y = self.g.add(f"{name}.add", "add", [y, s])
        return self.g.relu(f"{name}.relu", y)


def resnet_nodes(m):
    w = Walker()
    x = "input"
    for name in ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool"):
        x = w.module(name, getattr(m, name), x)
    x = w.g.add("flatten", "flatten", [x], output="flat")
    w.g.linear("fc", x, m.fc, output="logits")
    return w.g.nodes


def mobilenet_nodes(m):
    # forward(): features, adaptive_avg_pool2d((1, 1)), flatten, classifier.
    w = Walker()
    x = w.module("features", m.features, "input")
    x = w.g.add("avgpool", "global_avg_pool", [x])
    x = w.g.add("flatten", "flatten", [x], output="flat")
    dropout, fc = m.classifier
    assert isinstance(dropout, nn.Dropout)
    w.g.linear("classifier.1", x, fc, output="logits")
    return w.g.nodes


NODES = {"resnet50": resnet_nodes, "mobilenet_v2": mobilenet_nodes}


# ---------------------------------------------------------------------------
# seeded weights
# ---------------------------------------------------------------------------


def random_images(gen, count):
    """Seeded picture-like images, ImageNet-normalised: [count, 3, 224, 224].

    Colour fields at a few scales (random coarse grids upsampled) plus fine
    noise, in [0, 1]: pure per-pixel noise averages out in a deep network
    and gives every image nearly the same logits, which would make top-1
    comparisons meaningless."""
    x = torch.zeros(count, 3, IMAGE_SIZE, IMAGE_SIZE)
    for cells, weight in ((2, 0.35), (7, 0.3), (28, 0.2)):
        grid = torch.rand(count, 3, cells, cells, generator=gen)
        x += weight * F.interpolate(grid, size=(IMAGE_SIZE, IMAGE_SIZE), mode="bilinear", align_corners=False)
    x += 0.15 * torch.rand(count, 3, IMAGE_SIZE, IMAGE_SIZE, generator=gen)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (x - mean) / std


@torch.no_grad()
def build(name):
    torch.manual_seed(SEEDS[name])
    gen = torch.Generator().manual_seed(SEEDS[name] + 1000)
    model = BUILDERS[name](weights=None, num_classes=NUM_CLASSES)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    # The last batch norm of each residual branch gets a small gamma, as in
    # trained networks (and torchvision's zero_init_residual, taken less
    # far): with unit gammas a deep random network is chaotic and magnifies
    # float rounding from block to block, and FP32 results of two correct
    # implementations drift apart by more than the tests' 1e-4.
    branch_ends = {id(b.bn3) for b in model.modules() if isinstance(b, Bottleneck)}
    branch_ends |= {id(b.conv[-1]) for b in model.modules() if isinstance(b, InvertedResidual) and b.use_res_connect}
    for bn in bns:
        lo, hi = (0.1, 0.4) if id(bn) in branch_ends else (0.5, 1.5)
        bn.weight.uniform_(lo, hi, generator=gen)
        bn.bias.normal_(0.0, 0.2, generator=gen)
        bn.reset_running_stats()
        bn.momentum = None              # cumulative average over the passes
    model.train()
    for _ in range(CALIB_PASSES):
        model(random_images(gen, CALIB_BATCH))
    for bn in bns:
        bn.momentum = 0.1
    model.eval()
    # A random network gives every input nearly the same logits: its pooled
    # features share a large positive mean that the classifier maps to one
    # class. Centring and scaling the classifier on seeded images (as a
    # trained bias would) makes top-1 depend on the input, so comparing
    # top-1 across precisions means something.
    fc = model.fc if name == "resnet50" else model.classifier[1]
    logits = model(random_images(gen, CALIB_PASSES * CALIB_BATCH))
    sd = (logits - logits.mean(0)).std().item()
    fc.bias.copy_((fc.bias - logits.mean(0)) / sd)
    fc.weight.div_(sd)
    return model


# ---------------------------------------------------------------------------
# model folder
# ---------------------------------------------------------------------------


def model_config(name, nodes, max_batch):
    return {
        "format_version": 1,
        "name": name,
        "precision": "fp32",
        "max_batch_size": max_batch,
        "dynamic_batching": {
            "preferred_batch_sizes": [8, max_batch],
            "max_queue_delay_us": 2000,
            "max_queue_size": 256,
            "default_timeout_us": 0,
        },
        "instances": {"count": 1, "kind": "auto"},
        "labels": "labels.txt",
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 3, IMAGE_SIZE, IMAGE_SIZE]}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, NUM_CLASSES]}],
        # torchvision's Resize(256), CenterCrop(224), ToTensor(), Normalize()
        "preprocessing": {
            "input": "input",
            "width": IMAGE_SIZE,
            "height": IMAGE_SIZE,
            "resize_shorter": RESIZE_SHORTER,
            "color": "rgb",
            "invert": False,
            "divisor": 255,
            "mean": MEAN,
            "std": STD,
        },
        "nodes": nodes,
    }


def export_model(name, out_dir, fixture_dir, max_batch):
    t0 = time.time()
    model = build(name)
    tensors = export.state_dict_tensors(model)
    nodes = NODES[name](model)
    export.check_graph(nodes, tensors)
    os.makedirs(out_dir, exist_ok=True)
    param_bytes = export.write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        f.write(export.dump_config(model_config(name, nodes, max_batch)))
    with open(os.path.join(out_dir, "labels.txt"), "w") as f:
        f.write("".join(f"class_{i:04d}\n" for i in range(NUM_CLASSES)))

    gen = torch.Generator().manual_seed(SEEDS[name] + 2000)
    x = random_images(gen, FIXTURE_IMAGES)
    with torch.no_grad():
        logits = model(x)
    os.makedirs(fixture_dir, exist_ok=True)
    fixture = os.path.join(fixture_dir, f"{name}.fixture.safetensors")
    export.write_safetensors(fixture, {"input": x.numpy(), "logits": logits.numpy()},
                             metadata={"model": name, "seed": str(SEEDS[name]), "torch": torch.__version__,
                                       "torchvision": torchvision.__version__})
    print(f"exported {name}: {len(nodes)} nodes, {len(tensors)} tensors, {param_bytes} param bytes "
          f"-> {out_dir}; fixture {fixture} (top-1 {logits.argmax(1).tolist()}) in {time.time() - t0:.1f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--repository", default=os.path.join(REPO_ROOT, "model_repository"))
    ap.add_argument("--fixture-dir", default=export.DEFAULT_FIXTURE_DIR)
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    for name in args.models.split(","):
        if name not in BUILDERS:
            ap.error(f"unknown model {name!r} (choices: {', '.join(BUILDERS)})")
        export_model(name, os.path.join(args.repository, name), args.fixture_dir, args.max_batch)


if __name__ == "__main__":
    main()
