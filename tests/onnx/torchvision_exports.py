"""ONNX exports of torchvision models, checked against PyTorch: each model
(seeded random weights, batch dimension symbolic) is exported by
torch.onnx at opset 13 with a batch of two images and PyTorch's output,
in the layout of the ONNX backend test suite, under build/onnx-exports/;
build/onnx-suite then runs them on the CPU backend, and every model must
load and match: within 1e-3 relative plus 1e-5 of the output's largest
magnitude (an element-wise 1e-3 alone fails onnxruntime too, on logits
near zero). The models cover Concat (DenseNet's of up to 25 inputs),
MaxPool with ceil_mode, HardSigmoid, HardSwish, Sigmoid * Mul (SiLU),
grouped and depthwise convolutions, and ShuffleNetV2's channel shuffle,
whose shape the export computes at run time (Shape, Gather, Div, Cast,
Unsqueeze, Concat: folded at load); ConvNeXt's LayerNorm as exported
(ReduceMean, Sub, Pow, Sqrt, Div) and its exact GELU (Erf); and two
segmentation models (their "out" map), whose bilinear Resize takes its
size from the input's shape; and ViT-B/16 with a fixed batch of one
(its attention, LayerNorms and exact GELUs as exported).

    make test-onnx-exports      (/usr/bin/python3 with python3-torch, python3-torchvision, python3-onnx)
"""
import argparse
import os
import subprocess
import sys

import onnx
import torch
import torchvision
from onnx import numpy_helper

MODELS = {
    "squeezenet1_1": lambda: torchvision.models.squeezenet1_1(),
    "googlenet": lambda: torchvision.models.googlenet(aux_logits=False, init_weights=True),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(),
    "regnet_x_400mf": lambda: torchvision.models.regnet_x_400mf(),
    "shufflenet_v2_x0_5": lambda: torchvision.models.shufflenet_v2_x0_5(),
    "resnet18": lambda: torchvision.models.resnet18(),
    "densenet121": lambda: torchvision.models.densenet121(),
    "convnext_tiny": lambda: torchvision.models.convnext_tiny(),
    "lraspp_mobilenet_v3_large": lambda: torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None),
    "deeplabv3_mobilenet_v3_large": lambda: torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, aux_loss=False),
    "vit_b_16": lambda: vit_with_a_head(),
}
# Exported with a fixed batch of one: attention moves the batch off the first
# axis, so inferd runs these whole (docs/onnx.md, "Batch dimension").
FIXED = {"vit_b_16"}


def vit_with_a_head():
    """ViT-B/16 with random classifier weights: torchvision starts its head at
    zero, whose output (all zeros) would match anything."""
    model = torchvision.models.vit_b_16()
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 0.02)
        model.heads.head.bias.normal_(0, 0.02)
    return model


class MainOutput(torch.nn.Module):
    """A segmentation model's "out" map as the one output (they return a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y["out"] if isinstance(y, dict) else y


def export(root):
    for name, make in MODELS.items():
        torch.manual_seed(0)
        model = MainOutput(make().eval()).eval()
        x = torch.randn(1 if name in FIXED else 2, 3, 224, 224)
        with torch.no_grad():
            y = model(x)
        folder = os.path.join(root, name)
        data = os.path.join(folder, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        torch.onnx.export(model, x, os.path.join(folder, "model.onnx"), input_names=["x"], output_names=["y"],
                          dynamic_axes=None if name in FIXED else {"x": {0: "N"}, "y": {0: "N"}}, opset_version=13)
        with open(os.path.join(data, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x.numpy(), "x").SerializeToString())
        with open(os.path.join(data, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y.numpy(), "y").SerializeToString())
        ops = sorted({n.op_type for n in onnx.load(os.path.join(folder, "model.onnx")).graph.node})
        print(f"exported {name}: {', '.join(ops)}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    export(os.path.join(args.build, "onnx-exports"))
    run = subprocess.run([os.path.join(args.build, "onnx-suite"), "--verbose", "--atol-of-peak", "1e-5", "--root",
                          args.build, "onnx-exports"],
                         capture_output=True, text=True)
    print(run.stdout, end="")
    passed = [l for l in run.stdout.splitlines() if l.strip().startswith("passed")]
    if run.returncode != 0 or len(passed) != len(MODELS):
        print(f"torchvision_exports: {len(passed)} of {len(MODELS)} models passed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
