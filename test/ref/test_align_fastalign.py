"""fast_align of the core against a Python re-implementation written from
the paper's equations (Dyer, Chahuneau, Smith 2013), pass by pass.

Reference model, for target position j of m given source e_1..e_n:
  p(a_j = 0) = p0, p(a_j = i) = (1 - p0) exp(lam h(i, j)) / sum_i' exp(lam h(i', j)),
  h(i, j) = -|i/n - j/m|;  posterior q_ji proportional to p(a_j = i) t(f_j | e_i).
Pass 1 uses a flat t (as fast_align does); M-step t = c / sum c or, with
variational Bayes, exp(digamma(c + alpha) - digamma(sum (c + alpha))) using
torch.digamma.  lam is fitted from pass 2 on by 8 steps
lam += 20 dQ/dlam / N on Q(lam) = sum_j sum_{i>=1} q_ji ln p(a_j = i); the
analytic dQ/dlam is itself checked against a central finite difference of Q.
The authors' variant of the update (their code: E_post[h] at the 0-based
target position, E_prior[h] weighted 1 per token with Z summed over the
swapped shape in their closed form) is re-implemented here too and compared with
tension_rule = CQ_FA_TENSION_FAST_ALIGN.
Compared after every pass: every t(f|e), lam, the log-likelihood; and the
Viterbi alignment at the end.  Both directions, with and without the
diagonal, NULL word and variational Bayes.
"""
import ctypes as C
import math
import sys

import torch

import test_align_common as A

FLAT = 1e-9


def prior(j1, m, n, lam, p0, diag, null):
    pn = p0 if null else 0.0
    if not diag:
        return (1.0 / (n + 1) if null else 0.0), [1.0 / (n + null)] * n
    u = [math.exp(lam * -abs(i1 / n - j1 / m)) for i1 in range(1, n + 1)]
    z = sum(u)
    return pn, [(1 - pn) * x / z for x in u]


def authors_z(i, m, n, lam):
    """fast_align's closed-form ComputeZ(i, m, n), unsigned wrap included."""
    fl = int(i * n / m)
    ratio = math.exp(-lam / n)
    num_top = (n - fl) % 2 ** 32
    up = lambda j: math.exp(-abs(j / n - i / m) * lam)
    top = up(fl + 1) * (1 - ratio ** num_top) / (1 - ratio) if num_top else 0.0
    bottom = up(fl) * (1 - ratio ** fl) / (1 - ratio) if fl else 0.0
    return top + bottom


class Reference:
    def __init__(self, pairs, lam=4.0, p0=0.08, diag=True, null=True, vb=False,
                 alpha=0.01, optimize=True, authors=False):
        self.authors = authors
        self.pairs = [(e, f) for e, f in pairs if e and f]
        self.lam, self.p0, self.diag, self.null = lam, p0, diag, null
        self.vb, self.alpha, self.optimize = vb, alpha, optimize
        self.t = None  # None = flat first pass
        self.keys = {(e, f) for es, fs in self.pairs for e in es + [None] for f in fs}
        self.max_fd = 0.0

    def tp(self, e, f):
        return FLAT if self.t is None else self.t[(e, f)]

    def posteriors(self, es, fs):
        m, n = len(fs), len(es)
        for j, f in enumerate(fs):
            w0, w = prior(j + 1, m, n, self.lam, self.p0, self.diag, self.null)
            q0 = w0 * self.tp(None, f) if self.null else 0.0
            q = [w[i] * self.tp(es[i], f) for i in range(n)]
            yield j, f, q0, q, q0 + sum(q)

    def q_function(self, lam, post):
        tot = 0.0
        for (j1, m, n, q) in post:
            _, w = prior(j1, m, n, lam, self.p0, True, self.null)
            tot += sum(qi * math.log(wi) for qi, wi in zip(q, w))
        return tot

    def grad(self, lam, post):
        g = 0.0
        for (j1, m, n, q) in post:
            h = [-abs(i1 / n - j1 / m) for i1 in range(1, n + 1)]
            u = [math.exp(lam * x) for x in h]
            eh = sum(a * b for a, b in zip(h, u)) / sum(u)
            g += sum(qi * hi for qi, hi in zip(q, h)) - sum(q) * eh
        return g

    def step(self):
        counts = {k: 0.0 for k in self.keys}
        ll, post, ntok = 0.0, [], 0
        for es, fs in self.pairs:
            for j, f, q0, q, s in self.posteriors(es, fs):
                ll += math.log(s)
                ntok += 1
                if self.null:
                    counts[(None, f)] += q0 / s
                for i, e in enumerate(es):
                    counts[(e, f)] += q[i] / s
                post.append((j + 1, len(fs), len(es), [x / s for x in q]))
        if self.diag and self.optimize and self.t is not None and self.authors:
            emp = sum(qi * -abs((i + 1) / n - (j1 - 1) / m)
                      for (j1, m, n, q) in post for i, qi in enumerate(q))
            for _ in range(8):
                mod = 0.0
                for (j1, m, n, q) in post:
                    h = [-abs(i1 / n - j1 / m) for i1 in range(1, n + 1)]
                    num = sum(x * math.exp(self.lam * x) for x in h)
                    mod += num / authors_z(j1, n, m, self.lam)
                self.lam += 20.0 * (emp - mod) / ntok
                self.lam = min(max(self.lam, 0.1), 14.0)
        elif self.diag and self.optimize and self.t is not None:
            g = self.grad(self.lam, post)
            eps = 1e-5
            fd = (self.q_function(self.lam + eps, post) - self.q_function(self.lam - eps, post)) / (2 * eps)
            self.max_fd = max(self.max_fd, abs(fd - g) / max(1.0, abs(g)))
            for _ in range(8):
                self.lam += 20.0 * self.grad(self.lam, post) / ntok
                self.lam = min(max(self.lam, 0.1), 14.0)
        rows = {}
        for (e, f), c in counts.items():
            rows.setdefault(e, []).append((f, c))
        self.t = {}
        for e, row in rows.items():
            if self.vb:
                tot = sum(c + self.alpha for _, c in row) or 1.0
                dg = torch.digamma(torch.tensor(tot, dtype=torch.float64)).item()
                vals = torch.digamma(torch.tensor([c + self.alpha for _, c in row], dtype=torch.float64))
                for (f, _), d in zip(row, vals.tolist()):
                    self.t[(e, f)] = math.exp(d - dg)
            else:
                tot = sum(c for _, c in row) or 1.0
                for f, c in row:
                    self.t[(e, f)] = c / tot
        return ll

    def viterbi_ok(self, es, fs, got):
        """True when every got[j] is the argmax, or within 1e-12 (relative)
        of it: positions equidistant from the diagonal tie in exact
        arithmetic, and rounding decides them."""
        for j, f, q0, q, s in self.posteriors(es, fs):
            cand = ([q0] if self.null else [-1.0]) + q
            best = max(cand)
            if cand[got[j] + 1] < best * (1 - 1e-12):
                return False
        return True


def run(name, pairs, passes=4, reverse=False, **kw):
    corpus = A.Corpus(pairs)
    opts = A.fa_options(reverse=reverse, **{k: v for k, v in kw.items()
                                            if k in ("favor_diagonal", "use_null", "variational_bayes",
                                                     "optimize_tension", "max_index_bytes",
                                                     "tension_rule")})
    err = A.Error()
    tr = A.fa_create(C.byref(corpus.bt), C.byref(opts), C.byref(err))
    assert tr, err.msg
    if reverse:
        dir_pairs = [(t, s) for s, t in pairs]
        ew, fw = corpus.tw, corpus.sw
    else:
        dir_pairs = pairs
        ew, fw = corpus.sw, corpus.tw
    ref = Reference(dir_pairs, diag=kw.get("favor_diagonal", True), null=kw.get("use_null", True),
                    vb=kw.get("variational_bayes", False), optimize=kw.get("optimize_tension", True),
                    authors=kw.get("tension_rule", 0) == 1)
    worst_t = worst_lam = worst_ll = 0.0
    st = A.FaStats()
    for _ in range(passes):
        assert A.fa_iterate(tr, None, C.byref(err)) == 0, err.msg
        ll = ref.step()
        md = A.fa_model(tr).contents
        ours = A.table_dict(C.pointer(md.tt), ew, fw)
        if set(ours) != set(ref.t):
            print(f"{name}: entry sets differ")
            return False
        worst_t = max(worst_t, max(abs(ours[k] - ref.t[k]) for k in ref.t))
        worst_lam = max(worst_lam, abs(md.par.tension - ref.lam))
        A.fa_stats(tr, C.byref(st))
        worst_ll = max(worst_ll, abs(st.loglik - ll) / abs(ll))
    bad = 0
    for k, (es, fs) in enumerate(dir_pairs):
        out = (C.c_int32 * max(1, len(fs)))()
        A.fa_viterbi(tr, k, out)
        if es and fs and not ref.viterbi_ok(es, fs, list(out[:len(fs)])):
            bad += 1
    lam = A.fa_model(tr).contents.par.tension
    A.fa_free(tr)
    print(f"{name}: {len(pairs)} pairs, {passes} passes: max|dt| = {worst_t:.3g}, "
          f"max|dlambda| = {worst_lam:.3g} (lambda = {lam:.4f}), max rel dloglik = {worst_ll:.3g}, "
          f"Viterbi mismatches = {bad}, dQ/dlambda vs finite difference: {ref.max_fd:.3g}")
    return worst_t <= 1e-11 and worst_lam <= 1e-11 and worst_ll <= 1e-12 and bad == 0 and ref.max_fd < 1e-6


def main():
    pairs = A.random_corpus(5, 120, n_words=25, max_len=9)
    pairs.append(([], ["t1"]))  # empty side: skipped by both
    ok = run("s->t diagonal, optimised tension", pairs)
    ok &= run("t->s diagonal, optimised tension", pairs, reverse=True)
    ok &= run("s->t diagonal, variational Bayes", pairs, variational_bayes=True)
    ok &= run("s->t diagonal, no link index (search)", pairs, max_index_bytes=0)
    ok &= run("s->t Model 1 prior (no diagonal)", pairs, favor_diagonal=False)
    ok &= run("t->s diagonal, no NULL word", pairs, reverse=True, use_null=False)
    ok &= run("s->t diagonal, the authors' tension update", pairs, tension_rule=1)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
