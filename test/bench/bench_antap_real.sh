#!/usr/bin/env bash
# ANTAP on real data (paper 002, Sec. 4.3, Tables 2-5): a baseline
# transformer trained with corpq.train() on the shared en-es corpora, its
# teacher-forced accuracy per target token on the training set (avg(hit) over
# corpq.token_hits, as the paper measures on the training set), the CAV of the
# training set, then corpq.antap_train() on (token, CAV) -> accuracy with the
# 8:1:1 split.  Reports corpq.antap_eval() -- MSE, MAE, RMSE, R^2 of both
# states on every split (the paper: test R^2 0.36 to 0.88) -- the job's
# training time, and the SQL prediction rate of corpq.antap_predict() over
# every token with a CAV (and of cav_pool alone, the input pipeline).
#
# Scale: antap_lib.sh's ANTAP_* variables (full defaults: 20000 pairs,
# preset small, 4000 updates), plus ANTAP_MIN_COUNT (tokens seen fewer times in
# the training set get no accuracy: default 1, every token, as the paper) and
# ANTAP_OPTIONS (antap_train options, default '{"seed": 1}').  Quick run:
#   ANTAP_PAIRS=2000 ANTAP_TEST=200 ANTAP_MERGES=2000 ANTAP_PRESET=tiny ANTAP_STEPS=150 \
#     bash test/bench/bench_antap_real.sh
# Asserts nothing on time or accuracy.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -o max_worker_processes=16 -o shared_buffers=256MB
. "$CORPQ_ROOT/test/bench/antap_lib.sh"
ANTAP_MIN_COUNT=${ANTAP_MIN_COUNT:-1}
ANTAP_OPTIONS=${ANTAP_OPTIONS:-'{"seed": 1}'}

antap_load_pairs
antap_settings
antap_train_model base "SELECT * FROM train_pairs"
antap_accuracy base "SELECT * FROM train_pairs" acc
antap_cav "SELECT * FROM train_pairs" cav

job=$(q -c "SELECT corpq.antap_train('acc', 'SELECT t.token, c.c FROM cav c, corpq.cav_tokens(c.c) t',
                                     'SELECT token, CASE WHEN n >= $ANTAP_MIN_COUNT THEN accuracy END FROM acc',
                                     '$ANTAP_OPTIONS')")
[ "$(q -c "SELECT corpq.job_wait($job)")" = succeeded ] ||
	fail "antap_train: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"
log "antap_train (options $(q -c "SELECT options FROM corpq.antap_versions")):"
q -c "SELECT format('  %s tokens (split %s/%s/%s); skipped %s (%s without a CAV, %s without an accuracy); %s epochs, State I = epoch %s, early stop %s; %s s training',
             r->>'tokens', r->'state_i'->'train'->>'tokens', r->'state_i'->'valid'->>'tokens',
             r->'state_i'->'test'->>'tokens', r->>'skipped', r->>'without_cav', r->>'without_accuracy',
             r->>'epochs', r->>'best_epoch', r->>'early_stopped', r->>'training_seconds')
      FROM (SELECT result AS r FROM corpq.antap_versions) v"
log "accuracy targets: mean $(q -c "SELECT round(avg(accuracy)::numeric, 4) || ', stddev ' || round(stddev_pop(accuracy)::numeric, 4) FROM corpq.antap_tokens")"
log "corpq.antap_eval('acc') (paper, test: R^2 0.36 - 0.88, MAE 0.034 - 0.152):"
echo "  split | state | MSE | MAE | RMSE | R^2"
q -F ' | ' -c "SELECT split, state, round(mse::numeric, 5), round(mae::numeric, 4), round(rmse::numeric, 4), round(r2::numeric, 4)
               FROM corpq.antap_eval('acc')" | sed 's/^/  /'
log "test: R^2 State I $(q -c "SELECT round(r2::numeric, 4) FROM corpq.antap_eval('acc') WHERE split = 'test' AND state = 'I'"), State II $(q -c "SELECT round(r2::numeric, 4) FROM corpq.antap_eval('acc') WHERE split = 'test' AND state = 'II'"); MAE State I $(q -c "SELECT round(mae::numeric, 4) FROM corpq.antap_eval('acc') WHERE split = 'test' AND state = 'I'"), State II $(q -c "SELECT round(mae::numeric, 4) FROM corpq.antap_eval('acc') WHERE split = 'test' AND state = 'II'")"

# prediction rate in SQL, best of 3, against the input pipeline alone.
# rate EXPR [N]: over the first N tokens only (default all): cav_pool
# detoasts the whole CAV per call (0.1 s at 15 MB), so over every token it
# would take most of an hour for one figure.
rate() {
	q -c "DO \$\$DECLARE t0 timestamptz; best float8 := 1e9; n bigint;
	      BEGIN FOR i IN 1 .. 3 LOOP t0 := clock_timestamp();
	        SELECT count($1) INTO n FROM cav c, LATERAL (SELECT token FROM corpq.cav_tokens(c.c) ORDER BY token LIMIT ${2:-ALL}) t;
	        best := least(best, extract(epoch FROM clock_timestamp() - t0));
	      END LOOP; RAISE NOTICE '%', round((n / best)::numeric); END\$\$" 2>&1 | sed 's/.*NOTICE: *//'
}
grid=$(q -c "SELECT (config->>'pool_rows') || ', ' || (config->>'pool_cols') FROM corpq.antap_versions")
log "SQL over $(q -c "SELECT count(*) FROM cav c, corpq.cav_tokens(c.c) t") tokens, one backend:" \
	"antap_predict $(rate "corpq.antap_predict('acc', c.c, t.token)") tokens/s;" \
	"the input pipeline alone, cav_pool(c, token, $grid, true), $(rate "corpq.cav_pool(c.c, t.token, $grid, true)" 200) tokens/s (200 tokens)"
log "done"
