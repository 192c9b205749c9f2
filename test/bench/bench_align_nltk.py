"""IBM Model 1 of the core against NLTK's IBMModel1 on a real subset of the
en-es corpus (the first parallel file test/lib.sh finds: the Bible in the
shared corpora): training throughput of both (5
iterations plus the Viterbi alignment of every pair, as NLTK's constructor
does), and the largest t(f|e) difference on real data.
"""
import ctypes as C
import os
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CORPQ_CORE_LIB", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "libcorpqcore.so"))
import corpora  # noqa: E402
import test_align_common as A  # noqa: E402
from nltk.translate import AlignedSent, IBMModel1  # noqa: E402

N = int(os.environ.get("ALIGN_NLTK_PAIRS", "2000"))
TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def load(n):
    pairs = []
    with open(corpora.find()[1][0], encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            s, t = TOKEN.findall(parts[2].lower()), TOKEN.findall(parts[3].lower())
            if s and t:
                pairs.append((s, t))
            if len(pairs) == n:
                break
    return pairs


def main():
    pairs = load(N)
    t0 = time.perf_counter()
    bitext = [AlignedSent(t, s) for s, t in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = IBMModel1(bitext, 5)
    t_nltk = time.perf_counter() - t0

    corpus = A.Corpus(pairs)
    err = A.Error()
    t0 = time.perf_counter()
    m = A.ibm1_create(C.byref(corpus.bt), True, 1 << 30, C.byref(err))
    for _ in range(5):
        A.ibm1_iterate(m, None, C.byref(err))
    t_train = time.perf_counter() - t0
    out = (C.c_int32 * 4096)()
    for k in range(len(pairs)):
        A.ibm1_viterbi(m, k, out)
    t_core = time.perf_counter() - t0
    ours = A.table_dict(A.ibm1_table(m), corpus.sw, corpus.tw)
    A.ibm1_free(m)
    worst = max(abs(p - ours[(s, t)]) for t, row in ref.translation_table.items() for s, p in row.items())
    print(f"IBM Model 1, {len(pairs)} bible pairs, 5 iterations + Viterbi: NLTK {t_nltk:.2f} s "
          f"({len(pairs) / t_nltk:.0f} pairs/s), core via ctypes {t_core:.3f} s "
          f"({len(pairs) / t_core:.0f} pairs/s; of which table + EM {t_train:.3f} s, the rest is "
          f"one ctypes call per pair): core is {t_nltk / t_core:.0f}x faster; "
          f"max |t_core - t_nltk| = {worst:.3g} over {len(ours)} entries")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
