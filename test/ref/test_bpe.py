"""Compare corpq's C BPE (learn, apply, codes I/O) with bpe_reference.py.

Generates a multilingual corpus (Latin with accents, Greek, Cyrillic, CJK,
digits and punctuation) from a fixed seed, learns codes with both, and
segments held-out sentences with both.  Both must agree exactly.
"""

import ctypes
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference as ref  # noqa: E402

lib = ctypes.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))
c_size = ctypes.c_size_t
vp = ctypes.c_void_p

lib.cq_strmap_init.argtypes = [vp, c_size]
lib.cq_strmap_free.argtypes = [vp]
lib.cq_count_words.argtypes = [vp, ctypes.c_char_p, c_size]
lib.cq_bpe_learn.argtypes = [vp, ctypes.c_int32, ctypes.c_int64, vp, vp, vp, vp]
lib.cq_bpe_write_codes.argtypes = [vp, ctypes.POINTER(c_size)]
lib.cq_bpe_write_codes.restype = vp
lib.cq_bpe_parse_codes.argtypes = [vp, ctypes.c_char_p, c_size, vp]
lib.cq_bpe_free.argtypes = [vp]
lib.cq_bpe_cache_init.argtypes = [vp, c_size]
lib.cq_bpe_cache_free.argtypes = [vp]
lib.cq_bpe_apply.argtypes = [vp, vp, ctypes.c_char_p, c_size, ctypes.POINTER(c_size)]
lib.cq_bpe_apply.restype = vp
lib.cq_free.argtypes = [vp]

# opaque storage comfortably larger than the structs (cq_strmap 88 bytes,
# cq_bpe ~160, cq_bpe_cache ~120, cq_error 260)
def blob():
    return ctypes.create_string_buffer(1024)


def take_string(ptr, n):
    s = ctypes.string_at(ptr, n.value).decode("utf-8")
    lib.cq_free(ptr)
    return s


ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz",
    "aábcdeéfghiíjlmnñoóprstuúvyz",
    "αβγδεζηθικλμνξοπρστυφχψω",
    "абвгдежзиклмнопрстуфхцчшщыэюя",
    "日本語中文字学生先生大小山川",
    "0123456789",
]


def make_corpus(rng, n_lines):
    # a Zipf-ish lexicon per alphabet so merges have real structure
    lexicon = []
    for alpha in ALPHABETS:
        for _ in range(120):
            n = rng.randint(1, 9)
            lexicon.append("".join(rng.choice(alpha) for _ in range(n)))
    weights = [1.0 / (i + 1) for i in range(len(lexicon))]
    lines = []
    for _ in range(n_lines):
        n = rng.randint(1, 14)
        toks = rng.choices(lexicon, weights, k=n)
        if rng.random() < 0.3:
            toks.append(rng.choice([".", ",", "!", "?", "...", "«»", "--"]))
        sep = rng.choice([" ", " ", " ", "  ", "\t"])
        lines.append(sep.join(toks))
    return lines


def c_learn(lines, merges, min_freq):
    counts = blob()
    lib.cq_strmap_init(counts, 1024)
    for line in lines:
        b = line.encode("utf-8")
        assert lib.cq_count_words(counts, b, len(b)) == 0
    model, err = blob(), blob()
    rc = lib.cq_bpe_learn(counts, merges, min_freq, None, None, model, err)
    lib.cq_strmap_free(counts)
    if rc != 0:
        raise RuntimeError("cq_bpe_learn failed: %r" % err.raw[8:80])
    n = c_size()
    codes = take_string(lib.cq_bpe_write_codes(model, ctypes.byref(n)), n)
    lib.cq_bpe_free(model)
    return codes


def c_apply_all(codes, lines):
    model, err, cache = blob(), blob(), blob()
    b = codes.encode("utf-8")
    if lib.cq_bpe_parse_codes(model, b, len(b), err) != 0:
        raise RuntimeError("parse failed")
    lib.cq_bpe_cache_init(cache, 1 << 16)
    out = []
    n = c_size()
    for line in lines:
        lb = line.encode("utf-8")
        out.append(take_string(lib.cq_bpe_apply(model, cache, lb, len(lb), ctypes.byref(n)), n))
    lib.cq_bpe_cache_free(cache)
    lib.cq_bpe_free(model)
    return out


def main():
    rng = random.Random(20240611)
    train = make_corpus(rng, 3000)
    test = make_corpus(rng, 1500)
    failures = 0

    for merges, min_freq in [(400, 2), (150, 1), (2000, 5)]:
        t0 = time.time()
        counts = ref.word_counts(train)
        py_codes = ref.codes_text(ref.learn(counts, merges, min_freq))
        t1 = time.time()
        c_codes = c_learn(train, merges, min_freq)
        t2 = time.time()
        n_py = py_codes.count("\n") - 1
        n_c = c_codes.count("\n") - 1
        same = py_codes == c_codes
        print("learn merges=%d min_frequency=%d: python %d merges (%.1fs), C %d merges (%.3fs): %s"
              % (merges, min_freq, n_py, t1 - t0, n_c, t2 - t1, "identical" if same else "DIFFERENT"))
        if not same:
            failures += 1
            for i, (a, b) in enumerate(zip(py_codes.split("\n"), c_codes.split("\n"))):
                if a != b:
                    print("  first difference at line %d: python %r, C %r" % (i + 1, a, b))
                    break

        _, ranks = ref.parse_codes(py_codes)
        py_seg = [ref.apply(line, ranks) for line in test]
        c_seg = c_apply_all(py_codes, test)
        bad = [i for i in range(len(test)) if py_seg[i] != c_seg[i]]
        print("apply %d held-out sentences: %d differ" % (len(test), len(bad)))
        for i in bad[:3]:
            print("  %r: python %r, C %r" % (test[i], py_seg[i], c_seg[i]))
        failures += bool(bad)

    # codes version 0.1 (no header, "</w>" its own symbol), made by turning
    # the learned 0.2 codes into 0.1 spelling plus extra end-of-word merges
    v2 = ref.learn(ref.word_counts(train), 300, 2)
    v1 = []
    for a, b in v2:
        if b.endswith("</w>") and b != "</w>":
            v1.append((a, b[:-4]) if len(b) > 4 else (a, b))
            v1.append((a + b[:-4], "</w>"))
        else:
            v1.append((a, b))
    v1_text = ref.codes_text(v1, version=1)
    _, r1 = ref.parse_codes(v1_text)
    py_seg = [ref.apply(line, r1, version=1) for line in test]
    c_seg = c_apply_all(v1_text, test)
    bad = sum(p != c for p, c in zip(py_seg, c_seg))
    print("apply with codes 0.1 (%d merges) on %d sentences: %d differ" % (len(v1), len(test), bad))
    failures += bool(bad)

    # export: parse + write is byte-identical for canonical files
    for text in (ref.codes_text(v2), v1_text):
        model, err = blob(), blob()
        b = text.encode("utf-8")
        assert lib.cq_bpe_parse_codes(model, b, len(b), err) == 0
        n = c_size()
        back = take_string(lib.cq_bpe_write_codes(model, ctypes.byref(n)), n)
        lib.cq_bpe_free(model)
        ok = back == text
        print("codes round trip (%d bytes): %s" % (len(b), "identical" if ok else "DIFFERENT"))
        failures += not ok

    print("max error: %d mismatching outputs" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
