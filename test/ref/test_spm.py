"""The SentencePiece shim (extension/text/spm.h) against Debian's spm_encode
and spm_decode.

Models are trained with spm_train (unigram and BPE) on the parallel corpora
test/lib.sh finds (the shared corpora, else the synthetic one of
test/data) plus lines that exercise normalisation (NFKC, full-width forms,
runs of spaces, tabs, combining accents, characters outside the training
text).  Every line's pieces from the shim must equal spm_encode's
(--output_format=piece), and decoding them must give spm_decode's text.
Bytes that are not a model must be refused with CQ_EFORMAT (category 6).
"""
import ctypes
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 256)]


class Shim:
    def __init__(self):
        lib = ctypes.CDLL(os.environ.get("CORPQ_CORE_LIB",
                                         os.path.join(HERE, "..", "libcorpqcore.so")))
        P = ctypes.c_void_p
        lib.cq_spm_load.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(P), P]
        lib.cq_spm_free.argtypes = [P]
        lib.cq_spm_pieces.argtypes = [P]
        lib.cq_spm_piece.argtypes = [P, ctypes.c_int]
        lib.cq_spm_piece.restype = ctypes.c_char_p
        for f in (lib.cq_spm_encode, lib.cq_spm_decode):
            f.argtypes = [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                          ctypes.POINTER(ctypes.c_size_t), P]
        self.lib = lib

    def load(self, blob):
        m, err = ctypes.c_void_p(), Error()
        rc = self.lib.cq_spm_load(blob, len(blob), ctypes.byref(m), ctypes.byref(err))
        return rc, m, err.msg.decode()

    def _call(self, f, m, s):
        b = s.encode("utf-8")
        out, n, err = ctypes.c_char_p(), ctypes.c_size_t(), Error()
        rc = f(m, b, len(b), ctypes.byref(out), ctypes.byref(n), ctypes.byref(err))
        if rc:
            raise RuntimeError(err.msg.decode())
        return ctypes.string_at(out, n.value).decode("utf-8")

    def encode(self, m, s):
        return self._call(self.lib.cq_spm_encode, m, s)

    def decode(self, m, s):
        return self._call(self.lib.cq_spm_decode, m, s)


def corpus_lines():
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import corpora
    return corpora.sample(1500, (2, 3))


ODD = ["ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ １２３", "  leading and   repeated   spaces  ", "tab\tseparated",
       "cafe\u0301 combining accent", "ﬁ ligature and ½ fraction", "emoji 🙂 and 漢字 unseen",
       "", " ", "a"]


def main():
    lines = corpus_lines()
    if len(lines) < 500:
        rng = random.Random(3)
        words = ["el", "la", "casa", "niño", "árbol", "Dios", "tierra", "the", "house",
                 "children", "über", "façade", "naïve", "words,", "end."]
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 14)))
                 for _ in range(3000)]
    shim = Shim()
    with tempfile.TemporaryDirectory() as tmp:
        train = os.path.join(tmp, "train.txt")
        with open(train, "w", encoding="utf-8") as f:
            f.write("\n".join(l.replace("\n", " ") for l in lines) + "\n")
        test = lines[::7][:1500] + ODD
        with open(os.path.join(tmp, "test.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(test) + "\n")
        for kind in ("unigram", "bpe"):
            prefix = os.path.join(tmp, kind)
            subprocess.run(["spm_train", "--input=" + train, "--model_prefix=" + prefix,
                            "--vocab_size=1000", "--model_type=" + kind,
                            "--character_coverage=0.9995", "--minloglevel=2"],
                           check=True, capture_output=True)
            ref = subprocess.run(["spm_encode", "--model=" + prefix + ".model",
                                  "--output_format=piece"], input="\n".join(test) + "\n",
                                 capture_output=True, text=True, check=True).stdout.split("\n")
            dec = subprocess.run(["spm_decode", "--model=" + prefix + ".model",
                                  "--input_format=piece"], input="\n".join(ref[:len(test)]) + "\n",
                                 capture_output=True, text=True, check=True).stdout.split("\n")
            with open(prefix + ".model", "rb") as f:
                rc, m, msg = shim.load(f.read())
            check(rc == 0, "%s: load: %s" % (kind, msg))
            n_pieces = shim.lib.cq_spm_pieces(m)
            with open(prefix + ".vocab", encoding="utf-8") as f:
                vocab = [l.split("\t")[0] for l in f.read().split("\n") if l]
            check(n_pieces == len(vocab) and
                  all(shim.lib.cq_spm_piece(m, i).decode() == vocab[i] for i in range(n_pieces)),
                  "%s: pieces = spm_train's .vocab" % kind)
            bad_enc = bad_dec = 0
            for i, line in enumerate(test):
                got = shim.encode(m, line)
                if got != ref[i]:
                    bad_enc += 1
                    if bad_enc <= 3:
                        print("  encode differs: %r: %r vs %r" % (line, got, ref[i]))
                if shim.decode(m, got) != dec[i]:
                    bad_dec += 1
            check(bad_enc == 0, "%s: %d of %d lines encode differently" % (kind, bad_enc, len(test)))
            check(bad_dec == 0, "%s: %d of %d lines decode differently" % (kind, bad_dec, len(test)))
            print("  %-8s %d pieces; %d lines (%d from the corpora): pieces = spm_encode, "
                  "text = spm_decode" % (kind, n_pieces, len(test), len(test) - len(ODD)))
            shim.lib.cq_spm_free(m)
        for blob, what in ((b"", "empty"), (b"\x00" * 64, "zeros"), (b"CORPQNN\x00", "other format")):
            rc, _, msg = shim.load(blob)
            check(rc == 6 and "not a SentencePiece model" in msg,
                  "%s bytes: code %d, %r" % (what, rc, msg))
        print("  bytes that are not a model: refused (CQ_EFORMAT)")
    print("test_spm: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
