"""The rule filters as OpusFilter runs them: one Python process, line by line
(test/ref/opusfilter_rules.py, written from OpusFilter's definitions), over
the first N pairs of the corpora test/lib.sh finds -- the baseline of
bench_filters.sh.

    bench_filters.py SPEC_JSON N

Prints one line "python: <pairs> pairs <seconds> s" and, per filter of the
spec, "rejected <label> <count>" for the cross-check against corpq.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpora  # noqa: E402
import opusfilter_rules as ref  # noqa: E402


def pairs(files, n):
    seen = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            next(f)
            for line in f:
                if seen == n:
                    return
                cols = line.rstrip("\n").split("\t")
                yield cols[2], cols[3]
                seen += 1


def main():
    spec, n = json.loads(sys.argv[1]), int(sys.argv[2])
    _, files = corpora.find()
    labels = [f.get("label", f["name"]) for f in spec]
    rejected = dict.fromkeys(labels + ["all"], 0)
    count = 0
    t0 = time.process_time()
    for src, tgt in pairs(files, n):
        any_rejected = False
        for f, label in zip(spec, labels):
            if not ref.keep(f, src, tgt):
                rejected[label] += 1
                any_rejected = True
        rejected["all"] += any_rejected
        count += 1
    seconds = time.process_time() - t0
    print("python: %d pairs %.3f s" % (count, seconds))
    for label, r in rejected.items():
        print("rejected %s %d" % (label, r))


if __name__ == "__main__":
    main()
