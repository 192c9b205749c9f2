"""The Python side of test/bench/bench_big_import.sh: a LaBSE-shaped BERT
checkpoint with random weights, and the reference vectors of sentences.

  big_labse.py write DIR [VOCAB LAYERS]
      DIR/config.json, vocab.txt and model.safetensors of a BertModel with
      LaBSE's shapes (vocabulary 501,153, d 768, 12 layers, 12 heads, FFN
      3,072, 512 positions, pooler; VOCAB and LAYERS, when given, replace
      the vocabulary size and layer count: bench_model_memory.sh --quick's
      smaller checkpoint): random normal weights (std 0.05, as
      test/ref/test_convert_int8.py writes them), written a block of 8,192
      rows at a time (transformers is not installed here, so the file is
      written in its layout by hand, as the converter's tests do).
  big_labse.py reference DIR WORDPIECE.json OUT.json SENTENCE...
      LaBSE's vector (pooler output of [CLS], L2-normalised) of each
      sentence from the reference BertModel written from transformers'
      (test/ref/ref_hf_bert.py, float64), with the tokenizer of
      ref_hf_bert.py with the converter's wordpiece.json; only the embedding rows the sentences use are read
      (np.memmap), so the reference needs far less memory than the model.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
import test_convert_bert as tb  # noqa: E402
from ref_hf_bert import HFBertRef, HFBertTokenizer  # noqa: E402

V, D, FFN, LAYERS, HEADS, M = 501153, 768, 3072, 12, 12, 512


def shapes():
    s = {"embeddings.word_embeddings.weight": (V, D), "embeddings.position_embeddings.weight": (M, D),
         "embeddings.token_type_embeddings.weight": (2, D), "embeddings.LayerNorm.weight": (D,),
         "embeddings.LayerNorm.bias": (D,)}
    for i in range(LAYERS):
        p = "encoder.layer.%d." % i
        for x in ("query", "key", "value"):
            s[p + "attention.self.%s.weight" % x] = (D, D)
            s[p + "attention.self.%s.bias" % x] = (D,)
        s.update({p + "attention.output.dense.weight": (D, D), p + "attention.output.dense.bias": (D,),
                  p + "attention.output.LayerNorm.weight": (D,), p + "attention.output.LayerNorm.bias": (D,),
                  p + "intermediate.dense.weight": (FFN, D), p + "intermediate.dense.bias": (FFN,),
                  p + "output.dense.weight": (D, FFN), p + "output.dense.bias": (D,),
                  p + "output.LayerNorm.weight": (D,), p + "output.LayerNorm.bias": (D,)})
    s.update({"pooler.dense.weight": (D, D), "pooler.dense.bias": (D,)})
    return s


def write(md):
    os.mkdir(md)
    with open(os.path.join(md, "config.json"), "w") as f:
        json.dump(tb.bert_config(V, d=D, heads=HEADS, ffn=FFN, layers=LAYERS, M=M), f)
    with open(os.path.join(md, "vocab.txt"), "w") as f:
        f.write("\n".join(tb.SPECIAL + ["w%d" % i for i in range(V - len(tb.SPECIAL))]) + "\n")
    head, off = {}, 0
    for k, s in shapes().items():
        n = 4 * int(np.prod(s))
        head[k] = {"dtype": "F32", "shape": list(s), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(head).encode()
    rng = np.random.default_rng(53)
    with open(os.path.join(md, "model.safetensors"), "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for k, s in shapes().items():
            for lo in range(0, s[0], 8192):
                hi = min(s[0], lo + 8192)
                blk = rng.standard_normal((hi - lo,) + tuple(s[1:]), np.float32) * np.float32(0.05)
                f.write(blk.astype("<f4").tobytes())


def tensors(md):
    """{name: read-only np.memmap} of DIR/model.safetensors."""
    path = os.path.join(md, "model.safetensors")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        head = json.loads(f.read(n))
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.memmap(path, dtype="<f4", mode="r", offset=8 + n + a, shape=tuple(v["shape"]))
    return out


def reference(md, wp_path, out_path, sentences):
    with open(os.path.join(md, "vocab.txt"), encoding="utf-8") as f:
        vtext = f.read()
    with open(os.path.join(md, "config.json")) as f:
        cfg = json.load(f)
    with open(wp_path) as f:
        tok = HFBertTokenizer(vtext, dict(json.load(f)))
    encoded = [tok.encode(s) for s in sentences]
    used = sorted({i for ids in encoded for i in ids})
    row = {b: j for j, b in enumerate(used)}
    t = tensors(md)
    sd = {k: torch.from_numpy(np.array(v)) for k, v in t.items() if k != "embeddings.word_embeddings.weight"}
    sd["embeddings.word_embeddings.weight"] = torch.from_numpy(
        np.array(t["embeddings.word_embeddings.weight"][used]))
    ref = HFBertRef(sd, cfg)
    vecs = [ref.labse([row[i] for i in ids]).tolist() for ids in encoded]
    with open(out_path, "w") as f:
        json.dump({"sentences": sentences, "ids": encoded, "vectors": vecs}, f)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        if len(sys.argv) == 5:
            V, LAYERS = int(sys.argv[3]), int(sys.argv[4])
        write(sys.argv[2])
    elif sys.argv[1] == "reference":
        reference(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit("usage: big_labse.py write DIR [VOCAB LAYERS] | reference DIR WORDPIECE.json OUT.json SENTENCE...")
