#!/usr/bin/env bash
# Build a small real English-Spanish multi-domain parallel corpus from material
# Debian's own packages ship, into OUTDIR/parallel.tsv (id, domain, src, tgt):
#   bible  verse-aligned World English Bible / Reina-Valera 1909 (sword-text-*)
#   l10n   msgid/msgstr pairs of the Spanish gettext catalogs installed here
# Falls back to a generated synthetic corpus (OUTDIR/parallel.tsv, same shape)
# when those packages cannot be had, so the demo also works offline.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/corpus}
mkdir -p "$out"
py=/usr/bin/python3

if command -v mod2imp >/dev/null && [ "$(id -u)" = 0 ]; then
	for p in sword-text-web sword-text-sparv; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
			|| DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$p" >/dev/null 2>&1 || true
	done
fi

if "$py" "$here/make_corpus.py" --out "$out/parallel.tsv" "${@:2}"; then
	echo "corpus: real Debian-derived corpus in $out/parallel.tsv"
else
	echo "corpus: Debian sources unavailable; generating a synthetic corpus" >&2
	"$py" "$here/make_synthetic.py" --out "$out/parallel.tsv"
fi
"$py" - "$out/parallel.tsv" <<'PY'
import sys, collections
c = collections.Counter(l.split('\t')[1] for l in open(sys.argv[1], encoding='utf-8').readlines()[1:])
print('corpus: ' + ', '.join(f'{d} {n}' for d, n in sorted(c.items())))
PY
