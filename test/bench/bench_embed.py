"""Sentence embedding rate of the core's encoder (cq_encode_parallel, what
corpq.embed_rows and corpq.embed_job run) against PyTorch on the same model,
on 1 and 2 threads.

The model: preset `small` made an encoder (d 256, 3 layers, 4 heads, ffn
1024, pre-norm, sinusoids, mean pooling), a joint vocabulary of 16000, random
float32 weights (the rate does not depend on the values).  The sentences:
4000 sides of the shared en-es corpora drawn at random (both languages;
test/bench/corpora.py finds them), each given as many token ids as it has
words times 1.3 (about what a 16000-token BPE makes of them), capped at the
model's 254; without the corpora, lengths drawn from 3 to 60.

Both sides embed the same batches: the sentences sorted by length, cut into
batches of 128.  PyTorch runs torch.nn.TransformerEncoderLayer (its fused
inference path), the padded batch with a key padding mask, under
torch.inference_mode(); the embeddings, the final norm, mean pooling and
normalisation in the same script.  Its vectors are checked against the
core's first (they must agree within 1e-4).  torch.set_num_threads(t) and
cq_parallel_set_threads(t) give each side t threads.  Prints sentences/s,
tokens/s and the ratio; best of 3 runs each.  Asserts nothing.
Usage: bench_embed.py [--sentences 4000] [--batch 128]
"""
import argparse
import ctypes
import math
import os
import random
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "ref"))
import torch_encoder as te  # noqa: E402
import torch_transformer as tt  # noqa: E402
import blas_cores  # noqa: E402
import corpora  # noqa: E402

V = 16000


def lengths(n, most, rng):
    """Token counts of n corpus sides (words x 1.3), or drawn at random."""
    sides = [s for s in corpora.sample(20000, (2, 3)) if s.strip()]
    if len(sides) < n:
        print("corpora: none found, lengths drawn from 3 to 60")
        return [rng.randint(3, 60) for _ in range(n)]
    return [min(most, max(1, round(len(s.split()) * 1.3))) for s in rng.sample(sides, n)]


class Peer:
    """The same model on torch.nn.TransformerEncoderLayer (float32)."""

    def __init__(self, cfg, w):
        ref = te.reference_model(cfg, w, torch.float32)
        d, f = cfg["d_model"], cfg["ffn_dim"]
        self.layers = []
        for layer in ref.enc:
            m = torch.nn.TransformerEncoderLayer(d, cfg["heads"], f, dropout=0.0, activation=cfg["activation"],
                                                 layer_norm_eps=layer.ln1.eps, batch_first=True,
                                                 norm_first=True)
            a = layer.attn
            m.self_attn.in_proj_weight.data.copy_(torch.cat([a.q.weight, a.k.weight, a.v.weight]))
            m.self_attn.in_proj_bias.data.copy_(torch.cat([a.q.bias, a.k.bias, a.v.bias]))
            m.self_attn.out_proj.weight.data.copy_(a.out.weight)
            m.self_attn.out_proj.bias.data.copy_(a.out.bias)
            m.linear1.load_state_dict(layer.ffn.fc1.state_dict())
            m.linear2.load_state_dict(layer.ffn.fc2.state_dict())
            m.norm1.load_state_dict(layer.ln1.state_dict())
            m.norm2.load_state_dict(layer.ln2.state_dict())
            self.layers.append(m.eval())
        self.final = ref.enc_final
        self.embed_tokens, self.pos = ref.src_embed, ref.src_pos
        self.scale = math.sqrt(d) if tt.variant(cfg, "scale_embeddings") else 1.0

    @torch.inference_mode()
    def embed(self, batch):
        ids, valid = te.padded(batch)
        L = ids.shape[1]
        x = self.embed_tokens[ids] * self.scale + self.pos[:L][None]
        for m in self.layers:
            x = m(x, src_key_padding_mask=~valid)
        h = self.final(x)
        p = (h * valid[..., None]).sum(1) / valid.sum(1, keepdim=True)
        return torch.nn.functional.normalize(p, dim=-1).numpy()


class Core:
    """cq_encode_parallel through ctypes, one workspace per batch."""

    def __init__(self, blob, d):
        self.core = tt.Core(os.environ.get("CORPQ_CORE_LIB", os.path.join(ROOT, "test", "libcorpqcore.so")))
        lib = self.core.lib
        P = ctypes.c_void_p
        lib.cq_encode_parallel_bytes.argtypes = [P, P, ctypes.c_int, ctypes.c_int]
        lib.cq_encode_parallel_bytes.restype = ctypes.c_size_t
        lib.cq_encode_parallel.argtypes = [P, P, ctypes.c_int, P, ctypes.c_int, P, ctypes.c_size_t, P, P]
        lib.cq_parallel_set_threads.argtypes = [ctypes.c_int]
        lib.cq_rowgemm_isa_name.restype = ctypes.c_char_p
        self.kernel = lib.cq_rowgemm_isa_name(lib.cq_rowgemm_machine()).decode()
        self.m, self.d = self.core.load(blob), d

    def prepare(self, batches, threads):
        """ctypes arrays of the batches, and the largest workspace."""
        self.lib_threads = threads
        self.core.lib.cq_parallel_set_threads(threads)
        cfg = ctypes.addressof(self.m.contents.cfg)
        self.batches, most = [], 1
        for b in batches:
            arr = (te._Sentence * len(b))()
            keep = [np.ascontiguousarray(s, dtype=np.int32) for s in b]
            for i, a in enumerate(keep):
                arr[i].ids = a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
                arr[i].len = len(a)
            most = max(most, self.core.lib.cq_encode_parallel_bytes(cfg, ctypes.addressof(arr), len(b), threads))
            self.batches.append((arr, keep, len(b)))
        self.ws = np.empty(most, dtype=np.uint8)
        self.out = np.empty((max(n for _, _, n in self.batches), self.d), dtype=np.float32)

    def run(self):
        lib, err, vecs = self.core.lib, tt._Error(), []
        for arr, _, n in self.batches:
            rc = lib.cq_encode_parallel(ctypes.cast(self.m, ctypes.c_void_p), ctypes.addressof(arr), n, None,
                                        self.lib_threads, self.ws.ctypes.data, self.ws.nbytes,
                                        self.out.ctypes.data, ctypes.addressof(err))
            if rc:
                raise tt.CoreError(rc, err.message.decode())
            vecs.append(self.out[:n].copy())
        return np.concatenate(vecs)


def best(fn, reps=3):
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    rng = random.Random(7)
    cfg = te.encoder_config("small", V)
    w = te.encoder_weights(cfg, 3)
    with tempfile.TemporaryDirectory() as tmp:
        blob = tt.write_corpq(os.path.join(tmp, "small-encoder.cqm"), cfg, w)
    lens = sorted(lengths(args.sentences, cfg["max_positions"] - 2, rng))
    sents = [[rng.randrange(4, V) for _ in range(n)] for n in lens]
    batches = [sents[i:i + args.batch] for i in range(0, len(sents), args.batch)]
    tokens = sum(n + 2 for n in lens)
    core, peer = Core(blob, cfg["d_model"]), Peer(cfg, w)
    print("CPU: %s, %d cores; corpq's inference kernel %s; OpenBLAS core %s; torch %s" % (
        blas_cores.cpu_name(), os.cpu_count(), core.kernel, blas_cores.in_use(), torch.__version__))
    print("%d sentences, %d positions (mean %.1f tokens), batches of %d sorted by length" % (
        len(sents), tokens, tokens / len(sents) - 2, args.batch))
    core.prepare(batches, 1)
    ours = core.run()
    theirs = np.concatenate([peer.embed(b) for b in batches])
    diff = float(np.abs(ours - theirs).max())
    print("vectors: corpq against PyTorch, max |difference| %.2g" % diff)
    if diff > 1e-4:
        sys.exit("the two sides do not compute the same model (max difference %.3g)" % diff)
    print("\n| threads | corpq sentences/s | PyTorch sentences/s | corpq / PyTorch | corpq tokens/s |")
    print("| --- | --- | --- | --- | --- |")
    for t in (1, 2):
        core.prepare(batches, t)
        torch.set_num_threads(t)
        tc = best(core.run)
        tp = best(lambda: [peer.embed(b) for b in batches])
        print("| %d | %.0f | %.0f | %.2fx | %.0f |" % (t, len(sents) / tc, len(sents) / tp, tp / tc, tokens / tc))


if __name__ == "__main__":
    main()
