#!/usr/bin/env bash
# CLD2's accuracy (corpq.langid) on the corpora test/lib.sh finds, where the
# language of each side is known (src English, tgt Spanish): per domain, per
# length in characters, and on software messages that look like code (format
# specifiers, placeholders, command-line options, accelerators).  For each:
# pairs, the share identified as the expected language, as "un" (unknown),
# as another language, the share CLD2 calls reliable and the accuracy among
# those.  Figures and the conclusions in docs/filters.md (Language identification)
# and docs/benchmarks.md.  Not a timing: bench_filters.sh times lang_is.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
corpq_in_cluster -o max_worker_processes=16 -- "$@"

q >/dev/null <<SQL
CREATE EXTENSION corpq;
CREATE TABLE raw (id text, domain text, src text, tgt text);
$(corpq_copy_parallel raw)
CREATE TABLE ids AS
SELECT split_part(r.domain, '/', 1) AS domain, s.side, s.expected, s.text,
       CASE WHEN length(s.text) <= 20 THEN '1-20' WHEN length(s.text) <= 50 THEN '21-50'
            WHEN length(s.text) <= 100 THEN '51-100' WHEN length(s.text) <= 200 THEN '101-200'
            ELSE '>200' END AS chars,
       s.text ~ '%[0-9$]*[-+ #0]*[0-9]*[a-zA-Z]|<[^>]*>|\{[^}]*\}|(^| )--?[a-z]|[_&][A-Za-z]' AS code_like,
       l.lang, l.reliable
  FROM raw r
 CROSS JOIN LATERAL (VALUES ('src', 'en', r.src), ('tgt', 'es', r.tgt)) s(side, expected, text)
 CROSS JOIN LATERAL corpq.langid(s.text) l;
SQL
summary() {
	q -P footer=off -A -F ' | ' -c "SELECT $1, count(*) AS n,
	       round(avg((lang = expected)::int), 3) AS correct,
	       round(avg((lang = 'un')::int), 3) AS unknown,
	       round(avg((lang NOT IN (expected, 'un'))::int), 3) AS other,
	       round(avg(reliable::int), 3) AS reliable,
	       round(avg((lang = expected)::int) FILTER (WHERE reliable), 3) AS correct_if_reliable
	  FROM ids $2 GROUP BY $1 ORDER BY $1" | sed 's/^/    /'
}
log "CLD2 $(q -c "SELECT count(*) FROM ids") segments; libcld2 $(dpkg-query -W -f='${Version}' libcld2-0 2>/dev/null || echo '?')"
log "per side and domain:";  summary "side, domain" ""
log "per side and length in characters:"; summary "side, chars" ""
log "per side, domain and length:"; summary "side, domain, chars" ""
log "l10n (software messages), code-like or not:"; summary "side, code_like" "WHERE domain = 'l10n'"
log "the most frequent wrong answers:"
q -P footer=off -A -F ' | ' -c "SELECT side, lang, count(*) FROM ids WHERE lang NOT IN (expected, 'un')
      GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 8" | sed 's/^/    /'
log "examples of reliable but wrong:"
q -P footer=off -A -F ' | ' -c "SELECT side, lang, left(text, 70) FROM ids WHERE reliable AND lang NOT IN (expected, 'un')
      ORDER BY md5(text) LIMIT 8" | sed 's/^/    /'
