#!/usr/bin/env bash
# What a segmenter costs per query (docs/models.md, "WordPiece segmenters
# are shared too"; issue 53, item 4): a model session, and every SQL
# function that segments, loads its segmenter from the catalog once per
# query.  For each segmenter this prints, over fresh connections (corpq
# preloaded), the median time of one query that loads it and segments one
# short sentence, and the backend's peak memory (VmHWM) growth over the
# connection's start:
#   - WordPiece models of 501,153 tokens (LaBSE's count) and 30,000
#     (BERT-base's), through bpe_apply (always a private copy), and through
#     embed() of a tiny encoder whose vocabulary segments with it, with the
#     shared cache off and on (on: the segmenter and token table attached);
#   - BPE models of 32,000 and 64,000 merges (bpe_apply: private);
#   - SentencePiece models of 32,000 pieces and, unless --quick, 250,000
#     (unigram, trained by Debian's spm_train on synthetic words; bpe_apply:
#     private).
# The synthetic vocabularies have realistic sizes, not realistic tokens.
#
#   bench_segmenter_load.sh           every size above
#   bench_segmenter_load.sh --quick   60,000 WordPiece tokens, 32,000 merges,
#                                     32,000 pieces: a few minutes
#   WP_SIZES, BPE_SIZES, SPM_SIZES    (environment) the sizes to take instead,
#                                     space-separated ("" skips that kind)
#
# On a shared machine the times are orders of magnitude, not figures to
# compare across runs.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

WP_SIZES_ENV=${WP_SIZES-}
BPE_SIZES_ENV=${BPE_SIZES-}
SPM_SIZES_ENV=${SPM_SIZES-}
[ -n "${WP_SIZES+x}" ] || unset WP_SIZES_ENV
[ -n "${BPE_SIZES+x}" ] || unset BPE_SIZES_ENV
[ -n "${SPM_SIZES+x}" ] || unset SPM_SIZES_ENV
QUICK=0
for a in "$@"; do
	case "$a" in
	--quick) QUICK=1 ;;
	*) echo "usage: $0 [--quick]" >&2; exit 2 ;;
	esac
done
corpq_in_cluster -o shared_preload_libraries=corpq -- "$@"

if [ "$QUICK" = 1 ]; then
	WP_SIZES="60000"
	BPE_SIZES="32000"
	SPM_SIZES="32000"
else
	WP_SIZES="30000 501153"
	BPE_SIZES="32000 64000"
	SPM_SIZES="32000 250000"
fi
WP_SIZES=${WP_SIZES_ENV-$WP_SIZES}
BPE_SIZES=${BPE_SIZES_ENV-$BPE_SIZES}
SPM_SIZES=${SPM_SIZES_ENV-$SPM_SIZES}
RUNS=5
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
-- the backend's peak and current resident memory, in kB (superuser: pg_read_file of /proc)
CREATE FUNCTION vm(field text) RETURNS bigint LANGUAGE sql AS $$
  SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), field || ':\s+(\d+)'))[1]::bigint $$;
SQL

# measure LABEL SQL [SETTING]: RUNS fresh connections each run SQL once; the
# median seconds of the query and the median VmHWM growth over the connection's start
measure() {
	local label=$1 sql=$2 set=${3:-} secs=() kbs=() out
	for _ in $(seq $RUNS); do
		out=$(q <<SQL | tail -1
$set
SELECT clock_timestamp() AS t0, vm('VmHWM') AS h0 \gset
$sql;
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) || ' ' || (vm('VmHWM') - :h0);
SQL
		)
		secs+=("${out% *}")
		kbs+=("${out#* }")
	done
	printf '%-52s %8.3f s  %8.1f MB\n' "$label" \
		"$(printf '%s\n' "${secs[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')" \
		"$(printf '%s\n' "${kbs[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)] / 1024}')"
}

echo "segmenter                                            query      peak memory growth"
for n in $WP_SIZES; do
	q >/dev/null <<SQL
SELECT corpq.wordpiece_import('wp$n', (SELECT string_agg(t, E'\n' ORDER BY o) FROM (
         SELECT unnest(ARRAY['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'house', 'is', 'small', '.']) AS t, 0 AS o
         UNION ALL SELECT CASE WHEN g % 3 = 0 THEN '##' ELSE '' END || 'p' || g, g FROM generate_series(1, $n - 10) g) v),
       '{"do_lower_case": true}');
SELECT corpq.vocab_build('wv$n', 'SELECT ''the house is small . p1 p2 p4'' UNION ALL SELECT ''p7 p8''', 'wp$n');
SELECT corpq.model_create('we$n', '{"preset": "tiny", "kind": "encoder", "d_model": 32, "heads": 2,
                                    "ffn_dim": 64, "encoder_layers": 1, "max_positions": 32}', 'wv$n', 'wv$n', 1);
SQL
	measure "WordPiece $n tokens, bpe_apply (private)" "SELECT corpq.bpe_apply('wp$n', 'The house is small.')"
	measure "WordPiece $n tokens, embed(), sharing off" "SELECT corpq.embed('we$n', 'The house is small.') IS NOT NULL" \
		"SET corpq.shared_model_cache_mb = 0;"
	# a connection publishes the copies first; the measured ones attach
	q -c "SELECT corpq.embed('we$n', 'The house is small.') IS NOT NULL" >/dev/null
	r=$(q -c "SELECT count(*) FROM corpq.shared_vocab_cache() WHERE vocabulary = 'wp$n' AND kind = 'wordpiece'")
	[ "$r" = 1 ] || fail "wp$n is not shared"
	measure "WordPiece $n tokens, embed(), sharing on" "SELECT corpq.embed('we$n', 'The house is small.') IS NOT NULL"
done

for n in $BPE_SIZES; do
	# merges of distinct two-letter symbols into longer ones, as a learned model's are
	q -c "SELECT corpq.bpe_import('bpe$n', E'#version: 0.2\n' || (SELECT string_agg(
	        chr(97 + g % 26) || chr(97 + g / 26 % 26) || (g / 676) || ' ' || chr(97 + g * 7 % 26) || (g % 97) || '</w>', E'\n')
	        FROM generate_series(1, $n) g))" >/dev/null
	measure "BPE $n merges, bpe_apply (private)" "SELECT corpq.bpe_apply('bpe$n', 'the house is small')"
done

if command -v spm_train >/dev/null; then
	for n in $SPM_SIZES; do
		# words of random letters: enough distinct pieces for the vocabulary
		/usr/bin/python3 - "$work/spm$n.txt" "$n" <<'PY'
import random, sys
random.seed(1)
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    for _ in range(max(20000, n // 2)):
        f.write(" ".join("".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(3, 9)))
                         for _ in range(12)) + "\n")
PY
		spm_train --input="$work/spm$n.txt" --model_prefix="$work/spm$n" --vocab_size="$n" \
			--model_type=unigram --hard_vocab_limit=false --num_threads=2 --minloglevel=2 >/dev/null 2>&1 ||
			fail "spm_train $n"
		chmod 644 "$work/spm$n.model"
		pieces=$(q -c "SELECT corpq.spm_import('spm$n', pg_read_binary_file('$work/spm$n.model'))")
		measure "SentencePiece $pieces pieces, bpe_apply (private)" "SELECT corpq.bpe_apply('spm$n', 'the house is small')"
	done
else
	log "spm_train not installed: SentencePiece skipped"
fi
log "done ($(nproc) CPUs; $(uname -r)); a shared machine gives orders of magnitude"
