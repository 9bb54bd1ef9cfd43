#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/).

Small valid inputs for each parser, in the framing tests/fuzz/fuzz_entry.h
describes, so the fuzzers start past the first checks. Run from the project
root; the output is checked in, this script is how it was made.
"""
import json
import os
import shutil
import struct

OUT = "tests/fuzz/corpus"


def put(target, name, data):
    os.makedirs(f"{OUT}/{target}", exist_ok=True)
    with open(f"{OUT}/{target}/{name}", "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def infer_requests():
    flat = {"inputs": [{"name": "a", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3.5, -4]},
                       {"name": "b", "datatype": "FP32", "shape": [1, 2, 3], "data": [1, 2, 3, 4, 5, 6]}]}
    nested = {"id": "r1", "parameters": {"timeout": 1000},
              "inputs": [{"name": "a", "datatype": "INT8", "shape": [2, 4], "data": [[1, 2, 3, 4], [5, 6, 7, 8]]},
                         {"name": "b", "datatype": "BOOL", "shape": [2, 2, 3],
                          "data": [[[True, False, True], [False, True, False]]] * 2}],
              "outputs": [{"name": "y", "parameters": {"classification": 2}}]}
    return [("flat.json", json.dumps(flat)), ("nested.json", json.dumps(nested))]


def binary_request():
    a = struct.pack("<4f", 1, 2, 3, 4)
    b = struct.pack("<6e", 1, 2, 3, 4, 5, 6)
    hdr = json.dumps({"inputs": [
        {"name": "a", "datatype": "FP32", "shape": [1, 4], "parameters": {"binary_data_size": len(a)}},
        {"name": "b", "datatype": "FP16", "shape": [1, 2, 3], "parameters": {"binary_data_size": len(b)}}],
        "parameters": {"binary_data_output": True}}).encode()
    return struct.pack("<H", len(hdr)) + hdr + a + b


def multipart():
    body = (b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
            b"Content-Type: image/png\r\n\r\nPNGDATA\r\n--XyZ \r\nContent-Disposition: form-data; name=b\r\n\r\n"
            b"\r\n--XyZ--\r\nepilogue")
    return b"multipart/form-data; boundary=XyZ\n" + body


def safetensors(tensors):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header["__metadata__"] = {"source": "fuzz seed"}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def model(nodes, tensors, inputs, outputs):
    st = safetensors(tensors)
    mj = json.dumps({"format_version": 1, "precision": "fp32", "max_batch_size": 4,
                     "inputs": inputs, "outputs": outputs, "nodes": nodes}).encode()
    return struct.pack("<I", len(st)) + st + mj


def main():
    for name, text in infer_requests():
        put("infer_json", name, text)
    put("infer_binary", "fp32_fp16.bin", binary_request())
    put("multipart", "two_parts.txt", multipart())
    for f in sorted(os.listdir("tests/data/images")):
        if f.endswith((".png", ".jpg")):
            shutil.copy(f"tests/data/images/{f}", f"{OUT}/image/{f}")
    put("image", "gray.pgm", b"P5\n4 3\n255\n" + bytes(range(12)))
    put("image", "rgb.ppm", b"P6 2 2 65535\n" + bytes(24))
    put("image", "ascii.pgm", b"P2\n# comment\n2 2\n15\n0 5 10 15\n")
    f32 = lambda *v: struct.pack(f"<{len(v)}f", *v)
    put("model", "linear.bin", model(
        [{"name": "fc", "op": "linear", "inputs": ["x"], "outputs": ["h"],
          "weights": {"weight": "fc.weight", "bias": "fc.bias"}},
         {"name": "act", "op": "relu", "inputs": ["h"], "outputs": ["y"]}],
        [("fc.weight", "F32", [3, 4], f32(*range(12))), ("fc.bias", "F32", [3], f32(1, 2, 3))],
        [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}],
        [{"name": "y", "datatype": "FP32", "shape": [-1, 3]}]))
    put("model", "conv.bin", model(
        [{"name": "c", "op": "conv2d", "inputs": ["x"], "outputs": ["c"],
          "weights": {"weight": "c.weight"},
          "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}},
         {"name": "p", "op": "max_pool2d", "inputs": ["c"], "outputs": ["p"],
          "attrs": {"kernel": [2, 2], "stride": [2, 2]}},
         {"name": "f", "op": "flatten", "inputs": ["p"], "outputs": ["f"]},
         {"name": "s", "op": "softmax", "inputs": ["f"], "outputs": ["y"]}],
        [("c.weight", "F32", [2, 1, 3, 3], f32(*[0.1 * i for i in range(18)]))],
        [{"name": "x", "datatype": "FP32", "shape": [-1, 1, 4, 4]}],
        [{"name": "y", "datatype": "FP32", "shape": [-1, 8]}]))


if __name__ == "__main__":
    main()
