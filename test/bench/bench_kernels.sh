#!/usr/bin/env bash
# The inference kernels (row-independent float32, int8 with 8- and 7-bit
# weights) against OpenBLAS sgemm, one thread, on a `small` model's products
# at batch 1 and 64 (test/bench/bench_kernels.c).  Twice: OpenBLAS on the
# core the extension would choose, and on Haswell (its AVX2 kernels), so
# the row kernel's AVX2 variant meets an AVX2 sgemm on any x86 CPU.
# Builds into a temporary directory; takes about a minute.  Run it alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -std=gnu11 -O3 -march=native -ffp-contract=off -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -Iextension -I/usr/include/x86_64-linux-gnu/openblas-pthread \
	-o "$tmp/bench_kernels" test/bench/bench_kernels.c extension/nn/ops/qgemm*.c \
	extension/nn/ops/rowgemm*.c extension/common/cpu.c extension/common/interrupt.c \
	extension/common/parallel.c -lopenblas -lm -lpthread
[ -x test/blas_core ] || make -s test/blas_core
core=$(test/blas_core)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
grep -m1 'model name' /proc/cpuinfo || true
for c in ${core:-default} Haswell; do
	echo "== OpenBLAS core: $c"
	if [ "$c" = default ]; then "$tmp/bench_kernels" "$@"; else OPENBLAS_CORETYPE=$c "$tmp/bench_kernels" "$@"; fi
done
