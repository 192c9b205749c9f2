#!/usr/bin/env bash
# The batched forward on 1 and 2 threads (docs/models.md, "Threads"): preset
# small, float32 and int8, 64 pairs of 20-40 tokens, the forward that splits
# only its products over the pool against the one shared out by pairs;
# wall and CPU time per batch and the joins per batch.  Builds
# test/bench/bench_forward.c with the core's sources into a temporary
# directory.  Not linked into the extension.  Run it alone: about a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -std=gnu11 -O3 -march=native -ffp-contract=off -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -Wno-missing-field-initializers -Iextension -Wl,--wrap=cq_parallel_run \
	-o "$tmp/bench_forward" test/bench/bench_forward.c \
	$(ls extension/common/*.c extension/nn/*/*.c | grep -v '^extension/nn/train/') -lopenblas -licuuc -lm -lpthread
grep -m1 'model name' /proc/cpuinfo || true
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
"$tmp/bench_forward" "${1:-10}"
