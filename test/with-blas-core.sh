#!/usr/bin/env bash
# with-blas-core.sh COMMAND...: run COMMAND with OPENBLAS_CORETYPE chosen as
# the extension chooses it (extension/common/cpu.c, through test/blas_core):
# the caller's OPENBLAS_CORETYPE if set (refused, with the reason, when corpq
# does not know it or this CPU cannot run it), else the core for this CPU's
# features.  The unit tests, reference checks and benchmarks start under it,
# so that they, PyTorch and test/libcorpqcore.so run the extension's kernels.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$here/blas_core" ] || make -s -C "$here/.." test/blas_core
core=$("$here/blas_core")
if [ -n "$core" ]; then
	export OPENBLAS_CORETYPE=$core
fi
exec "$@"
