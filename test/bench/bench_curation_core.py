"""Quality of the curation core's classifier (extension/curate/) with string
features only: the baseline before model features (issue 52; figures in
docs/curation.md).

1. The shared en-es corpora are split by source sentence (a hash of the
   English side, so no held-out source is seen in training): --holdout of
   them (default 6%) are held out.
2. Training: --train clean pairs drawn from the rest, the core's synthetic
   noise made from them (cq_noise_generate, default shares and seed; its
   wrong_language targets are English sentences of mono/en.txt's first
   half, the only other-language text the corpora have), the core's
   features, the core's classifier (--classifier trees, the default, or
   logistic; 25% held out by group for Platt).
3. Evaluation: test/bench/inject_noise.py (the independent generator) run
   on the held-out pairs: 2,000 clean, 400 misaligned, 400 untranslated,
   400 truncated (split here into source and target by comparing with the
   origin), 200 html, 200 url.  It has no appended or wrong-language type,
   so this script adds 400 of each its own way from held-out pairs
   (another held-out target appended after a space; an English sentence
   of mono/en.txt's second half as the target).
4. Per noise type: the share removed at the default threshold 0.5
   (recall), precision of removal against the 2,000 clean pairs, and the
   ROC AUC of the probability separating clean pairs from that type; the
   clean pairs kept.

Deterministic: the same corpora give the same figures.  Usage:
  /usr/bin/python3 test/bench/bench_curation_core.py [--train N] [--langid]
(needs test/libcorpqcore.so: make test/libcorpqcore.so).
"""
import argparse
import csv
import io
import os
import random
import subprocess
import sys
import tempfile
import zlib
from collections import Counter

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
os.environ.setdefault("CORPQ_CORE_LIB", os.path.join(HERE, "..", "libcorpqcore.so"))
import corpora  # noqa: E402
import curate_core as core  # noqa: E402

EVAL_SHARES = {"misaligned": 400, "untranslated": 400, "truncated": 400, "html": 200, "url": 200}
EVAL_CLEAN = 2000
EXTRA = 400
TREES = False


def read_corpora():
    root, files = corpora.find()
    rows = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            next(f)
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4:
                    rows.append(parts)
    mono = os.path.join(root, "mono", "en.txt")
    with open(mono, encoding="utf-8") as f:
        english = [line.rstrip("\n") for line in f if line.strip()]
    return rows, english


def split(rows, frac):
    """Held out by a hash of the English side: all rows of a source together."""
    cut = int(frac * 2 ** 32)
    held, rest = [], []
    for r in rows:
        (held if zlib.crc32(r[2].encode("utf-8")) < cut else rest).append(r)
    return held, rest


def train(rest, english, n, fs, seed, l2):
    rng = random.Random(seed)
    sample = rng.sample(rest, n)
    src, tgt = [r[2] for r in sample], [r[3] for r in sample]
    other = english[: len(english) // 2]
    noisy = core.noise(src, tgt, other, seed=seed)
    x = core.features(fs, [(s, t) for _, _, _, s, t in noisy])
    y = np.array([k == "clean" for k, *_ in noisy], dtype=np.uint8)
    groups = np.array([b for _, b, *_ in noisy], dtype=np.int64)
    holdout = core.holdout_split(seed, groups, 0.25)
    c = core.train(fs, x, y, holdout, l2=l2, trees=TREES)
    p = c["prob"](x)
    kinds = np.array([k for k, *_ in noisy])
    return c, report(kinds[holdout == 1], p[holdout == 1])


def inject(held, seed):
    """inject_noise.py over the held-out pairs; rows as dicts."""
    rows = EVAL_CLEAN + sum(EVAL_SHARES.values())
    shares = dict.fromkeys(("duplicate", "very_long"), 0.0)
    shares.update({k: v / rows for k, v in EVAL_SHARES.items()})
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False, encoding="utf-8") as f:
        f.write("id\tdomain\tsrc\ttgt\n")
        for r in held:
            f.write("\t".join(r) + "\n")
        path = f.name
    try:
        cmd = [sys.executable, os.path.join(HERE, "inject_noise.py"), path, "--rows", str(rows),
               "--seed", str(seed)] + ["--share=%s=%.12g" % kv for kv in shares.items()]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    finally:
        os.unlink(path)
    return list(csv.DictReader(io.StringIO(out), delimiter="\t", quoting=csv.QUOTE_NONE))


def eval_set(held, english, seed):
    by_id = {r[0]: r for r in held}
    pairs = []
    for row in inject(held, seed):
        kind = row["noise"]
        if kind == "truncated":
            kind = "truncated_src" if row["src"] != by_id[row["origin"]][2] else "truncated_tgt"
        pairs.append((kind, row["src"], row["tgt"]))
    rng = random.Random(seed + 1)
    for _ in range(EXTRA):
        a, b = rng.sample(held, 2)
        pairs.append(("appended_tgt", a[2], a[3] + " " + b[3]))
    second = english[len(english) // 2:]
    for _ in range(EXTRA):
        a = rng.choice(held)
        pairs.append(("wrong_language (English)", a[2], rng.choice(second)))
    return pairs


def auc(pos, neg):
    """P(score of a clean pair > score of a noisy one), ties half."""
    s = np.concatenate([pos, neg])
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    r = ranks[: len(pos)].sum()
    return (r - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def report(kinds, p, threshold=0.5):
    clean = p[kinds == "clean"]
    removed_clean = int((clean < threshold).sum())
    lines = [("clean", len(clean), 100.0 * (clean >= threshold).mean(), None, None)]
    for k in sorted(set(kinds) - {"clean"}):
        q = p[kinds == k]
        rem = int((q < threshold).sum())
        prec = 100.0 * rem / (rem + removed_clean) if rem + removed_clean else float("nan")
        lines.append((k, len(q), 100.0 * rem / len(q), prec, auc(clean, q)))
    return lines


def table(lines, title):
    out = ["%s" % title, "| pairs | n | kept (clean) / removed (noise) | precision of removal | ROC AUC |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for k, n, share, prec, a in lines:
        out.append("| %s | %d | %.1f%% | %s | %s |" % (
            k, n, share, "" if prec is None else "%.1f%%" % prec, "" if a is None else "%.3f" % a))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=30000, help="clean training pairs")
    ap.add_argument("--holdout", type=float, default=0.06)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--langid", action="store_true", help="add CLD2 language ID (en, es) features")
    ap.add_argument("--l2", type=float, default=None, help="the penalty (default: the core's)")
    ap.add_argument("--classifier", choices=("trees", "logistic"), default="trees",
                    help="the core's boosted trees (the default) or its logistic regression")
    args = ap.parse_args()
    global TREES
    TREES = args.classifier == "trees"
    rows, english = read_corpora()
    held, rest = split(rows, args.holdout)
    mask = core.STRING_MASK
    if args.langid:
        mask |= 1 << core.FEATURES.index("langid_src") | 1 << core.FEATURES.index("langid_tgt")
    fs = core.feature_set(mask, "en" if args.langid else None, "es" if args.langid else None)
    print("corpora: %d pairs, %d held out, %d English sentences" % (len(rows), len(held), len(english)))
    c, synth = train(rest, english, args.train, fs, args.seed, args.l2)
    print("classifier %s: %d features, Platt a %.3f b %.3f" % (
        args.classifier, len(c["w"]), c["platt_a"], c["platt_b"]))
    if not TREES:
        for name, w in sorted(zip(core.feature_names(fs), c["w"]), key=lambda t: -abs(t[1])):
            print("  weight %-20s %+.3f" % (name, w))
    else:
        used = Counter(int(f) for f in c["feat"].ravel() if f >= 0)
        names = core.feature_names(fs)
        print("  splits per feature: " + ", ".join("%s %d" % (names[f], k) for f, k in used.most_common()))
    print(table(synth, "\nsynthetic held-out split (the core's own noise):"))
    pairs = eval_set(held, english, args.seed)
    x = core.features(fs, [(s, t) for _, s, t in pairs])
    p = c["prob"](x)
    kinds = np.array([k for k, _, _ in pairs])
    print(table(report(kinds, p), "\nheld-out pairs, inject_noise.py noise (+ appended, English targets):"))


if __name__ == "__main__":
    main()
