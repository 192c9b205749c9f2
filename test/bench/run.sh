#!/usr/bin/env bash
# Run every benchmark (make bench).  Each prints its own figures and ratios
# against a reference measured in the same run; none asserts on time.
# Benchmarks on real data read the corpora test/lib.sh finds (see docs/benchmarks.md, Corpora).
set -uo pipefail
cd "$(dirname "$0")"
for b in bench_*.sh bench_*.py; do
	[ -e "$b" ] || continue
	echo "=== $b"
	case "$b" in
		*.py) /usr/bin/python3 "$b" ;;
		*) bash "$b" ;;
	esac
done
