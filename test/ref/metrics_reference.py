"""A plain-Python BLEU, chrF and paired bootstrap, written from the published
algorithms, as the independent reference for corpq's C metrics:

  * BLEU: Papineni et al. (2002), geometric mean of clipped n-gram precisions
    times the brevity penalty; the smoothing methods of Chen & Cherry (2014)
    as sacreBLEU documents them (floor = method 1, add-k = method 2 from the
    2-grams on, exp = method 3, NIST's); sacreBLEU's effective order; a zero
    precision contributes a log of -9999999999 (sacreBLEU), so the score is 0.
  * tokenizers: mteval-v13a's normalisation and regexps, mteval-v14's
    --international-tokenization regexps (Unicode classes from the `regex`
    module, as sacreBLEU does), one character per token, or none.
  * chrF: Popović (2015, 2017) -- character n-grams 1..6 without whitespace,
    optional word n-grams over words with one leading/trailing ASCII
    punctuation mark split off, per-order precision and recall summed over
    the corpus, F-beta of their means over the orders present on both sides
    (or with epsilon smoothing the mean F over all orders).
  * paired bootstrap: Koehn (2004) with sacreBLEU's statistics (mean and
    half-width of the central 95 % interval of the resampled scores; p-value
    from the centred absolute differences), drawing rows with an independent
    Philox4x32-10 written from Salmon et al. (2011).

Everything is straightforward Counter arithmetic; speed is not a goal.
"""
import math
from collections import Counter

import regex

# ---- tokenizers ---------------------------------------------------------------

_13A_RULES = [
    (regex.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (regex.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (regex.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (regex.compile(r"([0-9])(-)"), r"\1 \2 "),
]
_INTL_RULES = [
    (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),
    (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),
    (regex.compile(r"(\p{S})"), r" \1 "),
]


def tokenize(kind, line):
    """The tokens BLEU counts (after its whitespace split)."""
    if kind == "13a":
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            for ent, ch in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
                line = line.replace(ent, ch)
        line = " " + line + " "
        for pat, rep in _13A_RULES:
            line = pat.sub(rep, line)
    elif kind == "intl":
        for pat, rep in _INTL_RULES:
            line = pat.sub(rep, line)
    elif kind == "char":
        line = " ".join(line)
    elif kind != "none":
        raise ValueError(kind)
    return line.split()


# ---- BLEU ----------------------------------------------------------------------

BLEU_DEFAULTS = dict(tokenize="13a", lowercase=False, smooth="exp", smooth_value=None,
                     effective_order=False, max_order=4)
SMOOTH_DEFAULT_VALUE = {"floor": 0.1, "add-k": 1.0}


def bleu_options(**kw):
    o = dict(BLEU_DEFAULTS)
    o.update(kw)
    return o


def bleu_tokens(o, line):
    if o["lowercase"]:
        line = line.lower()
    return tokenize(o["tokenize"], line.rstrip())


def ngram_counts(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu_sentence_stats(o, hyp, refs):
    """dict(hyp_len, ref_len, correct[], total[]) of one sentence."""
    h = bleu_tokens(o, hyp)
    rs = [bleu_tokens(o, r) for r in refs]
    # closest reference length, the shorter one on a tie
    ref_len = min((abs(len(r) - len(h)), len(r)) for r in rs)[1]
    correct, total = [], []
    for n in range(1, o["max_order"] + 1):
        hc = ngram_counts(h, n)
        best = Counter()
        for r in rs:
            best |= ngram_counts(r, n)          # elementwise max
        correct.append(sum(min(c, best[g]) for g, c in hc.items()))
        total.append(max(0, len(h) - n + 1))
    return dict(hyp_len=len(h), ref_len=ref_len, correct=correct, total=total)


def bleu_sum(stats):
    out = dict(hyp_len=0, ref_len=0, correct=None, total=None)
    for s in stats:
        out["hyp_len"] += s["hyp_len"]
        out["ref_len"] += s["ref_len"]
        out["correct"] = [a + b for a, b in zip(out["correct"] or [0] * len(s["correct"]), s["correct"])]
        out["total"] = [a + b for a, b in zip(out["total"] or [0] * len(s["total"]), s["total"])]
    return out


def bleu_score(o, s):
    """BLEU in [0, 100] from summed statistics."""
    c_len, r_len = s["hyp_len"], s["ref_len"]
    if c_len >= r_len:
        bp = 1.0
    elif c_len == 0:
        bp = 0.0
    else:
        bp = math.exp(1 - r_len / c_len)
    if sum(s["correct"]) == 0:
        return 0.0
    k = o["smooth_value"]
    if k is None:
        k = SMOOTH_DEFAULT_VALUE.get(o["smooth"], 0.0)
    logs, used, halvings = [], 0, 0
    for n in range(1, o["max_order"] + 1):
        m, t = s["correct"][n - 1], s["total"][n - 1]
        if o["smooth"] == "add-k" and n > 1:
            m, t = m + k, t + k
        if t == 0:
            break
        used = n
        if m > 0:
            p = 100.0 * m / t
        elif o["smooth"] == "exp":
            halvings += 1
            p = 100.0 / (2 ** halvings * t)
        elif o["smooth"] == "floor":
            p = 100.0 * k / t
        else:
            p = 0.0
        logs.append(math.log(p) if p > 0 else -9999999999.0)
    orders = used if o["effective_order"] else o["max_order"]
    # orders past the first without n-grams have precision 0
    logs += [-9999999999.0] * (orders - len(logs))
    return bp * math.exp(sum(logs[:orders]) / orders)


def corpus_bleu(o, hyps, ref_streams):
    stats = [bleu_sentence_stats(o, h, [rs[i] for rs in ref_streams]) for i, h in enumerate(hyps)]
    return bleu_score(o, bleu_sum(stats))


# ---- chrF ----------------------------------------------------------------------

CHRF_DEFAULTS = dict(char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False,
                     eps_smoothing=False)
_PUNCT = set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


def chrf_options(**kw):
    o = dict(CHRF_DEFAULTS)
    o.update(kw)
    return o


def chrf_words(line):
    words = []
    for w in line.split():
        if len(w) > 1 and w[-1] in _PUNCT:
            words += [w[:-1], w[-1]]
        elif len(w) > 1 and w[0] in _PUNCT:
            words += [w[0], w[1:]]
        else:
            words.append(w)
    return words


def _chrf_orders(o, line):
    """Counters of character n-grams 1..char_order then word n-grams."""
    if o["lowercase"]:
        line = line.lower()
    chars = line if o["whitespace"] else "".join(line.split())
    out = [Counter(chars[i:i + n] for i in range(len(chars) - n + 1))
           for n in range(1, o["char_order"] + 1)]
    words = chrf_words(line) if o["word_order"] else []
    out += [ngram_counts(words, n) for n in range(1, o["word_order"] + 1)]
    return out


def chrf_stats_pair(o, hyp, ref):
    stats = []
    for h, r in zip(_chrf_orders(o, hyp), _chrf_orders(o, ref)):
        n_ref = sum(r.values())
        n_hyp = sum(h.values()) if n_ref else 0
        stats += [n_hyp, n_ref, sum((h & r).values())]
    return stats


def chrf_score(o, stats):
    b2 = o["beta"] ** 2
    eps = 1e-16
    order = o["char_order"] + o["word_order"]
    f_sum, precs, recs = 0.0, [], []
    for i in range(order):
        n_hyp, n_ref, n_match = stats[3 * i:3 * i + 3]
        p = n_match / n_hyp if n_hyp else eps
        r = n_match / n_ref if n_ref else eps
        f_sum += (1 + b2) * p * r / (b2 * p + r) if b2 * p + r > 0 else eps
        if n_hyp and n_ref:
            precs.append(p)
            recs.append(r)
    if o["eps_smoothing"]:
        return 100 * f_sum / order
    if not precs:
        return 0.0
    p, r = sum(precs) / len(precs), sum(recs) / len(recs)
    return 100 * (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0


def chrf_sentence_stats(o, hyp, refs):
    best, best_f = None, -1.0
    for ref in refs:
        s = chrf_stats_pair(o, hyp, ref)
        f = chrf_score(o, s)
        if f > best_f:
            best, best_f = s, f
    return best


def corpus_chrf(o, hyps, refs):
    total = None
    for h, r in zip(hyps, refs):
        s = chrf_sentence_stats(o, h, [r])
        total = s if total is None else [a + b for a, b in zip(total, s)]
    return chrf_score(o, total)


# ---- paired bootstrap -----------------------------------------------------------

M32 = 0xFFFFFFFF


def philox4x32(ctr, key):
    """Philox4x32-10 (Salmon et al., SC'11) on 4 counter and 2 key words."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def bootstrap_indices(seed, r, n):
    """The documented draws of resample r (extension/metrics/bootstrap.h)."""
    key = (seed & M32, (seed >> 32) & M32)
    out = []
    for i in range(n):
        w = philox4x32((i >> 1, r, 0x6273, 0), key)
        h = 2 * (i & 1)
        out.append((((w[h] << 32) | w[h + 1]) * n) >> 64)
    return out


def paired_bootstrap(score_fn, rows_a, rows_b, n_samples, seed):
    """rows_*: per-sentence statistic lists; score_fn(summed list) -> score.
    Rows are put in canonical order (sorted by the pair of rows) first."""
    pairs = sorted(zip(rows_a, rows_b), key=lambda ab: list(ab[0]) + list(ab[1]))
    nrows = len(pairs)
    col = lambda rows: [sum(x) for x in zip(*rows)]  # noqa: E731
    score_a = score_fn(col([a for a, _ in pairs]))
    score_b = score_fn(col([b for _, b in pairs]))
    sa, sb = [], []
    for r in range(n_samples):
        idx = bootstrap_indices(seed, r, nrows)
        sa.append(score_fn(col([pairs[i][0] for i in idx])))
        sb.append(score_fn(col([pairs[i][1] for i in idx])))
    diffs = [abs(b - a) for a, b in zip(sa, sb)]
    mean_d = sum(diffs) / n_samples
    real = abs(score_b - score_a)
    p = (sum(1 for d in diffs if d - mean_d > real) + 1) / (n_samples + 1)

    def mean_ci(xs):
        xs = sorted(xs)
        lo = n_samples // 40
        return sum(xs) / n_samples, 0.5 * (xs[n_samples - lo - 1] - xs[lo])
    ma, ca = mean_ci(sa)
    mb, cb = mean_ci(sb)
    return dict(score_a=score_a, score_b=score_b, mean_a=ma, ci_a=ca, mean_b=mb, ci_b=cb, p_value=p)
