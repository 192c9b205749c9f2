"""The peer of bench_million.sh: the same curation done the way users do it
today, in Python with ONNX Runtime, one step per process reading and writing
files (as OpusFilter's steps do).

    million_peer.py rules  --corpus C --spec SPEC.json --out REJECTS --procs N
    million_peer.py dedup  --corpus C --out DUPS
    million_peer.py export --image M.cqm --out DIR
    million_peer.py score  --corpus C --graph G.onnx --codes-src F --codes-tgt F
                           --vocab-src F --vocab-tgt F --max-positions P --start ID
                           --threads N --out SCORES
    million_peer.py select --corpus C --rejects R --dups D --scores S
                           --drop-percent P --out CURATED

The corpus C is a TSV with a header line: id, domain, src, tgt.

rules   every filter of a corpq filter spec (every arg written out, as
        corpq.filter_predicate writes them) per pair: the rule filters with
        OpusFilter's definitions in Python (test/ref/opusfilter_rules.py),
        language ID with CLD2 called as pycld2 calls it (pycld2 is not a
        Debian package, so through the thin C wrapper over libcld2 that corpq
        itself uses, cq_langid in test/libcorpqcore.so; the filter's rule --
        min_chars, hint, keep_unreliable, threshold -- is applied here).  The
        file is cut into chunks handed to N processes (multiprocessing), so
        the peer uses every core as corpq's parallel query does.  Writes
        "id<TAB>{label,...}" for each rejected pair.
dedup   OpusFilter's remove_duplicates: xxh64 of the pair (its key,
        opusfilter_rules.dedup_key) in a set, the first occurrence kept.
        Writes the ids of the later ones.
export  the model image (corpq.model_export) as ONNX graphs through the
        PyTorch reference, as bench_nn.py does (onnx_export.export_score), and
        its int8 variant (onnx_export.quantize: ONNX Runtime's dynamic int8
        pattern).
score   sent_prob of every pair: subword-nmt's apply_bpe in Python
        (test/ref/bpe_reference.py, with subword-nmt's per-word cache) and the
        vocabulary's ids (corpq.vocab_export), pairs sorted by length (as
        fairseq batches), batches of at most 64 pairs and 4096 target
        positions (about corpq.max_batch_mb's work space) scored by ONNX
        Runtime (million_ort.mjs, onnxruntime-node, THREADS intra-op
        threads); a side longer than max_positions - 1 tokens gets no score,
        as in corpq.  Writes "id<TAB>score" (an empty score: too long).
select  the pairs no filter rejects and no duplicate, whose score is at
        least the drop-percent quantile of those pairs' scores (numpy's
        linear quantile, PostgreSQL's percentile_cont), written as the
        corpus TSV.

Each step prints one JSON line of figures on stdout.  Needs /usr/bin/python3
with Debian's python3-regex, -bs4, -xxhash, -torch, -onnx, -numpy; node and
npm (onnx_ort.py installs onnxruntime-node).
"""
import argparse
import ctypes
import json
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
sys.path.insert(0, HERE)
import bpe_reference as bpe  # noqa: E402
import opusfilter_rules as ref  # noqa: E402

EOS, UNK = 2, 3
CORE_LIB = os.path.join(HERE, "..", "libcorpqcore.so")


def read_corpus(path):
    """(id, domain, src, tgt) of each line of a corpus TSV."""
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            i, domain, src, tgt = line.rstrip("\n").split("\t")
            yield int(i), domain, src, tgt


# ---- rules ------------------------------------------------------------------
class _LangidResult(ctypes.Structure):
    _fields_ = [("lang", ctypes.c_int), ("prob", ctypes.c_double),
                ("reliable", ctypes.c_bool), ("text_bytes", ctypes.c_int)]


class Cld2:
    """CLD2 through corpq's C wrapper (langid.h): the call pycld2.detect
    makes (plain text, an optional language hint), its first language."""

    def __init__(self, path=CORE_LIB):
        self.lib = ctypes.CDLL(path)
        self.lib.cq_langid.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                                       ctypes.POINTER(_LangidResult)]
        self.lib.cq_langid.restype = ctypes.c_bool
        self.lib.cq_langid_lookup.argtypes = [ctypes.c_char_p]
        self.r = _LangidResult()

    def lookup(self, code):
        lang = self.lib.cq_langid_lookup(code.encode())
        if lang < 0:
            raise SystemExit("million_peer: unknown language %r" % code)
        return lang

    def confidence(self, text, lang, args):
        """The langid filter's confidence that text is in lang (filter_set.c's rule)."""
        b = text.encode("utf-8")
        if not b or len(text) < args["min_chars"]:
            return 1.0
        if not self.lib.cq_langid(b, len(b), lang if args["hint"] else -1, ctypes.byref(self.r)):
            raise MemoryError("language identification failed")
        if args["keep_unreliable"] and not self.r.reliable:
            return 1.0
        return self.r.prob if self.r.lang == lang else 0.0


_spec, _cld2 = None, None


def _init_rules(spec):
    global _spec, _cld2
    warnings.filterwarnings("ignore")       # bs4 on strings that look like file names
    _cld2 = Cld2()
    _spec = []
    for f in spec:
        label = f.get("label", f["name"])
        if f["name"] == "langid":
            a = f["args"]
            _spec.append((label, f, (_cld2.lookup(a["src"]), _cld2.lookup(a["tgt"]))))
        else:
            _spec.append((label, f, None))


def _keeps(f, langs, src, tgt):
    if langs is None:
        return ref.keep(f, src, tgt)
    a, t = f["args"], f.get("threshold", 0)
    return _cld2.confidence(src, langs[0], a) > t and _cld2.confidence(tgt, langs[1], a) > t


def _rules_chunk(lines):
    out = []
    for line in lines:
        i, _, src, tgt = line.rstrip("\n").split("\t")
        labels = [label for label, f, langs in _spec if not _keeps(f, langs, src, tgt)]
        if labels:
            out.append("%s\t{%s}\n" % (i, ",".join(labels)))
    return "".join(out)


def _chunks(f, n):
    chunk = []
    for line in f:
        chunk.append(line)
        if len(chunk) == n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def cmd_rules(a):
    with open(a.spec, encoding="utf-8") as f:
        spec = json.load(f)
    rejected = 0
    with open(a.corpus, encoding="utf-8") as f, open(a.out, "w", encoding="utf-8") as out, \
            multiprocessing.Pool(a.procs, _init_rules, (spec,)) as pool:
        next(f)
        for text in pool.imap(_rules_chunk, _chunks(f, 2000)):
            out.write(text)
            rejected += text.count("\n")
    return {"rejected": rejected, "procs": a.procs}


# ---- dedup ------------------------------------------------------------------
def cmd_dedup(a):
    seen, dups = set(), 0
    with open(a.out, "w") as out:
        for i, _, src, tgt in read_corpus(a.corpus):
            key = ref.dedup_key(src, tgt)
            if key in seen:
                out.write("%d\n" % i)
                dups += 1
            else:
                seen.add(key)
    return {"duplicates": dups}


# ---- export -----------------------------------------------------------------
def cmd_export(a):
    import torch
    import onnx_export
    import torch_transformer as tt
    with open(a.image, "rb") as f:
        cfg, w = tt.read_corpq(f.read())
    w = {k: torch.from_numpy(v.copy()) for k, v in w.items()}
    os.makedirs(a.out, exist_ok=True)
    f32, int8 = os.path.join(a.out, "score.onnx"), os.path.join(a.out, "score.int8.onnx")
    onnx_export.export_score(cfg, w, f32)
    n = onnx_export.quantize(f32, int8)
    return {"f32": f32, "int8": int8, "quantized_matmuls": n,
            "max_positions": cfg["max_positions"], "start": tt.variant(cfg, "decoder_start_id")}


# ---- score ------------------------------------------------------------------
class Encoder:
    """apply_bpe (bpe_reference) + vocabulary ids, with a per-word cache of
    the ids as subword-nmt caches a word's segmentation."""

    def __init__(self, codes_path, vocab_path):
        with open(codes_path, encoding="utf-8") as f:
            self.version, self.ranks = bpe.parse_codes(f.read())
        with open(vocab_path, encoding="utf-8") as f:
            tokens = json.load(f)["tokens"]
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.cache = {}

    def word(self, w):
        segs = bpe.segment_word(w, self.ranks, self.version)
        toks = [s + bpe.SEP for s in segs[:-1]] + [segs[-1]]
        return [self.ids.get(t, UNK) for t in toks]

    def encode(self, line):
        out, cache = [], self.cache
        for w in bpe.words(line):
            ids = cache.get(w)
            if ids is None:
                ids = cache[w] = self.word(w)
            out += ids
        return out


def cmd_score(a):
    import onnx_ort
    es, et = Encoder(a.codes_src, a.vocab_src), Encoder(a.codes_tgt, a.vocab_tgt)
    limit = a.max_positions - 1
    rows, too_long, pairs = [], [], 0
    for i, _, src, tgt in read_corpus(a.corpus):
        s, t = es.encode(src), et.encode(tgt)
        pairs += 1
        if len(s) > limit or len(t) > limit:
            too_long.append(i)
            continue
        rows.append((max(len(s), len(t)), len(t), i, " ".join(map(str, s + [EOS])), " ".join(map(str, t))))
    rows.sort()
    node_dir, why = onnx_ort.ensure_runtime()
    if node_dir is None:
        raise SystemExit("million_peer: " + why)
    with tempfile.TemporaryDirectory() as tmp:
        ids, res = os.path.join(tmp, "ids.tsv"), os.path.join(tmp, "logp.tsv")
        with open(ids, "w") as f:
            f.writelines("%d\t%s\t%s\n" % r[2:] for r in rows)
        del rows
        # --single-threaded: no V8 background threads (as onnx_ort.run)
        subprocess.run(["node", "--single-threaded", os.path.join(HERE, "million_ort.mjs"), a.graph, ids, res,
                        str(a.threads), "64", "4096", str(a.start)],
                       env=dict(os.environ, ORT_NODE_DIR=node_dir), check=True)
        with open(res) as f, open(a.out, "w") as out:
            for line in f:
                i, lp, n = line.split("\t")
                out.write("%s\t%r\n" % (i, math.exp(float(lp) / int(n))))
            out.writelines("%d\t\n" % i for i in too_long)
    return {"pairs": pairs, "too_long": len(too_long), "threads": a.threads}


# ---- select -----------------------------------------------------------------
def read_ids(path):
    with open(path) as f:
        return {int(line.split("\t", 1)[0]) for line in f}


def cmd_select(a):
    import numpy as np
    out_ids = read_ids(a.rejects) | read_ids(a.dups)
    scores = {}
    with open(a.scores) as f:
        for line in f:
            i, s = line.rstrip("\n").split("\t")
            if s and int(i) not in out_ids:
                scores[int(i)] = float(s)
    threshold = float(np.quantile(np.fromiter(scores.values(), float, len(scores)), a.drop_percent / 100))
    kept = 0
    with open(a.corpus, encoding="utf-8") as f, open(a.out, "w", encoding="utf-8") as out:
        out.write(next(f))
        for line in f:
            s = scores.get(int(line.split("\t", 1)[0]))
            if s is not None and s >= threshold:
                out.write(line)
                kept += 1
    return {"threshold": threshold, "candidates_scored": len(scores), "kept": kept}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("rules")
    p.add_argument("--corpus", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--procs", type=int, default=os.cpu_count())
    p = sub.add_parser("dedup")
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("export")
    p.add_argument("--image", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("score")
    for k in ("corpus", "graph", "codes-src", "codes-tgt", "vocab-src", "vocab-tgt", "out"):
        p.add_argument("--" + k, required=True)
    p.add_argument("--max-positions", type=int, required=True)
    p.add_argument("--start", type=int, required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p = sub.add_parser("select")
    for k in ("corpus", "rejects", "dups", "scores", "out"):
        p.add_argument("--" + k, required=True)
    p.add_argument("--drop-percent", type=float, required=True)
    a = ap.parse_args()
    figures = globals()["cmd_" + a.step](a)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
