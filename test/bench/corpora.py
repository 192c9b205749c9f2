"""The corpora a Python benchmark reads, found by test/lib.sh (the one place
that knows where they are: $CORPQ_CORPORA, ../shared/corpora next to the
clone, or the corpus test/data/make-corpus.sh builds).

    import corpora
    directory, parallel = corpora.find()

parallel lists the parallel TSV files (id, domain, src, tgt, a header line);
which corpora were used is said on stderr.

    corpora.sample(n, columns)

up to n rows spread evenly over each parallel file: the given columns of
each, in one list ([] when there are no corpora).
"""

import os
import subprocess
import sys

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib.sh")


def find():
    env = dict(os.environ, CORPQ_TEST_NAME=os.path.basename(sys.argv[0]).removesuffix(".py"))
    run = subprocess.run(
        ["bash", "-c", '. "$1" && corpq_corpora && printf "%s\\n" "$CORPQ_CORPORA" "${CORPQ_PARALLEL[@]}"',
         "corpora", LIB],
        env=env, stdout=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(1)             # lib.sh said why
    out = run.stdout.splitlines()
    return out[0], out[1:]


def sample(n, columns):
    try:
        files = find()[1]
    except SystemExit:
        return []
    lines = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            rows = f.read().split("\n")[1:]
        step = max(1, len(rows) // n)
        for row in rows[::step][:n]:
            parts = row.split("\t")
            if len(parts) == 4:
                lines += [parts[c] for c in columns]
    return lines
