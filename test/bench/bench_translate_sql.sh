#!/usr/bin/env bash
# Translation in SQL (extension/pg/translate/translate_*.c) against the core alone
# on the same model and token ids, preset `small` (whitespace vocabularies of
# 8000 per side built from the real en-es pairs, random weights), beam 5,
# max_len = |src| + 1 and min_len beyond it (a random model would stop at
# once), so that both sides decode exactly the same hypothesis lengths:
#   - latency of corpq.translate() for a 25-word source (per call in a
#     statement of 20 such sources, and the first call of a backend), against
#     the core at batch 1 on the same ids;
#   - corpq.translate_job() over N real English sentences (default 10000,
#     5-40 words) at batch 32 into a table: its wall time against the core
#     alone (ctypes, cq_translate at batch 32) on the same sentences, i.e.
#     the glue's share (reading the query, segmenting and encoding,
#     detokenising, inserting and committing chunks, progress); the job also
#     reports the time inside cq_translator_step itself, the same share
#     measured in one process;
#   - the same job with 2 threads (wall time against 1 thread; same output);
#   - translate_rows() on the first 1000 of them, same comparison.
# Times are CPU times (the backend's from /proc/self/stat, the job worker's
# getrusage, the core's thread time), wall times beside them: the machine is
# shared.  One BLAS thread everywhere.  BLEU over real pairs (rows/s against count(*),
# 2 workers against 0) is bench_metrics.sh's.  Prints figures; asserts nothing.
#   Usage: bench_translate_sql.sh [--quick]      (--quick: 500 sentences)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_corpora
[ -f test/libcorpqcore.so ] || make -s test/libcorpqcore.so >/dev/null
corpq_in_cluster -o max_worker_processes=16 -- "$@"
N=10000
[ "${1:-}" = --quick ] && N=500

log "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores), load average $(cut -d' ' -f1-3 /proc/loadavg)"
{
	cat <<'SQL'
\set ON_ERROR_STOP 1
CREATE EXTENSION corpq;
SET corpq.threads = 1;
CREATE TABLE raw (n serial, id text, domain text, src text, tgt text);
SQL
	corpq_copy_parallel raw
	cat <<SQL
SELECT corpq.vocab_build('bt_src', 'SELECT src FROM raw', NULL, 8000);
SELECT corpq.vocab_build('bt_tgt', 'SELECT tgt FROM raw', NULL, 8000);
SELECT corpq.model_create('small', '{"preset": "small"}', 'bt_src', 'bt_tgt', 1);
-- a spread of every domain, 5 to 40 words
CREATE TABLE sents AS
SELECT row_number() OVER (ORDER BY md5(n::text))::bigint AS id, src
  FROM raw WHERE array_length(regexp_split_to_array(src, '\s+'), 1) BETWEEN 5 AND 40
 ORDER BY md5(n::text) LIMIT $N;
CREATE TABLE s25 AS
SELECT row_number() OVER (ORDER BY md5(n::text))::bigint AS id, src
  FROM raw WHERE array_length(regexp_split_to_array(src, '\s+'), 1) = 25
 ORDER BY md5(n::text) LIMIT 20;
CREATE TABLE out (id bigint, hyp text, score float8);
CREATE TABLE out2 (LIKE out);
-- CPU time of this backend: wall time means little on a loaded machine
CREATE FUNCTION cpu_ticks() RETURNS bigint LANGUAGE sql VOLATILE AS
\$\$ SELECT split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint
     FROM pg_read_file('/proc/self/stat') s \$\$;
VACUUM ANALYZE sents;
VACUUM ANALYZE s25;
SQL
} | psql -X -q >/dev/null

OPENBLAS_NUM_THREADS=1 CORPQ_CORE_LIB="$PWD/test/libcorpqcore.so" /usr/bin/python3 - <<'PY'
import base64, json, os, re, subprocess, sys, time
sys.path.insert(0, "test/ref")
import torch_search as ts
import torch_transformer as tt

OPTS = dict(beam=5, max_len_a=1.0, max_len_b=0, min_len=1000)
SQL_OPTS = json.dumps(OPTS)


def psql(*cmds, timing=False):
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\t", "-c", "SET corpq.threads = 1"]
    for c in (["\\timing on"] if timing else []) + list(cmds):
        args += ["-c", c]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: " + r.stderr)
    return r.stdout


def times(out):
    return [float(x) / 1000 for x in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]


def cpu_of(warm, stmt):
    """CPU seconds of the backend for stmt, after warm in the same session."""
    v = psql(warm, "SELECT cpu_ticks()", stmt, "SELECT cpu_ticks()").split()
    return (int(v[-1]) - int(v[-3])) / os.sysconf("SC_CLK_TCK")


def ids_of(table, vocab):
    out = psql("SELECT id, corpq.vocab_encode('%s', src) FROM %s ORDER BY id" % (vocab, table))
    rows = [l.split("\t") for l in out.splitlines()]
    return [int(i) for i, _ in rows], [[int(x) for x in a.strip("{}").split(",") if x] for _, a in rows]


blob = base64.b64decode(psql("SELECT encode(corpq.model_export('small'), 'base64')").replace("\n", ""))
core = ts.CoreTranslate()
m = core.load(blob)
o = ts.options(**OPTS)
sid, srcs = ids_of("sents", "bt_src")
lid, l25 = ids_of("s25", "bt_src")
n = len(srcs)
src_tokens = sum(len(s) for s in srcs)
print("data: %d real English sentences, %.1f tokens on average (vocabulary 8000, <unk> included); "
      "preset small, random weights, options %s" % (n, src_tokens / n, SQL_OPTS))

# ---- latency of translate(): 20 sources of 25 words
core_lat = []
for s, i in zip(l25, lid):
    prep = core.prepare_translate(m, [s], [i], o, 1)
    core.run_translate(prep)
    t = time.thread_time()
    core.run_translate(prep)
    core_lat.append(time.thread_time() - t)
one = "SELECT count(corpq.translate('small', src, '%s')) FROM s25 WHERE id = 1" % SQL_OPTS
out = psql(one, timing=True)
first = times(out)[-1]
stmt = cpu_of(one, "SELECT count(corpq.translate('small', src, '%s')) FROM s25" % SQL_OPTS)
core_ms = 1000 * sum(core_lat) / len(core_lat)
print("latency, a 25-word source, beam 5 (CPU): translate() %.1f ms per call (a statement of %d), "
      "core alone %.1f ms (batch 1): SQL/core %.2f; first call of a backend %.0f ms wall (resolve, "
      "vocabularies, model load)" % (1000 * stmt / len(l25), len(l25), core_ms,
                                     1000 * stmt / len(l25) / core_ms, 1000 * first))

# ---- translate_job over all sentences, against the core at batch 32
prep = core.prepare_translate(m, srcs, sid, o, 32)
t = time.perf_counter()
tc = time.thread_time()
hyps = core.run_translate(prep)
core_cpu = time.thread_time() - tc
core_wall = time.perf_counter() - t
tokens = sum(len(h[0]["tokens"]) + 1 for h in hyps)
job_opts = dict(OPTS, batch=32, threads=1)
t = time.perf_counter()
job = int(psql("SELECT corpq.translate_job('small', 'SELECT id, src FROM sents ORDER BY id', 'out', '%s')"
               % json.dumps(job_opts)))
state = psql("SELECT corpq.job_wait(%d)" % job).strip()
wall = time.perf_counter() - t
res = json.loads(psql("SELECT result FROM corpq.jobs WHERE id = %d" % job) or "null")
if state != "succeeded":
    sys.exit("job %d %s: %s" % (job, state, psql("SELECT error FROM corpq.jobs WHERE id = %d" % job)))
print("core alone, cq_translate batch 32: %.1f s CPU (%.1f s wall), %.0f sentences/s, %.0f tokens/s (CPU)"
      % (core_cpu, core_wall, n / core_cpu, tokens / core_cpu))
print("translate_job batch 32: %.1f s CPU of its worker (job %.1f s wall, of them %.1f s inside "
      "cq_translator_step; %.1f s from submission to job_wait; %d chunks), %.0f sentences/s, "
      "%.0f tokens/s (CPU; tokens %s core's)"
      % (res["cpu_seconds"], res["seconds"], res["step_seconds"], wall, res["chunks"],
         n / res["cpu_seconds"], res["tokens"] / res["cpu_seconds"],
         "=" if res["tokens"] == tokens else "!="))
print("glue share of translate_job: %.1f%% against the core alone (CPU), %.1f%% inside the job "
      "(wall time outside cq_translator_step); target < 5%%"
      % (100 * (1 - core_cpu / res["cpu_seconds"]), 100 * (1 - res["step_seconds"] / res["seconds"])))

# ---- the same job with two threads (a job's default on a 2-core machine):
# wall time against the one-thread job, same sentences and hypotheses
if (os.cpu_count() or 1) >= 2:
    t = time.perf_counter()
    job2 = int(psql("SELECT corpq.translate_job('small', 'SELECT id, src FROM sents ORDER BY id', 'out2', '%s')"
                    % json.dumps(dict(job_opts, threads=2))))
    state = psql("SELECT corpq.job_wait(%d)" % job2).strip()
    wall2 = time.perf_counter() - t
    res2 = json.loads(psql("SELECT result FROM corpq.jobs WHERE id = %d" % job2) or "null")
    if state != "succeeded":
        sys.exit("job %d %s: %s" % (job2, state, psql("SELECT error FROM corpq.jobs WHERE id = %d" % job2)))
    same = psql("SELECT count(*) FROM out a FULL JOIN out2 b USING (id) WHERE a.hyp IS DISTINCT FROM b.hyp").strip()
    print("translate_job batch 32, 2 threads: job %.1f s wall (1 thread: %.1f s), %.0f sentences/s, "
          "%.0f tokens/s (wall): %.2fx one thread; %s hypotheses differ from the one-thread job's"
          % (res2["seconds"], res["seconds"], n / res2["seconds"], res2["tokens"] / res2["seconds"],
             res["seconds"] / res2["seconds"], same))

# ---- translate_rows on the first 1000, against the core on the same
k = min(n, 1000)
prep = core.prepare_translate(m, srcs[:k], sid[:k], o, 32)
t = time.thread_time()
core.run_translate(prep)
core_k = time.thread_time() - t
rows_s = cpu_of(one, "SELECT count(*) FROM corpq.translate_rows('small', 'SELECT id, src FROM sents ORDER BY id LIMIT %d', '%s')"
                % (k, json.dumps(dict(OPTS, batch=32))))
print("translate_rows batch 32, %d sentences (CPU): %.1f s, core alone %.1f s: glue share %.1f%%"
      % (k, rows_s, core_k, 100 * (1 - core_k / rows_s)))
core.free(m)
PY
