"""corpq's C metrics (extension/metrics, via test/libcorpqcore.so) against
  1. sacreBLEU 2.6.0's own test vectors (sacrebleu_vectors.json);
  2. the libraries sacreBLEU calls, code point by code point: the `regex`
     module's \\p{P} \\p{S} \\p{N}, str.isspace, str.lower (final sigma too);
  3. the plain-Python reference metrics_reference.py: tokenizers on random
     strings built to hit every rule, then BLEU and chrF statistics (exactly)
     and scores on real lines of the shared corpora with known edits (word
     drops, swaps, substitutions, duplications, case and punctuation changes),
     for every tokenizer, case, smoothing and chrF variant;
  4. the reference paired bootstrap, drawing with its own Philox.
"""
import ctypes
import importlib.metadata
import json
import os
import random
import sys
import unicodedata

import regex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics_reference as ref  # noqa: E402

lib = ctypes.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))
HERE = os.path.dirname(os.path.abspath(__file__))
c_size, vp, i64, dbl = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double

TOKENIZERS = ["13a", "intl", "char", "none"]
SMOOTHS = ["none", "floor", "add-k", "exp"]


class BleuOptions(ctypes.Structure):
    _fields_ = [("tokenize", ctypes.c_int), ("lowercase", ctypes.c_bool), ("smooth", ctypes.c_int),
                ("smooth_value", dbl), ("effective_order", ctypes.c_bool), ("max_order", ctypes.c_int)]


class BleuStats(ctypes.Structure):
    _fields_ = [("hyp_len", i64), ("ref_len", i64), ("correct", i64 * 8), ("total", i64 * 8)]


class ChrfOptions(ctypes.Structure):
    _fields_ = [("char_order", ctypes.c_int), ("word_order", ctypes.c_int), ("beta", dbl),
                ("lowercase", ctypes.c_bool), ("whitespace", ctypes.c_bool), ("eps_smoothing", ctypes.c_bool)]


class BootstrapResult(ctypes.Structure):
    _fields_ = [("mean_a", dbl), ("ci_a", dbl), ("mean_b", dbl), ("ci_b", dbl), ("p_value", dbl)]


lib.cq_uc_dump.argtypes = [ctypes.c_uint32, ctypes.c_uint32, vp, vp]
lib.cq_bleu_tokenized.argtypes = [vp, ctypes.c_char_p, c_size, vp, ctypes.POINTER(vp), ctypes.POINTER(c_size), vp]
lib.cq_bleu_sentence_stats.argtypes = [vp, ctypes.c_char_p, c_size, vp, vp, ctypes.c_int, vp, vp, vp]
lib.cq_bleu_score.argtypes = [vp, vp, vp, vp]
lib.cq_bleu_score.restype = dbl
lib.cq_chrf_sentence_stats.argtypes = [vp, ctypes.c_char_p, c_size, vp, vp, ctypes.c_int, vp, vp, vp]
lib.cq_chrf_score.argtypes = [vp, vp]
lib.cq_chrf_score.restype = dbl
lib.cq_bleu_signature.argtypes = [vp, ctypes.c_int, ctypes.c_char_p, c_size]
lib.cq_chrf_signature.argtypes = [vp, ctypes.c_int, ctypes.c_char_p, c_size]
lib.cq_bootstrap_paired.argtypes = [vp, c_size, ctypes.c_int, ctypes.c_int, ctypes.c_uint64, vp, vp,
                                    vp, vp, ctypes.POINTER(dbl), ctypes.POINTER(dbl), vp, vp]
lib.cq_bootstrap_index.argtypes = [ctypes.c_uint64, ctypes.c_uint32, c_size, c_size]
lib.cq_bootstrap_index.restype = c_size
lib.cq_metrics_work_free.argtypes = [vp]
lib.cq_free.argtypes = [vp]

WORK = ctypes.create_string_buffer(1024)   # cq_metrics_work, zeroed (unit test checks the size)
failures = 0


def fail(msg):
    global failures
    failures += 1
    if failures <= 30:
        print("FAIL", msg)


def bleu_opts(o):
    c = BleuOptions()
    c.tokenize = TOKENIZERS.index(o["tokenize"])
    c.lowercase = o["lowercase"]
    c.smooth = SMOOTHS.index(o["smooth"])
    v = o["smooth_value"]
    c.smooth_value = ref.SMOOTH_DEFAULT_VALUE.get(o["smooth"], 0.0) if v is None else float(v)
    c.effective_order = o["effective_order"]
    c.max_order = o["max_order"]
    return c


def chrf_opts(o):
    c = ChrfOptions()
    for k in ("char_order", "word_order", "lowercase", "whitespace", "eps_smoothing"):
        setattr(c, k, o[k])
    c.beta = float(o["beta"])
    return c


def texts(strings):
    bs = [s.encode("utf-8") for s in strings]
    return (ctypes.c_char_p * len(bs))(*bs), (c_size * len(bs))(*[len(b) for b in bs])


def c_bleu_stats(co, hyp, refs):
    st = BleuStats()
    h = hyp.encode("utf-8")
    rp, rl = texts(refs)
    assert lib.cq_bleu_sentence_stats(ctypes.byref(co), h, len(h), rp, rl, len(refs), WORK, ctypes.byref(st), None) == 0
    mo = co.max_order
    return dict(hyp_len=st.hyp_len, ref_len=st.ref_len, correct=list(st.correct[:mo]), total=list(st.total[:mo]))


def c_bleu_score(co, s):
    st = BleuStats()
    st.hyp_len, st.ref_len = s["hyp_len"], s["ref_len"]
    for i, (c, t) in enumerate(zip(s["correct"], s["total"])):
        st.correct[i], st.total[i] = c, t
    return lib.cq_bleu_score(ctypes.byref(co), ctypes.byref(st), None, None)


def c_corpus_bleu(co, hyps, ref_streams):
    stats = [c_bleu_stats(co, h, [rs[i] for rs in ref_streams]) for i, h in enumerate(hyps)]
    return c_bleu_score(co, ref.bleu_sum(stats))


def c_tokenized(co, s):
    n = c_size()
    b = s.encode("utf-8")
    p = vp()
    assert lib.cq_bleu_tokenized(ctypes.byref(co), b, len(b), WORK, ctypes.byref(p), ctypes.byref(n), None) == 0
    out = ctypes.string_at(p.value, n.value).decode("utf-8")
    lib.cq_free(p)
    return out


def c_chrf_stats(co, hyp, refs):
    n = 3 * (co.char_order + co.word_order)
    st = (i64 * n)()
    h = hyp.encode("utf-8")
    rp, rl = texts(refs)
    assert lib.cq_chrf_sentence_stats(ctypes.byref(co), h, len(h), rp, rl, len(refs), WORK, st, None) == 0
    return list(st)


def c_chrf_score(co, stats):
    return lib.cq_chrf_score(ctypes.byref(co), (i64 * len(stats))(*stats))


def close(a, b, rel=1e-12):
    """Scores: the C core and the reference do the same double operations,
    bar order within one product or sum (a few ulps), so 1e-12 relative."""
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


# ---- 1. sacreBLEU's vectors ------------------------------------------------------

def vector_options(kind, opts):
    kw = dict(opts)
    if kind == "bleu":
        return ref.bleu_options(**kw)
    return ref.chrf_options(**kw)


def check_vectors():
    with open(os.path.join(HERE, "sacrebleu_vectors.json"), encoding="utf-8") as f:
        vec = json.load(f)
    n = 0
    for case in vec["bleu_corpus"]:
        o = vector_options("bleu", case["options"])
        got = c_corpus_bleu(bleu_opts(o), case["hyps"], case["refs"])
        py = ref.corpus_bleu(o, case["hyps"], case["refs"])
        if "score_2f" in case:
            ok = f"{got:.2f}" == case["score_2f"]
        else:
            ok = abs(got * case.get("scale", 1) - case["score"]) <= case["tol"]
        if not ok or not close(got, py):
            fail(f"{case['from']}: corpq {got!r}, reference {py!r}, sacreBLEU {case.get('score', case.get('score_2f'))}")
        n += 1
    for case in vec["bleu_statistics"]:
        o = vector_options("bleu", case["options"])
        s = ref.bleu_sum([c_bleu_stats(bleu_opts(o), h, [case["refs"][0][i]]) for i, h in enumerate(case["hyps"])])
        if s["correct"] != case["correct"] or s["total"] != case["total"]:
            fail(f"{case['from']}: {s}")
        n += 1
    for case in vec["bleu_from_statistics"]:
        o = vector_options("bleu", case["options"])
        s = {k: case[k] for k in ("hyp_len", "ref_len", "correct", "total")}
        got = c_bleu_score(bleu_opts(o), s)
        if abs(got * case.get("scale", 1) - case["score"]) > case["tol"]:
            fail(f"{case['from']}: {got!r} vs {case['score']}")
        n += 1
    for case in vec["sentence_bleu"]:
        o = vector_options("bleu", dict(case["options"], effective_order=True))
        co = bleu_opts(o)
        got = c_bleu_score(co, c_bleu_stats(co, case["hyp"], [case["ref"]]))
        if abs(got - case["score"]) > case["tol"]:
            fail(f"{case['from']}: {got!r} vs {case['score']}")
        n += 1
    for case in vec["chrf_corpus"]:
        o = vector_options("chrf", case["options"])
        co = chrf_opts(o)
        total = None
        for h, r in zip(case["hyps"], case["refs"]):
            s = c_chrf_stats(co, h, [r])
            total = s if total is None else [a + b for a, b in zip(total, s)]
        got = c_chrf_score(co, total)
        py = ref.corpus_chrf(o, case["hyps"], case["refs"])
        if abs(got - case["score"]) > case["tol"] or not close(got, py):
            fail(f"{case['from']}: corpq {got!r}, reference {py!r}, sacreBLEU {case['score']}")
        n += 1
    for case in vec["sentence_chrf"]:
        o = vector_options("chrf", case["options"])
        co = chrf_opts(o)
        got = c_chrf_score(co, c_chrf_stats(co, case["hyp"], [case["ref"]]))
        if abs(got - case["score"]) > case["tol"]:
            fail(f"{case['from']}: {got!r} vs {case['score']}")
        n += 1
    print(f"sacreBLEU vectors: {n} cases")


# ---- 2. character data, every code point ------------------------------------------

def check_unicode():
    n = 0x110000
    bits = (ctypes.c_uint8 * n)()
    lower = (ctypes.c_uint32 * (2 * n))()
    lib.cq_uc_dump(0, n, bits, lower)
    pats = [(1, regex.compile(r"\p{P}")), (2, regex.compile(r"\p{S}")), (4, regex.compile(r"\p{N}"))]
    bad = 0
    for cp in range(n):
        ch = chr(cp)
        want = sum(bit for bit, p in pats if p.match(ch)) | (8 if ch.isspace() else 0)
        if cp != 0x3A3:
            low = ch.lower()
            got_low = chr(lower[2 * cp]) + (chr(lower[2 * cp + 1]) if lower[2 * cp + 1] else "")
            if got_low != low:
                bad += 1
                fail(f"lower U+{cp:04X}: {got_low!r} vs {low!r}")
        if bits[cp] & 15 != want:
            bad += 1
            fail(f"class U+{cp:04X}: {bits[cp] & 15} vs {want}")
    print(f"unicode: {n} code points, {bad} differences (regex {importlib.metadata.version('regex')}, "
          f"unicodedata {unicodedata.unidata_version})")

    # str.lower() on strings, final sigma in every context the rule looks at
    rng = random.Random(11)
    pieces = ["Σ", "σ", "ς", "Α", "ΒΓ", "a", "Z", " ", "'", ".", ":", "\u0301", "\u00ad", "\u02b0", "İ",
              "1", "-", "\u2019", "ǅ", "\u0345", "x\u0307", "\t"]
    co = bleu_opts(ref.bleu_options(tokenize="none", lowercase=True))
    for _ in range(3000):
        s = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        want = " ".join(s.lower().rstrip().split())
        got = c_tokenized(co, s)
        if got != want:
            fail(f"lowercase {s!r}: {got!r} vs {want!r}")


# ---- 3a. tokenizers on strings made to hit every rule -----------------------------

def random_line(rng):
    atoms = ["word", "Wörd", "3", "1,000", "3.14", "2010", ".", ",", "-", "--", "'", "\"", "&quot;", "&amp;",
             "&lt;", "&gt;", "&amp;quot;", "&", "<skipped>", "-\n", "\n", "(", ")", "[", "]", "{", "}", "$",
             "%", "@", "#", "/", "\\", "^", "_", "`", "~", "|", "+", "=", "<", ">", "?", "!", ";", ":", "*",
             "«", "»", "¿", "¡", "€", "½", "²", "٣", "。", "、", "日本", "…", "—", "·", "©", "™", "😀",
             " ", "  ", "\t", "\u00a0", "\u3000", "\u2028", "\x1c", "é", "Σ", "İ", "\u0301"]
    return "".join(rng.choice(atoms) for _ in range(rng.randint(0, 25)))


def check_tokenizers(lines):
    rng = random.Random(5)
    cases = [random_line(rng) for _ in range(4000)] + lines
    n = 0
    for tok in TOKENIZERS:
        for lc in (False, True):
            o = ref.bleu_options(tokenize=tok, lowercase=lc)
            co = bleu_opts(o)
            for s in cases:
                want = " ".join(ref.bleu_tokens(o, s))
                got = c_tokenized(co, s)
                n += 1
                if got != want:
                    fail(f"tokenize {tok} lc={lc} {s!r}: {got!r} vs {want!r}")
    print(f"tokenizers: {n} strings")


def check_random_pairs():
    """Statistics on random strings: every tokenizer for BLEU; chrF with 6
    character orders (windows packed in 128 bits) and 9 (beyond 2^14 code
    points they are compared item by item, the core's other path)."""
    rng = random.Random(9)
    pairs = [(random_line(rng), random_line(rng)) for _ in range(800)]
    n = 0
    for tok in TOKENIZERS:
        o = ref.bleu_options(tokenize=tok)
        co = bleu_opts(o)
        for h, r in pairs:
            n += 1
            if c_bleu_stats(co, h, [r]) != ref.bleu_sentence_stats(o, h, [r]):
                fail(f"bleu stats {tok} {h!r} | {r!r}")
    for v in ({}, {"char_order": 9, "word_order": 3}, {"whitespace": True, "lowercase": True}):
        o = ref.chrf_options(**v)
        co = chrf_opts(o)
        for h, r in pairs:
            n += 1
            if c_chrf_stats(co, h, [r]) != ref.chrf_sentence_stats(o, h, [r]):
                fail(f"chrf stats {v} {h!r} | {r!r}")
    print(f"random pairs: {n} statistic comparisons")


# ---- 3b. real lines with known edits -------------------------------------------------

def read_lines():
    """A hundred target sentences spread over each parallel file of the
    corpora test/lib.sh finds (the shared corpora: bible, l10n, ddtp)."""
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import corpora
    return corpora.sample(100, (3,))


def edit(rng, line, vocab):
    """A hypothesis made from the reference by known edits."""
    w = line.split()
    kind = rng.choice(["drop", "swap", "subst", "dup", "case", "punct", "mix"])
    for _ in range(3 if kind == "mix" else 1):
        op = rng.choice(["drop", "swap", "subst", "dup", "case", "punct"]) if kind == "mix" else kind
        if not w:
            break
        i = rng.randrange(len(w))
        if op == "drop":
            del w[i]
        elif op == "swap" and len(w) > 1:
            j = min(i + 1, len(w) - 1)
            w[i], w[j] = w[j], w[i]
            if i == j:
                w[0], w[-1] = w[-1], w[0]
        elif op == "subst":
            w[i] = rng.choice(vocab)
        elif op == "dup":
            w.insert(i, w[i])
        elif op == "case":
            w[i] = w[i].upper() if rng.random() < 0.5 else w[i].capitalize()
        elif op == "punct":
            w[i] += rng.choice([",", ".", ";", "!", "?", "»", ")"])
    return " ".join(w)


def check_real(lines):
    rng = random.Random(20261122)
    vocab = sorted({t for l in lines for t in l.split()})
    pairs = [(edit(rng, l, vocab), l) for l in lines]
    pairs += [(l, l) for l in lines[:20]]                    # identical
    pairs += [(lines[i], lines[i + 1]) for i in range(20)]  # unrelated
    n = 0
    # BLEU: every tokenizer and case, sentence statistics exactly, corpus score per smoothing
    for tok in TOKENIZERS:
        for lc in (False, True):
            o = ref.bleu_options(tokenize=tok, lowercase=lc)
            co = bleu_opts(o)
            all_c, all_p = [], []
            for h, r in pairs:
                c, p = c_bleu_stats(co, h, [r]), ref.bleu_sentence_stats(o, h, [r])
                n += 1
                if c != p:
                    fail(f"bleu stats {tok} lc={lc} {h!r} | {r!r}: {c} vs {p}")
                all_c.append(c)
                all_p.append(p)
            for sm in SMOOTHS:
                for val in (None, 0.5):
                    if val is not None and sm not in ("floor", "add-k"):
                        continue
                    for eff in (False, True):
                        o2 = dict(o, smooth=sm, smooth_value=val, effective_order=eff)
                        co2 = bleu_opts(o2)
                        got = c_bleu_score(co2, ref.bleu_sum(all_c))
                        want = ref.bleu_score(o2, ref.bleu_sum(all_p))
                        if not close(got, want):
                            fail(f"corpus bleu {o2}: {got!r} vs {want!r}")
                        for c in all_c[:60]:                     # sentence level
                            g, w = c_bleu_score(co2, c), ref.bleu_score(o2, c)
                            if not close(g, w):
                                fail(f"sentence bleu {o2} {c}: {g!r} vs {w!r}")
    # chrF and chrF++ variants
    variants = [{}, {"word_order": 2}, {"lowercase": True}, {"whitespace": True}, {"eps_smoothing": True},
                {"beta": 1, "char_order": 4}, {"word_order": 2, "lowercase": True, "eps_smoothing": True}]
    for v in variants:
        o = ref.chrf_options(**v)
        co = chrf_opts(o)
        tc, tp = None, None
        for h, r in pairs:
            c, p = c_chrf_stats(co, h, [r]), ref.chrf_sentence_stats(o, h, [r])
            n += 1
            if c != p:
                fail(f"chrf stats {v} {h!r} | {r!r}: {c} vs {p}")
            if not close(c_chrf_score(co, c), ref.chrf_score(o, p)):
                fail(f"sentence chrf {v} {h!r}")
            tc = c if tc is None else [a + b for a, b in zip(tc, c)]
            tp = p if tp is None else [a + b for a, b in zip(tp, p)]
        if not close(c_chrf_score(co, tc), ref.chrf_score(o, tp)):
            fail(f"corpus chrf {v}: {c_chrf_score(co, tc)!r} vs {ref.chrf_score(o, tp)!r}")
    # two references (the core supports several; SQL passes one)
    o = ref.bleu_options()
    co = bleu_opts(o)
    for i in range(0, len(pairs) - 1, 7):
        h, r1 = pairs[i]
        r2 = pairs[i + 1][1]
        if c_bleu_stats(co, h, [r1, r2]) != ref.bleu_sentence_stats(o, h, [r1, r2]):
            fail(f"bleu two refs {h!r}")
        oc = ref.chrf_options(word_order=2)
        if c_chrf_stats(chrf_opts(oc), h, [r1, r2]) != ref.chrf_sentence_stats(oc, h, [r1, r2]):
            fail(f"chrf two refs {h!r}")
        n += 2
    print(f"real lines: {len(pairs)} pairs, {n} statistic comparisons")
    return pairs


# ---- 4. paired bootstrap ------------------------------------------------------------------

def check_bootstrap(pairs):
    rng = random.Random(3)
    o = ref.bleu_options()
    co = bleu_opts(o)
    sys_a = [(h, r) for h, r in pairs[:150]]
    sys_b = [(edit(rng, r, r.split() or ["x"]), r) for _, r in sys_a]

    def flat(s):
        return [s["hyp_len"], s["ref_len"]] + s["correct"] + s["total"]
    rows_a = [flat(ref.bleu_sentence_stats(o, h, [r])) for h, r in sys_a]
    rows_b = [flat(ref.bleu_sentence_stats(o, h, [r])) for h, r in sys_b]

    def score(row):
        return ref.bleu_score(o, dict(hyp_len=row[0], ref_len=row[1], correct=row[2:6], total=row[6:10]))
    for seed in (12345, 2**40 + 7):
        want = ref.paired_bootstrap(score, rows_a, rows_b, 200, seed)
        flat_rows = [v for a, b in zip(rows_a, rows_b) for v in a + b]
        rows = (ctypes.c_int32 * len(flat_rows))(*flat_rows)
        sa, sb, res = dbl(), dbl(), BootstrapResult()
        fn = ctypes.cast(lib.cq_bleu_score_row, vp)
        assert lib.cq_bootstrap_paired(rows, len(rows_a), 20, 200, seed, fn, ctypes.byref(co), None, None,
                                       ctypes.byref(sa), ctypes.byref(sb), ctypes.byref(res), None) == 0
        got = dict(score_a=sa.value, score_b=sb.value, mean_a=res.mean_a, ci_a=res.ci_a,
                   mean_b=res.mean_b, ci_b=res.ci_b, p_value=res.p_value)
        for k in want:
            if not close(got[k], want[k], 1e-10):
                fail(f"bootstrap seed {seed} {k}: {got[k]!r} vs {want[k]!r}")
        print(f"bootstrap seed {seed}: A {got['score_a']:.2f} (mean {got['mean_a']:.2f} +- {got['ci_a']:.2f}), "
              f"B {got['score_b']:.2f} (mean {got['mean_b']:.2f} +- {got['ci_b']:.2f}), p {got['p_value']:.4f}")
    idx = ref.bootstrap_indices(77, 5, 1000)
    if [lib.cq_bootstrap_index(77, 5, i, 1000) for i in range(1000)] != idx:
        fail("bootstrap indices")


def check_signatures():
    buf = ctypes.create_string_buffer(256)
    co = bleu_opts(ref.bleu_options(smooth="add-k", smooth_value=None, lowercase=True))
    lib.cq_bleu_signature(ctypes.byref(co), 1, buf, 256)
    if buf.value != b"nrefs:1|case:lc|eff:no|tok:13a|smooth:add-k[1.00]|version:2.6.0":
        fail(f"signature {buf.value}")


def main():
    check_vectors()
    check_unicode()
    lines = read_lines()
    if not lines:
        print("SKIP real-line checks: no corpora (test/lib.sh says why)")
    check_tokenizers(lines)
    check_random_pairs()
    pairs = check_real(lines) if lines else []
    check_bootstrap(pairs if pairs else [(random_line(random.Random(i)), random_line(random.Random(i + 1)))
                                         for i in range(150)])
    check_signatures()
    lib.cq_metrics_work_free(WORK)
    print(f"metrics refcheck: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
