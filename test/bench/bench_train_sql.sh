#!/usr/bin/env bash
# Benchmark of corpq.train() on real en-es pairs (../shared/corpora: bible,
# l10n, ddtp): preset small, BPE vocabularies of 8000 per side, one worker,
# one OpenBLAS thread, max_tokens 4096, for a wall-clock budget
# (BENCH_SECONDS, default 900; BENCH_MAX_TOKENS, BENCH_LR, BENCH_WARMUP
# override 4096, 0.001, 60).  Reports:
#   - dev perplexity per domain (and the unigram baseline of the same dev
#     set, from training counts in SQL) at every validation;
#   - ROC AUC per domain of sent_prob: held-out pairs vs the same sources
#     with another held-out pair's target of the same domain;
#   - tokens/s: the job overall (training wall time incl. log rows,
#     validation and checkpoints), the core's own steps (train_log), the
#     worker's CPU time; the glue overhead is their difference;
#   - the worker's peak RSS (job result).
# Asserts nothing on time.  Usage: bench_train_sql.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
corpq_corpora
# shellcheck disable=SC2086 # BENCH_PG_OPTS: more pg_virtualenv options, split
corpq_in_cluster -o max_worker_processes=16 -o shared_buffers=256MB ${BENCH_PG_OPTS:-} -- "$@"
seconds=${BENCH_SECONDS:-900}
t0=$(date +%s)

q >/dev/null <<SQL
-- up to 50 words a side; split by a hash of the id: 300 dev and 300 test pairs per domain
$(ranked_pairs_sql 50)
CREATE VIEW train_set AS SELECT src, tgt, domain FROM pairs WHERE r > 600;
CREATE VIEW dev_set AS SELECT src, tgt, domain FROM pairs WHERE r <= 300;
CREATE TABLE test_set AS SELECT id, domain, src, tgt, r FROM pairs WHERE r > 300 AND r <= 600;
SELECT corpq.bpe_learn('b_en', 'SELECT src FROM train_set', 7500);
SELECT corpq.bpe_learn('b_es', 'SELECT tgt FROM train_set', 7500);
SELECT corpq.vocab_build('v_en', 'SELECT src FROM train_set', 'b_en', 8000);
SELECT corpq.vocab_build('v_es', 'SELECT tgt FROM train_set', 'b_es', 8000);
SELECT corpq.model_create('small', '{"preset": "small"}', 'v_en', 'v_es', 1);
SQL
echo "bench_train_sql: data, BPE and vocabularies in $(( $(date +%s) - t0 )) s; pairs per domain (train/dev/test):"
q -c "SELECT domain, count(*) FILTER (WHERE r > 600), count(*) FILTER (WHERE r <= 300),
             count(*) FILTER (WHERE r > 300 AND r <= 600) FROM pairs GROUP BY 1 ORDER BY 1"

opts="{\"max_seconds\": $seconds, \"max_tokens\": ${BENCH_MAX_TOKENS:-4096}, \"lr\": ${BENCH_LR:-0.001}, \"warmup\": ${BENCH_WARMUP:-60}, \"threads\": 1,
       \"validate_every\": 50, \"checkpoint_every\": 100, \"seed\": 1}"
job=$(q -c "SELECT corpq.train('small', 'SELECT src, tgt, domain FROM train_set ORDER BY src, tgt',
                               'SELECT src, tgt, domain FROM dev_set ORDER BY src, tgt', '$opts')")
echo "bench_train_sql: job $job, options $opts"
# sample the worker's CPU time (utime + stime, clock ticks) while it runs
tck=$(getconf CLK_TCK)
cpu=0
pid=
while [ "$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")" != succeeded ]; do
	st=$(q -c "SELECT state FROM corpq.jobs WHERE id = $job")
	case $st in failed|cancelled) echo "bench_train_sql: job $st: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"; exit 1;; esac
	pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
	if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
		c=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
		[ "$c" -gt "$cpu" ] && cpu=$c
	fi
	sleep 2
done

echo "bench_train_sql: validations (dev ppl per domain):"
q -c "SELECT step, round(epoch::numeric, 3) AS epoch, round(train_loss::numeric, 3) AS train_loss,
             round(dev_ppl::numeric, 1) AS dev_ppl,
             (SELECT string_agg(k || ' ' || round((v ->> 'ppl')::numeric, 1), ', ' ORDER BY k) FROM jsonb_each(dev) d(k, v)) AS per_domain
        FROM corpq.train_log WHERE job = $job AND dev IS NOT NULL ORDER BY step"
echo "bench_train_sql: unigram baseline perplexity of the dev targets (training counts, BPE tokens + </s>):"
q -c "WITH tr AS (SELECT t FROM train_set, unnest(corpq.bpe_tokens('b_es', tgt)) t UNION ALL SELECT '</s>' FROM train_set),
          cnt AS (SELECT t, count(*) c FROM tr GROUP BY t), n AS (SELECT sum(c) n FROM cnt),
          dv AS (SELECT domain, t FROM dev_set, unnest(corpq.bpe_tokens('b_es', tgt)) t UNION ALL SELECT domain, '</s>' FROM dev_set)
     SELECT domain, round(exp(-avg(ln(coalesce(c, 1)::float8 / n)))::numeric, 1) FROM dv LEFT JOIN cnt USING (t), n GROUP BY 1 ORDER BY 1"

echo "bench_train_sql: job result:"
q -c "SELECT jsonb_pretty(result - 'dev') FROM corpq.jobs WHERE id = $job"
q -c "SELECT 'dev final: ' || (result -> 'dev' ->> 'final_ppl') || ' ppl, best ' || (result -> 'dev' ->> 'best_ppl') FROM corpq.jobs WHERE id = $job"
q -c "SELECT 'core steps (train_log): ' || round((sum(tokens) / sum(tokens / tokens_per_s))::numeric) || ' tok/s over ' || count(*) || ' updates; job overall: '
             || round(((result ->> 'tokens')::float8 / (result ->> 'training_seconds')::float8)::numeric) || ' tok/s of training wall time, '
             || round(((result ->> 'tokens')::float8 / (result ->> 'seconds')::float8)::numeric) || ' tok/s of job wall time (reading and encoding included)'
        FROM corpq.train_log l, corpq.jobs j WHERE l.job = $job AND j.id = $job GROUP BY result"
q -c "SELECT 'worker CPU: ' || round(($cpu / $tck.0)::numeric, 1) || ' s (last sample), '
             || round(((result ->> 'tokens')::float8 / ($cpu / $tck.0))::numeric) || ' tok/s of CPU time'
        FROM corpq.jobs WHERE id = $job"

echo "bench_train_sql: sent_prob ROC AUC per domain (held-out pairs vs another test pair's target, same domain):"
q <<SQL
CREATE TEMP TABLE sc AS
SELECT t.domain, true AS pos, corpq.sent_prob('small', t.src, t.tgt) AS s FROM test_set t
UNION ALL
SELECT t.domain, false, corpq.sent_prob('small', t.src, u.tgt)
  FROM test_set t JOIN test_set u ON u.domain = t.domain AND u.r = CASE WHEN t.r = 600 THEN 301 ELSE t.r + 1 END;
SELECT a.domain, round(((count(*) FILTER (WHERE a.s > b.s) + 0.5 * count(*) FILTER (WHERE a.s = b.s))::float8 / count(*))::numeric, 4) AS auc
  FROM sc a JOIN sc b ON a.domain = b.domain AND a.pos AND NOT b.pos GROUP BY 1 ORDER BY 1;
SELECT 'all', round(((count(*) FILTER (WHERE a.s > b.s) + 0.5 * count(*) FILTER (WHERE a.s = b.s))::float8 / count(*))::numeric, 4)
  FROM sc a JOIN sc b ON a.pos AND NOT b.pos;
SQL
echo "bench_train_sql: total $(( $(date +%s) - t0 )) s"
