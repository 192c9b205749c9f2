#!/usr/bin/env bash
# Benchmark of the dynamic corpus strategies of corpq.train() (docs/training.md: Dynamic corpus balancing; figures in docs/benchmarks.md)
# on the en-es domains of the corpora test/lib.sh finds (bible, l10n, ddtp in
# the shared corpora: unequal sizes): preset tiny, BPE vocabularies of 4000 per side, equal
# budgets (BENCH_STEPS updates, default 800, max_tokens 2048, one thread per
# job, two jobs at a time) under
#   proportional, temperature (tau 5), multiuat and multidds (prior tau 1),
#   and multiuat / multidds from prior tau 5 and 1e6 (~ uniform).
# Reports: the learned distributions over time, KL(final || uniform) against
# KL(prior || uniform), the final distributions per prior (the paper's
# Figure 4 question: how much does the end point depend on the prior?),
# dev perplexity per domain and macro-average of the four main strategies,
# and the share of training time spent on sampler updates.
# The scorer lr is BENCH_SCORER_LR (default 0.005, 50x the paper's 1e-4):
# the paper updates every 1000 steps of a 100k-step run, this run has 8
# updates.  Asserts nothing on time or quality.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -o shared_buffers=256MB -- "$@"
steps=${BENCH_STEPS:-800}
every=${BENCH_EVERY:-100}
slr=${BENCH_SCORER_LR:-0.005}
t0=$(date +%s)

q >/dev/null <<SQL
$(ranked_pairs_sql 40)
CREATE VIEW train_set AS SELECT src, tgt, domain FROM pairs WHERE r > 300;
CREATE VIEW dev_set AS SELECT src, tgt, domain FROM pairs WHERE r <= 300;
SELECT corpq.bpe_learn('b_en', 'SELECT src FROM train_set', 3500);
SELECT corpq.bpe_learn('b_es', 'SELECT tgt FROM train_set', 3500);
SELECT corpq.vocab_build('v_en', 'SELECT src FROM train_set', 'b_en', 4000);
SELECT corpq.vocab_build('v_es', 'SELECT tgt FROM train_set', 'b_es', 4000);
SQL
echo "bench_balance: data, BPE and vocabularies in $(( $(date +%s) - t0 )) s; pairs per domain (train/dev):"
q -c "SELECT domain, count(*) FILTER (WHERE r > 300), count(*) FILTER (WHERE r <= 300) FROM pairs GROUP BY 1 ORDER BY 1"

base="\"steps\": $steps, \"max_tokens\": 2048, \"lr\": 0.002, \"warmup\": 80, \"threads\": 1, \"seed\": 1, \"checkpoint_every\": $steps, \"validate_every\": $steps"
bal="\"update_every\": $every, \"scorer_lr\": $slr"
runs=(
	"proportional|{\"strategy\": \"proportional\", $base}"
	"temperature5|{\"strategy\": \"temperature\", \"tau\": 5, $base}"
	"multiuat|{\"strategy\": \"multiuat\", \"passes\": 5, $bal, $base}"
	"multidds|{\"strategy\": \"multidds\", $bal, $base}"
	"multiuat_tau5|{\"strategy\": \"multiuat\", \"passes\": 5, \"prior_tau\": 5, $bal, $base}"
	"multiuat_tauinf|{\"strategy\": \"multiuat\", \"passes\": 5, \"prior_tau\": 1000000, $bal, $base}"
	"multidds_tau5|{\"strategy\": \"multidds\", \"prior_tau\": 5, $bal, $base}"
	"multidds_tauinf|{\"strategy\": \"multidds\", \"prior_tau\": 1000000, $bal, $base}"
)
q -c "CREATE TABLE bench_runs (name text, job bigint)"
for ((i = 0; i < ${#runs[@]}; i += 2)); do
	ids=()
	for run in "${runs[i]}" "${runs[i+1]}"; do
		name=${run%%|*}; opts=${run#*|}
		q -c "SELECT corpq.model_create('m_$name', '{\"preset\": \"tiny\", \"max_positions\": 128}', 'v_en', 'v_es', 1)" >/dev/null
		id=$(q -c "SELECT corpq.train('m_$name', 'SELECT src, tgt, domain FROM train_set ORDER BY src, tgt',
		                              'SELECT src, tgt, domain FROM dev_set ORDER BY src, tgt', '$opts')")
		q -c "INSERT INTO bench_runs VALUES ('$name', $id)"
		ids+=("$id")
	done
	for id in "${ids[@]}"; do
		st=$(q -c "SELECT corpq.job_wait($id, '3600 s')")
		[ "$st" = succeeded ] || { echo "bench_balance: job $id $st: $(q -c "SELECT error FROM corpq.jobs WHERE id = $id")"; exit 1; }
	done
	echo "bench_balance: ${runs[i]%%|*}, ${runs[i+1]%%|*} done at $(( $(date +%s) - t0 )) s"
done

echo; echo "bench_balance: distribution over training (train_sampling_chart), probability per domain:"
q -c "SELECT b.name, c.step, string_agg(c.corpus || ' ' || round(c.probability::numeric, 3), ', ' ORDER BY c.corpus)
        FROM corpq.train_sampling_chart c JOIN bench_runs b ON b.job = c.job GROUP BY 1, 2 ORDER BY 1, 2"
echo; echo "bench_balance: rewards per update (multiuat: enteos; multidds: mean gradient cosine):"
q -c "SELECT b.name, c.step, string_agg(c.corpus || ' ' || round(c.reward::numeric, 4), ', ' ORDER BY c.corpus)
        FROM corpq.train_sampling_chart c JOIN bench_runs b ON b.job = c.job
       WHERE c.step > 0 AND b.name IN ('multiuat', 'multidds') GROUP BY 1, 2 ORDER BY 1, 2"
echo; echo "bench_balance: KL(p || uniform) of the prior (step 0) and the final distribution:"
q -c "WITH d AS (SELECT b.name, c.step, c.probability p, count(*) OVER (PARTITION BY c.job, c.step) n,
                        max(c.step) OVER (PARTITION BY c.job) last
                   FROM corpq.train_sampling c JOIN bench_runs b ON b.job = c.job)
     SELECT name, round(sum(p * ln(p * n)) FILTER (WHERE step = 0)::numeric, 4) AS kl_prior,
            round(sum(p * ln(p * n)) FILTER (WHERE step = last)::numeric, 4) AS kl_final
       FROM d GROUP BY name ORDER BY name"
echo; echo "bench_balance: final distribution per strategy (static: its shares):"
q -c "SELECT b.name, string_agg(c.key || ' ' || round((c.value ->> 'share')::numeric, 3), ', ' ORDER BY c.key)
        FROM bench_runs b JOIN corpq.jobs j ON j.id = b.job, jsonb_each(j.result -> 'corpora') c GROUP BY 1 ORDER BY 1"
echo; echo "bench_balance: dev perplexity per domain after $steps updates, macro-average, sampler overhead:"
q -c "SELECT b.name,
             string_agg(d.key || ' ' || round((d.value ->> 'ppl')::numeric, 1), ', ' ORDER BY d.key) AS ppl,
             round(avg((d.value ->> 'ppl')::numeric), 1) AS macro_ppl,
             round((j.result -> 'dev' ->> 'final_ppl')::numeric, 1) AS micro_ppl,
             round(coalesce((j.result -> 'sampler' ->> 'update_share')::numeric, 0) * 100, 1) AS sampler_pct,
             round((j.result ->> 'training_seconds')::numeric) AS train_s
        FROM bench_runs b JOIN corpq.jobs j ON j.id = b.job, jsonb_each(j.result -> 'dev' -> 'final') d
       GROUP BY b.name, j.result ORDER BY b.name"
echo "bench_balance: total $(( $(date +%s) - t0 )) s"
