#!/usr/bin/env bash
# pg_regress suite (test/regress/sql/, test/regress/expected/) on a throw-away cluster that touches no
# existing one: pg_virtualenv -t puts it in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
pg_virtualenv -t -o "max_worker_processes=16" -o "max_parallel_workers=8" \
	make installcheck || rc=$?
if [ $rc != 0 ] && [ -f regression.diffs ]; then
	head -c 20000 regression.diffs
fi
exit $rc
