"""The metrics core (via ctypes) against the plain-Python reference
(test/ref/metrics_reference.py) on the same real pairs, same process, one
thread: sentence statistics per second for BLEU (13a, intl) and chrF / chrF++.
Called by bench_metrics.sh; usage: metrics_core.py N_PAIRS (the corpora
test/lib.sh finds).

The hypotheses are the Spanish references with known edits (a word dropped,
two swapped, a word substituted, one duplicated, case and punctuation
changes), as in test/ref/test_metrics.py.  The core's time includes one
ctypes call per sentence pair (~1-2 us)."""
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
sys.path.insert(0, HERE)
os.environ.setdefault("CORPQ_CORE_LIB", os.path.join(HERE, "..", "libcorpqcore.so"))
import corpora  # noqa: E402
import metrics_reference as ref  # noqa: E402
import test_metrics as tm  # noqa: E402


def load(n):
    refs = []
    for path in corpora.find()[1]:
        with open(path, encoding="utf-8") as f:
            next(f)
            refs += [line.rstrip("\n").split("\t")[3] for line in f]
    rng = random.Random(1)
    rng.shuffle(refs)
    refs = refs[:n]
    vocab = sorted({t for r in refs[:2000] for t in r.split()})
    return [(tm.edit(rng, r, vocab), r) for r in refs]


def best_of(fn, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    pairs = load(int(sys.argv[1]))
    # the reference is slow: time it on a prefix
    n_ref = min(len(pairs), 2000)
    print(f"{len(pairs)} pairs for the core, the first {n_ref} for the reference; best of 3")
    print(f"{'metric':<14} {'core pairs/s':>14} {'reference pairs/s':>18} {'ratio':>7}  same statistics")
    cases = [
        ("BLEU 13a", ref.bleu_options(), "bleu"),
        ("BLEU intl", ref.bleu_options(tokenize="intl"), "bleu"),
        ("chrF", ref.chrf_options(), "chrf"),
        ("chrF++", ref.chrf_options(word_order=2), "chrf"),
    ]
    for label, o, kind in cases:
        if kind == "bleu":
            co = tm.bleu_opts(o)
            core = lambda ps: [tm.c_bleu_stats(co, h, [r]) for h, r in ps]  # noqa: E731
            py = lambda ps: [ref.bleu_sentence_stats(o, h, [r]) for h, r in ps]  # noqa: E731
        else:
            co = tm.chrf_opts(o)
            core = lambda ps: [tm.c_chrf_stats(co, h, [r]) for h, r in ps]  # noqa: E731
            py = lambda ps: [ref.chrf_sentence_stats(o, h, [r]) for h, r in ps]  # noqa: E731
        t_core = best_of(lambda: core(pairs))
        t_py = best_of(lambda: py(pairs[:n_ref]))
        same = core(pairs[:n_ref]) == py(pairs[:n_ref])
        c_rate, p_rate = len(pairs) / t_core, n_ref / t_py
        print(f"{label:<14} {c_rate:>14,.0f} {p_rate:>18,.0f} {c_rate / p_rate:>7.1f}  {same}")


if __name__ == "__main__":
    main()
