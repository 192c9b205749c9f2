#!/usr/bin/env bash
# Word-alignment benchmark on the en-es corpora (test/lib.sh finds them).
# Builds test/bench/bench_align.c against the core into a temporary
# directory and runs it; when FAST_ALIGN names the authors' fast_align binary
# (built by you, outside the repository), also times it on the same
# tokenised bitext, single-threaded, with the same options (-d -o), and
# compares its alignments with the core's reproduction of it; with its atools
# next to it (or ATOOLS), also compares grow-diag-final-and on real links.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
pairs=${ALIGN_BENCH_PAIRS:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -std=gnu11 -O3 -march=native -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -Iextension -o "$tmp/bench_align" test/bench/bench_align.c \
	extension/common/mem.c extension/common/error.c extension/align/*.c -lm
"$tmp/bench_align" -n "$pairs" -b "$tmp/bitext" -a "$tmp/core.al" "${CORPQ_PARALLEL[@]}" | tee "$tmp/core.out"
if [ -n "${FAST_ALIGN:-}" ] && [ -x "$FAST_ALIGN" ]; then
	start=$(date +%s.%N)
	OMP_NUM_THREADS=1 "$FAST_ALIGN" -i "$tmp/bitext" -d -o > "$tmp/fa.al" 2> "$tmp/fa.err"
	end=$(date +%s.%N)
	/usr/bin/python3 - "$tmp" "$start" "$end" <<'PY'
import re, sys
tmp, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
fa_s = end - start
out = open(f"{tmp}/core.out").read()
core_s = float(re.search(r"end to end .*?: ([0-9.]+) s", out).group(1))
core_tension = re.findall(r"pass \d: .*? tension ([0-9.]+)", out.split("authors' tension update")[1])
err = open(f"{tmp}/fa.err").read()
fa_tension = re.findall(r"final tension: ([0-9.]+)", err)
fa_ll = re.findall(r"log_e likelihood: (\S+)", err)
a = [set(l.split()) for l in open(f"{tmp}/fa.al")]
b = [set(l.split()) for l in open(f"{tmp}/core.al")]
common = sum(len(x & y) for x, y in zip(a, b))
na, nb = sum(map(len, a)), sum(map(len, b))
print(f"authors' fast_align -d -o, 1 thread: {fa_s:.2f} s end to end (5 iterations incl. reading); "
      f"core reproduction: {core_s:.2f} s -> core is {fa_s / core_s:.1f}x faster")
print(f"  tension after passes 2-4: fast_align {fa_tension[:3]}, core {core_tension[1:4]}")
print(f"  fast_align log-likelihood per pass: {fa_ll[:4]}")
print(f"  alignments: {na} vs {nb} links, {common} common (F1 {2 * common / (na + nb):.5f}), "
      f"identical pairs {sum(x == y for x, y in zip(a, b))}/{len(a)}")
PY
	atools=${ATOOLS:-$(dirname "$FAST_ALIGN")/atools}
	if [ -x "$atools" ]; then
		# their symmetriser on their two directions vs the core's on the same links
		OMP_NUM_THREADS=1 "$FAST_ALIGN" -i "$tmp/bitext" -d -o -r > "$tmp/fa.rev.al" 2> /dev/null
		"$atools" -i "$tmp/fa.al" -j "$tmp/fa.rev.al" -c grow-diag-final-and > "$tmp/fa.gdfa"
		CORPQ_CORE_LIB=${CORPQ_CORE_LIB:-$PWD/test/libcorpqcore.so} \
		/usr/bin/python3 - "$tmp" <<'PY'
import sys
sys.path.insert(0, "test/ref")
import test_align_common as A
tmp = sys.argv[1]
links = lambda line: [tuple(map(int, x.split("-"))) for x in line.split()]
bad = n = 0
with open(f"{tmp}/bitext") as bt, open(f"{tmp}/fa.al") as f, open(f"{tmp}/fa.rev.al") as r, \
        open(f"{tmp}/fa.gdfa") as g:
    for line, lf, lr, lg in zip(bt, f, r, g):
        src, tgt = line.split(" ||| ")
        ours = A.core_symmetrize("grow-diag-final-and", len(src.split()), len(tgt.split()),
                                 links(lf), links(lr))
        bad += ours != sorted(links(lg))
        n += 1
print(f"grow-diag-final-and of fast_align's two directions: core vs atools differ on {bad} of {n} pairs")
PY
	fi
else
	echo "bench_align: set FAST_ALIGN=/path/to/fast_align to time the authors' binary on the same data"
fi
