#!/usr/bin/env bash
# The default filters on real, mostly clean data and on injected noise
# (docs/filters.md, "Defaults measured on real corpora").  Counts, not
# timings: runs anywhere.
#
# Two specs, each the rule filters plus language ID (en -> es):
#   before  OpusFilter's defaults, which were corpq's until they were
#           measured: alpha_ratio over all characters at 0.75, langid as
#           Cld2Filter (no hint, every answer judged)
#   after   corpq.filter_defaults() plus {"name": "langid"} with its defaults
# Prints, as Markdown tables:
#   1. per corpus file (bible, l10n, ddtp) and filter, the share of pairs
#      rejected before -> after; "any rule" (the rule filters alone) and
#      "any" (with language ID);
#   2. the same for each l10n package (the rule filters, and with langid);
#   3. recall on labelled noise (test/bench/inject_noise.py over the same
#      pairs, default shares and seed): the share of each label each filter
#      rejects, and what dedup (one row per dedup_key) removes;
#   4. the variants behind the defaults: alpha_ratio thresholds, and
#      langid's hint / keep_unreliable / min_chars, on clean pairs and on
#      the untranslated noise.
# Then checks that OpusFilter's definitions in Python (test/ref/
# opusfilter_rules.py) reject the same pairs per rule filter as corpq, for
# both specs and for one that leaves every arg and threshold to its
# default, on every 10th pair.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -- "$@"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" test/bench/inject_noise.py "${CORPQ_PARALLEL[@]}" >"$tmp/noisy.tsv"

rules_before='[{"name": "length_ratio", "args": {"unit": "word"}, "threshold": 3},
  {"name": "alpha_ratio", "args": {"exclude_whitespace": false}, "threshold": 0.75},
  {"name": "terminal_punct", "threshold": -2}, {"name": "numerals_match", "threshold": 0.5},
  {"name": "repetition", "threshold": 2}, {"name": "html_tags"}]'
langid_before='[{"name": "langid", "args": {"src": "en", "tgt": "es", "hint": false, "keep_unreliable": false, "min_chars": 0}}]'
langid_after='[{"name": "langid", "args": {"src": "en", "tgt": "es"}}]'

q >/dev/null <<SQL
CREATE EXTENSION corpq;
CREATE TABLE raw (ord bigserial, id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
\\copy (SELECT src, tgt FROM raw WHERE ord % 10 = 0 ORDER BY ord) TO '$tmp/sample.tsv' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\b')
CREATE TABLE noisy (id bigint, noise text, origin text, domain text, src text, tgt text);
\\copy noisy FROM '$tmp/noisy.tsv' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\b', HEADER)
CREATE TABLE specs (name text PRIMARY KEY, spec jsonb);
INSERT INTO specs VALUES
  ('rules before', '$rules_before'), ('rules after', corpq.filter_defaults()),
  ('rules, defaults left out', '[{"name": "length_ratio"}, {"name": "alpha_ratio"}, {"name": "terminal_punct"},
    {"name": "numerals_match"}, {"name": "repetition"}, {"name": "html_tags"}]'),
  ('before', '$rules_before'::jsonb || '$langid_before'), ('after', corpq.filter_defaults() || '$langid_after');
-- rejected share per (group, filter) of a corpus query returning (src, tgt, group)
CREATE FUNCTION shares(corpus text, spec text)
RETURNS TABLE (grp text, filter text, share float8) LANGUAGE sql AS \$\$
  SELECT domain, filter, rejected_share
    FROM corpq.filter_report_by_domain(corpus, (SELECT s.spec FROM specs s WHERE s.name = shares.spec), 0)
\$\$;
-- before -> after, in percent
CREATE FUNCTION pct(b float8, a float8) RETURNS text LANGUAGE sql AS \$\$
  SELECT to_char(100 * b, 'FM990.0') || ' → ' || to_char(100 * a, 'FM990.0')
\$\$;
-- rows removed by dedup (all but the first of each dedup_key), per noise label
CREATE TABLE dedup AS
SELECT noise, avg((id <> first)::int) AS share
  FROM (SELECT noise, id, first_value(id) OVER (PARTITION BY corpq.dedup_key(src, tgt) ORDER BY id) AS first
          FROM noisy) d
 GROUP BY noise;
SQL

# a Markdown table of before -> after per filter (rows) and group (columns)
# for the corpus query $1 with groups in the order of array $2
table() {
	local corpus=$1 groups=$2
	echo "| filter | $(q -c "SELECT array_to_string($groups, ' | ')") |"
	echo "| --- |$(q -c "SELECT repeat(' ---: |', cardinality($groups))")"
	q -c "WITH b AS (SELECT * FROM shares(\$c\$$corpus\$c\$, 'before')),
	           a AS (SELECT * FROM shares(\$c\$$corpus\$c\$, 'after')),
	           rb AS (SELECT * FROM shares(\$c\$$corpus\$c\$, 'rules before') WHERE filter = 'all'),
	           ra AS (SELECT * FROM shares(\$c\$$corpus\$c\$, 'rules after') WHERE filter = 'all'),
	           cells AS (
	             SELECT b.filter, b.grp, pct(b.share, a.share) AS cell FROM b JOIN a USING (grp, filter)
	              WHERE b.filter <> 'all'
	             UNION ALL SELECT 'any rule', rb.grp, pct(rb.share, ra.share) FROM rb JOIN ra USING (grp)
	             UNION ALL SELECT 'any', b.grp, pct(b.share, a.share) FROM b JOIN a USING (grp, filter)
	              WHERE b.filter = 'all')
	      SELECT '| ' || filter || ' | ' || string_agg(cell, ' | ' ORDER BY array_position($groups, grp)) || ' |'
	        FROM cells GROUP BY filter
	       ORDER BY array_position(ARRAY['length_ratio', 'alpha_ratio', 'terminal_punct', 'numerals_match',
	                                     'repetition', 'html_tags', 'langid', 'any rule', 'any'], filter)"
}

files="ARRAY['bible', 'l10n', 'ddtp']"
log "$(q -c "SELECT count(*) FROM raw") pairs; rejected share in %, before → after"
table "SELECT src, tgt, split_part(domain, '/', 1) FROM raw" "$files"
echo
log "per l10n package: pairs, any rule and any (with langid), before → after"
echo "| package | pairs | any rule | any |"
echo "| --- | ---: | ---: | ---: |"
q -c "WITH c AS (SELECT src, tgt, domain FROM raw WHERE domain LIKE 'l10n/%'),
           s AS (SELECT s.name, r.* FROM specs s,
                 LATERAL shares('SELECT src, tgt, domain FROM raw WHERE domain LIKE ''l10n/%''', s.name) r
                  WHERE r.filter = 'all')
      SELECT format('| %s | %s | %s | %s |', substr(n.domain, 6), n.pairs,
                    pct(rb.share, ra.share), pct(b.share, a.share))
        FROM (SELECT domain, count(*) AS pairs FROM c GROUP BY 1) n
        JOIN s rb ON rb.grp = n.domain AND rb.name = 'rules before'
        JOIN s ra ON ra.grp = n.domain AND ra.name = 'rules after'
        JOIN s b ON b.grp = n.domain AND b.name = 'before'
        JOIN s a ON a.grp = n.domain AND a.name = 'after'
       ORDER BY n.pairs DESC"
echo

labels="ARRAY['clean', 'misaligned', 'duplicate', 'untranslated', 'very_long', 'truncated', 'html', 'url']"
log "labelled noise: $(q -c "SELECT string_agg(noise || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT noise, count(*) n FROM noisy GROUP BY 1) x")"
log "share of each label rejected in %, before → after"
table "SELECT src, tgt, noise FROM noisy" "$labels"
q -c "SELECT '| dedup (one row per dedup_key) | ' || string_agg(to_char(100 * share, 'FM990.0'), ' | '
             ORDER BY array_position($labels, noise)) || ' |' FROM dedup"
echo

log "variants: rejected % of the clean pairs per corpus, and of the untranslated noise"
variants='[
  {"name": "alpha_ratio", "label": "alpha_ratio all characters, 0.75", "args": {"exclude_whitespace": false}, "threshold": 0.75},
  {"name": "alpha_ratio", "label": "alpha_ratio non-space, 0.75", "threshold": 0.75},
  {"name": "alpha_ratio", "label": "alpha_ratio non-space, 0.6", "threshold": 0.6},
  {"name": "alpha_ratio", "label": "alpha_ratio non-space, 0.5", "threshold": 0.5},
  {"name": "langid", "label": "langid as Cld2Filter", "args": {"src": "en", "tgt": "es", "hint": false, "keep_unreliable": false}},
  {"name": "langid", "label": "langid min_chars 20", "args": {"src": "en", "tgt": "es", "hint": false, "keep_unreliable": false, "min_chars": 20}},
  {"name": "langid", "label": "langid min_chars 40", "args": {"src": "en", "tgt": "es", "hint": false, "keep_unreliable": false, "min_chars": 40}},
  {"name": "langid", "label": "langid hint", "args": {"src": "en", "tgt": "es", "keep_unreliable": false}},
  {"name": "langid", "label": "langid keep_unreliable", "args": {"src": "en", "tgt": "es", "hint": false}},
  {"name": "langid", "label": "langid hint, keep_unreliable", "args": {"src": "en", "tgt": "es"}},
  {"name": "langid", "label": "langid hint, keep_unreliable, min_chars 20", "args": {"src": "en", "tgt": "es", "min_chars": 20}},
  {"name": "langid", "label": "langid hint, keep_unreliable, min_chars 40", "args": {"src": "en", "tgt": "es", "min_chars": 40}}]'
echo "| variant | bible | l10n | ddtp | untranslated noise |"
echo "| --- | ---: | ---: | ---: | ---: |"
q -c "WITH r AS (SELECT * FROM corpq.filter_report_by_domain(
                   'SELECT src, tgt, split_part(domain, ''/'', 1) FROM raw
                    UNION ALL SELECT src, tgt, ''noise:'' || noise FROM noisy WHERE noise = ''untranslated''',
                   '$variants', 0) WHERE filter <> 'all')
      SELECT '| ' || filter || ' | ' || string_agg(to_char(100 * rejected_share, 'FM990.0'), ' | '
             ORDER BY array_position(ARRAY['bible', 'l10n', 'ddtp', 'noise:untranslated'], domain)) || ' |'
        FROM r GROUP BY filter
       ORDER BY min(array_position(ARRAY(SELECT e ->> 'label' FROM jsonb_array_elements('$variants') e), filter))"
echo

# OpusFilter's definitions in Python reject the same pairs per rule filter
mismatch=0
for spec in "rules before" "rules after" "rules, defaults left out"; do
	json=$(q -c "SELECT spec FROM specs WHERE name = '$spec'")
	while read -r label r; do
		c=$(q -c "SELECT rejected FROM corpq.filter_report('SELECT src, tgt FROM raw WHERE ord % 10 = 0',
		          (SELECT spec FROM specs WHERE name = '$spec'), 0) WHERE filter = '$label'")
		[ "$c" = "$r" ] || { log "MISMATCH ($spec) $label: corpq $c, Python $r"; mismatch=1; }
	done < <("$py" - "$json" "$tmp/sample.tsv" <<'PY'
import json, sys, warnings
sys.path.insert(0, "test/ref")
import opusfilter_rules as ref
warnings.filterwarnings("ignore")       # bs4 on strings that look like file names
spec = json.loads(sys.argv[1])
rejected = {f.get("label", f["name"]): 0 for f in spec}
rejected["all"] = 0
with open(sys.argv[2], encoding="utf-8") as f:
    for line in f:
        src, tgt = line.rstrip("\n").split("\t")
        out = [f.get("label", f["name"]) for f in spec if not ref.keep(f, src, tgt)]
        for label in out:
            rejected[label] += 1
        rejected["all"] += bool(out)
for label, n in rejected.items():
    print(label, n)
PY
)
done
[ "$mismatch" = 0 ] && log "OpusFilter's definitions in Python reject the same pairs per rule filter as corpq on every 10th pair ($(wc -l <"$tmp/sample.tsv") pairs; before, after, and with the defaults left out)"
exit "$mismatch"
