#!/usr/bin/env bash
# Integration tests: each test/integration/*.sh starts the throw-away clusters
# it needs (pg_virtualenv -t) and exits non-zero on failure.
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0 failed=0
for t in test/integration/*.sh; do
	[ -e "$t" ] || continue
	echo "== $t"
	if bash "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $t"; fi
done
echo "integration: $passed passed, $failed failed"
[ "$failed" = 0 ]
