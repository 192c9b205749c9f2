#!/usr/bin/env bash
# The quality report as a person sees it: a small real corpus, a lexicon,
# a tiny model trained with multiuat, CAVs, a pair-quality classifier (string
# and language ID features, logistic: weights); report/corpq_report.py writes the
# page, headless Chromium (Debian's chromium, network closed) renders it, and
# report_page_check.py checks that
#   - no console error was logged and every chart drew (vega-embed resolved),
#   - each chart's area in a screenshot is not blank,
#   - every figure printed in the page equals the view's value, queried here;
# and that a database with corpq but no data gives a sentence per section
# instead of empty charts, and one without corpq a clear error.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 1500 -o max_worker_processes=16
corpq_corpora
py=${PYTHON:-/usr/bin/python3}

make -s report/node_modules/.corpq-stamp
work=$(mktemp -d)
# CORPQ_KEEP=dir keeps the pages and the screenshot there
trap '[ -n "${CORPQ_KEEP:-}" ] && cp -r "$work"/. "$CORPQ_KEEP"/; rm -rf "$work"' EXIT
chmod a+rx "$work"

q -c "CREATE EXTENSION corpq"
q -c "CREATE TABLE corpus_all (id text, domain text, src text, tgt text)"
corpq_copy_parallel corpus_all | q
# 400 pairs per top-level domain (l10n/<package> counts as l10n)
q -c "CREATE TABLE corpus AS SELECT id, split_part(domain, '/', 1) AS domain, src, tgt FROM (
        SELECT *, row_number() OVER (PARTITION BY split_part(domain, '/', 1) ORDER BY md5(id)) AS r
        FROM corpus_all WHERE length(src) < 200 AND length(tgt) < 200) s WHERE r <= 400"
q <<'SQL'
SELECT corpq.vocab_build('rp_src', 'SELECT src FROM corpus', max_size => 3000);
SELECT corpq.vocab_build('rp_tgt', 'SELECT tgt FROM corpus', max_size => 3000);
SELECT corpq.model_create('rp', '{"preset": "tiny", "max_positions": 64}', 'rp_src', 'rp_tgt', 3);
SELECT corpq.lexicon_train('rp_lex', 'SELECT src, tgt FROM corpus', '{"lowercase": true}') AS lexjob \gset
SELECT corpq.job_wait(:lexjob, '600 s');
CREATE TABLE cavs AS SELECT domain, corpq.cav_accumulate(lower(src), lower(tgt), 16) AS c FROM corpus GROUP BY domain;
SELECT corpq.classifier_train('rp_pq', 'SELECT src, tgt FROM corpus',
                              '{"src_lang": "en", "tgt_lang": "es", "classifier": "logistic", "seed": 1}') AS pqjob \gset
SELECT corpq.job_wait(:pqjob, '600 s');
SQL
job=$(q -c "SELECT corpq.train('rp', 'SELECT src, tgt, domain FROM corpus WHERE id NOT LIKE ''%7''',
        'SELECT src, tgt, domain FROM corpus WHERE id LIKE ''%7''',
        '{\"strategy\": \"multiuat\", \"steps\": 30, \"max_tokens\": 512, \"update_every\": 10, \"passes\": 2,
          \"validate_every\": 10, \"checkpoint_every\": 30, \"dev_tokens\": 256, \"seed\": 2}')")
state=$(q -c "SELECT corpq.job_wait($job, '900 s')")
[ "$state" = succeeded ] || fail "training job $job: $state"
log "data ready (corpus $(q -c 'SELECT count(*) FROM corpus') pairs, train job $job)"

db=$(q -c "SELECT current_database()")
corpus="SELECT src, tgt, domain FROM corpus"
"$py" report/corpq_report.py --db "$db" --out "$work/report.html" --corpus "$corpus" \
	--model rp --lexicon rp_lex --job "$job" --cav "SELECT domain, c FROM cavs" --tokens "the,de" --classifier rp_pq >/dev/null

# ---- a database with corpq and no data: sentences, not empty charts ----
q -c "CREATE DATABASE rp_empty"
q -d rp_empty -c "CREATE EXTENSION corpq"
"$py" report/corpq_report.py --db rp_empty --out "$work/empty.html" >/dev/null

# ---- a database without corpq: a clear error, exit status 2 ----
q -c "CREATE DATABASE rp_none"
rc=0
"$py" report/corpq_report.py --db rp_none --out "$work/none.html" 2>"$work/none.err" || rc=$?
[ "$rc" = 2 ] || fail "a database without corpq: exit status $rc, expected 2"
grep -q "has no corpq extension" "$work/none.err" || fail "a database without corpq: $(cat "$work/none.err")"
[ ! -e "$work/none.html" ] || fail "a page was written for a database without corpq"
log "no corpq: $(cat "$work/none.err")"

"$py" test/integration/report_page_check.py --db "$db" --work "$work" --corpus "$corpus" \
	--model rp --lexicon rp_lex --job "$job" --cav "SELECT domain, c FROM cavs" --tokens "the,de" --classifier rp_pq
log "ok"
