#!/usr/bin/env bash
# corpq.lexicon_train() on the en-es corpora (up to LEXICON_BENCH_PAIRS pairs,
# default 100000; the three files hold about 80k) against the alignment core
# alone on the same pairs (test/bench/bench_align.c, run in this script, same
# tokenisation: lowercase, punctuation spaced out), to measure the glue's
# overhead per phase: reading (SPI cursor + segmentation + interning vs file
# reading), EM (setup + 4 passes per direction: the same core), dictionary,
# and the job's final transaction writing the catalog rows.  On the corpora
# test/lib.sh finds.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
pairs=${LEXICON_BENCH_PAIRS:-100000}

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	gcc -std=gnu11 -O3 -march=native -Iextension -o "$tmp/bench_align" \
		test/bench/bench_align.c extension/common/mem.c extension/common/error.c extension/align/*.c -lm
	"$tmp/bench_align" -n "$pairs" "${CORPQ_PARALLEL[@]}" > "$tmp/core.out"
	export CORE_OUT="$tmp/core.out"
	corpq_cluster_run -o max_worker_processes=16 -o shared_buffers=512MB -o max_wal_size=4GB
	exit 0
fi

q -c "CREATE EXTENSION corpq"
q -c "CREATE TABLE raw(id text, domain text, src text, tgt text, ord bigserial)"
corpq_copy_parallel raw | q
# the core benchmark's normalisation, done once before timing
punct="([[:punct:]]|¿|¡|«|»|’|‘|“|”|—|…)"
q -c "CREATE TABLE bitext AS SELECT ord, lower(regexp_replace(src, '$punct', ' \\1 ', 'g')) AS src,
             lower(regexp_replace(tgt, '$punct', ' \\1 ', 'g')) AS tgt
      FROM raw ORDER BY ord LIMIT $pairs"
q -c "VACUUM ANALYZE bitext"

t0=$(date +%s.%N)
job=$(q -c "SELECT corpq.lexicon_train('bench', 'SELECT src, tgt FROM bitext')")
state=$(q -c "SELECT corpq.job_wait($job)")
wall=$(echo "$(date +%s.%N) - $t0" | bc)
[ "$state" = succeeded ] || { q -c "SELECT error FROM corpq.jobs WHERE id = $job"; exit 1; }
result=$(q -c "SELECT result FROM corpq.jobs WHERE id = $job")
check=$(q -c "SELECT string_agg(src || ' -> ' || tgt, ', ' ORDER BY src) FROM (
                SELECT DISTINCT ON (src) src, tgt FROM corpq.lexicon_dictionary
                 WHERE lexicon = 'bench' AND src IN ('god', 'the') ORDER BY src, count DESC) s")
rows=$(q -c "SELECT (SELECT count(*) FROM corpq.lexicon_translations) || ' translations, ' ||
                    (SELECT count(*) FROM corpq.lexicon_dictionary) || ' dictionary, ' ||
                    (SELECT count(*) FROM corpq.lexicon_entropy) || ' entropy rows, model ' ||
                    (SELECT pg_size_pretty(octet_length(model)::bigint) FROM corpq.lexicon_models)")

/usr/bin/python3 - "$result" "$wall" "${CORE_OUT:-}" "$check" "$rows" <<'PY'
import json, os, re, sys
r = json.loads(sys.argv[1]); wall = float(sys.argv[2]); core_out = sys.argv[3]
s = r["stats"]; sec = s["seconds"]
print(f"lexicon_train: {s['pairs']} pairs ({s['skipped_pairs']} skipped), "
      f"{s['src_tokens']} + {s['tgt_tokens']} tokens, vocabularies {s['src_vocab']} / {s['tgt_vocab']}")
print(f"  best translations: {sys.argv[4]}; stored {sys.argv[5]}")
print(f"  job phases: reading {sec['reading']:.2f} s, em {sec['em']:.2f} s, dictionary {sec['dictionary']:.2f} s, "
      f"writing {r['writing_seconds']:.2f} s; job total {r['total_seconds']:.2f} s; "
      f"submit to job_wait {wall:.2f} s")
if core_out and os.path.exists(core_out):
    out = open(core_out).read()
    read = float(re.search(r"corpus: .* read in ([0-9.]+) s", out).group(1))
    blocks = re.split(r"\nfast_align ", out)
    em = 0.0
    for b in blocks[1:3]:      # en->es and es->en, with the link index
        em += float(re.search(r"setup .*? ([0-9.]+) s", b).group(1))
        em += sum(float(x) for x in re.findall(r"pass \d: ([0-9.]+) s", b)[:4])
    dic = float(re.search(r"UncSamp dictionary .* in ([0-9.]+) s", out).group(1))
    core = read + em + dic
    print(f"  core alone (bench_align, same pairs): reading {read:.2f} s, em {em:.2f} s, dictionary {dic:.2f} s"
          f" = {core:.2f} s")
    # a tiny run can time a core phase as 0.00 s
    ratio = lambda a, b: f"{a / b:.2f}x" if b > 0 else "n/a"  # noqa: E731
    print(f"  ratios job/core: reading {ratio(sec['reading'], read)}, em {ratio(sec['em'], em)}, "
          f"dictionary {ratio(sec['dictionary'], dic)}; job without writing "
          f"{ratio(sec['reading'] + sec['em'] + sec['dictionary'], core)}, "
          f"job total {ratio(r['total_seconds'], core)}")
else:
    print("  (bench_align.c absent: no core-alone reference)")
PY
