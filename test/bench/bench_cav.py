"""Benchmark of the CAV core (extension/cav) on the en-es corpora (the
parallel files test/lib.sh finds, cycled up to n_pairs).

Drives test/libcorpqcore.so through the ctypes binding of test/ref/test_cav.py.
Prints: accumulation of N pairs (time, state bytes, process peak RSS growth,
nonzeros, serialized size), serialize / validate / deserialize times, merge of
two halves vs one pass, a straightforward Python dict-based accumulation on a
subset (ratio, and a check that both give the same nonzeros), top-k / cosine /
pooling query times.  Usage: bench_cav.py [n_pairs] [l_max]
"""
import ctypes as C
import os
import re
import resource
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "ref"))
sys.path.insert(0, here)
import corpora  # noqa: E402
from test_cav import Cav, Error, State, View, lib  # noqa: E402


def load(n):
    pairs = []
    for path in corpora.find()[1]:
        with open(path, encoding="utf-8") as f:
            next(f)
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) == 4:
                    pairs.append((cols[2].encode(), cols[3].encode()))
    unique = len(pairs)
    while len(pairs) < n:
        pairs.extend(pairs[: n - len(pairs)])
    return pairs[:n], unique


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def accumulate(pairs, l_max):
    st = State(l_max)
    add, ptr, err = lib.cav_state_add_text, st.ptr, C.byref(st.err)
    t0 = time.perf_counter()
    for s, t in pairs:
        if add(ptr, s, len(s), t, len(t), err):
            raise RuntimeError(st.err.msg.decode())
    return st, time.perf_counter() - t0


def python_accumulate(pairs, l_max):
    """The definition with dicts: {target: {(side, token, distance): count}}."""
    split = re.compile(rb"[ \t\n\v\f\r]+").split
    cav, occ = {}, {}
    for s, t in pairs:
        src = [("s", w) for w in split(s) if w]
        tgt = [("t", w) for w in split(t) if w]
        seq = src + tgt
        for j, (_, w) in enumerate(tgt):
            a = len(src) + j
            m = cav.setdefault(w, {})
            occ[w] = occ.get(w, 0) + 1
            for d in range(min(a + 1, l_max)):
                key = (seq[a - d], d)
                m[key] = m.get(key, 0) + 1
    return cav, occ


def timed(fn, reps=1):
    t0 = time.perf_counter()
    for _ in range(reps):
        r = fn()
    return r, (time.perf_counter() - t0) / reps


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    l_max = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    pairs, unique = load(n)
    print("bench_cav: %d pairs (%d unique en-es pairs, cycled), whitespace tokens, l_max %d"
          % (len(pairs), unique, l_max))

    rss0 = rss_mb()
    st, t_acc = accumulate(pairs, l_max)
    s = st.stats()
    print("accumulate: %.2f s (%.1f us/pair, includes ~1 us ctypes call)  state %.1f MB "
          "(peak %.1f MB), process peak RSS +%.1f MB"
          % (t_acc, 1e6 * t_acc / len(pairs), lib.cav_state_bytes(st.ptr) / 2**20,
             lib.cav_state_peak_bytes(st.ptr) / 2**20, rss_mb() - rss0))
    print("  %d src tokens, %d tgt tokens, %d matrices, %d nonzeros"
          % (s.n_src, s.n_tgt, s.n_matrices, s.nnz))
    data, t_ser = timed(st.bytes)
    print("serialize: %.3f s, %.1f MB (%.2f bytes/nonzero)"
          % (t_ser, len(data) / 2**20, len(data) / s.nnz))
    buf = C.create_string_buffer(data, len(data))
    v, err = View(), Error()
    _, t_val = timed(lambda: lib.cav_view_open(buf, len(data), C.byref(v), C.byref(err)), 3)
    print("validate (cav_view_open): %.3f s (%.0f MB/s)" % (t_val, len(data) / 2**20 / t_val))
    out = C.c_void_p()

    def deser():
        if lib.cav_deserialize(buf, len(data), 0, C.byref(out), C.byref(err)):
            raise RuntimeError(err.msg.decode())
        lib.cav_state_free(out)
    _, t_de = timed(deser)
    print("deserialize to a state: %.3f s" % t_de)

    half = len(pairs) // 2
    a, t_a = accumulate(pairs[:half], l_max)
    b, t_b = accumulate(pairs[half:], l_max)
    _, t_m = timed(lambda: a.merge(b))
    same = a.bytes() == data
    print("merge of halves: %.2f s + %.2f s accumulate, merge %.3f s; one pass %.2f s; "
          "merged bytes == one pass: %s" % (t_a, t_b, t_m, t_acc, same))
    del a, b

    sub = pairs[:5000]
    ref, t_py = timed(lambda: python_accumulate(sub, l_max))
    cst, t_c = accumulate(sub, l_max)
    py_nnz = sum(len(m) for m in ref[0].values())
    print("python dict accumulation, %d pairs: %.2f s; C %.3f s; ratio %.0fx; nonzeros %d vs %d%s"
          % (len(sub), t_py, t_c, t_py / t_c, py_nnz, cst.stats().nnz,
             "" if py_nnz == cst.stats().nnz else "  MISMATCH"))

    cav = Cav(data)
    for tok in ["de", "la", "Dios", "archivo", "tierra"]:
        q = cav.find(tok)
        if q is None:
            continue
        name, occ, nnz, _ = cav.token(q)
        top, t_top = timed(lambda: cav.topk(q, 10), 3)
        print("top-10 of %-8r (occ %6d, nnz %7d): %.3f s -> %s"
              % (tok, occ, nnz, t_top, ", ".join("%s %.3f" % (cav.token(i)[0], sim) for i, sim in top[:4])))
    q1, q2 = cav.find("de"), cav.find("la")
    _, t_cos = timed(lambda: cav.cosine(q1, q2), 20)
    _, t_pool = timed(lambda: cav.pool(q1, 64, 16), 20)
    print("cosine(de, la): %.2f ms; pool(de) to 64 x 16: %.2f ms (dense would be %d x %d)"
          % (1e3 * t_cos, 1e3 * t_pool, s.n_src + s.n_tgt, l_max))


if __name__ == "__main__":
    main()
