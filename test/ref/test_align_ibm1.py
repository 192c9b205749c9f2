"""IBM Model 1 of the core against NLTK's IBMModel1, after every iteration.

Compares every t(f|e) entry (and the set of entries) and the Viterbi
alignments, on NLTK's toy example and on generated corpora with repeated
words; the core runs with nltk_repeats (NLTK's per-pair word-keyed Z).
"""
import ctypes as C
import sys
import warnings

from nltk.translate import AlignedSent, IBMModel1

import test_align_common as A

TOL = 1e-6


def nltk_model(pairs, iters):
    bitext = [AlignedSent(list(t), list(s)) for s, t in pairs]  # words=tgt, mots=src
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = IBMModel1(bitext, iters)
    return model, bitext


def compare(name, pairs, max_iter=5):
    corpus = A.Corpus(pairs)
    err = A.Error()
    m = A.ibm1_create(C.byref(corpus.bt), True, 1 << 30, C.byref(err))
    assert m, err.msg
    worst, worst_rel, bad_align, n_entries = 0.0, 0.0, 0, 0
    try:
        for it in range(1, max_iter + 1):
            assert A.ibm1_iterate(m, None, C.byref(err)) == 0, err.msg
            ref, bitext = nltk_model(pairs, it)
            ours = A.table_dict(A.ibm1_table(m), corpus.sw, corpus.tw)
            # NLTK's table: translation_table[t][s]; co-occurring keys only
            theirs = {(s, t): p for t, row in ref.translation_table.items()
                      for s, p in row.items()}
            if set(theirs) != set(ours):
                print(f"{name}: entry sets differ after iteration {it}")
                return False
            for key, p in theirs.items():
                worst = max(worst, abs(p - ours[key]))
                worst_rel = max(worst_rel, abs(p - ours[key]) / p)
            n_entries = len(ours)
            for k, sent in enumerate(bitext):
                out = (C.c_int32 * len(sent.words))()
                A.ibm1_viterbi(m, k, out)
                mine = sorted((j, None if out[j] < 0 else out[j]) for j in range(len(sent.words)))
                if mine != sorted(sent.alignment):
                    bad_align += 1
    finally:
        A.ibm1_free(m)
    print(f"{name}: {len(pairs)} pairs, {n_entries} t(f|e) entries, iterations 1..{max_iter}: "
          f"max |t_core - t_nltk| = {worst:.3g} (relative {worst_rel:.3g}), "
          f"Viterbi mismatches = {bad_align}")
    # relative too: probabilities at NLTK's 1e-12 floor are invisible to 1e-6
    return worst <= TOL and worst_rel <= 1e-9 and bad_align == 0


def textbook_model1(pairs, iters):
    """Model 1 where every target token counts (no word-keyed Z), floor 1e-12."""
    tvocab = {w for _, t in pairs for w in t}
    t = {}
    for s, tt in pairs:
        for f in tt:
            for e in [None] + s:
                t[(e, f)] = 1.0 / len(tvocab)
    for _ in range(iters):
        cnt, tot = {k: 0.0 for k in t}, {}
        for s, tt in pairs:
            for f in tt:
                z = sum(t[(e, f)] for e in [None] + s)
                for e in [None] + s:
                    cnt[(e, f)] += t[(e, f)] / z
                    tot[e] = tot.get(e, 0.0) + t[(e, f)] / z
        t = {k: max(c / tot[k[0]], 1e-12) for k, c in cnt.items()}
    return t


def compare_textbook(pairs, iters=5):
    corpus = A.Corpus(pairs)
    err = A.Error()
    m = A.ibm1_create(C.byref(corpus.bt), False, 1 << 30, C.byref(err))
    worst = 0.0
    for it in range(1, iters + 1):
        A.ibm1_iterate(m, None, C.byref(err))
        ours = A.table_dict(A.ibm1_table(m), corpus.sw, corpus.tw)
        ref = textbook_model1(pairs, it)
        assert set(ref) == set(ours)
        worst = max(worst, max(abs(ref[k] - ours[k]) for k in ref))
    A.ibm1_free(m)
    print(f"textbook Model 1 (every repeated token counts), {len(pairs)} pairs, "
          f"iterations 1..{iters}: max |t_core - t_python| = {worst:.3g}")
    return worst <= 1e-12


def main():
    toy = [(["the", "house", "is", "small"], ["klein", "ist", "das", "haus"]),
           (["the", "house", "is", "big"], ["das", "haus", "ist", "ja", "groß"]),
           (["the", "book", "is", "small"], ["das", "buch", "ist", "ja", "klein"]),
           (["the", "house"], ["das", "haus"]),
           (["the", "book"], ["das", "buch"]),
           (["a", "book"], ["ein", "buch"])]
    ok = compare("nltk toy example", toy)
    ok &= compare("generated corpus A", A.random_corpus(1, 60))
    ok &= compare("generated corpus B (larger vocabulary)", A.random_corpus(2, 150, n_words=40, max_len=10), 4)
    # long training on a corpus with unambiguous words drives t(f|e) below
    # NLTK's 1e-12 floor, which must then hold in the core too
    floor = [(["a"], ["x"])] * 6 + [(["b"], ["y"])] * 6 + [(["a", "b"], ["x", "y"]),
                                                          (["c", "a"], ["z", "x", "x"])]
    ok &= compare("MIN_PROB floor corpus", floor, 25)
    ok &= compare_textbook(A.random_corpus(3, 80))
    # sanity: the toy numbers of NLTK's own doctest
    corpus = A.Corpus(toy)
    err = A.Error()
    m = A.ibm1_create(C.byref(corpus.bt), True, 0, C.byref(err))  # search path, no index
    for _ in range(5):
        A.ibm1_iterate(m, None, C.byref(err))
    d = A.table_dict(A.ibm1_table(m), corpus.sw, corpus.tw)
    A.ibm1_free(m)
    doc = abs(d[("book", "buch")] - 0.889) < 5e-4 and abs(d[(None, "buch")] - 0.113) < 5e-4
    print(f"NLTK doctest values without link index: t(buch|book) = {d[('book', 'buch')]:.4f} (0.889), "
          f"t(buch|NULL) = {d[(None, 'buch')]:.4f} (0.113)")
    sys.exit(0 if ok and doc else 1)


if __name__ == "__main__":
    main()
