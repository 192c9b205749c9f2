"""Benchmark corpq's BPE core (via ctypes) against the pure-Python reference.

  /usr/bin/python3 test/bench/bench_bpe.py [merges] [python_merges]

Learning: 20k merges (default) on mono/en.txt (100k sentences; without it,
the English side of the parallel files) with the C core; the Python reference recounts every pair at each merge, so it runs only
python_merges merges (default 20) on the same corpus and the ratio is per
merge.  Applying: every English sentence of the parallel files segmented
with the learned codes; the Python reference gets a word-level memo cache like
subword-nmt's.  Single thread; ratios are measured in this process.
The corpora are the ones test/lib.sh finds (test/bench/corpora.py).
"""

import ctypes
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
sys.path.insert(0, HERE)
import bpe_reference as ref  # noqa: E402
import corpora  # noqa: E402

LIB = os.environ.get("CORPQ_CORE_LIB", os.path.join(HERE, "..", "libcorpqcore.so"))


def load_lib():
    lib = ctypes.CDLL(LIB)
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.cq_strmap_init.argtypes = [vp, sz]
    lib.cq_strmap_free.argtypes = [vp]
    lib.cq_count_words.argtypes = [vp, ctypes.c_char_p, sz]
    lib.cq_bpe_learner_new.argtypes = [vp, ctypes.c_int64, ctypes.POINTER(vp), vp]
    lib.cq_bpe_learner_step.argtypes = [vp, ctypes.POINTER(ctypes.c_bool), vp]
    lib.cq_bpe_learner_model.argtypes = [vp, vp, vp]
    lib.cq_bpe_learner_free.argtypes = [vp]
    lib.cq_bpe_write_codes.argtypes = [vp, ctypes.POINTER(sz)]
    lib.cq_bpe_write_codes.restype = vp
    lib.cq_bpe_cache_init.argtypes = [vp, sz]
    lib.cq_bpe_cache_free.argtypes = [vp]
    lib.cq_bpe_apply.argtypes = [vp, vp, ctypes.c_char_p, sz, ctypes.POINTER(sz)]
    lib.cq_bpe_apply.restype = vp
    lib.cq_bpe_free.argtypes = [vp]
    lib.cq_free.argtypes = [vp]
    return lib


def read_lines(path, column=None):
    with open(path, encoding="utf-8") as f:
        if column is None:
            return [line.rstrip("\n") for line in f]
        next(f)
        return [line.rstrip("\n").split("\t")[column] for line in f]


def main():
    directory, parallel = corpora.find()
    merges = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    py_merges = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    lib = load_lib()
    blob = lambda: ctypes.create_string_buffer(1024)  # noqa: E731

    mono_path = os.path.join(directory, "mono", "en.txt")
    if os.path.exists(mono_path):
        mono = read_lines(mono_path)
    else:
        mono_path = "the English side of " + ", ".join(map(os.path.basename, parallel))
        mono = [s for p in parallel for s in read_lines(p, column=2)]
    print("learn corpus: %s, %d sentences, %d words"
          % (mono_path, len(mono), sum(len(ref.words(s)) for s in mono)))

    # ---- learning, C ----
    t0 = time.perf_counter()
    counts = blob()
    lib.cq_strmap_init(counts, 1 << 16)
    for s in mono:
        b = s.encode("utf-8")
        lib.cq_count_words(counts, b, len(b))
    t1 = time.perf_counter()
    learner = ctypes.c_void_p()
    assert lib.cq_bpe_learner_new(counts, 2, ctypes.byref(learner), None) == 0
    t2 = time.perf_counter()
    n = 0
    first_k = None
    learned = ctypes.c_bool()
    while n < merges and lib.cq_bpe_learner_step(learner, ctypes.byref(learned), None) == 0 \
            and learned.value:
        n += 1
        if n == py_merges:
            first_k = time.perf_counter() - t2
    t3 = time.perf_counter()
    model = blob()
    lib.cq_bpe_learner_model(learner, model, None)
    size = ctypes.c_size_t()
    p = lib.cq_bpe_write_codes(model, ctypes.byref(size))
    c_codes = ctypes.string_at(p, size.value).decode("utf-8")
    lib.cq_free(p)
    lib.cq_bpe_learner_free(learner)
    lib.cq_strmap_free(counts)
    print("C learn: count words %.2fs, index %.2fs, %d merges %.2fs (%.0f merges/s); total %.2fs"
          % (t1 - t0, t2 - t1, n, t3 - t2, n / (t3 - t2), t3 - t0))

    # ---- learning, Python reference (a few merges) ----
    t0 = time.perf_counter()
    py_counts = ref.word_counts(mono)
    py_codes_head = ref.learn(py_counts, py_merges, 2)
    t1 = time.perf_counter()
    same = ref.codes_text(py_codes_head) == "".join(c_codes.splitlines(True)[:py_merges + 1])
    py_rate = py_merges / (t1 - t0)
    c_rate_k = py_merges / first_k if first_k else float("nan")
    print("Python learn: %d merges %.2fs (%.2f merges/s); first %d merges %s C's"
          % (py_merges, t1 - t0, py_rate, py_merges, "identical to" if same else "DIFFER from"))
    print("learn ratio: C %.0fx faster per merge over the whole run, %.0fx over the first %d merges"
          % ((n / (t3 - t2)) / py_rate, c_rate_k / py_rate, py_merges))

    # ---- applying ----
    sents = []
    for path in parallel:
        sents += read_lines(path, column=2)
    _, ranks = ref.parse_codes(c_codes)
    b = c_codes.encode("utf-8")
    model, cache = blob(), blob()
    lib.cq_bpe_parse_codes.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.cq_bpe_parse_codes(model, b, len(b), None)
    lib.cq_bpe_cache_init(cache, 100000)
    enc = [s.encode("utf-8") for s in sents]
    t0 = time.perf_counter()
    c_out = []
    for s in enc:
        p = lib.cq_bpe_apply(model, cache, s, len(s), ctypes.byref(size))
        c_out.append(ctypes.string_at(p, size.value))
        lib.cq_free(p)
    t1 = time.perf_counter()
    lib.cq_bpe_cache_free(cache)
    lib.cq_bpe_free(model)
    c_sps = len(sents) / (t1 - t0)

    memo = {}

    def seg(w):
        r = memo.get(w)
        if r is None:
            r = memo[w] = ref.segment_word(w, ranks)
        return r

    t0 = time.perf_counter()
    py_out = []
    for s in sents:
        out = []
        for w in ref.words(s):
            parts = seg(w)
            out.extend(x + "@@" for x in parts[:-1])
            out.append(parts[-1])
        py_out.append(" ".join(out))
    t1 = time.perf_counter()
    py_sps = len(sents) / (t1 - t0)
    differ = sum(a.decode("utf-8") != b for a, b in zip(c_out, py_out))
    print("apply %d sentences (en side of en-es), %d merges: C %.0f sentences/s, Python (memo cache) %.0f sentences/s, ratio %.1fx; %d outputs differ"
          % (len(sents), n, c_sps, py_sps, c_sps / py_sps, differ))


if __name__ == "__main__":
    main()
