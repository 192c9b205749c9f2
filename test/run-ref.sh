#!/usr/bin/env bash
# Run the reference checks test/ref/test_*.py (core vs PyTorch, NLTK or a
# straightforward Python implementation).  Each script exits non-zero on failure.
set -uo pipefail
py=${1:-/usr/bin/python3}
cd "$(dirname "$0")/.."
passed=0 failed=0
for t in test/ref/test_*.py; do
	[ -e "$t" ] || continue
	echo "== $t"
	if CORPQ_CORE_LIB="$PWD/test/libcorpqcore.so" "$py" "$t"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1)); echo "FAILED: $t"
	fi
done
echo "refcheck: $passed passed, $failed failed"
[ "$failed" = 0 ]
