#!/usr/bin/env python3
"""Hostile SentencePiece models made from a real one (issue 41), for
test/regress/sql/spm_hostile.sql and test/integration/spm_fuzz.sh.

  spm_mutate.py routes MODEL DIR        issue 41's routes, one file each:
                                        huge_piece, trie_units, strings_cut,
                                        strings_invalid (DIR/NAME.spm)
  spm_mutate.py fuzz MODEL DIR N SEED   N mutated models DIR/fuzz_NNNN.spm;
                                        model i depends only on (SEED, i)

MODEL is a real model with a normalizer charsmap (spm_train's default
nmt_nfkc).  The protobuf and Darts-clone layouts are those of
sentencepiece_model.proto and third_party/darts_clone/darts.h (0.1.97).
"""
import os
import random
import struct
import sys

ISSUE_TEXT = "\uff21\uff22\uff23 \ufb01 \u2460 \uff76\uff9e \u337f \ufdfa"


# ---- protobuf wire format ------------------------------------------------------
def varint(b, i):
    r, s = 0, 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fields(b):
    """[(number, wire type, value)] of a well-formed message: ints for
    varints, bytes otherwise."""
    out, i = [], 0
    while i < len(b):
        tag, i = varint(b, i)
        wt = tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            n = 8 if wt == 1 else 4
            v, i = b[i:i + n], i + n
        out.append((tag >> 3, wt, v))
    return out


def field(num, wt, v):
    if wt == 0:
        return enc_varint(num << 3) + enc_varint(v)
    if wt == 2:
        return enc_varint(num << 3 | 2) + enc_varint(len(v)) + bytes(v)
    return enc_varint(num << 3 | wt) + bytes(v)


def serialize(fs):
    return b"".join(field(n, w, v) for n, w, v in fs)


def piece(s, t=1):
    body = field(1, 2, s) + field(2, 5, struct.pack("<f", -2.0))
    return field(1, 2, body + (field(3, 0, t) if t != 1 else b""))


# ---- the charsmap and its trie -------------------------------------------------
def charsmap(model):
    for n, w, v in fields(model):
        if n == 3 and w == 2:
            for n2, w2, v2 in fields(v):
                if n2 == 2:
                    return bytes(v2)
    raise SystemExit("the model has no normalizer charsmap")


def with_charsmap(model, cm, num=3):
    """model with the charsmap of its normalizer (num 3) replaced."""
    out = []
    for n, w, v in fields(model):
        if n == num and w == 2:
            v = serialize([(n2, w2, cm if n2 == 2 else v2) for n2, w2, v2 in fields(v)])
        out.append((n, w, v))
    return serialize(out)


def unit(cm, i):
    return struct.unpack_from("<I", cm, 4 + 4 * i)[0]


def set_unit(cm, i, u):
    struct.pack_into("<I", cm, 4 + 4 * i, u & 0xFFFFFFFF)


def offset(u):
    return (u >> 10) << ((u & (1 << 9)) >> 6)


def find(cm, key):
    """(unit of key's last byte, unit of its leaf value or None), walking as
    Darts' commonPrefixSearch does."""
    pos, node, leaf = offset(unit(cm, 0)), None, None
    for k in key:
        pos ^= k
        u = unit(cm, pos)
        if u & 0x800000FF != k:
            return None, None
        node = pos
        pos ^= offset(u)
        leaf = pos if (u >> 8) & 1 else None
    return node, leaf


def reachable(cm):
    """[(node, parent base)] of every node a byte string reaches."""
    n = struct.unpack_from("<I", cm, 0)[0] // 4
    seen, out, todo = set(), [], [offset(unit(cm, 0))]
    while todo:
        base = todo.pop()
        for k in range(256):
            idx = base ^ k
            if idx < n and unit(cm, idx) & 0x800000FF == k and idx not in seen:
                seen.add(idx)
                out.append((idx, base))
                todo.append(idx ^ offset(unit(cm, idx)))
    return out


def strings_start(cm):
    return 4 + struct.unpack_from("<I", cm, 0)[0]


# ---- issue 41's routes ---------------------------------------------------------
def routes(model):
    cm = charsmap(model)
    out = {"huge_piece": model + piece(b"a" * 300000)}
    bad = bytearray(cm)
    set_unit(bad, 0, 0x1FFFFF << 10 | 1 << 9)  # the root's children 2 GB away
    out["trie_units"] = with_charsmap(model, bytes(bad))
    out["strings_cut"] = with_charsmap(model, cm[:strings_start(cm) + 1])
    bad = bytearray(cm)
    _, leaf = find(bad, "\uff21".encode())
    bad[strings_start(cm) + (unit(bad, leaf) & 0x7FFFFFFF)] = 0xA7  # U+FF21 -> 0xA7, not "A"
    out["strings_invalid"] = with_charsmap(model, bytes(bad))
    return out


# ---- random mutations ------------------------------------------------------------
class Mutator:
    def __init__(self, model):
        self.model = model
        self.cm = charsmap(model)
        self.nodes = reachable(self.cm)
        self.leaves = [(i, b) for i, b in self.nodes if (unit(self.cm, i) >> 8) & 1]

    def units(self, r):
        """trie units altered: random words, bit flips, offsets, leaf values, cycles"""
        cm = bytearray(self.cm)
        for _ in range(r.randint(1, 4)):
            idx, base = r.choice(self.nodes)
            u = unit(cm, idx)
            k = r.randrange(6)
            if k == 0:
                set_unit(cm, r.randrange(len(cm) // 4 - 2), r.getrandbits(32))
            elif k == 1:
                set_unit(cm, idx, u ^ (1 << r.randrange(32)))
            elif k == 2:
                set_unit(cm, idx, (u & 0x1FF) | r.getrandbits(1) << 9 | r.getrandbits(21) << 10)
            elif k == 3:
                leaf, _ = r.choice(self.leaves)
                leaf ^= offset(unit(cm, leaf))
                set_unit(cm, leaf, 1 << 31 | r.choice([r.getrandbits(31), len(cm) - strings_start(cm) - 1,
                                                       len(cm) - strings_start(cm), r.randrange(70000)]))
            elif k == 4:
                set_unit(cm, idx, (u & 0x1FF) | (idx ^ base) << 10)  # back to its parent's children
            else:
                set_unit(cm, idx, u | 1 << 8)  # a leaf where there was none
        return with_charsmap(self.model, bytes(cm))

    def strings(self, r):
        """normalized strings cut or changed"""
        cm, s = bytearray(self.cm), strings_start(self.cm)
        if r.random() < 0.4:
            return with_charsmap(self.model, bytes(cm[:s + r.choice([0, 1, 2, r.randrange(len(cm) - s)])]))
        for _ in range(r.randint(1, 8)):
            cm[r.randrange(s, len(cm))] = r.choice([0, 0xA7, 0xFF, 0xC3, 0xE2, 0x80, r.randrange(256)])
        return with_charsmap(self.model, bytes(cm))

    def trie_size(self, r):
        """the trie size field changed"""
        cm = bytearray(self.cm)
        size = struct.unpack_from("<I", cm, 0)[0]
        struct.pack_into("<I", cm, 0, r.choice([0, 4, size - 1, size + 1, size - 4, size + 4, size - 1024,
                                                 size + 1024, len(cm) - 4, len(cm) - 3, len(cm),
                                                 r.getrandbits(32)]) & 0xFFFFFFFF)
        return with_charsmap(self.model, bytes(cm))

    def huge_piece(self, r):
        """a long piece (2048 bytes is the bound)"""
        n = r.choice([2048, 2049, 4096, 65536, 300000])
        return self.model + piece((b"ab" * n)[:n], r.choice([1, 4]))

    def truncate(self, r):
        """the file cut short"""
        return self.model[:r.randrange(len(self.model))]

    def flip(self, r):
        """random bytes changed anywhere"""
        b = bytearray(self.model)
        for _ in range(r.randint(1, 16)):
            b[r.randrange(len(b))] ^= r.randrange(1, 256)
        return bytes(b)

    def length(self, r):
        """a varint or length field corrupted (top level or inside a message)"""
        fs = fields(self.model)
        i = r.randrange(len(fs))
        n, w, v = fs[i]
        pre, post = serialize(fs[:i]), serialize(fs[i + 1:])
        if w != 2:
            return pre + enc_varint(n << 3) + r.choice([b"\x80", b"\xff" * 10, b"\x80\x00"]) + post
        inner_done = False
        if r.random() < 0.5 and n in (1, 3):
            inner = fields(v)
            j = r.randrange(len(inner))
            n2, w2, v2 = inner[j]
            if w2 == 2:
                lenf = enc_varint(max(0, len(v2) + r.choice([-1, 1, 7, 1000, 1 << 30])))
                v = serialize(inner[:j]) + enc_varint(n2 << 3 | 2) + lenf + bytes(v2) + serialize(inner[j + 1:])
                inner_done = True
        overlong = bytearray(enc_varint(len(v)))
        overlong[-1] |= 0x80
        lenf = r.choice([enc_varint(max(0, len(v) + r.choice([-3, -1, 1, 2, 100]))), enc_varint(1 << 40),
                         bytes(overlong) + b"\x00"])
        if inner_done and r.random() < 0.5:
            lenf = enc_varint(len(v))
        return pre + enc_varint(n << 3 | 2) + lenf + bytes(v) + post

    def pieces(self, r):
        """a piece string or type made bad; model_type; unk_surface"""
        k = r.randrange(5)
        if k == 0:
            return self.model + piece(r.choice([b"", b"\xa7", b"a\x00b", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]))
        if k == 1:
            return self.model + piece(b"zz", r.randrange(0, 12))
        if k == 2:
            return self.model + field(2, 2, field(3, 0, r.randrange(0, 8)))
        if k == 3:
            return self.model + field(2, 2, field(44, 2, r.choice([b"\xa7", b"\xe2\x81", b"u" * 300, b"ok"])))
        depth = r.randint(60, 70)  # user-defined pieces, each a prefix of the next
        return self.model + b"".join(piece(b"x" * (d + 1), 4) for d in range(depth))

    def specs(self, r):
        """a second normalizer_spec, or a denormalizer_spec, with a mutated charsmap"""
        other = fields(r.choice([self.units, self.strings, self.trie_size])(r))
        cm = [v2 for n, w, v in other if n == 3 for n2, w2, v2 in fields(v) if n2 == 2][-1]
        return self.model + field(r.choice([3, 5]), 2, field(1, 2, b"nmt_nfkc") + field(2, 2, cm))

    def one(self, seed, i):
        r = random.Random("%d/%d" % (seed, i))
        kinds = [self.units] * 5 + [self.strings] * 3 + [self.trie_size, self.huge_piece, self.truncate] + \
            [self.flip] * 3 + [self.length] * 2 + [self.pieces] * 2 + [self.specs]
        return r.choice(kinds)(r)


def main(argv):
    if len(argv) == 4 and argv[1] == "routes":
        with open(argv[2], "rb") as f:
            model = f.read()
        os.makedirs(argv[3], exist_ok=True)
        for name, b in routes(model).items():
            with open(os.path.join(argv[3], name + ".spm"), "wb") as f:
                f.write(b)
        return 0
    if len(argv) == 6 and argv[1] == "fuzz":
        with open(argv[2], "rb") as f:
            m = Mutator(f.read())
        os.makedirs(argv[3], exist_ok=True)
        for i in range(int(argv[4])):
            with open(os.path.join(argv[3], "fuzz_%04d.spm" % i), "wb") as f:
                f.write(m.one(int(argv[5]), i))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
