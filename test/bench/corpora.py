"""The corpora a Python benchmark reads, found by test/lib.sh (the one place
that knows where they are: $CORPQ_CORPORA, ../shared/corpora next to the
clone, or the corpus test/data/make-corpus.sh builds).

    import corpora
    directory, parallel = corpora.find()

parallel lists the parallel TSV files (id, domain, src, tgt, a header line);
which corpora were used is said on stderr.
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
