#!/usr/bin/env bash
# The pair-quality classifier through SQL on the shared en-es corpora
# (docs/curation.md, "Measured through SQL"): corpq.classifier_train on
# 30,000 clean pairs, with CLD2's en/es features, and again with a lexicon
# trained on the other pairs of the training side (none of the 30,000); prints each version's held-out report (the
# job's own held-out split by group: the core's noise types, measured
# against the held-out clean pairs).  A quality measurement, deterministic
# by seed; no timing.  The split is bench_curation_core.py's: pairs whose
# English side hashes into the first 6% are left out (its independent
# evaluation uses them), the clean pairs are drawn from the rest, and the
# wrong_language targets are mono/en.txt's first half.
#   bash test/bench/bench_classifier_sql.sh      (after make install)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 3600 -o max_worker_processes=16
corpq_corpora
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" "$CORPQ_CORPORA" "${CORPQ_PARALLEL[@]}" <<'PY'
import os, random, sys, zlib
work, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = []
for path in files:
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4:
                rows.append(parts)
cut = int(0.06 * 2 ** 32)
rest = [r for r in rows if zlib.crc32(r[2].encode("utf-8")) >= cut]
sample = random.Random(1).sample(rest, 30000)
clean = lambda s: s.replace("\\", "\\\\").replace("\t", " ").replace("\r", " ")
with open(os.path.join(work, "train.tsv"), "w", encoding="utf-8") as f:
    for r in sample:
        f.write("%s\t%s\t%s\n" % (r[1], clean(r[2]), clean(r[3])))
# the lexicon's own pairs: the rest of the training side, none of the 30,000
# (a lexicon that saw the classifier's held-out pairs would flatter it)
drawn = set(id(r) for r in sample)
with open(os.path.join(work, "lex.tsv"), "w", encoding="utf-8") as f:
    for r in rest:
        if id(r) not in drawn:
            f.write("%s\t%s\t%s\n" % (r[1], clean(r[2]), clean(r[3])))
with open(os.path.join(root, "mono", "en.txt"), encoding="utf-8") as f:
    english = [line.rstrip("\n") for line in f if line.strip()]
with open(os.path.join(work, "other.txt"), "w", encoding="utf-8") as f:
    for s in english[: len(english) // 2]:
        f.write(clean(s) + "\n")
print("%d pairs, %d held out by source, 30000 drawn for training" % (len(rows), len(rows) - len(rest)))
PY
q -c "CREATE EXTENSION corpq"
q -c "CREATE TABLE train_pairs (domain text, src text, tgt text)"
q -c "\\copy train_pairs FROM '$work/train.tsv'"
q -c "CREATE TABLE lex_pairs (domain text, src text, tgt text)"
q -c "\\copy lex_pairs FROM '$work/lex.tsv'"
q -c "CREATE TABLE other_en (sentence text)"
q -c "\\copy other_en FROM '$work/other.txt'"

train() {
	local job
	job=$(q -c "SELECT corpq.classifier_train('$1', 'SELECT src, tgt FROM train_pairs', '$2')")
	q -c "SELECT corpq.job_wait($job, NULL, true)" >/dev/null
}
report() {
	q -c "SELECT name || '@' || latest_version || ' (' || kind || '): ' || array_length(features, 1) || ' features, '
	             || 'held-out clean kept ' || round(heldout_clean_kept::numeric, 4)
	      FROM corpq.classifiers WHERE name = '$1'"
	echo "| noise type | held-out pairs | removed | precision | ROC AUC |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	q -F ' | ' -c "SELECT '| ' || t.k, t.v ->> 'pairs', round((t.v ->> 'removed')::numeric * 100, 1) || '%',
	                      round((t.v ->> 'precision')::numeric * 100, 1) || '%',
	                      round((t.v ->> 'auc')::numeric, 3) || ' |'
	                 FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c ON c.id = v.model,
	                      jsonb_each(v.report -> 'heldout' -> 'types') t(k, v)
	                WHERE c.name = '$1' ORDER BY t.k"
	q -c "SELECT 'pairs used ' || (report ->> 'pairs_used') || ', skipped (a NULL model feature) '
	             || (report ->> 'pairs_skipped_null') || '; importance: ' || (report -> 'importance')::text
	        FROM corpq.classifier_versions v JOIN corpq.classifier_catalog c ON c.id = v.model WHERE c.name = '$1'"
	echo
}
opts='"src_lang": "en", "tgt_lang": "es", "max_pairs": 30000, "other_language_query": "SELECT sentence FROM other_en"'
train enes "{$opts}"
report enes
job=$(q -c "SELECT corpq.lexicon_train('enes_lex', 'SELECT src, tgt FROM lex_pairs')")
q -c "SELECT corpq.job_wait($job, NULL, true)" >/dev/null
train enes_lex "{$opts, \"lexicon\": \"enes_lex\"}"
report enes_lex
