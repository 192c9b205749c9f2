"""The cores' one UTF-8 decoder (extension/common/utf8.h, through the
code-point text of common/cptext.h) against Python's
bytes.decode('utf-8', 'replace'), an independent implementation of the same
rule: one U+FFFD per maximal ill-formed subpart (Unicode 15, section 3.9;
the WHATWG Encoding Standard).

The strings: every string of one and two bytes, every lead byte followed by
every pair of boundary bytes, and 200,000 random strings of 1 to 12 bytes
drawn mostly from lead and continuation bytes (so that cut, overlong,
surrogate and out-of-range sequences are common), with ASCII and
well-formed characters between them.  The code points must be Python's
exactly, and strict validation (cq_utf8_valid) must accept exactly the
strings Python decodes strictly without NUL.
"""
import ctypes
import os
import random
import sys

lib = ctypes.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))


class CpBuf(ctypes.Structure):
    _fields_ = [("v", ctypes.POINTER(ctypes.c_uint32)), ("n", ctypes.c_size_t), ("cap", ctypes.c_size_t)]


lib.cq_cpbuf_from_utf8.argtypes = [ctypes.POINTER(CpBuf), ctypes.c_char_p, ctypes.c_size_t]
lib.cq_cpbuf_from_utf8.restype = ctypes.c_bool
lib.cq_cpbuf_free.argtypes = [ctypes.POINTER(CpBuf)]
lib.cq_utf8_valid.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.cq_utf8_valid.restype = ctypes.c_bool

BOUNDARY = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
            0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFE, 0xFF]


def strings(rng):
    for a in range(256):
        yield bytes([a])
        for b in range(256):
            yield bytes([a, b])
    for a in range(0x80, 0x100):
        for b in BOUNDARY:
            for c in BOUNDARY:
                yield bytes([a, b, c])
    pieces = [lambda: bytes([rng.randrange(0x80, 0xC0)]),          # continuation
              lambda: bytes([rng.randrange(0xC0, 0x100)]),         # any lead, good or bad
              lambda: bytes([rng.choice(BOUNDARY)]),
              lambda: bytes([rng.randrange(0x20, 0x7F)]),
              lambda: chr(rng.choice([0xE9, 0x20AC, 0xD7FF, 0xE000, 0xFFFD, 0x1F600, 0x10FFFF])).encode()]
    for _ in range(200000):
        yield b"".join(rng.choice(pieces)() for _ in range(rng.randint(1, 12)))


def main():
    rng = random.Random(51)
    buf = CpBuf()
    n = bad = bad_valid = replaced = 0
    for s in strings(rng):
        n += 1
        want = [ord(c) for c in s.decode("utf-8", "replace")]
        if not lib.cq_cpbuf_from_utf8(ctypes.byref(buf), s, len(s)):
            raise MemoryError
        got = buf.v[:buf.n]
        if got != want:
            bad += 1
            if bad <= 5:
                print("  %r: corpq %s, Python %s" % (s, [hex(c) for c in got], [hex(c) for c in want]))
        try:
            strict = b"\0" not in s and s.decode("utf-8") is not None
        except UnicodeDecodeError:
            strict = False
            replaced += 1
        if lib.cq_utf8_valid(s, len(s)) != strict:
            bad_valid += 1
            if bad_valid <= 5:
                print("  %r: cq_utf8_valid %s, Python strict %s" % (s, not strict, strict))
    lib.cq_cpbuf_free(ctypes.byref(buf))
    print("  %d strings (%d ill-formed): %d decode differently from bytes.decode('utf-8', 'replace'), "
          "%d validate differently from strict decoding" % (n, replaced, bad, bad_valid))
    failed = bad != 0 or bad_valid != 0 or replaced == 0
    print("test_utf8: %d failures" % failed)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
