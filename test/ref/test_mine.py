"""Reference check of margin-based mining (extension/mine/mine.h) against the
definition of Artetxe & Schwenk (2019) written here in plain numpy:

  cos(x, y)   dot product of the L2-normalised vectors (float64 here)
  NN_k(x)     the k targets of largest cosine (all of them when there are
              fewer than k), NN_k(y) likewise among the sources
  r(x)        mean cosine of x to NN_k(x)
  margin      cos(x, y) / ((r(x) + r(y)) / 2)   (the "ratio" margin)
  forward     each source's best candidate in NN_k(x) by margin
  mutual      forward pairs (x, y) where x is also y's best in NN_k(y)

The core computes cosines in float32 (one fused multiply-add chain per
element), numpy in float64, so they differ by ~d * 2^-24.  Every list, mean
and margin is compared within a tolerance, and every decision (list
membership, best candidate, mutual) wherever numpy's decision is not a near
tie; exact ties are built in (repeated rows give equal cosines on both
sides) and decided by the tie rule (of equal values, the smaller index).
At least 90% of the decisions of each case must be clear-cut, so the check
cannot pass by skipping.

Cases: random vectors n != m, clustered vectors (hubs: the margin and the
cosine disagree), repeated rows (exact ties), k larger than a set, blocks
smaller than the sets, and one and two threads.  Exits non-zero on failure.
"""
import ctypes as C
import os
import sys

import numpy as np


class Error(C.Structure):
    _fields_ = [("code", C.c_int), ("msg", C.c_char * 256)]


class Options(C.Structure):
    _fields_ = [("k", C.c_int), ("mutual", C.c_bool), ("min_margin", C.c_double),
                ("block_rows", C.c_int), ("block_cols", C.c_int)]


class Knn(C.Structure):
    _fields_ = [("rows", C.c_int), ("len", C.c_int), ("sim", C.POINTER(C.c_float)),
                ("idx", C.POINTER(C.c_int32)), ("mean", C.POINTER(C.c_double))]


class Pair(C.Structure):
    _fields_ = [("src", C.c_int32), ("tgt", C.c_int32), ("cosine", C.c_float),
                ("margin", C.c_double)]


lib = C.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))
FP = C.POINTER(C.c_float)
lib.cq_mine_normalize.argtypes = [FP, C.c_size_t, C.c_int, C.POINTER(C.c_size_t), C.POINTER(Error)]
lib.cq_mine_knn.argtypes = [FP, C.c_int, FP, C.c_int, C.c_int, C.POINTER(Options),
                            C.POINTER(Knn), C.POINTER(Knn), C.POINTER(Error)]
lib.cq_mine_knn_free.argtypes = [C.POINTER(Knn)]
lib.cq_mine.argtypes = [FP, C.c_int, FP, C.c_int, C.c_int, C.POINTER(Options),
                        C.POINTER(Pair), C.POINTER(C.c_int), C.POINTER(Error)]
lib.cq_mine_knn_mean.argtypes = [C.POINTER(C.c_double), C.c_int, C.c_int]
lib.cq_mine_knn_mean.restype = C.c_double
lib.cq_mine_options_default.argtypes = [C.POINTER(Options)]
lib.cq_parallel_set_threads.argtypes = [C.c_int]

TOL_COS = 1e-5      # float32 cosine against float64
TOL_MARGIN = 1e-4   # margins near 1 carry ~2 cosines' error, times ~2
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def fptr(a):
    return a.ctypes.data_as(FP)


# ---- the core -------------------------------------------------------------

def core_normalize(v):
    v = np.ascontiguousarray(v, dtype=np.float32).copy()
    err = Error()
    rc = lib.cq_mine_normalize(fptr(v), v.shape[0], v.shape[1], None, C.byref(err))
    assert rc == 0, err.msg
    return v


def options(k, mutual=False, blocks=None):
    o = Options()
    lib.cq_mine_options_default(C.byref(o))
    o.k, o.mutual = k, mutual
    if blocks:
        o.block_rows, o.block_cols = blocks
    return o


def core_knn(x, y, k, blocks):
    o = options(k, blocks=blocks)
    a, b, err = Knn(), Knn(), Error()
    rc = lib.cq_mine_knn(fptr(x), x.shape[0], fptr(y), y.shape[0], x.shape[1], C.byref(o),
                         C.byref(a), C.byref(b), C.byref(err))
    assert rc == 0, err.msg
    out = []
    for lst in (a, b):
        rows, ln = lst.rows, lst.len
        sim = np.ctypeslib.as_array(lst.sim, (rows * ln,)).reshape(rows, ln).copy() if rows * ln else np.zeros((rows, ln), np.float32)
        idx = np.ctypeslib.as_array(lst.idx, (rows * ln,)).reshape(rows, ln).copy() if rows * ln else np.zeros((rows, ln), np.int32)
        mean = np.ctypeslib.as_array(lst.mean, (rows,)).copy() if rows else np.zeros(0)
        out.append((sim, idx, mean))
        lib.cq_mine_knn_free(C.byref(lst))
    return out


def core_mine(x, y, k, mutual, blocks):
    o = options(k, mutual, blocks)
    pairs = (Pair * max(1, x.shape[0]))()
    n, err = C.c_int(), Error()
    rc = lib.cq_mine(fptr(x), x.shape[0], fptr(y), y.shape[0], x.shape[1], C.byref(o),
                     pairs, C.byref(n), C.byref(err))
    assert rc == 0, err.msg
    return {p.src: (p.tgt, p.cosine, p.margin) for p in pairs[:n.value]}


# ---- the reference ----------------------------------------------------------

def ref_lists(s, k):
    """Each row's top min(k, cols) (cosine desc, then index asc) and r()."""
    kk = min(k, s.shape[1])
    idx = np.empty((s.shape[0], kk), np.int64)
    for r in range(s.shape[0]):
        order = np.lexsort((np.arange(s.shape[1]), -s[r]))
        idx[r] = order[:kk]
    sim = np.take_along_axis(s, idx, axis=1)
    # the (k+1)-th value, to know whether the list's boundary is a near tie
    nxt = np.array([np.sort(s[r])[::-1][kk] if s.shape[1] > kk else -np.inf
                    for r in range(s.shape[0])])
    return sim, idx, sim.mean(axis=1), nxt


def ref_margin(c, rs, rt):
    d = rs + rt
    return c / (d / 2) if d > 0 else None


def ref_best(s_row, cands, own, other, is_src):
    """(best, margin, clear): best candidate by margin, ties to the smaller index."""
    scored = []
    for j in cands:
        m = ref_margin(s_row[j], own if is_src else other[j], other[j] if is_src else own)
        if m is not None:
            scored.append((-m, j))
    if not scored:
        return None, None, True
    scored.sort()
    clear = len(scored) == 1 or scored[1][0] - scored[0][0] > TOL_MARGIN or scored[1][0] == scored[0][0]
    return scored[0][1], -scored[0][0], clear


def reference(x, y, k, dup_x=(), dup_y=()):
    s = x.astype(np.float64) @ y.astype(np.float64).T
    # repeated rows: make their cosines equal exactly, as they are in the core
    for a, b in dup_x:
        s[b] = s[a]
    for a, b in dup_y:
        s[:, b] = s[:, a]
    xs, xi, xm, xn = ref_lists(s, k)
    ys, yi, ym, yn = ref_lists(s.T, k)
    return s, (xs, xi, xm, xn), (ys, yi, ym, yn)


# ---- one case ---------------------------------------------------------------

def boundary_clear(sim, nxt):
    last = sim[:, -1] if sim.shape[1] else np.full(sim.shape[0], np.inf)
    return (last - nxt > TOL_COS) | (last == nxt)


def check_lists(name, core, ref):
    sim, idx, mean = core
    rs, ri, rm, rn = ref
    clear = boundary_clear(rs, rn)
    if sim.shape != rs.shape:
        return fail(f"{name}: list shape {sim.shape}, expected {rs.shape}")
    for r in np.nonzero(clear)[0]:
        if set(idx[r]) != set(ri[r]):
            fail(f"{name}: row {r} neighbours {sorted(idx[r])}, expected {sorted(ri[r])}")
            break
    if np.max(np.abs(sim - rs), initial=0) > TOL_COS:
        fail(f"{name}: cosines differ by {np.max(np.abs(sim - rs))}")
    if np.max(np.abs(mean - rm), initial=0) > TOL_COS:
        fail(f"{name}: means differ by {np.max(np.abs(mean - rm))}")
    return clear


def check_case(name, x, y, k, blocks=None, dup_x=(), dup_y=(), exact_ties=False, overruled=False):
    x, y = core_normalize(x), core_normalize(y)
    s, rx, ry = reference(x, y, k, dup_x, dup_y)
    cx, cy = core_knn(x, y, k, blocks)
    clear_x = check_lists(f"{name} x2y", cx, rx)
    clear_y = check_lists(f"{name} y2x", cy, ry)
    if exact_ties:
        # the tie rule itself: with exact ties the lists must agree in order too
        for (core, ref, side) in ((cx, rx, "x2y"), (cy, ry, "y2x")):
            for r in range(core[1].shape[0]):
                gaps = -np.diff(ref[0][r])
                if np.any((gaps > 0) & (gaps <= TOL_COS)):
                    continue  # a near tie: float32 may order it either way
                if list(core[1][r]) != list(ref[1][r]):
                    fail(f"{name} {side}: row {r} order {list(core[1][r])}, expected {list(ref[1][r])}")
                    break
    # forward and backward decisions of the reference
    fwd, bwd = {}, {}
    for i in range(x.shape[0]):
        fwd[i] = ref_best(s[i], rx[1][i], rx[2][i], ry[2], True)
    for j in range(y.shape[0]):
        bwd[j] = ref_best(s[:, j], ry[1][j], ry[2][j], rx[2], False)
    n_over = sum(1 for i in fwd if fwd[i][0] is not None and fwd[i][0] != rx[1][i][0])
    if overruled and n_over == 0:
        fail(f"{name}: the margin never overrules the cosine: the case tests nothing of it")
    for mutual in (False, True):
        got = core_mine(x, y, k, mutual, blocks)
        checked = 0
        for i in range(x.shape[0]):
            j, m, clear = fwd[i]
            clear = clear and clear_x[i]
            if j is not None and mutual:
                jb, _, cb = bwd[j]
                clear = clear and cb and clear_y[j]
                if jb != i:
                    j = None
            if not clear:
                continue
            checked += 1
            if j is None:
                if i in got:
                    fail(f"{name} mutual={mutual}: source {i} paired with {got[i][0]}, expected none")
            elif i not in got or got[i][0] != j:
                fail(f"{name} mutual={mutual}: source {i} paired with {got.get(i, (None,))[0]}, expected {j}")
            elif abs(got[i][2] - m) > TOL_MARGIN or abs(got[i][1] - s[i, j]) > TOL_COS:
                fail(f"{name} mutual={mutual}: pair ({i}, {j}) cosine {got[i][1]} margin {got[i][2]},"
                     f" expected {s[i, j]} {m}")
        if checked < 0.9 * x.shape[0]:
            fail(f"{name} mutual={mutual}: only {checked} of {x.shape[0]} decisions were clear-cut")
        print(f"{name} mutual={mutual}: {len(got)} pairs, {checked} of {x.shape[0]} sources checked,"
              f" {n_over} best by margin not by cosine")


def clustered(rng, n, centres, d, spread):
    c = rng.standard_normal((centres, d))
    return c[rng.integers(0, centres, n)] + spread * rng.standard_normal((n, d))


def main():
    rng = np.random.default_rng(45)
    # k = 4 (the default), n != m, the default blocks
    check_case("random 300x500 d64", rng.standard_normal((300, 64)), rng.standard_normal((500, 64)), 4)
    # blocks smaller than the sets, and not dividing them
    check_case("random 123x77 d32 blocks 10x9", rng.standard_normal((123, 32)),
               rng.standard_normal((77, 32)), 4, blocks=(10, 9))
    # clustered: hubs, where the margin overrules the cosine
    x = clustered(rng, 400, 20, 48, 0.6)
    y = np.concatenate([x[:300] + 0.3 * rng.standard_normal((300, 48)), clustered(rng, 150, 20, 48, 0.6)])
    check_case("clustered 400x450 d48 k4", x, y, 4, blocks=(64, 100), overruled=True)
    check_case("clustered 400x450 d48 k10", x, y, 10, overruled=True)
    # k larger than the sets
    check_case("k 10 > 3x6", rng.standard_normal((3, 16)), rng.standard_normal((6, 16)), 10)
    check_case("k 10 > 12x4", rng.standard_normal((12, 16)) + 1.5, rng.standard_normal((4, 16)) + 1.5, 10)
    # exact ties: repeated rows on both sides
    x = np.abs(rng.standard_normal((60, 24)))
    y = np.abs(rng.standard_normal((50, 24)))
    dup_x = [(i, i + 1) for i in range(0, 60, 6)]
    dup_y = [(j, j + 1) for j in range(0, 50, 5)]
    for a, b in dup_x:
        x[b] = x[a]
    for a, b in dup_y:
        y[b] = y[a]
    check_case("ties 60x50 d24", x, y, 3, blocks=(7, 11), dup_x=dup_x, dup_y=dup_y, exact_ties=True)
    # two threads: the same decisions (the unit tests check the same bits)
    lib.cq_parallel_set_threads(2)
    check_case("random 300x500 d64 threads 2", rng.standard_normal((300, 64)),
               rng.standard_normal((500, 64)), 4, blocks=(32, 64))
    lib.cq_parallel_set_threads(1)
    # the k-NN mean helper: mean of the k largest, all when fewer
    for vals, k in (([0.3, 0.9, -0.1, 0.5], 2), ([0.2, 0.4], 4), (list(rng.standard_normal(50)), 7)):
        a = (C.c_double * len(vals))(*vals)
        got = lib.cq_mine_knn_mean(a, len(vals), k)
        want = float(np.mean(sorted(vals, reverse=True)[:k]))
        if abs(got - want) > 1e-12:
            fail(f"knn_mean({vals}, {k}) = {got}, expected {want}")
    if failures:
        print(f"test_mine: {len(failures)} failures")
        sys.exit(1)
    print("test_mine: ok")


if __name__ == "__main__":
    main()
