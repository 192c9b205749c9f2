#!/usr/bin/env bash
# Build the core library and run the CAV benchmark (on the corpora test/lib.sh
# finds).
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s test/libcorpqcore.so
CORPQ_CORE_LIB="$PWD/test/libcorpqcore.so" /usr/bin/python3 test/bench/bench_cav.py "$@"
