"""corpq's WordPiece segmenter (extension/text/wordpiece.h) against
wordpiece_reference.py, a plain-Python reading of Hugging Face's BERT
tokenizers (transformers' BertTokenizer, "slow"; tokenizers'
BertTokenizerFast pipeline, "fast").

The vocabularies are built here, WordPiece-style, from the corpora
test/lib.sh finds (the shared en-es and mono corpora, else synthetic text):
the reference's basic tokenizer splits the lines into words (lower-cased for
the uncased vocabulary); the vocabulary is BERT's five special tokens and ten
[unusedN] lines, every character seen twice or more as a word start and as
"##" continuation (but for a few left out, so that words become [UNK]), the
3000 most frequent words, the 1500 most frequent word endings of 2 to 6
characters ("##" + ending) and the 500 most frequent word starts of 2 to 5
characters: about 5000 tokens per vocabulary (from every 8th row of en-es,
both sides, and the first 3000 lines of mono/en.txt), with CRLF line ends in
one configuration.  Each configuration (both variants, cased and uncased,
accents kept or stripped, CJK splitting off, a short
max_input_chars_per_word, other special tokens) segments half of those
lines (both sides of every other row, half of the mono lines), a list of
hard cases (control and format characters, U+FFFD, invalid UTF-8, Unicode
spaces, CJK, combining accents, Hangul, İ, final sigma, special tokens
inside words, words of 100 and 101 characters, empty and blank text) and
1500 random strings over many scripts and categories; the pieces must be
the reference's exactly, and their decoding (cq_wordpiece_undo_inplace)
must be convert_tokens_to_string's.
"""
import collections
import ctypes
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wordpiece_reference as ref  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 256)]


class Options(ctypes.Structure):
    _fields_ = [("lower_case", ctypes.c_bool), ("strip_accents", ctypes.c_bool),
                ("tokenize_chinese_chars", ctypes.c_bool), ("variant", ctypes.c_int),
                ("max_input_chars_per_word", ctypes.c_int32),
                ("special", ctypes.c_char_p * 5)]


class Core:
    def __init__(self):
        lib = ctypes.CDLL(os.environ.get("CORPQ_CORE_LIB",
                                         os.path.join(HERE, "..", "libcorpqcore.so")))
        P, S = ctypes.c_void_p, ctypes.c_size_t
        lib.cq_wordpiece_load.argtypes = [ctypes.POINTER(Options), ctypes.c_char_p, S,
                                          ctypes.POINTER(P), P]
        lib.cq_wordpiece_free.argtypes = [P]
        lib.cq_wordpiece_apply.argtypes = [P, ctypes.c_char_p, S, ctypes.POINTER(P),
                                           ctypes.POINTER(S), P]
        lib.cq_wordpiece_apply.restype = ctypes.c_int
        lib.cq_wordpiece_undo_inplace.argtypes = [ctypes.c_char_p, S]
        lib.cq_wordpiece_undo_inplace.restype = S
        lib.cq_free.argtypes = [P]
        self.lib = lib

    def load(self, vocab_text, cfg):
        sp = cfg.get("specials", {})
        o = Options(cfg.get("do_lower_case", True), ref_strip(cfg), cfg.get("tokenize_chinese_chars", True),
                    1 if cfg.get("variant") == "fast" else 0, cfg.get("max_input_chars_per_word", 100))
        for i, k in enumerate(ref.SPECIAL_KEYS):
            v = sp.get(k, "[%s]" % k.split("_")[0].upper())
            o.special[i] = v.encode() if v else None
        m, err = ctypes.c_void_p(), Error()
        b = vocab_text.encode("utf-8")
        rc = self.lib.cq_wordpiece_load(ctypes.byref(o), b, len(b), ctypes.byref(m), ctypes.byref(err))
        if rc:
            raise RuntimeError(err.msg.decode())
        return m

    def pieces(self, m, data):
        p, n, err = ctypes.c_void_p(), ctypes.c_size_t(), Error()
        if self.lib.cq_wordpiece_apply(m, data, len(data), ctypes.byref(p), ctypes.byref(n),
                                       ctypes.byref(err)):
            raise RuntimeError(err.msg.decode())
        s = ctypes.string_at(p.value, n.value).decode("utf-8")
        self.lib.cq_free(p)
        return s.split(" ") if s else []

    def undo(self, pieces):
        b = ctypes.create_string_buffer(" ".join(pieces).encode("utf-8"))
        n = self.lib.cq_wordpiece_undo_inplace(b, len(b.value))
        return b.raw[:n].decode("utf-8")


def ref_strip(cfg):
    s = cfg.get("strip_accents")
    return cfg.get("do_lower_case", True) if s is None else s


def corpus_lines():
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import corpora
    try:
        directory, files = corpora.find()
    except SystemExit:
        directory, files = None, []
    lines = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            rows = f.read().split("\n")[1:]
        for row in rows[::8]:
            parts = row.split("\t")
            if len(parts) == 4:
                lines += [parts[2], parts[3]]
    mono = os.path.join(directory or "", "mono", "en.txt")
    if directory and os.path.exists(mono):
        with open(mono, encoding="utf-8") as f:
            lines += f.read().split("\n")[:3000:]
    return lines


LEFT_OUT = "qQ\u00f1\u00bf"     # characters without a token: words with them are [UNK]


def build_vocab(lines, lower):
    basic = ref.Bert([], do_lower_case=lower)
    words = collections.Counter()
    for line in lines:
        words.update(basic.slow_basic(line.lower() if lower else line))
    chars = collections.Counter(c for w, n in words.items() for c in w for _ in range(n))
    ends, starts = collections.Counter(), collections.Counter()
    for w, n in words.most_common(6000):
        for k in range(2, min(6, len(w) - 1) + 1):
            ends["##" + w[-k:]] += n
        for k in range(2, min(5, len(w) - 1) + 1):
            starts[w[:k]] += n
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["[unused%d]" % i for i in range(10)]
    for c, n in sorted(chars.items()):
        if n >= 2 and c not in LEFT_OUT:
            vocab += [c, "##" + c]
    vocab += [w for w, _ in words.most_common(3000)]
    vocab += [e for e, _ in ends.most_common(1500)]
    vocab += [s for s, _ in starts.most_common(500)]
    seen, out = set(), []
    for t in vocab:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


HARD = [
    "", " ", "\t\n", "a", "Hello, World!", "  leading and   repeated   spaces  ",
    "ctrl\x01\x02chars\x7f and \x00nul", "tab\tnew\nline\rcr\vvt\fff", "soft\u00adhyphen zero\u200bwidth",
    "bidi \u200e\u200f marks \u202a\u202c", "replacement \ufffd char", "nbsp\u00a0thin\u2009ideo\u3000sp",
    "line\u2028para\u2029sep", "nel\u0085x", "private \ue000 use", "\u4e2d\u6587\u5b57ah\u535a\u63a8zz",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002", "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "\u1112\u1161\u11ab\u1100\u1173\u11af", "caf\u00e9 cafe\u0301 na\u00efve re\u0301sume\u0301",
    "\u0130stanbul \u0131\u015f\u0131k", "\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3 \u1f08\u03b8\u1fc6\u03bd\u03b1\u03b9",
    "Stra\u00dfe STRASSE \u1e9e", "Vi\u1ec7t Nam ti\u1ebfng Vi\u1ec7t", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e", "emoji \U0001f642\U0001f468\u200d\U0001f469 ok",
    "\u00bfQu\u00e9 tal? \u00a1Bien! \u00abcomillas\u00bb \u2014 dash\u2026", "a$b%c^d`e~f|g\\h",
    "[CLS] sentence [SEP] second [SEP]", "x[SEP]y[sep]z", "[UN[UNK]K] [MASK][MASK]", "[CL\u200bS]",
    "\u00c5ngstr\u00f6m \u212bngstr\u00f6m \ufb01ne \u2460 \u00bd", "\u0301\u0302 lone marks \u0301",
    "a" * 100, "b" * 101, "x" * 300 + " ok", "q" * 5, "\u00f1and\u00fa", "\U0002b820\U0002b920x",
    "\U00020000\U0002a6d6 ext", "\uf900\uf901 compat", "L'homme l\u2019a dit.", "e-mail: someone@example.org",
    "1,234.56 \u20ac 78%", "\u0110\u0111 \u00d0\u00f0 \u00de\u00fe", "\u1e9b\u0323 \u1e69",
]
BAD_BYTES = [b"bad \xff\xfe bytes", b"trunc \xe2\x82", b"over \xc0\xaf long", b"sur \xed\xa0\x80 rogate"]

POOLS = [
    (0x20, 0x7e), (0xa0, 0x17f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x5ff),
    (0x600, 0x6ff), (0x900, 0x97f), (0xe00, 0xe7f), (0x1100, 0x11ff), (0x1e00, 0x1fff),
    (0x2000, 0x206f), (0x20a0, 0x20bf), (0x2100, 0x214f), (0x3000, 0x30ff), (0x3400, 0x3420),
    (0x4e00, 0x4fff), (0xac00, 0xad00), (0xf900, 0xf920), (0xfe30, 0xfe4f), (0xff00, 0xffef),
    (0x1f300, 0x1f64f), (0x20000, 0x20020), (0x2b740, 0x2b760), (0x2b820, 0x2b830),
    (0x2b920, 0x2b930), (0x0, 0x1f),
]


def random_strings(rng, n, words):
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.4:
                w = rng.choice(words)
                parts.append(w.upper() if rng.random() < 0.2 else w)
            else:
                lo, hi = rng.choice(POOLS)
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))))
        out.append(rng.choice(["", " ", "  "]).join(parts))
    # only characters Python 3.11 (Unicode 14) and ICU agree on: no new ones
    return ["".join(c for c in s if ref.category(c) != "Cn") for s in out]


CONFIGS = [
    ("slow uncased", "uncased", {}),
    ("slow cased", "cased", {"do_lower_case": False}),
    ("slow uncased, accents kept", "uncased", {"strip_accents": False}),
    ("slow cased, accents stripped", "cased", {"do_lower_case": False, "strip_accents": True}),
    ("slow cased, no CJK split", "cased", {"do_lower_case": False, "tokenize_chinese_chars": False}),
    ("slow cased, 12 chars a word", "cased", {"do_lower_case": False, "max_input_chars_per_word": 12}),
    ("slow uncased, <unk> and no [SEP]", "uncased",
     {"specials": {"unk_token": "<unk>", "sep_token": None, "mask_token": "<MASK>"}}),
    ("fast uncased", "uncased", {"variant": "fast"}),
    ("fast cased", "cased", {"variant": "fast", "do_lower_case": False}),
    ("fast cased, no CJK split", "cased",
     {"variant": "fast", "do_lower_case": False, "tokenize_chinese_chars": False}),
]


def main():
    lines = corpus_lines()
    source = "the corpora"
    if len(lines) < 500:
        rng0 = random.Random(5)
        words = ["el", "la", "casa", "ni\u00f1o", "\u00e1rbol", "Dios", "tierra", "the", "House",
                 "children", "\u00fcber", "fa\u00e7ade", "na\u00efve", "words,", "end.", "don't"]
        lines = [" ".join(rng0.choice(words) for _ in range(rng0.randint(1, 14))) for _ in range(4000)]
        source = "synthetic lines"
    vocabs = {"uncased": build_vocab(lines, True), "cased": build_vocab(lines, False)}
    rng = random.Random(11)
    words = [w for w in vocabs["cased"] if not w.startswith("[") and not w.startswith("##")]
    corpus_tests = [line for i, line in enumerate(lines) if (i // 2) % 2 == 0]
    tests = corpus_tests + HARD + random_strings(rng, 1500, words)
    core = Core()
    for name, which, cfg in CONFIGS:
        vocab = vocabs[which]
        text = ("\r\n" if "fast cased" == name else "\n").join(vocab) + "\n"
        sp = {k: v for k, v in cfg.get("specials", {}).items()}
        rcfg = {k: v for k, v in cfg.items() if k != "specials"}
        if "unk_token" in sp:
            vocab_text = text.replace("[UNK]", sp["unk_token"])
            bert = ref.Bert(ref.read_vocab(vocab_text), **rcfg, **sp)
        else:
            vocab_text = text
            bert = ref.Bert(ref.read_vocab(vocab_text), **rcfg)
        m = core.load(vocab_text, cfg)
        bad = bad_undo = unk = 0
        cases = [s.encode("utf-8", "surrogatepass") for s in tests] + BAD_BYTES
        for data in cases:
            want = bert.tokenize(data.decode("utf-8", "replace"))
            got = core.pieces(m, data)
            unk += bert.unk in want
            if got != want:
                bad += 1
                if bad <= 3:
                    print("  %s differs on %r:\n    corpq %r\n    ref   %r" % (name, data[:80], got[:20], want[:20]))
            if core.undo(got) != ref.tokens_to_string(got):
                bad_undo += 1
        check(bad == 0, "%s: %d of %d strings segment differently" % (name, bad, len(cases)))
        check(bad_undo == 0, "%s: %d of %d decode differently" % (name, bad_undo, len(cases)))
        print("  %-34s %5d tokens; %d strings (%d with an unknown word): pieces and decoding equal"
              % (name, len(vocab), len(cases), unk))
        core.lib.cq_wordpiece_free(m)
    print("  strings: %d lines of %s, %d hard cases, 1500 random" % (len(corpus_tests), source,
                                                                     len(HARD) + len(BAD_BYTES)))
    print("test_wordpiece: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
