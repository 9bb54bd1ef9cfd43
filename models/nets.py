"""The two Fashion-MNIST classifiers served by inferd.

Module attribute names matter: they become the state_dict names, which are the
tensor names in model.safetensors and the weight names in model.json.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet5(nn.Module):
    """LeNet-5 with ReLU and max pooling: 28x28 -> 6@28x28 -> 6@14x14 -> 16@10x10 -> 16@5x5."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, kernel_size=5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN, + identity (or downsample(x)), ReLU."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv3x3(cout, cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(cout),
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class ResNetMini(nn.Module):
    """A small ResNet for 28x28 gray images.

    stem: conv3x3 1->w0 + BN + ReLU (28x28)
    layer1: BasicBlock(w0->w0)                      28x28
    layer2: BasicBlock(w0->w1, s2) + BasicBlock      14x14
    layer3: BasicBlock(w1->w2, s2) + BasicBlock       7x7
    global average pool, fc w2->10.
    """

    def __init__(self, widths=(16, 32, 64), num_classes=10):
        super().__init__()
        w0, w1, w2 = widths
        self.widths = tuple(widths)
        self.conv1 = conv3x3(1, w0)
        self.bn1 = nn.BatchNorm2d(w0)
        self.layer1 = nn.Sequential(BasicBlock(w0, w0))
        self.layer2 = nn.Sequential(BasicBlock(w0, w1, 2), BasicBlock(w1, w1))
        self.layer3 = nn.Sequential(BasicBlock(w1, w2, 2), BasicBlock(w2, w2))
        self.fc = nn.Linear(w2, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        # Zero-init the last BN of each block: each block starts as identity.
        for m in self.modules():
            if isinstance(m, BasicBlock):
                nn.init.zeros_(m.bn2.weight)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = F.adaptive_avg_pool2d(x, 1)
        x = torch.flatten(x, 1)
        return self.fc(x)


MODELS = {
    "lenet5": LeNet5,
    "resnet-mini": ResNetMini,
}


def build(name):
    if name not in MODELS:
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]()
