# What bench_antap_real.sh and bench_antap_table7.sh share (source it after
# test/lib.sh, inside the cluster): the CAV paper's experimental set-up
# (paper 002, Sec. 4) on the shared corpora, at a scale set by the
# environment:
#
#   ANTAP_PAIRS      training pairs (default 20000)
#   ANTAP_TEST       held-out test pairs (default 1000)
#   ANTAP_MERGES     BPE merges per side (default 8000)
#   ANTAP_PRESET     transformer preset (default small)
#   ANTAP_STEPS      training updates of each translation model (default 4000)
#   ANTAP_MAX_TOKENS batch token budget (default 4096)
#   ANTAP_LMAX       CAV l_max (default 128)
#   ANTAP_SEED       seed of everything (default 1)
#
# The pairs: every parallel file, pairs of at most 40 words a side, in md5(id)
# order; the first ANTAP_TEST are the test set, the next ANTAP_PAIRS the
# training set.  Both sides are segmented with their own BPE model once, in
# SQL (columns s, t), and everything after that -- vocabularies, models,
# token_hits, CAVs -- works on the segmented text with whitespace tokens, so
# a subword is one token everywhere and a pseudo-token is one token too.

ANTAP_PAIRS=${ANTAP_PAIRS:-20000}
ANTAP_TEST=${ANTAP_TEST:-1000}
ANTAP_MERGES=${ANTAP_MERGES:-8000}
ANTAP_PRESET=${ANTAP_PRESET:-small}
ANTAP_STEPS=${ANTAP_STEPS:-4000}
ANTAP_MAX_TOKENS=${ANTAP_MAX_TOKENS:-4096}
ANTAP_LMAX=${ANTAP_LMAX:-128}
ANTAP_SEED=${ANTAP_SEED:-1}

antap_settings() {
	log "pairs $ANTAP_PAIRS (+ $ANTAP_TEST test), BPE $ANTAP_MERGES merges a side, preset $ANTAP_PRESET," \
		"$ANTAP_STEPS updates of $ANTAP_MAX_TOKENS tokens, CAV l_max $ANTAP_LMAX, seed $ANTAP_SEED"
	log "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
		"$(q -c 'SELECT corpq.blas_info()')"
}

# Tables pairs(id, domain, src, tgt, s, t, r) and views train_pairs, test_pairs.
antap_load_pairs() {
	local t0=$SECONDS
	corpq_corpora
	{
		echo "CREATE EXTENSION IF NOT EXISTS corpq;"
		echo "CREATE TABLE raw (id text, domain text, src text, tgt text);"
		corpq_copy_parallel raw
		cat <<SQL
CREATE TABLE pairs AS
SELECT id, split_part(domain, '/', 1) AS domain, src, tgt,
       row_number() OVER (ORDER BY md5(id)) AS r
  FROM raw
 WHERE array_length(regexp_split_to_array(trim(src), '\s+'), 1) <= 40
   AND array_length(regexp_split_to_array(trim(tgt), '\s+'), 1) <= 40;
DELETE FROM pairs WHERE r > $ANTAP_TEST + $ANTAP_PAIRS;
SELECT corpq.bpe_learn('antap_src', 'SELECT src FROM pairs WHERE r > $ANTAP_TEST', $ANTAP_MERGES);
SELECT corpq.bpe_learn('antap_tgt', 'SELECT tgt FROM pairs WHERE r > $ANTAP_TEST', $ANTAP_MERGES);
ALTER TABLE pairs ADD COLUMN s text, ADD COLUMN t text;
UPDATE pairs SET s = corpq.bpe_apply('antap_src', src), t = corpq.bpe_apply('antap_tgt', tgt);
CREATE VIEW train_pairs AS SELECT * FROM pairs WHERE r > $ANTAP_TEST;
CREATE VIEW test_pairs AS SELECT * FROM pairs WHERE r <= $ANTAP_TEST;
SQL
	} | q >/dev/null
	log "data: $(q -c "SELECT count(*) FILTER (WHERE r > $ANTAP_TEST) || ' training, ' || count(*) FILTER (WHERE r <= $ANTAP_TEST) || ' test pairs' FROM pairs"), segmented in $((SECONDS - t0)) s"
}

# antap_train_model NAME QUERY: vocabularies from QUERY's (s, t), a model of
# ANTAP_PRESET, ANTAP_STEPS updates on QUERY; the same budget for every call.
antap_train_model() {
	local name=$1 query=$2 job t0=$SECONDS
	q >/dev/null <<SQL
SELECT corpq.vocab_build('${name}_src', \$q\$SELECT s FROM ($query) x\$q\$);
SELECT corpq.vocab_build('${name}_tgt', \$q\$SELECT t FROM ($query) x\$q\$);
SELECT corpq.model_create('$name', '{"preset": "$ANTAP_PRESET"}', '${name}_src', '${name}_tgt', $ANTAP_SEED);
SQL
	job=$(q -c "SELECT corpq.train('$name', \$q\$SELECT s, t FROM ($query) x ORDER BY id\$q\$, NULL,
	            '{\"steps\": $ANTAP_STEPS, \"max_tokens\": $ANTAP_MAX_TOKENS, \"lr\": 0.001,
	              \"warmup\": $(((ANTAP_STEPS + 9) / 10)), \"seed\": $ANTAP_SEED, \"threads\": 1}')")
	[ "$(q -c "SELECT corpq.job_wait($job)")" = succeeded ] ||
		fail "training $name: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"
	log "model $name: $ANTAP_STEPS updates in $((SECONDS - t0)) s," \
		"last train loss $(q -c "SELECT round(train_loss::numeric, 3) FROM corpq.train_log WHERE job = $job AND train_loss IS NOT NULL ORDER BY step DESC LIMIT 1")"
}

# antap_accuracy MODEL QUERY TABLE: TABLE(token, accuracy, n) = avg(hit) of
# MODEL's teacher-forced argmax per gold target token over QUERY's (s, t).
antap_accuracy() {
	local t0=$SECONDS
	q >/dev/null <<SQL
CREATE TABLE $3 AS
SELECT h.token, avg(h.hit::int)::float8 AS accuracy, count(*) AS n
  FROM ($2) p, corpq.token_hits('$1', p.s, p.t) h GROUP BY h.token;
SQL
	log "accuracy of $1: $(q -c "SELECT count(*) || ' target tokens, token-weighted accuracy ' || round((sum(accuracy * n) / sum(n))::numeric, 4) FROM $3") ($((SECONDS - t0)) s)"
}

# antap_cav QUERY TABLE: TABLE(c) = the CAV of QUERY's (s, t).
antap_cav() {
	q >/dev/null <<SQL
CREATE TABLE $2 AS SELECT corpq.cav_accumulate(s, t, $ANTAP_LMAX) AS c FROM ($1) p;
SQL
	log "CAV $2: $(q -c "SELECT matrices || ' matrices, ' || source_tokens || ' + ' || target_tokens || ' rows, ' || pg_size_pretty(bytes) FROM $2, corpq.cav_stats(c)")"
}
