"""Reference check of the curation core (extension/curate/) against plain
Python and numpy, on pairs of the shared en-es corpora:

  noise      every pair the core makes is what its label says, checked here
             from the definitions in noise.h (word prefixes by str.split(),
             the 30-70% bounds, partners, copies, edits as word multisets)
  features   the string features re-implemented from features.h (Python's
             len() and str.split(), Counter multisets, unicodedata's P*
             categories), and the rule scores against OpusFilter's
             definitions (opusfilter_rules.py), on clean and noisy pairs
  classifier the same penalised logistic regression and Platt calibration
             written in numpy (standardisation, IRLS with a dense solve,
             its own iteration): weights, bias, Platt's a and b within 1e-8,
             probabilities within 1e-8 (what Platt's tolerance allows: the
             held-out logits nearly separate the labels, so Platt's
             optimum is flat and two solvers stop a few 1e-9 apart); and the gradient of the objective
             at the core's weights, computed here, is zero (|g| < 1e-9)
  trees      the boosted trees grown in numpy from trees.h's definition (the
             same bins, sums in the same order, glibc's exp through
             math.exp): the same splits and thresholds bit for bit, leaves
             and Platt within 1e-12 / 1e-8, probabilities within 1e-8

Exits non-zero on failure; without the corpora it says so and checks a
small built-in sample.
"""
import math
import os
import re
import sys
import unicodedata
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import curate_core as core  # noqa: E402
import opusfilter_rules as ref  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import corpora  # noqa: E402

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 20:
        print("FAIL", msg)


def load_pairs(n):
    rows = corpora.sample(n // 3, [2, 3])
    pairs = list(zip(rows[0::2], rows[1::2]))
    if not pairs:
        print("test_curate: no corpora found; a built-in sample only")
        pairs = [("The cat sat on the mat.", "El gato se sentó en la alfombra."),
                 ("Open the file %s?", "¿Abrir el archivo %s?"),
                 ("In the beginning God created the heavens and the earth.",
                  "En el principio crió Dios los cielos y la tierra."),
                 ("Press <b>OK</b> to continue", "Pulse <b>Aceptar</b> para continuar"),
                 ("3 files removed", "3 archivos eliminados")] * 20
    return pairs


# ---- noise ------------------------------------------------------------------

def check_truncated(cut, full, where):
    w, wf = cut.split(), full.split()
    if not full.startswith(cut) or not (1 <= len(w) < len(wf)) or w != wf[:len(w)]:
        fail("%s: %r is not a proper word prefix of %r" % (where, cut, full))
    elif not (10 * len(w) >= 3 * len(wf) and 10 * len(w) <= 7 * len(wf)):
        fail("%s: %d of %d words kept" % (where, len(w), len(wf)))


def check_noise_pair(kind, base, other, s, t, src, tgt, foreign):
    bs, bt = src[base], tgt[base]
    where = "%s from pair %d" % (kind, base)
    expect = {
        "clean": lambda: (bs, bt),
        "misaligned_neighbour": lambda: (bs, tgt[other]),
        "misaligned_random": lambda: (bs, tgt[other]),
        "appended_tgt": lambda: (bs, bt + " " + tgt[other]),
        "appended_src": lambda: (bs + " " + src[other], bt),
        "untranslated": lambda: (bs, bs),
        "wrong_language": lambda: (bs, foreign[other]),
    }
    if kind in expect:
        if kind not in ("clean", "untranslated") and not 0 <= other < len(foreign if kind == "wrong_language" else src):
            fail("%s: partner %d" % (where, other))
        elif (s, t) != expect[kind]():
            fail("%s: got (%r, %r)" % (where, s, t))
        if kind.startswith("misaligned") and (t == bt or other == base):
            fail("%s: the target is the base's own" % where)
        if kind == "misaligned_neighbour":
            d = abs(other - base)
            closer = [j for j in (base + e for e in range(-d + 1, d)) if 0 <= j < len(tgt) and tgt[j] != bt]
            if closer:
                fail("%s: pair %d is nearer than %d" % (where, closer[0], other))
    elif kind == "truncated_tgt":
        check_truncated(t, bt, where) if s == bs else fail(where + ": source changed")
    elif kind == "truncated_src":
        check_truncated(s, bs, where) if t == bt else fail(where + ": target changed")
    elif kind == "markup":
        # one side changed, by tags only: stripped of "<...>" it is the base's
        changed = [(x, b) for x, b in ((s, bs), (t, bt)) if x != b]
        if len(changed) != 1:
            fail("%s: %d sides changed" % (where, len(changed)))
        elif (re.sub(r"<[^>]*>", "", changed[0][0]) != re.sub(r"<[^>]*>", "", changed[0][1])
              or len(changed[0][0]) <= len(changed[0][1])):
            fail("%s: %r is not %r with tags added" % (where, changed[0][0], changed[0][1]))
        elif not ref.html_tags(changed[0][0]):
            fail("%s: %r has no tag an HTML parser reads" % (where, changed[0][0]))
    elif kind == "untranslated_edited":
        ws, wt = Counter(bs.split()), Counter(t.split())
        if s != bs or t == bs or wt - ws or not (sum(ws.values()) - 2 <= sum(wt.values()) <= sum(ws.values())):
            fail("%s: %r is not a small edit of %r" % (where, t, bs))
    else:
        fail("unknown type %s" % kind)


def check_noise(pairs):
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    foreign = ["Das ist nicht richtig.", "Die Datei wurde gelöscht.", "Und Gott sprach."]
    shares = {k: 0.3 for k in core.NOISE_TYPES[1:]}
    out = core.noise(src, tgt, foreign, seed=5, shares=shares)
    again = core.noise(src, tgt, foreign, seed=5, shares=shares)
    other = core.noise(src, tgt, foreign, seed=6, shares=shares)
    if out != again:
        fail("noise: the same seed gave other pairs")
    if sum(a != b for a, b in zip(out, other)) < len(pairs):
        fail("noise: another seed changed too few pairs")
    counts = Counter(k for k, *_ in out)
    for k in core.NOISE_TYPES[1:]:
        if counts[k] != round(0.3 * len(pairs)):
            fail("noise: %d pairs of %s, expected %d" % (counts[k], k, round(0.3 * len(pairs))))
    for kind, base, oth, s, t in out:
        check_noise_pair(kind, base, oth, s, t, src, tgt, foreign)
    print("noise: %d pairs from %d clean ones checked" % (len(out), len(pairs)))
    return out


# ---- features -----------------------------------------------------------------

def dice(a, b, none):
    na, nb = sum(a.values()), sum(b.values())
    return none if na + nb == 0 else 2 * sum((a & b).values()) / (na + nb)


def trigrams(s):
    return Counter(s[i:i + 3] for i in range(len(s) - 2))


TERMINALS = set(".!?\u2026\u3002\uff01\uff1f\u061f\u0964")


def sentence_boundaries(x):
    """A terminal mark, whitespace, any opening marks (categories Ps, Pi, and
    the inverted marks and straight quotes), then an uppercase letter (Lu)."""
    count = 0
    for i in range(len(x) - 1):
        if x[i] not in TERMINALS or not x[i + 1].isspace():
            continue
        j = i + 1
        while j < len(x) and x[j].isspace():
            j += 1
        while j < len(x) and (unicodedata.category(x[j]) in ("Ps", "Pi") or x[j] in "\u00bf\u00a1\"'"):
            j += 1
        if j < len(x) and unicodedata.category(x[j]) == "Lu":
            count += 1
    return count


CLAUSE_ENDS = TERMINALS | set(":;\uff1a\uff1b")


def ends_sentence(x):
    """The last character that is not whitespace nor closing (Pe, Pf, straight
    quotes) is a sentence or clause mark."""
    x = x.rstrip()
    while x and (unicodedata.category(x[-1]) in ("Pe", "Pf") or x[-1] in "\"'" or x[-1].isspace()):
        x = x[:-1]
    return 1 if x and x[-1] in CLAUSE_ENDS else 0


def ref_features(s, t):
    cs, ct, ws, wt = len(s), len(t), len(s.split()), len(t.split())
    cl, wl = math.log((1 + ct) / (1 + cs)), math.log((1 + wt) / (1 + ws))
    gs, gt = trigrams(s), trigrams(t)
    copy_chars = (1.0 if s == t else 0.0) if not gs or not gt else dice(gs, gt, 0.0)
    punct = [Counter(c for c in x if unicodedata.category(c).startswith("P")) for x in (s, t)]
    return {
        "char_log_ratio": cl, "char_log_ratio_abs": abs(cl),
        "word_log_ratio": wl, "word_log_ratio_abs": abs(wl),
        "src_log_words": math.log(1 + ws),
        "copy_tokens": dice(Counter(s.split()), Counter(t.split()), 0.0),
        "copy_chars": copy_chars, "punct_dice": dice(punct[0], punct[1], 1.0),
        "terminal_punct": ref.terminal_punct_score(s, t),
        "numerals": ref.numerals_match(s, t),
        "alpha_src": ref.alpha_ratio(s, True), "alpha_tgt": ref.alpha_ratio(t, True),
        "repetition_src": math.log1p(ref.repetition(s)),
        "repetition_tgt": math.log1p(ref.repetition(t)),
        "html_src": float(ref.html_tags(s)), "html_tgt": float(ref.html_tags(t)),
        "sentence_diff": float(sentence_boundaries(t) - sentence_boundaries(s)),
        "end_punct": float(ends_sentence(t) - ends_sentence(s)),
    }


def check_features(noisy):
    fs = core.feature_set()
    names = core.feature_names(fs)
    pairs = [(s, t) for _, _, _, s, t in noisy]
    x = core.features(fs, pairs)
    worst = 0.0
    for i, (s, t) in enumerate(pairs):
        r = ref_features(s, t)
        for j, name in enumerate(names):
            diff = abs(x[i, j] - r[name])
            worst = max(worst, diff)
            if not diff <= 1e-12:
                fail("feature %s of (%r, %r): core %r, reference %r" % (name, s, t, x[i, j], r[name]))
    print("features: %d pairs x %d features, largest difference %.2g" % (len(pairs), len(names), worst))
    return x


# ---- classifier ---------------------------------------------------------------

def sigmoid(v):
    return 0.5 * (1 + np.tanh(0.5 * v))


def grad_hess(z, t, theta, l2):
    """Gradient and Hessian of mean cross-entropy + l2/2 |theta[1:]|^2."""
    q = sigmoid(z @ theta)
    pen = np.full(len(theta), l2)
    pen[0] = 0
    g = z.T @ (q - t) / len(t) + pen * theta
    h = (z * (q * (1 - q))[:, None]).T @ z / len(t) + np.diag(pen)
    return g, h


def objective(z, t, theta, l2):
    v = z @ theta
    loss = t * np.logaddexp(0, -v) + (1 - t) * np.logaddexp(0, v)
    return loss.mean() + 0.5 * l2 * np.sum(theta[1:] ** 2)


def irls(z, t, l2):
    """Newton with step halving, numpy's dense solve, to |step| < 1e-13."""
    theta = np.zeros(z.shape[1])
    for _ in range(200):
        g, h = grad_hess(z, t, theta, l2)
        step = np.linalg.solve(h, g)
        lam, f0 = 1.0, objective(z, t, theta, l2)
        while objective(z, t, theta - lam * step, l2) > f0 and lam > 1e-12:
            lam /= 2
        theta = theta - lam * step
        if np.max(np.abs(lam * step)) < 1e-13:
            break
    return theta


def ref_classifier(x, y, holdout, l2):
    tr, ho = holdout == 0, holdout == 1
    mean = x[tr].mean(axis=0)
    scale = x[tr].std(axis=0)
    scale[scale < 1e-12] = 1.0
    z = np.hstack([np.ones((tr.sum(), 1)), (x[tr] - mean) / scale])
    theta = irls(z, y[tr].astype(float), l2)
    logit = lambda rows: theta[0] + ((rows - mean) / scale) @ theta[1:]  # noqa: E731
    s = logit(x[ho])
    yh = y[ho]
    npos, nneg = yh.sum(), len(yh) - yh.sum()
    t = np.where(yh == 1, (npos + 1) / (npos + 2), 1 / (nneg + 2))
    ab = irls(np.column_stack([np.ones(len(s)), s]), t, 0.0)
    prob = lambda rows: sigmoid(ab[1] * logit(rows) + ab[0])  # noqa: E731
    return {"mean": mean, "scale": scale, "w": theta[1:], "bias": theta[0],
            "platt_a": ab[1], "platt_b": ab[0], "prob": prob, "z": z, "t": y[tr].astype(float),
            "theta": theta}


def close(name, a, b, tol):
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    err = np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))
    if not err <= tol:
        fail("classifier %s: core %s, reference %s (relative difference %.3g)" % (name, a, b, err))
    return err


def check_classifier(noisy, x):
    y = np.array([1 if k == "clean" else 0 for k, *_ in noisy], dtype=np.uint8)
    groups = np.array([b for _, b, *_ in noisy], dtype=np.int64)
    holdout = core.holdout_split(3, groups, 0.25)
    for l2 in (1e-4, 1e-2):
        c = core.train(core.feature_set(), x, y, holdout, l2=l2)
        r = ref_classifier(x, y, holdout, l2)
        close("mean", c["mean"], r["mean"], 1e-12)
        close("scale", c["scale"], r["scale"], 1e-12)
        e = max(close("weights", c["w"], r["w"], 1e-8), close("bias", c["bias"], r["bias"], 1e-8),
                close("platt_a", c["platt_a"], r["platt_a"], 1e-8),
                close("platt_b", c["platt_b"], r["platt_b"], 1e-8))
        pc, pr = c["prob"](x), r["prob"](x)
        perr = np.max(np.abs(pc - pr))
        if not perr <= 1e-8:
            fail("classifier probabilities differ by %.3g (l2 %g)" % (perr, l2))
        g, _ = grad_hess(r["z"], r["t"], np.concatenate([[c["bias"]], c["w"]]), l2)
        if not np.max(np.abs(g)) < 1e-9:
            fail("the objective's gradient at the core's weights is %.3g, not 0" % np.max(np.abs(g)))
        print("classifier (l2 %g): %d rows, %d Newton iterations; weights within %.2g, "
              "probabilities within %.2g, |gradient| %.2g"
              % (l2, len(y), c["iterations"], e, perr, np.max(np.abs(g))))


# ---- boosted trees (trees.h's definition, in numpy) -----------------------------

def seq_sum(a):
    """Left-to-right float sum (numpy's sum is pairwise, Python's compensated)."""
    return float(np.cumsum(a)[-1]) if len(a) else 0.0


def ref_trees(x, y, holdout, o):
    tr = holdout == 0
    xt, yt = x[tr], y[tr].astype(float)
    m, d, nb = len(yt), x.shape[1], o["bins"]
    edges = []
    for j in range(d):
        v = np.sort(xt[:, j])
        e = []
        for q in range(1, nb):
            if not e or v[q * m // nb] > e[-1]:
                e.append(v[q * m // nb])
        edges.append(np.array(e))
    b = np.stack([np.searchsorted(edges[j], xt[:, j], side="right") for j in range(d)], 1)
    mean = seq_sum(yt) / m
    base = math.log(mean / (1 - mean))
    margin = np.full(m, base)
    depth, lam, lr, minh = o["depth"], o["lambda_"], o["learning_rate"], o["min_hessian"]
    inner = (1 << depth) - 1
    feat = np.full((o["rounds"], inner), -1)
    thr = np.zeros((o["rounds"], inner))
    leaf = np.zeros((o["rounds"], inner + 1))

    def grow(t, node, level, rows, g, h):
        G, H = seq_sum(g[rows]), seq_sum(h[rows])
        if level == depth:
            v = -lr * G / (H + lam)
            leaf[t, node - inner] = v
            margin[rows] += v
            return
        best = (0.0, -1, -1)
        for j in range(d if len(rows) else 0):
            n = len(edges[j]) + 1
            gl = np.cumsum(np.bincount(b[rows, j], g[rows], n))
            hl = np.cumsum(np.bincount(b[rows, j], h[rows], n))
            for k in range(n - 1):
                gain = gl[k] * gl[k] / (hl[k] + lam) + (G - gl[k]) * (G - gl[k]) / (H - hl[k] + lam) - G * G / (H + lam)
                if gain > best[0] and hl[k] > minh and H - hl[k] > minh:
                    best = (gain, j, k)
        _, j, k = best
        feat[t, node] = j
        thr[t, node] = edges[j][k] if j >= 0 else 0.0
        left = rows[b[rows, j] <= k] if j >= 0 else rows
        right = rows[b[rows, j] > k] if j >= 0 else rows[:0]
        grow(t, 2 * node + 1, level + 1, left, g, h)
        grow(t, 2 * node + 2, level + 1, right, g, h)

    for t in range(o["rounds"]):
        p = np.array([1.0 / (1.0 + math.exp(-v)) for v in margin])
        grow(t, 0, 0, np.arange(m), p - yt, p * (1 - p))

    def logit(rows):
        out = np.full(len(rows), base)
        for t in range(o["rounds"]):
            node = np.zeros(len(rows), dtype=int)
            for _ in range(depth):
                f = feat[t, node]
                go_left = (f < 0) | (rows[np.arange(len(rows)), np.maximum(f, 0)] < thr[t, node])
                node = 2 * node + np.where(go_left, 1, 2)
            out += leaf[t, node - inner]
        return out
    s = logit(x[~tr])
    yh = y[~tr]
    npos, nneg = yh.sum(), len(yh) - yh.sum()
    tt = np.where(yh == 1, (npos + 1) / (npos + 2), 1 / (nneg + 2))
    ab = irls(np.column_stack([np.ones(len(s)), s]), tt, 0.0)
    return {"feat": feat, "thr": thr, "leaf": leaf, "base": base, "platt_a": ab[1],
            "platt_b": ab[0], "prob": lambda rows: sigmoid(ab[1] * logit(rows) + ab[0])}


def check_trees(noisy, x):
    y = np.array([1 if k == "clean" else 0 for k, *_ in noisy], dtype=np.uint8)
    groups = np.array([b for _, b, *_ in noisy], dtype=np.int64)
    holdout = core.holdout_split(4, groups, 0.25)
    c = core.train(core.feature_set(), x, y, holdout, trees=True, rounds=20, depth=3)
    r = ref_trees(x, y, holdout, c["options"])
    same = (c["feat"] == r["feat"]).all() and (c["thr"] == r["thr"]).all()
    if not same:
        bad = np.argwhere((c["feat"] != r["feat"]) | (c["thr"] != r["thr"]))
        fail("trees: the splits differ first at tree %d node %d" % tuple(bad[0]))
    e = max(close("leaves", c["leaf"], r["leaf"], 1e-12), close("base", c["base"], r["base"], 0),
            close("trees' platt_a", c["platt_a"], r["platt_a"], 1e-8),
            close("trees' platt_b", c["platt_b"], r["platt_b"], 1e-8))
    perr = np.max(np.abs(c["prob"](x) - r["prob"](x)))
    if not perr <= 1e-8:
        fail("trees: probabilities differ by %.3g" % perr)
    print("trees: %d rounds of depth %d on %d rows: splits %s, leaves and Platt within %.2g, "
          "probabilities within %.2g" % (c["n_trees"], c["depth"], len(y),
                                         "equal" if same else "DIFFER", e, perr))


def main():
    pairs = load_pairs(1500)
    noisy = check_noise(pairs)
    x = check_features(noisy)
    check_classifier(noisy, x)
    check_trees(noisy, x)
    if failures:
        print("test_curate: %d failures" % len(failures))
        sys.exit(1)
    print("test_curate: ok")


if __name__ == "__main__":
    main()
