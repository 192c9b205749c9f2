"""Reference check of the CAV core (paper 002, Sec. 3.1, Eqs. 4-5).

An independent dense numpy implementation of the definition -- for every
occurrence of target token t at concat position a, every concat position
i <= a with d = a - i < l_max adds 1 at (row of token i, d) -- is compared
with the C core through ctypes: dictionaries, occurrences, every matrix
(exactly), cosine similarity of every pair, top-k, and adaptive pooling
against torch.nn.functional.adaptive_avg_pool2d (also after F.layer_norm over
the whole matrix, ANTAP's input).  Exits non-zero on failure.
"""
import os
import random
import re
import sys

import ctypes as C

# numpy and torch are imported in main(), so test/bench/bench_cav.py can use
# the binding below without loading them.
np = torch = F = None

# ---- ctypes binding (also imported by test/bench/bench_cav.py) ----------
class Error(C.Structure):
    _fields_ = [("code", C.c_int), ("msg", C.c_char * 256)]


class Options(C.Structure):
    _fields_ = [("l_max", C.c_uint32), ("targets", C.POINTER(C.c_char_p)),
                ("target_lens", C.POINTER(C.c_size_t)), ("n_targets", C.c_size_t)]


class Stats(C.Structure):
    _fields_ = [("n_pairs", C.c_uint64), ("n_src", C.c_uint32), ("n_tgt", C.c_uint32),
                ("n_matrices", C.c_uint32), ("nnz", C.c_uint64)]


class View(C.Structure):
    _fields_ = [("buf", C.c_void_p), ("len", C.c_size_t),
                ("l_max", C.c_uint32), ("n_src", C.c_uint32), ("n_tgt", C.c_uint32),
                ("n_restrict", C.c_uint32), ("n_mat", C.c_uint32), ("n_pairs", C.c_uint64),
                ("src_dict", C.c_size_t), ("tgt_dict", C.c_size_t), ("res_dict", C.c_size_t),
                ("table", C.c_size_t), ("entries", C.c_size_t)]


class TokenInfo(C.Structure):
    _fields_ = [("str", C.c_void_p), ("len", C.c_size_t), ("occurrences", C.c_uint64),
                ("nnz", C.c_uint32), ("row", C.c_uint32)]


class Entry(C.Structure):
    _fields_ = [("row", C.c_uint32), ("dist", C.c_uint32), ("count", C.c_int64)]


lib = C.CDLL(os.environ["CORPQ_CORE_LIB"])
P = C.POINTER
lib.cav_state_new.argtypes = [P(Options), C.c_size_t, P(C.c_void_p), P(Error)]
lib.cav_state_free.argtypes = [C.c_void_p]
lib.cav_state_add_text.argtypes = [C.c_void_p, C.c_char_p, C.c_size_t, C.c_char_p, C.c_size_t, P(Error)]
lib.cav_state_merge.argtypes = [C.c_void_p, C.c_void_p, P(Error)]
lib.cav_state_bytes.argtypes = [C.c_void_p]
lib.cav_state_bytes.restype = C.c_size_t
lib.cav_state_peak_bytes.argtypes = [C.c_void_p]
lib.cav_state_peak_bytes.restype = C.c_size_t
lib.cav_state_stats.argtypes = [C.c_void_p, P(Stats)]
lib.cav_serialize.argtypes = [C.c_void_p, C.c_size_t, P(C.c_void_p), P(C.c_size_t), P(Error)]
lib.cav_deserialize.argtypes = [C.c_void_p, C.c_size_t, C.c_size_t, P(C.c_void_p), P(Error)]
lib.cq_free.argtypes = [C.c_void_p]
lib.cav_view_open.argtypes = [C.c_void_p, C.c_size_t, P(View), P(Error)]
lib.cav_view_token.argtypes = [P(View), C.c_uint32, P(TokenInfo)]
lib.cav_view_find.argtypes = [P(View), C.c_char_p, C.c_size_t, P(C.c_uint32), P(Error)]
lib.cav_view_row.argtypes = [P(View), C.c_uint32, P(C.c_int), P(C.c_void_p), P(C.c_size_t)]
lib.cav_view_entries.argtypes = [P(View), C.c_uint32, P(Entry)]
lib.cav_view_entries.restype = C.c_uint32
lib.cav_view_cosine.argtypes = [P(View), C.c_uint32, C.c_uint32]
lib.cav_view_cosine.restype = C.c_double
lib.cav_view_topk.argtypes = [P(View), C.c_uint32, C.c_uint32, P(C.c_uint32), P(C.c_double),
                              P(C.c_uint32), P(Error)]
lib.cav_view_pool.argtypes = [P(View), C.c_uint32, C.c_uint32, C.c_uint32, P(C.c_double), P(Error)]
lib.cav_view_pool_layer_norm.argtypes = [P(View), C.c_uint32, C.c_uint32, C.c_uint32, C.c_double,
                                         P(C.c_double), P(Error)]


def check(rc, err):
    if rc != 0:
        raise RuntimeError("cav error %d: %s" % (rc, err.msg.decode()))


class State:
    def __init__(self, l_max, targets=None, byte_limit=0):
        self.err = Error()
        self.ptr = C.c_void_p()
        opt = Options(l_max=l_max)
        if targets:
            enc = [t.encode() for t in targets]
            opt.targets = (C.c_char_p * len(enc))(*enc)
            opt.target_lens = (C.c_size_t * len(enc))(*[len(t) for t in enc])
            opt.n_targets = len(enc)
        check(lib.cav_state_new(C.byref(opt), byte_limit, C.byref(self.ptr), C.byref(self.err)), self.err)

    def add(self, src: bytes, tgt: bytes):
        check(lib.cav_state_add_text(self.ptr, src, len(src), tgt, len(tgt), C.byref(self.err)), self.err)

    def merge(self, other):
        check(lib.cav_state_merge(self.ptr, other.ptr, C.byref(self.err)), self.err)

    def stats(self):
        s = Stats()
        lib.cav_state_stats(self.ptr, C.byref(s))
        return s

    def bytes(self):
        out, n = C.c_void_p(), C.c_size_t()
        check(lib.cav_serialize(self.ptr, 0, C.byref(out), C.byref(n), C.byref(self.err)), self.err)
        data = C.string_at(out, n.value)
        lib.cq_free(out)
        return data

    def __del__(self):
        lib.cav_state_free(self.ptr)


class Cav:
    """A validated serialized CAV."""

    def __init__(self, data: bytes):
        self.data = C.create_string_buffer(data, len(data))
        self.v = View()
        err = Error()
        check(lib.cav_view_open(self.data, len(data), C.byref(self.v), C.byref(err)), err)

    def token(self, i):
        t = TokenInfo()
        lib.cav_view_token(C.byref(self.v), i, C.byref(t))
        return C.string_at(t.str, t.len).decode(), t.occurrences, t.nnz, t.row

    def row(self, r):
        side, s, n = C.c_int(), C.c_void_p(), C.c_size_t()
        lib.cav_view_row(C.byref(self.v), r, C.byref(side), C.byref(s), C.byref(n))
        return side.value, C.string_at(s, n.value).decode()

    def find(self, tok):
        i, err, b = C.c_uint32(), Error(), tok.encode()
        rc = lib.cav_view_find(C.byref(self.v), b, len(b), C.byref(i), C.byref(err))
        return i.value if rc == 0 else None

    def entries(self, i):
        out = (Entry * self.token(i)[2])()
        n = lib.cav_view_entries(C.byref(self.v), i, out)
        return [(e.row, e.dist, e.count) for e in out[:n]]

    def cosine(self, a, b):
        return lib.cav_view_cosine(C.byref(self.v), a, b)

    def topk(self, q, k):
        idx, sim = (C.c_uint32 * k)(), (C.c_double * k)()
        n, err = C.c_uint32(), Error()
        check(lib.cav_view_topk(C.byref(self.v), q, k, idx, sim, C.byref(n), C.byref(err)), err)
        return [(idx[i], sim[i]) for i in range(n.value)]

    def pool(self, i, oh, ow):
        out, err = (C.c_double * (oh * ow))(), Error()
        check(lib.cav_view_pool(C.byref(self.v), i, oh, ow, out, C.byref(err)), err)
        return list(out)

    def pool_layer_norm(self, i, oh, ow, eps=1e-5):
        """ANTAP's input: LayerNorm over the whole matrix, no affine, then pooled."""
        out, err = (C.c_double * (oh * ow))(), Error()
        check(lib.cav_view_pool_layer_norm(C.byref(self.v), i, oh, ow, eps, out, C.byref(err)), err)
        return list(out)


# ---- the reference ------------------------------------------------------

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def corpus(n, seed):
    rnd = random.Random(seed)
    src_v = ["s%d" % i for i in range(60)] + ["ñ%d" % i for i in range(10)] + ["日本"]
    tgt_v = ["t%d" % i for i in range(50)] + ["€%d" % i for i in range(10)] + ["ü"]
    pairs = []
    for _ in range(n):
        s = [src_v[int(len(src_v) * rnd.random() ** 2)] for _ in range(rnd.randint(0, 14))]
        t = [tgt_v[int(len(tgt_v) * rnd.random() ** 2)] for _ in range(rnd.randint(1, 14))]
        sep = rnd.choice([" ", "  ", "\t", " \t "])
        pairs.append((sep.join(s), " ".join(t) + rnd.choice(["", " ", "\n"])))
    return pairs


def split(text):
    return [w for w in re.split(r"[ \t\n\v\f\r]+", text) if w]


def reference(pairs, l_max, targets=None):
    """Dense CAVs straight from the definition."""
    toks = [(split(s), split(t)) for s, t in pairs]
    by_bytes = lambda w: w.encode()  # noqa: E731
    src = sorted({w for s, _ in toks for w in s}, key=by_bytes)
    tgt = sorted({w for _, t in toks for w in t}, key=by_bytes)
    rows = {("s", w): i for i, w in enumerate(src)}
    rows.update({("t", w): len(src) + i for i, w in enumerate(tgt)})
    keep = [w for w in tgt if targets is None or w in targets]
    mats = {w: np.zeros((len(src) + len(tgt), l_max), dtype=np.int64) for w in keep}
    occ = {w: 0 for w in keep}
    for s, t in toks:
        seq = [("s", w) for w in s] + [("t", w) for w in t]
        for j, w in enumerate(t):
            if w not in mats:
                continue
            occ[w] += 1
            a = len(s) + j
            for i in range(a + 1):
                if a - i < l_max:
                    mats[w][rows[seq[i]], a - i] += 1
    return src, tgt, keep, mats, occ


def dense_from_c(cav, i):
    m = np.zeros((cav.v.n_src + cav.v.n_tgt, cav.v.l_max), dtype=np.int64)
    for r, d, c in cav.entries(i):
        m[r, d] += c
    return m


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def check_case(pairs, l_max, targets, label):
    st = State(l_max, targets)
    for s, t in pairs:
        st.add(s.encode(), t.encode())
    cav = Cav(st.bytes())
    src, tgt, keep, mats, occ = reference(pairs, l_max, targets)
    c_src = [cav.row(r)[1] for r in range(cav.v.n_src)]
    c_tgt = [cav.row(cav.v.n_src + r)[1] for r in range(cav.v.n_tgt)]
    expect(c_src == src and c_tgt == tgt, "%s: dictionaries" % label)
    expect(cav.v.n_mat == len(keep), "%s: %d matrices, want %d" % (label, cav.v.n_mat, len(keep)))
    expect(cav.v.n_pairs == len(pairs), "%s: pair count" % label)
    names = []
    mismatched = 0
    for i in range(cav.v.n_mat):
        tok, n_occ, nnz, row = cav.token(i)
        names.append(tok)
        ref = mats[tok]
        mismatched += int(n_occ != occ[tok] or nnz != np.count_nonzero(ref)
                          or not np.array_equal(dense_from_c(cav, i), ref)
                          or row != len(src) + tgt.index(tok))
    expect(names == keep, "%s: matrix order" % label)
    expect(mismatched == 0, "%s: %d matrices differ" % (label, mismatched))

    # cosine, every pair
    dense = [mats[w] for w in names]
    cos_err = 0.0
    for a in range(len(names)):
        for b in range(len(names)):
            cos_err = max(cos_err, abs(cav.cosine(a, b) - cosine(dense[a], dense[b])))
    expect(cos_err < 1e-12, "%s: cosine max error %.3g" % (label, cos_err))

    # top-k: similarities equal the numpy ranking's
    topk_err = 0.0
    for q in range(0, len(names), 5):
        k = 7
        ref = sorted((cosine(dense[q], dense[t]) for t in range(len(names)) if t != q), reverse=True)[:k]
        got = cav.topk(q, k)
        expect(len(got) == len(ref), "%s: top-k length" % label)
        for (t, s), r in zip(got, ref):
            topk_err = max(topk_err, abs(s - r), abs(s - cosine(dense[q], dense[t])))
    expect(topk_err < 1e-12, "%s: top-k max error %.3g" % (label, topk_err))

    # pooling vs PyTorch
    pool_err = 0.0
    shapes = [(1, 1), (4, 3), (7, 5), (16, 8), (cav.v.n_src + cav.v.n_tgt + 3, l_max + 2), (33, 1)]
    for i in range(0, len(names), 3):
        x = torch.from_numpy(dense[i].astype(np.float64))[None, None]
        for oh, ow in shapes:
            ref = F.adaptive_avg_pool2d(x, (oh, ow))[0, 0].numpy().ravel()
            got = np.array(cav.pool(i, oh, ow))
            pool_err = max(pool_err, float(np.max(np.abs(got - ref))))
    expect(pool_err < 1e-12, "%s: pooling max error %.3g" % (label, pool_err))
    # ANTAP's input: F.layer_norm over the whole matrix (no affine), then pooled;
    # doubles of magnitude <= ~100 after sums of a few thousand terms: < 1e-10
    ln_err = 0.0
    for i in range(0, len(names), 3):
        x = torch.from_numpy(dense[i].astype(np.float64))[None, None]
        z = F.layer_norm(x, x.shape[-2:], eps=1e-5)
        for oh, ow in shapes:
            ref = F.adaptive_avg_pool2d(z, (oh, ow))[0, 0].numpy().ravel()
            got = np.array(cav.pool_layer_norm(i, oh, ow))
            ln_err = max(ln_err, float(np.max(np.abs(got - ref))))
    expect(ln_err < 1e-10, "%s: layer-norm pooling max error %.3g" % (label, ln_err))
    print("%-28s %3d pairs, %3d src + %3d tgt tokens, %3d matrices: matrices exact, "
          "max |err| cosine %.2g, top-k %.2g, pool vs torch %.2g, layer-norm pool %.2g"
          % (label, len(pairs), len(src), len(tgt), len(names), cos_err, topk_err, pool_err, ln_err))
    return st


def check_merge(pairs, l_max):
    whole = State(l_max)
    parts = [State(l_max) for _ in range(3)]
    for i, (s, t) in enumerate(pairs):
        whole.add(s.encode(), t.encode())
        parts[i % 3].add(s.encode(), t.encode())
    parts[2].merge(parts[0])
    parts[2].merge(parts[1])
    expect(parts[2].bytes() == whole.bytes(), "merge of interleaved thirds differs from one pass")
    print("merge of 3 interleaved parts == one pass (byte-identical): %s"
          % (parts[2].bytes() == whole.bytes()))


def main():
    global np, torch, F
    import numpy as np
    import torch
    import torch.nn.functional as F

    pairs = corpus(300, 1234)
    check_case(pairs, 30, None, "l_max 30 (no drop)")
    check_case(pairs, 6, None, "l_max 6 (drops far context)")
    check_case(pairs, 1, None, "l_max 1")
    check_case(pairs, 9, ["t0", "t3", "€1", "ü", "absent"], "l_max 9, restricted targets")
    check_merge(pairs, 8)
    if failures:
        print("test_cav: %d failures" % len(failures))
        sys.exit(1)
    print("test_cav: ok")


if __name__ == "__main__":
    main()
