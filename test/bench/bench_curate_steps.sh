#!/usr/bin/env bash
# What curate()'s cheap steps (no classifier) remove, per kind of noise
# (docs/curation.md, "What the cheap steps catch").  Counts, not timings:
# runs anywhere.
#
# test/bench/inject_noise.py makes CURATE_ROWS rows (30,000 by default, seed
# 7, its default shares) from the corpora; curate() runs on them with
# src_lang en and tgt_lang es, the default filters and dedup "near"; the
# table printed (Markdown) gives per label the pairs, the share dropped, and
# the share whose first reason is a rule, language ID, an exact or a near
# duplicate, and the share with the reason copy.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o shared_preload_libraries=corpq -o max_worker_processes=16 -- "$@"
py=${PYTHON:-/usr/bin/python3}
ROWS=${CURATE_ROWS:-30000}

noisy=$(mktemp)
trap 'rm -f "$noisy"' EXIT
"$py" test/bench/inject_noise.py --rows "$ROWS" --seed 7 "${CORPQ_PARALLEL[@]}" > "$noisy"
q -c "CREATE EXTENSION corpq"
q -c "CREATE TABLE noisy (id bigint, noise text, origin text, domain text, src text, tgt text)"
q -c "\\copy noisy (id, noise, origin, domain, src, tgt) FROM '$noisy' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\b', HEADER)"
q -c "CREATE TABLE curation (id bigint, decision text, probability float8, reasons text[])"
job=$(q -c "SELECT corpq.curate('noisy', 'curation', '{\"src_lang\": \"en\", \"tgt_lang\": \"es\", \"chunk_rows\": 5000}')")
[ "$(q -c "SELECT corpq.job_wait($job, '3600 s')")" = succeeded ] || fail "job $job: $(q -c "SELECT error FROM corpq.jobs WHERE id = $job")"
log "$ROWS rows (inject_noise.py, seed 7), curate() with en / es, no classifier"
echo "| noise | pairs | dropped | first reason a rule | language ID | duplicate | near duplicate | copy |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
q -F ' | ' -c "SELECT '| ' || n.noise, count(*),
        round(100.0 * count(*) FILTER (WHERE c.decision = 'drop') / count(*), 1) || '%',
        round(100.0 * count(*) FILTER (WHERE c.reasons[1] LIKE 'rule:%') / count(*), 1) || '%',
        round(100.0 * count(*) FILTER (WHERE c.reasons[1] LIKE 'langid:%') / count(*), 1) || '%',
        round(100.0 * count(*) FILTER (WHERE c.reasons[1] LIKE 'duplicate_of:%') / count(*), 1) || '%',
        round(100.0 * count(*) FILTER (WHERE c.reasons[1] LIKE 'near_duplicate_of:%') / count(*), 1) || '%',
        round(100.0 * count(*) FILTER (WHERE 'copy' = ANY (c.reasons)) / count(*), 1) || '% |'
   FROM noisy n JOIN curation c USING (id) GROUP BY n.noise ORDER BY n.noise = 'clean' DESC, n.noise"
