#!/usr/bin/env bash
# corpq.job_progress does not lie when the machine's load changes (issue 54,
# item 6): a training job with a time budget calibrates its schedule while
# six busy loops load both cores, which stop when it starts training.  Every
# reading of its progress, taken as fast as psql can, must show a percent
# below 100, an ETA that is not negative, and (the job's own document, not
# only the view) fewer updates done than its total, until the job has ended;
# the job must succeed.  Before, the total was the calibration's, fixed at
# the start, and a run that outpaced it showed 100% with an ETA of 0 for
# minutes (the issue saw 61 updates made of 32 expected); whether a given
# run outpaces its calibration depends on the machine, so the test checks
# the invariant and logs the calibration's guess beside what was made.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	CORPQ_CLUSTER_MODE=preload corpq_cluster_run -t 600 \
		-o shared_preload_libraries=corpq -o max_worker_processes=16
	exit 0
fi

q >/dev/null <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE pairs AS
SELECT g AS id,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729) % 60), ' ' ORDER BY k)
          FROM generate_series(1, 4 + g % 8) k) AS src
  FROM generate_series(1, 3000) g;
ALTER TABLE pairs ADD COLUMN tgt text;
UPDATE pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * 7 + 3) % 60), ' ' ORDER BY o)
                          FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('ph_src', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('ph_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create('ph', '{"preset": "tiny", "max_positions": 32}', 'ph_src', 'ph_tgt', 1);
SQL

# six busy loops on the machine's two cores, bounded in time
loads=()
for _ in 1 2 3 4 5 6; do
	timeout 120 sh -c 'while :; do :; done' &
	loads+=($!)
done
trap 'kill "${loads[@]}" 2>/dev/null || true' EXIT

job=$(q -c "SELECT corpq.train('ph', 'SELECT src, tgt FROM pairs WHERE id > 300', 'SELECT src, tgt FROM pairs WHERE id <= 300',
	'{\"max_seconds\": 25, \"max_tokens\": 512, \"threads\": 1, \"validate_every\": 100000}')")
readings=0 training=0 bad=""
while :; do
	row=$(q -c "SELECT j.state, coalesce(phase, ''), coalesce(percent::text, ''), coalesce(extract(epoch FROM eta)::text, ''),
	                    coalesce(p.done::text, ''), coalesce(p.total::text, '')
	              FROM corpq.jobs j LEFT JOIN corpq.job_progress p USING (id) WHERE j.id = $job")
	IFS='|' read -r state phase percent eta done total <<<"$row"
	case "$state" in succeeded | failed | cancelled) break ;; esac
	readings=$((readings + 1))
	if [ "$phase" = training ]; then
		training=$((training + 1))
		# calibrated under load: the rest runs on an idle machine
		[ "$training" = 1 ] && kill "${loads[@]}" 2>/dev/null || true
	fi
	if [ -n "$percent" ] && awk -v p="$percent" 'BEGIN { exit !(p >= 100) }'; then
		bad="$bad percent $percent ($phase);"
	fi
	# the job's own total, not only what the view shows of it
	if [ "$phase" = training ] && [ -n "$total" ] && awk -v d="$done" -v t="$total" 'BEGIN { exit !(d >= t) }'; then
		bad="$bad done $done of $total;"
	fi
	if [ -n "$eta" ] && awk -v e="$eta" 'BEGIN { exit !(e < 0) }'; then
		bad="$bad eta $eta ($phase);"
	fi
done
[ "$state" = succeeded ] || fail "the job ended $state: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"
[ "$training" -ge 5 ] || fail "only $training of $readings readings saw the job training: nothing was checked"
[ -z "$bad" ] || fail "job_progress lied while the job ran:$bad"
updates=$(q -c "SELECT max(step) FROM corpq.train_log WHERE job = $job")
expected=$(q -c "SELECT schedule ->> 'expected_updates' FROM corpq.train_log WHERE job = $job AND schedule IS NOT NULL")
log "$readings readings ($training while training): none at 100% or with a negative ETA before the end; the calibration under load expected $expected updates, the run made $updates"
log passed
