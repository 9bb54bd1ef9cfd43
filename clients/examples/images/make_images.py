#!/usr/bin/python3
"""Writes the sample pictures README.md's commands use (python3-pil):

    shoe.png   28x28 gray, the first "Ankle boot" of Fashion-MNIST's test set
    bag.png    28x28 gray, the first "Bag" of the test set
    photo.jpg  160x120 RGB JPEG: the bag drawn large on a coloured, lit
               background, for the 224x224 ImageNet-shaped models (any size
               and colour is resized and cropped as torchvision would)

from Debian's dataset-fashion-mnist. Run from the repository root:
/usr/bin/python3 clients/examples/images/make_images.py
"""
import gzip
import os

from PIL import Image, ImageFilter

DATA = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
ANKLE_BOOT, BAG = 9, 8


def first_of(label):
    with gzip.open(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = f.read()[8:]
    with gzip.open(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")) as f:
        images = f.read()[16:]
    i = labels.index(bytes([label]))
    return Image.frombytes("L", (28, 28), images[784 * i:784 * (i + 1)])


shoe, bag = first_of(ANKLE_BOOT), first_of(BAG)
shoe.save(os.path.join(HERE, "shoe.png"), optimize=True)
bag.save(os.path.join(HERE, "bag.png"), optimize=True)

# A "photo": a warm-to-cool gradient, the bag enlarged and tinted on it.
w, h = 160, 120
photo = Image.new("RGB", (w, h))
photo.putdata([(200 - x // 2, 150 + y // 3, 90 + x // 3) for y in range(h) for x in range(w)])
big = bag.resize((100, 100), Image.BILINEAR).filter(ImageFilter.SMOOTH)
tint = Image.new("RGB", big.size, (120, 60, 30))
photo.paste(tint, (30, 10), big)
photo.save(os.path.join(HERE, "photo.jpg"), quality=85)
