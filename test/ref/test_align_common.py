"""ctypes bindings of the word-alignment core, shared by test_align_*.py.

Run directly, it checks that malformed bitexts are rejected with a message.
"""
import ctypes as C
import os
import random
import sys

import numpy as np

LIB = C.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))
P = C.c_void_p


class Bitext(C.Structure):
    _fields_ = [("n_pairs", C.c_int64), ("src", P), ("src_off", P),
                ("tgt", P), ("tgt_off", P),
                ("src_vocab", C.c_int32), ("tgt_vocab", C.c_int32)]


class Error(C.Structure):
    _fields_ = [("code", C.c_int), ("msg", C.c_char * 256)]     # common/error.h cq_error


class TTable(C.Structure):
    _fields_ = [("n_e", C.c_int32), ("n_f", C.c_int32), ("nnz", C.c_int64),
                ("row_off", C.POINTER(C.c_int64)), ("col", C.POINTER(C.c_int32)),
                ("prob", C.POINTER(C.c_double)), ("count", C.POINTER(C.c_double))]


class FaParams(C.Structure):
    _fields_ = [("tension", C.c_double), ("p0", C.c_double),
                ("favor_diagonal", C.c_bool), ("use_null", C.c_bool)]


class FaOptions(C.Structure):
    _fields_ = [("init", FaParams), ("iterations", C.c_int),
                ("optimize_tension", C.c_bool), ("variational_bayes", C.c_bool),
                ("alpha", C.c_double), ("reverse", C.c_bool),
                ("max_index_bytes", C.c_size_t), ("tension_rule", C.c_int)]


class FaModel(C.Structure):
    _fields_ = [("par", FaParams), ("tt", TTable), ("probs_ready", C.c_bool)]


class FaStats(C.Structure):
    _fields_ = [("passes", C.c_int), ("loglik", C.c_double), ("posterior_p0", C.c_double),
                ("emp_feat", C.c_double), ("n_tokens", C.c_double),
                ("skipped_pairs", C.c_int64), ("bytes", C.c_size_t)]


def _sig(name, res, *args):
    f = getattr(LIB, name)
    f.restype = res
    f.argtypes = list(args)
    return f


def _out(create):
    """A constructor `cq_code f(..., T **out, cq_error *err)` as one returning the pointer (None on failure)."""
    def call(*args):
        out = P()
        rc = create(*args[:-1], C.byref(out), args[-1])
        return out.value if rc == 0 else None
    return call


ibm1_create = _out(_sig("cq_ibm1_create", C.c_int, C.POINTER(Bitext), C.c_bool, C.c_size_t,
                        C.POINTER(P), C.POINTER(Error)))
ibm1_iterate = _sig("cq_ibm1_iterate", C.c_int, P, P, C.POINTER(Error))
ibm1_table = _sig("cq_ibm1_table", C.POINTER(TTable), P)
ibm1_viterbi = _sig("cq_ibm1_viterbi", None, P, C.c_int64, P)
ibm1_free = _sig("cq_ibm1_free", None, P)
fa_options_default = _sig("cq_fa_options_default", None, C.POINTER(FaOptions))
fa_create = _out(_sig("cq_fa_trainer_create", C.c_int, C.POINTER(Bitext), C.POINTER(FaOptions),
                      C.POINTER(P), C.POINTER(Error)))
fa_iterate = _sig("cq_fa_iterate", C.c_int, P, P, C.POINTER(Error))
fa_model = _sig("cq_fa_trainer_model", C.POINTER(FaModel), P)
fa_stats = _sig("cq_fa_trainer_stats", None, P, C.POINTER(FaStats))
fa_viterbi = _sig("cq_fa_viterbi", None, P, C.c_int64, P)
fa_free = _sig("cq_fa_trainer_free", None, P)
class Link(C.Structure):
    _fields_ = [("s", C.c_int32), ("t", C.c_int32)]


symmetrize = _sig("cq_symmetrize", C.c_int, C.c_int, C.c_int, C.c_int, P, C.c_int, P, C.c_int, P, P,
                  C.POINTER(C.c_int), C.POINTER(Error))
symmetrize_work_bytes = _sig("cq_symmetrize_work_bytes", C.c_size_t, C.c_int, C.c_int)
SYM_MODES = {"intersect": 0, "union": 1, "grow-diag": 2, "grow-diag-final": 3,
             "grow-diag-final-and": 4}


def core_symmetrize(mode, ns, nt, fwd, rev):
    """Sorted [(s, t)] from the core's cq_symmetrize."""
    lf = (Link * max(1, len(fwd)))(*[Link(s, t) for s, t in fwd])
    lr = (Link * max(1, len(rev)))(*[Link(s, t) for s, t in rev])
    out = (Link * max(1, len(fwd) + len(rev)))()
    work = C.create_string_buffer(max(1, symmetrize_work_bytes(ns, nt)))
    err = Error()
    n = C.c_int()
    if symmetrize(SYM_MODES[mode], ns, nt, C.cast(lf, P), len(fwd), C.cast(lr, P), len(rev),
                  C.cast(work, P), C.cast(out, P), C.byref(n), C.byref(err)) != 0:
        raise ValueError(err.msg.decode())
    return [(out[k].s, out[k].t) for k in range(n.value)]


bitext_validate = _sig("cq_bitext_validate", C.c_int, C.POINTER(Bitext), C.POINTER(Error))


class Corpus:
    """Interns whitespace tokens and keeps the CSR arrays alive for C."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.sv, self.tv = {}, {}
        self.sw, self.tw = [], []
        src, tgt, so, to = [], [], [0], [0]
        for s, t in pairs:
            for w in s:
                if w not in self.sv:
                    self.sv[w] = len(self.sw); self.sw.append(w)
                src.append(self.sv[w])
            for w in t:
                if w not in self.tv:
                    self.tv[w] = len(self.tw); self.tw.append(w)
                tgt.append(self.tv[w])
            so.append(len(src)); to.append(len(tgt))
        self.src = np.array(src, dtype=np.int32)
        self.tgt = np.array(tgt, dtype=np.int32)
        self.src_off = np.array(so, dtype=np.int64)
        self.tgt_off = np.array(to, dtype=np.int64)
        self.bt = Bitext(len(pairs), self.src.ctypes.data, self.src_off.ctypes.data,
                         self.tgt.ctypes.data, self.tgt_off.ctypes.data,
                         len(self.sw), len(self.tw))


def table_dict(tt, e_words, f_words):
    """{(e_word or None, f_word): prob} of a cq_ttable."""
    t = tt.contents
    out = {}
    for r in range(t.n_e + 1):
        e = None if r == t.n_e else e_words[r]
        for q in range(t.row_off[r], t.row_off[r + 1]):
            out[(e, f_words[t.col[q]])] = t.prob[q]
    return out


def fa_options(**kw):
    o = FaOptions()
    fa_options_default(C.byref(o))
    for k, v in kw.items():
        if k in ("tension", "p0", "favor_diagonal", "use_null"):
            setattr(o.init, k, v)
        else:
            setattr(o, k, v)
    return o


def random_corpus(seed, n_pairs, n_words=12, max_len=7):
    """Pairs from a hidden one-to-one dictionary with noise, reordering and
    repeated words on both sides."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n_pairs):
        n = rng.randint(1, max_len)
        src = [f"s{rng.randrange(n_words)}" for _ in range(n)]
        tgt = [w.replace("s", "t") for w in src if rng.random() > 0.15]
        if rng.random() < 0.5:
            tgt.insert(rng.randrange(len(tgt) + 1), f"t{rng.randrange(n_words)}")
        if rng.random() < 0.3 and len(tgt) > 1:
            i = rng.randrange(len(tgt) - 1)
            tgt[i], tgt[i + 1] = tgt[i + 1], tgt[i]
        if not tgt:
            tgt = ["tx"]
        pairs.append((src, tgt))
    return pairs


if __name__ == "__main__":
    c = Corpus([(["a", "b"], ["x"]), (["c"], ["y", "z"])])
    err = Error()
    ok = bitext_validate(C.byref(c.bt), C.byref(err)) == 0
    c.src[1] = 7  # outside the source vocabulary of 3
    rc = bitext_validate(C.byref(c.bt), C.byref(err))
    c.src[1] = 1
    c.tgt_off[1] = 4  # offsets decrease (4 > 3)
    rc2 = bitext_validate(C.byref(c.bt), C.byref(err))
    msg = err.msg.decode()
    EINVAL = 2      # common/error.h CQ_EINVAL
    print(f"valid bitext accepted: {ok}; bad id rejected: {rc == EINVAL}; "
          f"decreasing offsets rejected: {rc2 == EINVAL} ({msg})")
    sys.exit(0 if ok and rc == EINVAL and rc2 == EINVAL and "decrease" in msg else 1)
