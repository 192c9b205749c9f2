#!/usr/bin/env bash
# Curation quality in SQL (issue 52): the pair-quality classifier with each
# feature set against the rules, the manual recipe and OpusFilter's
# logistic-regression approach, per noise type, on noise from a generator
# the classifier never trains on.  What is measured and how:
# test/bench/bench_curation.py.  Counts, not timings: runs anywhere.
#   bash test/bench/bench_curation.sh [--lexicon] [--encoder-seconds N] [--train N]
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -- "$@"
py=${PYTHON:-/usr/bin/python3}
"$py" -c "import sklearn" 2>/dev/null || fail "needs scikit-learn (python3-sklearn): bash test/deps.sh"
make -s test/libcorpqcore.so >/dev/null
q -c "CREATE EXTENSION IF NOT EXISTS corpq" >/dev/null
"$py" test/bench/bench_curation.py "$@"
