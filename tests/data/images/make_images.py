#!/usr/bin/python3
"""Writes the small PNG and JPEG files tests/test_image.c decodes.

PNGs are assembled by hand (chunks, filters, Adam7) so every colour type,
bit depth, palette, tRNS and interlacing case exists with known samples; the
JPEGs come from PIL (progressive and CMYK, which the test cannot easily make
with libjpeg itself). Run from this folder: /usr/bin/python3 make_images.py
"""
import struct
import zlib

from PIL import Image


def chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def pack_row(samples, depth):
    """Samples (ints) of one row into bytes at the given bit depth."""
    if depth == 8:
        return bytes(samples)
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    bits = "".join(format(s, "0%db" % depth) for s in samples)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
         (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png(path, width, height, color, depth, pixels, plte=None, trns=None, interlace=False):
    """pixels[y][x] is a tuple of samples (palette index, gray, RGB, ...)."""
    raw = b""
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        for y in range(y0, height, dy):
            row = [s for x in range(x0, width, dx) for s in pixels[y][x]]
            if row:
                raw += b"\x00" + pack_row(row, depth)
    data = b"\x89PNG\r\n\x1a\n"
    data += chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0,
                                       1 if interlace else 0))
    if plte:
        data += chunk(b"PLTE", b"".join(bytes(c) for c in plte))
    if trns:
        data += chunk(b"tRNS", trns)
    data += chunk(b"tEXt", b"Comment\x00ignored by the decoder")
    data += chunk(b"IDAT", zlib.compress(raw))
    data += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


# 1-bit gray 5x3, width not a multiple of 8.
png("gray1.png", 5, 3, 0, 1, [[(x + y) % 2 and (1,) or (0,) for x in range(5)] for y in range(3)])
# 2-bit gray 4x1: 0, 1, 2, 3 -> 0, 85, 170, 255.
png("gray2.png", 4, 1, 0, 2, [[(0,), (1,), (2,), (3,)]])
# 16-bit gray 3x2.
png("gray16.png", 3, 2, 0, 16, [[(0,), (65535,), (32768,)], [(257 * 100,), (12345,), (40000,)]])
# 16-bit gray + alpha 2x1: alpha is dropped.
png("graya16.png", 2, 1, 4, 16, [[(1000, 0), (60000, 65535)]])
# 8-bit RGBA 2x2: alpha is dropped, colours kept.
png("rgba.png", 2, 2, 6, 8, [[(10, 20, 30, 0), (40, 50, 60, 128)],
                             [(70, 80, 90, 255), (200, 210, 220, 7)]])
# 16-bit RGB 2x1.
png("rgb16.png", 2, 1, 2, 16, [[(0, 65535, 257 * 3), (1000, 2000, 30000)]])
# 2-bit palette 3x2 with tRNS (index 0 fully transparent): expands to RGB.
PAL = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (17, 34, 51)]
png("palette_trns.png", 3, 2, 3, 2, [[(0,), (1,), (2,)], [(3,), (2,), (1,)]],
    plte=PAL, trns=b"\x00\x80")
# 8-bit RGB 9x9, Adam7-interlaced; pixel (x, y) = (20x, 20y, 10(x+y)).
png("interlaced.png", 9, 9, 2, 8,
    [[(20 * x, 20 * y, 10 * (x + y)) for x in range(9)] for y in range(9)], interlace=True)

# JPEGs of a smooth 16x16 gradient: pixel (x, y) = (8x, 8y, 4(x+y)+64).
grad = Image.new("RGB", (16, 16))
grad.putdata([(8 * x, 8 * y, 4 * (x + y) + 64) for y in range(16) for x in range(16)])
grad.save("progressive.jpg", quality=95, progressive=True, subsampling=0)
grad.convert("CMYK").save("cmyk.jpg", quality=95)
