"""The float32 weight image of test/integration/export_over_1gb.sh, just over
1 GB, written as a stream (never whole in memory): preset tiny widened to
d_model 640 with a 430,000-token source vocabulary (corpq's vocabularies
hold at most 524,288) and one layer each way,
the tensors of models/FORMAT.md (test/ref/torch_transformer.py's
tensor_shapes and make_config) in their listed order, every value from a
1 MB block of seeded normal floats (so the bytes are not one repeated
value), the CRC-32 trailer computed as the file is written.

  export_over_1gb.py OUT.corpq     prints the image's length in bytes
"""
import json
import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
from torch_transformer import make_config, tensor_shapes  # noqa: E402

SRC_VOCAB, TGT_VOCAB = 430000, 16


def main(path):
    cfg = make_config("tiny", SRC_VOCAB, TGT_VOCAB, d_model=640, heads=8, ffn_dim=640,
                      encoder_layers=1, decoder_layers=1, max_positions=32)
    shapes = tensor_shapes(cfg)
    names = list(shapes)
    cjson = json.dumps(cfg).encode()
    table, offsets, off = b"", {}, 0
    for n in names:
        dims = shapes[n]
        nb = n.encode()
        offsets[n] = off
        table += struct.pack("<H", len(nb)) + nb + struct.pack("<BB", len(dims), 0)
        table += struct.pack("<%dI" % len(dims), *dims) + struct.pack("<Q", off)
        size = 4 * int(np.prod(dims))
        off += size + (-size) % 64
    data_off = (40 + len(cjson) + len(table) + 63) // 64 * 64
    head = b"CORPQNN\0" + struct.pack("<IIII", 1, len(cjson), len(names), 0)
    head += struct.pack("<QQ", data_off, off) + cjson + table
    head += b"\0" * (data_off - len(head))
    pattern = (np.random.default_rng(53).standard_normal(1 << 18) * 0.05).astype("<f4").tobytes()
    crc = 0
    with open(path, "wb") as fh:
        fh.write(head)
        crc = zlib.crc32(head)
        for n in names:
            size = 4 * int(np.prod(shapes[n]))
            while size > 0:
                piece = pattern[:min(size, len(pattern))]
                fh.write(piece)
                crc = zlib.crc32(piece, crc)
                size -= len(piece)
            pad = b"\0" * ((-4 * int(np.prod(shapes[n]))) % 64)
            fh.write(pad)
            crc = zlib.crc32(pad, crc)
        fh.write(struct.pack("<I", crc))
    print(os.path.getsize(path))


if __name__ == "__main__":
    main(sys.argv[1])
