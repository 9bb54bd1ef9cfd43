"""Fashion-MNIST data: IDX loading, the normalisation used everywhere, class names.

The normalisation must be bit-identical to what the C runtime computes for the
image endpoint, `(v * scale - mean) / std` in float32, with
scale = 0.00392156862745098 (float32(1/255)), mean = 0.2860, std = 0.3530.
"""

import gzip
import os
import struct

import numpy as np

DATA_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")

CLASS_NAMES = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]

# The exact values written into model.json "preprocessing".
SCALE = 1.0 / 255.0  # 0.00392156862745098 as a double
MEAN = 0.2860
STD = 0.3530

SCALE_F32 = np.float32(SCALE)
MEAN_F32 = np.float32(MEAN)
STD_F32 = np.float32(STD)

IMAGE_SIZE = 28
NUM_CLASSES = 10


def read_idx(path):
    """Read a (gzipped) IDX file into a uint8 numpy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ValueError(f"{path}: too short for an IDX header")
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (code {dtype_code:#x})")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    offset = 4 + 4 * ndim
    count = int(np.prod(dims)) if ndim else 1
    if len(data) - offset != count:
        raise ValueError(f"{path}: expected {count} data bytes, found {len(data) - offset}")
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims).copy()


def load_split(split, data_dir=DATA_DIR):
    """Return (images uint8 [N,28,28], labels uint8 [N]) for split 'train' or 'test'."""
    prefix = {"train": "train", "test": "t10k"}[split]
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    if images.ndim != 3 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"unexpected image shape {images.shape}")
    if labels.shape != (images.shape[0],):
        raise ValueError(f"labels {labels.shape} do not match images {images.shape}")
    return images, labels


def normalize(images):
    """uint8 [..., 28, 28] -> float32, (v * scale - mean) / std, in float32, in that order.

    Returns an array with a channel axis inserted before the last two: [N,1,28,28]
    for [N,28,28] input.
    """
    v = np.asarray(images, dtype=np.uint8).astype(np.float32)
    x = v * SCALE_F32
    x = x - MEAN_F32
    x = x / STD_F32
    assert x.dtype == np.float32
    return np.expand_dims(x, axis=-3)
