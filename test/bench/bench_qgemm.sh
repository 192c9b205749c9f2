#!/usr/bin/env bash
# Int8 GEMM evaluation (issue 30): oneDNN's int8 matmul (exactness on extreme
# inputs, speed) against corpq's qgemm, its float32 rowgemm and OpenBLAS
# sgemm, one thread each.  Builds test/bench/bench_qgemm.c with the kernel
# sources into a temporary directory; needs libdnnl-dev and libopenblas-dev.
# Not linked into the extension.  Takes about half a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -e /usr/include/oneapi/dnnl/dnnl.h ]; then
	echo "bench_qgemm: skipped, oneDNN is not installed (apt-get install libdnnl-dev)"
	exit 0
fi
gcc -std=gnu11 -O3 -march=native -ffp-contract=off -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -Iextension -I/usr/include/x86_64-linux-gnu/openblas-pthread \
	-o "$tmp/bench_qgemm" test/bench/bench_qgemm.c extension/nn/ops/qgemm*.c \
	extension/nn/ops/rowgemm*.c extension/common/cpu.c extension/common/interrupt.c \
	-ldnnl -lopenblas -lm
# one thread everywhere; OpenBLAS on the core the extension would choose
[ -x test/blas_core ] || make -s test/blas_core
core=$(test/blas_core)
[ -n "$core" ] && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
grep -m1 'model name' /proc/cpuinfo || true
echo "OpenBLAS core: ${OPENBLAS_CORETYPE:-(its own detection)}"
"$tmp/bench_qgemm"
