#!/usr/bin/python3
"""Writes the JPEG "photos" and the torchvision preprocessing fixture that
tests/test_image_torchvision.c compares rt_image_preprocess against.

    /usr/bin/python3 tests/data/images/make_photos.py     (python3-pil, python3-torchvision)

For each photo (seeded synthetic pictures of several sizes and aspect
ratios, one gray, one smaller than the resize target so it is upscaled):

    tests/data/images/photo_<name>.jpg
    tests/data/photo_<name>.preprocess.safetensors
        "crop" U8 [224, 224, 3]: Resize(256) then CenterCrop(224) of the
            decoded image, as torchvision does it to a PIL image (PIL's
            bilinear, antialiased, 8-bit results);
        "lut" F32 [3, 256]: ToTensor() then Normalize(ImageNet mean, std)
            of every byte value, per channel, computed by torch;
        metadata: width, height and the CRC-32 of the RGB pixels PIL
            decoded, so the test can tell a decoder difference from a
            preprocessing one.
The full pipeline's output is checked here to equal lut[c][crop[y][x][c]]
element for element before anything is written, so the fixture is exactly
torchvision's tensor, stored in 155 KB instead of 600 KB.

The decoded pixels are PIL's (libjpeg-turbo, ISLOW DCT, fancy upsampling,
the settings runtime/image/image_jpeg.c uses too): the whole path from JPEG
bytes to tensor is compared, and the CRC says which half differs if any.
"""
import os
import sys
import zlib

import numpy as np
import torch
from PIL import Image
from torchvision import transforms

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO_ROOT, "models"))

import export  # noqa: E402  (the safetensors writer)

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
# name: (width, height, gray)
PHOTOS = {"landscape": (640, 427, False), "portrait": (333, 500, False), "small": (200, 150, False),
          "gray": (515, 389, True)}


def synthetic(width, height, rng):
    """A picture-like image: smooth colour fields, a few hard-edged shapes
    (so resampling meets real edges) and sensor-like noise."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    img = np.zeros((height, width, 3))
    for c in range(3):
        fx, fy, ph = rng.uniform(0.5, 4, 2).tolist() + [rng.uniform(0, 6.3)]
        img[..., c] = 128 + 90 * np.sin(2 * np.pi * (fx * xx / width + fy * yy / height) + ph)
    for _ in range(6):
        cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(10, 0.3 * min(width, height))
        mask = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        img[mask] = rng.uniform(0, 255, 3)
    img += rng.normal(0, 6, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def main():
    rng = np.random.default_rng(20240)
    to_crop = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
    full = transforms.Compose([to_crop, transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    values = torch.arange(256, dtype=torch.uint8).view(1, 1, 256).repeat(3, 1, 1)   # [3, 1, 256]
    lut = transforms.Normalize(MEAN, STD)(values.float().div(255)).view(3, 256).numpy()
    for name, (width, height, gray) in PHOTOS.items():
        pixels = synthetic(width, height, rng)
        img = Image.fromarray(pixels[..., 0] if gray else pixels, "L" if gray else "RGB")
        jpeg = os.path.join(HERE, f"photo_{name}.jpg")
        img.save(jpeg, quality=88)
        # torchvision's default_loader: open, convert("RGB")
        decoded = Image.open(jpeg).convert("RGB")
        rgb = np.asarray(decoded)
        crop = np.asarray(to_crop(decoded))
        want = full(decoded).numpy()
        got = lut[np.arange(3)[:, None, None], crop.transpose(2, 0, 1)]
        assert got.shape == want.shape and np.array_equal(got, want), f"{name}: lut[crop] != torchvision"
        out = os.path.join(REPO_ROOT, "tests", "data", f"photo_{name}.preprocess.safetensors")
        export.write_safetensors(out, {"crop": crop, "lut": lut},
                                 metadata={"width": str(rgb.shape[1]), "height": str(rgb.shape[0]),
                                           "crc32": str(zlib.crc32(rgb.tobytes()))})
        print(f"{jpeg}: {width}x{height}{' gray' if gray else ''}, {os.path.getsize(jpeg)} bytes -> {out}")


if __name__ == "__main__":
    main()
