#!/usr/bin/env bash
# Mining quality of a trained encoder (issue 45's done-when): a `small`
# encoder trained with default options and "max_seconds" 600 on the shared
# en-es corpora minus a held-out part, then corpq.mine_pairs() over the
# held-out pairs' two sides shuffled apart: precision at 1 (the share of
# held-out sources whose mined target is their own translation), against a
# baseline mined with corpq's own lexicon scorer over every candidate pair:
# a lexicon trained on the same training pairs (lexicon_train, defaults and
# lowercase), each source's best target by corpq.align_score().
#
# Held out: --heldout pairs (2000) whose source and target each occur once in
# the corpora (no copy of either side is trained on), chosen by md5 of their
# position; 500 further pairs are the training's dev set; every other pair
# trains.  One joint vocabulary: BPE with --merges merges over both sides,
# --vocab tokens.  Also printed: precision at 1 by cosine alone (mine_pairs
# with k 1: the nearest target), mined pairs per domain, and the embedding
# rate of corpq.embed_rows() on the held-out sentences on 1 and 2 threads.
# With --classifier: a pair-quality classifier (docs/curation.md) trained on
# the training pairs with the encoder, that lexicon and the languages
# (en, es; max_pairs 5000, max_seconds 300), then mine_pairs with it
# (docs/embeddings.md): each source's 4 margin candidates judged, with
# min_quality 0 (one pair a source: precision at 1) and the default 0.5
# (the share kept, and the precision of what is kept), beside the margin's.
# --no-lexicon-baseline skips the all-pairs align_score baseline.
# Prints figures; asserts nothing.  Run it alone on the machine (about 20
# minutes: 10 of training, the lexicon baseline's 4 million align_score calls).
# Usage: bench_embed_mining.sh [--seconds 600] [--heldout 2000] [--merges 15000] [--vocab 16000]
#                              [--classifier] [--no-lexicon-baseline]
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o shared_buffers=256MB -- "$@"

seconds=600
heldout=2000
merges=15000
vocab=16000
classifier=0
lexicon_baseline=1
while [ $# -gt 0 ]; do
	case "$1" in
		--seconds) seconds=$2; shift 2 ;;
		--heldout) heldout=$2; shift 2 ;;
		--merges) merges=$2; shift 2 ;;
		--vocab) vocab=$2; shift 2 ;;
		--classifier) classifier=1; shift ;;
		--no-lexicon-baseline) lexicon_baseline=0; shift ;;
		*) fail "unknown argument $1" ;;
	esac
done

# seconds since $1 (date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# wait_job JOB: ERROR unless the job succeeds
wait_job() {
	q >/dev/null -c "SELECT corpq.job_wait($1)"
	[ "$(q -c "SELECT state FROM corpq.jobs WHERE id = $1")" = succeeded ] ||
		fail "job $1: $(q -c "SELECT state || ' ' || coalesce(error, '') FROM corpq.jobs WHERE id = $1")"
}

log "CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) cores, $(grep -o 'avx512_vnni\|avx_vnni\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION corpq;
CREATE TABLE raw (id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE pairs AS
SELECT row_number() OVER (ORDER BY md5(id))::bigint AS id, split_part(domain, '/', 1) AS domain, src, tgt,
       count(*) OVER (PARTITION BY src) AS n_src, count(*) OVER (PARTITION BY tgt) AS n_tgt
  FROM raw WHERE btrim(src) <> '' AND btrim(tgt) <> '';
CREATE TABLE heldout AS
SELECT id, domain, src, tgt FROM pairs WHERE n_src = 1 AND n_tgt = 1 ORDER BY id LIMIT $heldout;
CREATE TABLE rest AS
SELECT p.id, p.domain, p.src, p.tgt FROM pairs p
 WHERE NOT EXISTS (SELECT FROM heldout h WHERE h.id = p.id OR h.src = p.src OR h.tgt = p.tgt);
CREATE TABLE dev AS SELECT * FROM rest ORDER BY id DESC LIMIT 500;
CREATE TABLE train_pairs AS SELECT r.* FROM rest r WHERE NOT EXISTS (SELECT FROM dev d WHERE d.id = r.id);
ANALYZE;
SQL
log "pairs: $(q -c "SELECT count(*) FROM pairs") in the corpora; held out $(q -c "SELECT count(*) FROM heldout") ($(q -c "SELECT string_agg(domain || ' ' || n, ', ' ORDER BY domain) FROM (SELECT domain, count(*) AS n FROM heldout GROUP BY 1) d")), dev 500, training $(q -c "SELECT count(*) FROM train_pairs")"

t0=$(date +%s.%N)
q >/dev/null <<SQL
SELECT corpq.bpe_learn('joint', 'SELECT src FROM train_pairs UNION ALL SELECT tgt FROM train_pairs', $merges);
SELECT corpq.vocab_build('joint', 'SELECT src FROM train_pairs UNION ALL SELECT tgt FROM train_pairs', 'joint', $vocab);
SELECT corpq.model_create('enc', '{"preset": "small", "kind": "encoder"}', 'joint', 'joint', 1);
SQL
log "joint BPE ($merges merges) and vocabulary ($vocab tokens): $(since "$t0") s"

t0=$(date +%s.%N)
job=$(q -c "SELECT corpq.train('enc', 'SELECT src, tgt, domain FROM train_pairs ORDER BY id',
                               'SELECT src, tgt, domain FROM dev ORDER BY id', '{\"max_seconds\": $seconds}')")
wait_job "$job"
log "training: $(since "$t0") s; $(q -c "SELECT format('%s updates, %s pairs, dev P@1 %s (best), model %s', result->>'steps', result->>'pairs', round(1 - (result->'dev'->>'best_loss')::numeric, 4), result->>'model') FROM corpq.jobs WHERE id = $job")"

# p_at_1 OPTIONS: precision at 1 of mine_pairs over the held-out sides, and its seconds
p_at_1() {
	local t0 p
	t0=$(date +%s.%N)
	p=$(q -c "SET work_mem = '512MB'" -c "SET corpq.threads = 2" -c "
		SELECT round(count(*) FILTER (WHERE src_id = tgt_id)::numeric / (SELECT count(*) FROM heldout), 4)
		  FROM corpq.mine_pairs('enc', 'SELECT id, src FROM heldout', 'SELECT id, tgt FROM heldout', '$1')")
	echo "$p $(since "$t0")"
}
read -r p_margin s_margin < <(p_at_1 '{}')
read -r p_cos s_cos < <(p_at_1 '{"k": 1}')
read -r p_mutual s_mutual < <(p_at_1 '{"mutual": true}')
q >/dev/null -c "SET work_mem = '512MB'" -c "CREATE TABLE mined AS SELECT * FROM corpq.mine_pairs('enc', 'SELECT id, src FROM heldout', 'SELECT id, tgt FROM heldout')"
by_domain=$(q -c "SELECT string_agg(format('%s %s', domain, p), ', ' ORDER BY domain) FROM (
	SELECT h.domain, round(avg((m.tgt_id = h.id)::int), 3) AS p FROM heldout h LEFT JOIN mined m ON m.src_id = h.id GROUP BY 1) d")

# the lexicon baseline: each source's best target by align_score over all candidates
t0=$(date +%s.%N)
job=$(q -c "SELECT corpq.lexicon_train('lx', 'SELECT src, tgt FROM train_pairs ORDER BY id', '{\"lowercase\": true}')")
wait_job "$job"
s_lex_train=$(since "$t0")
p_lex=skipped
s_lex=-
if [ "$lexicon_baseline" = 1 ]; then
t0=$(date +%s.%N)
p_lex=$(q -c "SET min_parallel_table_scan_size = 0" -c "SET parallel_setup_cost = 0" -c "SET work_mem = '64MB'" -c "
	CREATE TABLE lex_scores AS
	SELECT s.id AS src_id, t.id AS tgt_id, corpq.align_score('lx', s.src, t.tgt) AS score
	  FROM heldout s CROSS JOIN heldout t" -c "
	SELECT round(count(*) FILTER (WHERE src_id = tgt_id)::numeric / (SELECT count(*) FROM heldout), 4)
	  FROM (SELECT DISTINCT ON (src_id) src_id, tgt_id FROM lex_scores
	         ORDER BY src_id, score DESC NULLS LAST, tgt_id) b")
s_lex=$(since "$t0")
fi

# the classifier's re-ranking: precision at 1 (min_quality 0), and at the
# default min_quality the share of sources kept and the precision of the kept
if [ "$classifier" = 1 ]; then
	t0=$(date +%s.%N)
	job=$(q -c "SELECT corpq.classifier_train('pq', 'SELECT src, tgt FROM train_pairs ORDER BY id',
		'{\"src_lang\": \"en\", \"tgt_lang\": \"es\", \"encoder\": \"enc\", \"lexicon\": \"lx\",
		  \"max_pairs\": 5000, \"max_seconds\": 300}')")
	wait_job "$job"
	s_pq_train=$(since "$t0")
	read -r p_pq s_pq < <(p_at_1 '{"classifier": "pq", "min_quality": 0}')
	t0=$(date +%s.%N)
	read -r kept_pq prec_pq < <(q -c "SET work_mem = '512MB'" -c "SET corpq.threads = 2" -F ' ' -A -c "
		SELECT round(count(*)::numeric / (SELECT count(*) FROM heldout), 4),
		       round(avg((src_id = tgt_id)::int), 4)
		  FROM corpq.mine_pairs('enc', 'SELECT id, src FROM heldout', 'SELECT id, tgt FROM heldout',
		                        '{\"classifier\": \"pq\"}')")
	s_pq_kept=$(since "$t0")
	read -r kept_m prec_m < <(q -F ' ' -A -c "
		SELECT round(count(*) FILTER (WHERE margin >= 1.0)::numeric / (SELECT count(*) FROM heldout), 4),
		       round(avg((src_id = tgt_id)::int) FILTER (WHERE margin >= 1.0), 4) FROM mined")
fi

# embedding rate: embed_rows over the held-out sentences (both sides), 1 and 2 threads
rate() {
	local t0 n
	t0=$(date +%s.%N)
	n=$(q -c "SET corpq.threads = $1" -c "SELECT count(*) FROM corpq.embed_rows('enc',
		'SELECT id, src FROM heldout UNION ALL SELECT -id, tgt FROM heldout')")
	awk -v n="$n" -v s="$(since "$t0")" 'BEGIN { printf "%.0f", n / s }'
}
q >/dev/null -c "SELECT count(*) FROM corpq.embed_rows('enc', 'SELECT id, src FROM heldout LIMIT 10')"
r1=$(rate 1)
r2=$(rate 2)

n=$(q -c "SELECT count(*) FROM heldout")
printf '\n| mined from %s held-out pairs, sides shuffled apart | precision at 1 | seconds |\n| --- | --- | --- |\n' "$n"
printf '| mine_pairs, margin over k = 4 (the default) | %s | %s |\n' "$p_margin" "$s_margin"
printf '| mine_pairs, "mutual": true (share of all sources kept and right) | %s | %s |\n' "$p_mutual" "$s_mutual"
printf '| mine_pairs, k = 1 (the nearest target by cosine) | %s | %s |\n' "$p_cos" "$s_cos"
printf '| lexicon baseline: best align_score over all %s candidates | %s | %s (lexicon training %s) |\n' "$((n * n))" "$p_lex" "$s_lex" "$s_lex_train"
if [ "$classifier" = 1 ]; then
	printf '| mine_pairs + classifier (4 candidates judged, min_quality 0) | %s | %s (classifier training %s) |\n' "$p_pq" "$s_pq" "$s_pq_train"
	printf '\n| mined pairs kept | share of sources kept | precision of the kept |\n| --- | --- | --- |\n'
	printf '| mine_pairs + classifier, min_quality 0.5 (the default) | %s | %s |\n' "$kept_pq" "$prec_pq"
	printf '| mine_pairs, margin >= 1.0 | %s | %s |\n' "$kept_m" "$prec_m"
fi
log "mine_pairs (margin) by domain: $by_domain"
log "embed_rows over $((2 * n)) held-out sentences: $r1 sentences/s on 1 thread, $r2 on 2 ($(awk -v a="$r1" -v b="$r2" 'BEGIN { printf "%.2f", b / a }')x)"
