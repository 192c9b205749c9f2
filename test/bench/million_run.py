"""The million-pair walkthrough, step by step, against the way users curate
today: the driver of bench_million.sh, which runs it inside a throw-away
cluster (test/lib.sh) with the corpq this build installed.

corpq runs the SQL of docs/scaling.md, "The million-pair walkthrough"; the
peer (million_peer.py) does the same curation in Python with ONNX Runtime on
the same data, in the same run.  Each step is timed alone on the machine;
what is measured and how is in bench_million.sh's header.
"""
import argparse
import base64
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PY = "/usr/bin/python3"
sys.path.insert(0, HERE)
CORES = len(os.sched_getaffinity(0))
LABELS = ["clean", "repeat", "duplicate", "misaligned", "untranslated", "very_long", "truncated",
          "html", "url"]
TSV = "WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\b', HEADER)"
SPEC = """corpq.filter_defaults() || '[{"name": "langid", "args": {"src": "en", "tgt": "es"}}]'"""


def options(argv):
    ap = argparse.ArgumentParser(prog="bench_million.sh", description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=1000000, help="pairs in the corpus (1000000)")
    ap.add_argument("--train-seconds", type=int, default=600, help="training budget (600)")
    ap.add_argument("--drop-percent", type=int, default=10,
                    help="the lowest-scoring share of the candidates dropped, in %% (10)")
    ap.add_argument("--threads", type=int, default=CORES,
                    help="score_job's threads and ONNX Runtime's intra-op threads (the cores: %d)" % CORES)
    ap.add_argument("--peer-procs", type=int, default=CORES,
                    help="processes of the peer's rule filters (the cores: %d)" % CORES)
    ap.add_argument("--json", help="where the raw figures go (default: bench_million-PAIRS.json in "
                    "the temporary directory, kept)")
    ap.add_argument("--work", help="directory for the data files (default: a new temporary one)")
    ap.add_argument("--seed", type=int, default=20261122, help="inject_noise.py's seed")
    ap.add_argument("--no-peer", action="store_true", help="corpq's steps only")
    ap.add_argument("--no-peer-float32", action="store_true",
                    help="the peer scores with its int8 graph only (its float32 scoring is the slowest "
                    "step of the run: about 30 minutes for a million pairs on 2 cores)")
    ap.add_argument("--no-float32", action="store_true",
                    help="corpq's float32 scoring is left out (the recipe curates with int8)")
    ap.add_argument("--score-candidates", action="store_true",
                    help="score only the candidates, as the recipe does (default: every pair, for the "
                    "per-step recall of the model's cut)")
    ap.add_argument("--curate", action="store_true",
                    help="also curate the same corpus with one corpq.curate() call given only trusted pairs "
                    "and the two languages, timed, with its recall per label")
    ap.add_argument("--trusted", type=int, default=20000,
                    help="with --curate: the trusted pairs curate()'s clean_query returns, a sample of the "
                    "corpus's distinct clean pairs (20000)")
    ap.add_argument("--curate-options", default="{}",
                    help="with --curate: more options for curate(), a JSON object (none)")
    ap.add_argument("--curate-only", action="store_true",
                    help="with --curate: the recipe's model steps (BPE, training, scoring, selection) are "
                    "left out; the rules and dedup still run, for the per-step table")
    ap.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        extra = json.loads(a.curate_options)
    except ValueError:
        extra = None
    if not isinstance(extra, dict):
        ap.error("--curate-options must be a JSON object")
    if a.curate_only and not a.curate:
        ap.error("--curate-only needs --curate")
    if a.curate_only:
        a.no_peer = True
    if a.trusted < 200:
        ap.error("--trusted must be at least 200")
    if a.pairs < 1000:
        ap.error("--pairs must be at least 1000")
    if not 1 <= a.drop_percent <= 99:
        ap.error("--drop-percent must be in 1..99")
    if a.train_seconds < 10 or a.threads < 1 or a.peer_procs < 1:
        ap.error("--train-seconds must be at least 10, --threads and --peer-procs at least 1")
    return a


# ---- processes and their resources -------------------------------------------
def spawn(cmd, stdin=None, stdout=None, env=None):
    """Run cmd to its end: (exit code, its rusage with its waited-for
    children's, wall seconds)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            if stdin:
                os.dup2(os.open(stdin, os.O_RDONLY), 0)
            if stdout:
                os.dup2(os.open(stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            os.execvpe(cmd[0], cmd, env or os.environ)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), ru, time.monotonic() - t0


def proc_stat(pid):
    """(ppid, utime + stime, cutime + cstime) in seconds, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tck = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / tck, (int(fields[13]) + int(fields[14])) / tck


def proc_kind(pid):
    """backend, workers (parallel workers), job (a corpq job's worker) or None."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().decode(errors="replace")
    except OSError:
        return None
    if "parallel worker" in cmd:
        return "workers"
    if re.search(r"corpq job \d", cmd):
        return "job"
    if "[local]" in cmd or re.search(r"\(\d+\)", cmd):
        return "backend"
    return None


def proc_memory(pid):
    """(VmHWM, RssAnon) in MB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            s = f.read()
    except OSError:
        return None
    hwm = re.search(r"VmHWM:\s+(\d+)", s)
    anon = re.search(r"RssAnon:\s+(\d+)", s)
    return (int(hwm.group(1)) / 1024 if hwm else 0.0, int(anon.group(1)) / 1024 if anon else 0.0)


class Cluster:
    """The server's processes: the CPU time they spent (the postmaster, its
    live children and the children it reaped) and, sampled every 0.2 s, the
    peak RSS (VmHWM) and the largest private RSS (RssAnon) of each kind of
    process."""

    def __init__(self, postmaster):
        self.pm = postmaster
        self.peaks, self.pids = {}, {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def children(self):
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                st = proc_stat(int(d))
                if st and st[0] == self.pm:
                    out.append((int(d), st))
        return out

    def cpu(self):
        own = proc_stat(self.pm)
        return own[1] + own[2] + sum(st[1] for _, st in self.children())

    def _sample(self):
        while not self.stop.wait(0.2):
            for pid, _ in self.children():
                kind = self.pids.get(pid) or proc_kind(pid)
                mem = proc_memory(pid) if kind else None
                if not mem:
                    continue
                with self.lock:
                    self.pids[pid] = kind
                    p = self.peaks.setdefault(kind, {"rss_mb": 0.0, "private_mb": 0.0, "processes": set()})
                    p["rss_mb"] = max(p["rss_mb"], mem[0])
                    p["private_mb"] = max(p["private_mb"], mem[1])
                    p["processes"].add(pid)

    def window(self):
        """Starts a new measuring window; returns the peaks of the last one."""
        with self.lock:
            peaks, self.peaks = self.peaks, {}
        return {k: {"rss_mb": round(v["rss_mb"], 1), "private_mb": round(v["private_mb"], 1),
                    "processes": len(v["processes"])} for k, v in peaks.items()}


# ---- the run ----------------------------------------------------------------
class Bench:
    def __init__(self, a, work):
        self.a, self.work = a, work
        self.steps, self.info = [], {}

    def path(self, name):
        return os.path.join(self.work, name)

    def psql(self, sql, name="q"):
        """Runs sql in a new session; returns its output lines."""
        with open(self.path(name + ".sql"), "w") as f:
            f.write(sql)
        rc, ru, wall = spawn(["psql", "-X", "-v", "ON_ERROR_STOP=1", "-Atq", "-f", self.path(name + ".sql")],
                             stdout=self.path(name + ".out"))
        with open(self.path(name + ".out")) as f:
            out = f.read().splitlines()
        if rc:
            sys.exit("bench_million: the SQL of %s failed (%s)" % (name, self.path(name + ".sql")))
        return out, ru, wall

    def record(self, side, step, wall, cpu, pairs, memory, extra=None):
        r = {"side": side, "step": step, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
             "cores": round(cpu / wall, 2) if wall > 0 else None, "pairs": pairs,
             "pairs_per_s": round(pairs / wall, 1) if pairs and wall > 0 else None, "memory": memory}
        r.update(extra or {})
        self.steps.append(r)
        mem = " ".join("%s %.0f MB" % (k, v["rss_mb"]) for k, v in sorted(memory.items()))
        print("bench_million: %-6s %-22s %9.1f s  %10s pairs/s  %4.2f cores  %s" % (
            side, step, wall, r["pairs_per_s"] or "-", r["cores"] or 0, mem), flush=True)
        return r

    def corpq(self, step, sql, pairs):
        """One step of the walkthrough in a new session: wall time, the
        cluster's CPU time and psql's, the processes' peak memory; the
        session's own peak RSS exactly (its VmHWM, read at its end); lines
        'bench:key|value' of the output become figures."""
        sql += ("\nSELECT 'bench:backend_rss_mb', substring(pg_read_file('/proc/self/status')"
                " FROM 'VmHWM:\\s*(\\d+)')::float8 / 1024;\n")
        self.cluster.window()
        c0 = self.cluster.cpu()
        out, ru, wall = self.psql(sql, "step_" + step.split()[0])
        time.sleep(0.3)         # the sampler's last look; the postmaster reaps its workers
        cpu = self.cluster.cpu() - c0 + ru.ru_utime + ru.ru_stime
        memory = self.cluster.window()
        figures = {}
        for line in out:
            if line.startswith("bench:"):
                k, v = line[6:].split("|", 1)
                figures[k] = json.loads(v) if v[:1] in "{[" else v
        if figures.get("state", "succeeded") != "succeeded":
            sys.exit("bench_million: the job of %s ended %s" % (step, figures["state"]))
        b = memory.setdefault("backend", {"processes": 1})
        b["rss_mb"] = round(max(b.get("rss_mb", 0), float(figures.pop("backend_rss_mb"))), 1)
        b.setdefault("private_mb", None)
        return self.record("corpq", step, wall, cpu, pairs, memory, {"figures": figures})

    def peer(self, step, args, pairs):
        """One step of the peer, a process of its own: its rusage (and its
        children's: the rule filters' processes, node) gives CPU and peak RSS."""
        out = self.path("peer_%s.out" % step.split()[0])
        rc, ru, wall = spawn([PY, os.path.join(HERE, "million_peer.py")] + args, stdout=out)
        if rc:
            sys.exit("bench_million: the peer's step %s failed" % step)
        with open(out) as f:
            figures = json.loads(f.read().splitlines()[-1])
        memory = {"process": {"rss_mb": round(ru.ru_maxrss / 1024, 1), "processes": None}}
        return self.record("peer", step, wall, ru.ru_utime + ru.ru_stime, pairs, memory, {"figures": figures})


def job_sql(call):
    """Submits a job and waits for it; its result and state become figures
    (Bench.corpq fails unless the state is succeeded)."""
    return """SELECT %s AS job \\gset
SELECT corpq.job_wait(:job);
SELECT 'bench:result', result FROM corpq.jobs WHERE id = :job;
SELECT 'bench:state', state || coalesce(': ' || error, '') FROM corpq.jobs WHERE id = :job;
""" % call


def prepare(b):
    """The corpus (untimed): inject_noise.py over the shared corpora, split
    into the corpus TSV both sides read and the labels."""
    a = b.a
    import corpora
    _, files = corpora.find()
    noisy = b.path("noisy.tsv")
    rc, _, wall = spawn([PY, os.path.join(HERE, "inject_noise.py"), "--rows", str(a.pairs),
                         "--seed", str(a.seed)] + files, stdout=noisy)
    if rc:
        sys.exit("bench_million: inject_noise.py failed")
    with open(noisy, encoding="utf-8") as f, open(b.path("corpus.tsv"), "w", encoding="utf-8") as c, \
            open(b.path("labels.tsv"), "w", encoding="utf-8") as lab:
        next(f)
        c.write("id\tdomain\tsrc\ttgt\n")
        lab.write("id\tnoise\torigin\n")
        clean = {}
        for line in f:
            i, noise, origin, rest = line.split("\t", 3)
            c.write(i + "\t" + rest)
            lab.write("%s\t%s\t%s\n" % (i, noise, origin))
            if noise == "clean":
                clean.setdefault(rest.split("\t", 1)[1], None)
    os.unlink(noisy)
    if a.curate:
        # The pairs a user trusts: distinct clean pairs of the corpus (the
        # shared corpora's own pairs, as inject_noise.py copies them).
        import random
        pairs = sorted(clean)
        trusted = random.Random(a.seed).sample(pairs, min(a.trusted, len(pairs)))
        with open(b.path("trusted.tsv"), "w", encoding="utf-8") as t:
            t.write("src\ttgt\n")
            t.writelines(trusted)
        b.info["trusted"] = len(trusted)
    b.info["corpus"] = {"pairs": a.pairs, "files": files, "seed": a.seed, "bytes": os.path.getsize(b.path("corpus.tsv")),
                        "generated_in_s": round(wall, 1)}


def resolved_spec(b):
    """The filter spec with every arg and threshold written out, from
    corpq.filter_predicate: the peer applies exactly what corpq applies."""
    out, _, _ = b.psql("SELECT corpq.filter_predicate(%s);" % SPEC, "spec")
    text = "\n".join(out)
    spec = [json.loads(m.replace("''", "'"))[0]
            for m in re.findall(r"filter_keeps\(src, tgt, '((?:[^']|'')*)'\)", text)]
    with open(b.path("spec.json"), "w") as f:
        json.dump(spec, f)
    b.info["spec"] = spec


def run_corpq_front(b):
    n = b.a.pairs
    b.corpq("load (COPY)", """
CREATE TABLE corpus (id bigint PRIMARY KEY, domain text, src text, tgt text);
\\copy corpus FROM '%s' %s
ANALYZE corpus;
""" % (b.path("corpus.tsv"), TSV), n)
    b.corpq("rule filters + langid", """
CREATE TABLE rejects AS
SELECT id, corpq.filter_rejects(src, tgt, %s) AS rejected_by
  FROM corpus;
""" % SPEC, n)
    b.corpq("dedup", """
CREATE TABLE dups AS
SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY corpq.dedup_key(src, tgt) ORDER BY id) AS n
                  FROM corpus) d
 WHERE n > 1;
CREATE VIEW candidates AS
SELECT c.* FROM corpus c JOIN rejects r USING (id)
 WHERE r.rejected_by = '{}' AND NOT EXISTS (SELECT FROM dups d WHERE d.id = c.id);
""", n)


def run_corpq_model(b):
    out, _, _ = b.psql("SELECT count(*) FROM candidates;", "candidates")
    cand = int(out[0])
    b.info["candidates"] = cand
    b.corpq("BPE + vocabularies", """
SELECT corpq.bpe_learn('b_en', 'SELECT src FROM candidates', 7500);
SELECT corpq.bpe_learn('b_es', 'SELECT tgt FROM candidates', 7500);
SELECT corpq.vocab_build('v_en', 'SELECT src FROM candidates', 'b_en', 8000);
SELECT corpq.vocab_build('v_es', 'SELECT tgt FROM candidates', 'b_es', 8000);
""", cand)
    b.corpq("train small", """
CREATE TABLE dev AS SELECT * FROM candidates ORDER BY md5(id::text) LIMIT 500;
SELECT corpq.model_create('m', '{"preset": "small"}', 'v_en', 'v_es', 1);
""" + job_sql("""corpq.train('m',
    'SELECT src, tgt, split_part(domain, ''/'', 1) FROM candidates c
      WHERE NOT EXISTS (SELECT FROM dev d WHERE d.id = c.id) ORDER BY id',
    'SELECT src, tgt, split_part(domain, ''/'', 1) FROM dev ORDER BY id',
    '{"max_seconds": %d}')""" % b.a.train_seconds), cand - min(cand, 500))


def score_step(b, step, table):
    rel, pairs = ("candidates", b.info["candidates"]) if b.a.score_candidates else ("corpus", b.a.pairs)
    return b.corpq(step, """
CREATE TABLE %s (id bigint PRIMARY KEY, score double precision);
""" % table + job_sql("""corpq.score_job('m', 'SELECT id, src, tgt FROM %s ORDER BY id', '%s',
                                 '{"threads": %d}')""" % (rel, table, b.a.threads)), pairs)


def run_corpq_scoring(b):
    out, _, _ = b.psql("SELECT max(v.version) FROM corpq.model_versions v JOIN corpq.model_catalog c"
                       " ON c.id = v.model WHERE c.name = 'm';", "version")
    b.info["float32_version"] = int(out[0])
    if b.a.no_float32:
        b.psql("CREATE TABLE scores_f32 (id bigint PRIMARY KEY, score double precision);", "no_f32")
    else:
        score_step(b, "score float32", "scores_f32")
    b.corpq("quantize int8", "SELECT 'bench:version', corpq.model_quantize('m');", None)
    score_step(b, "score int8", "scores_i8")
    b.corpq("select + COPY out", """
SELECT bin_hi AS threshold FROM corpq.score_histogram(
    'SELECT ''all'', s.score FROM candidates c JOIN scores_i8 s USING (id)', 'quantile', 100)
 WHERE bin = %d \\gset
CREATE TABLE curated AS
SELECT c.* FROM candidates c JOIN scores_i8 s USING (id) WHERE s.score >= :threshold ORDER BY c.id;
\\copy curated TO '%s' %s
SELECT 'bench:threshold', :threshold;
""" % (b.a.drop_percent, b.path("curated.tsv"), TSV), b.a.pairs)


def run_corpq_curate(b):
    """The same corpus curated by one curate() call: the trusted pairs (a
    table the user has: loaded untimed) and the two languages, nothing else
    unless --curate-options says more; then the kept pairs written out."""
    b.psql("CREATE TABLE trusted (src text, tgt text);\n\\copy trusted FROM '%s' %s\nANALYZE trusted;\n"
           % (b.path("trusted.tsv"), TSV), "trusted")
    opts = {"clean_query": "SELECT src, tgt FROM trusted", "src_lang": "en", "tgt_lang": "es"}
    opts.update(json.loads(b.a.curate_options))
    b.info["curate_options"] = opts
    b.corpq("curate()", """
CREATE TABLE curation (id bigint PRIMARY KEY, decision text, probability float8, reasons text[]);
""" + job_sql("corpq.curate('corpus', 'curation', '%s')" % json.dumps(opts).replace("'", "''")), b.a.pairs)
    b.corpq("curate: COPY out", """
CREATE TABLE curated_by_curate AS
SELECT c.* FROM corpus c JOIN curation k USING (id) WHERE k.decision = 'keep' ORDER BY c.id;
\\copy curated_by_curate TO '%s' %s
""" % (b.path("curated_by_curate.tsv"), TSV), b.a.pairs)


def export_for_peer(b):
    """What the peer takes from corpq's catalog (untimed): the float32 model
    image, the BPE codes, the vocabularies; and a check that the peer's
    token ids are vocab_encode's."""
    v = b.info["float32_version"]
    q = ("SELECT encode(corpq.model_export('m@%d'), 'base64');" % v, "SELECT corpq.bpe_export('b_en');",
         "SELECT corpq.bpe_export('b_es');", "SELECT corpq.vocab_export('v_en');",
         "SELECT corpq.vocab_export('v_es');")
    names = ("model.b64", "codes.en", "codes.es", "vocab.en.json", "vocab.es.json")
    for sql, name in zip(q, names):
        out, _, _ = b.psql(sql, "export")
        with open(b.path(name), "w", encoding="utf-8") as f:
            f.write("\n".join(out) + ("\n" if name.startswith("codes") else ""))
    with open(b.path("model.b64")) as f, open(b.path("model.cqm"), "wb") as g:
        g.write(base64.b64decode(f.read()))
    import million_peer
    enc = {s: million_peer.Encoder(b.path("codes." + s), b.path("vocab.%s.json" % s)) for s in ("en", "es")}
    out, _, _ = b.psql("\\pset fieldsep '\\t'\nSELECT corpq.vocab_encode('v_en', src), corpq.vocab_encode('v_es', tgt),"
                       " src, tgt FROM corpus ORDER BY md5(id::text) LIMIT 2000;", "ids")
    equal = 0
    for line in out:
        s, t, src, tgt = line.split("\t")
        equal += (s == "{%s}" % ",".join(map(str, enc["en"].encode(src))) and
                  t == "{%s}" % ",".join(map(str, enc["es"].encode(tgt))))
    b.info["peer_token_ids_equal"] = "%d/%d" % (equal, len(out))


def run_peer(b, do_score):
    n, a, p = b.a.pairs, b.a, b.path
    b.peer("rule filters + langid", ["rules", "--corpus", p("corpus.tsv"), "--spec", p("spec.json"),
                                     "--out", p("peer_rejects.tsv"), "--procs", str(a.peer_procs)], n)
    b.peer("dedup", ["dedup", "--corpus", p("corpus.tsv"), "--out", p("peer_dups.txt")], n)
    if not do_score:
        return
    g = b.peer("export ONNX", ["export", "--image", p("model.cqm"), "--out", p("onnx")], None)["figures"]
    common = ["--corpus", p("corpus.tsv"), "--codes-src", p("codes.en"), "--codes-tgt", p("codes.es"),
              "--vocab-src", p("vocab.en.json"), "--vocab-tgt", p("vocab.es.json"),
              "--max-positions", str(g["max_positions"]), "--start", str(g["start"]), "--threads", str(a.threads)]
    if not a.no_peer_float32:
        b.peer("score float32", ["score", "--graph", g["f32"], "--out", p("peer_f32.tsv")] + common, n)
    b.peer("score int8", ["score", "--graph", g["int8"], "--out", p("peer_i8.tsv")] + common, n)
    b.peer("select + write out", ["select", "--corpus", p("corpus.tsv"), "--rejects", p("peer_rejects.tsv"),
                                  "--dups", p("peer_dups.txt"), "--scores", p("peer_i8.tsv"),
                                  "--drop-percent", str(a.drop_percent), "--out", p("peer_curated.tsv")], n)


# ---- what each step removed, from the injected labels (untimed) ----------------
def analyse(b, peer_scored):
    """Per side, step and label: the share of the label's pairs the step
    removes (its recall; for 'clean', the clean pairs lost).  'repeat' is a
    pair labelled clean that repeats an earlier row exactly (the input
    pairs run out and are used again: inject_noise.py)."""
    p, P = b.path, b.a.drop_percent
    sql = ["""
CREATE TABLE labels (id bigint PRIMARY KEY, noise text, origin text);
\\copy labels FROM '%s' %s
CREATE TABLE lab AS
SELECT c.id, CASE WHEN l.noise = 'clean' AND row_number() OVER (PARTITION BY c.src, c.tgt ORDER BY c.id) > 1
                  THEN 'repeat' ELSE l.noise END AS label
  FROM corpus c JOIN labels l USING (id);
CREATE TABLE cur_corpq (id bigint, domain text, src text, tgt text);
\\copy cur_corpq FROM '%s' %s
CREATE TABLE peer_rejects (id bigint, rejected_by text[]);
CREATE TABLE peer_dups (id bigint);
CREATE TABLE peer_f32 (id bigint, score float8);
CREATE TABLE peer_i8 (id bigint, score float8);
CREATE TABLE cur_peer (id bigint, domain text, src text, tgt text);
""" % (p("labels.tsv"), TSV, p("curated.tsv"), TSV)]
    if not b.a.no_peer:
        sql.append("\\copy peer_rejects FROM '%s'\n\\copy peer_dups FROM '%s'\n" % (p("peer_rejects.tsv"),
                                                                                  p("peer_dups.txt")))
    if peer_scored:
        if not b.a.no_peer_float32:
            sql.append("\\copy peer_f32 FROM '%s' WITH (FORMAT csv, DELIMITER E'\\t')\n" % p("peer_f32.tsv"))
        sql.append("\\copy peer_i8 FROM '%s' WITH (FORMAT csv, DELIMITER E'\\t')\n"
                   "\\copy cur_peer FROM '%s' %s\n" % (p("peer_i8.tsv"), p("peer_curated.tsv"), TSV))
    labels = [f.get("label", f["name"]) for f in b.info["spec"]]
    steps = ["('%s', '%s' = ANY (rejected_by))" % (lb, lb) for lb in labels]
    steps += ["('rules + langid', rejected_by <> '{}')", "('dedup', dup)"]
    if not b.a.score_candidates:    # the model's cut alone needs every pair scored
        if not b.a.no_float32:
            steps.append("('model float32 bottom %d%%', d.f32 IS NULL OR d.f32 < t.f32)" % P)
        steps.append("('model int8 bottom %d%%', d.i8 IS NULL OR d.i8 < t.i8)" % P)
    steps += ["('rules + langid + dedup', rejected_by <> '{}' OR dup)", "('curated (all steps)', NOT kept)"]
    sides = "('corpq')" + (", ('peer')" if not b.a.no_peer else "")
    sql.append("""
CREATE TABLE decisions AS
SELECT 'corpq' AS side, c.id, r.rejected_by, d.id IS NOT NULL AS dup, f.score AS f32, i.score AS i8,
       k.id IS NOT NULL AS kept
  FROM corpus c JOIN rejects r USING (id) LEFT JOIN dups d USING (id) LEFT JOIN scores_f32 f USING (id)
  LEFT JOIN scores_i8 i USING (id) LEFT JOIN cur_corpq k USING (id)
UNION ALL
SELECT 'peer', c.id, coalesce(r.rejected_by, '{}'), d.id IS NOT NULL, f.score, i.score, k.id IS NOT NULL
  FROM corpus c LEFT JOIN peer_rejects r USING (id) LEFT JOIN peer_dups d USING (id)
  LEFT JOIN peer_f32 f USING (id) LEFT JOIN peer_i8 i USING (id) LEFT JOIN cur_peer k USING (id);
-- the bottom P %% of the candidates' scores, as the selection cuts them
CREATE TABLE thresholds AS
SELECT side, percentile_cont(%d / 100.0) WITHIN GROUP (ORDER BY f32) AS f32,
       percentile_cont(%d / 100.0) WITHIN GROUP (ORDER BY i8) AS i8
  FROM decisions WHERE rejected_by = '{}' AND NOT dup GROUP BY side;
SELECT 'bench:thresholds', json_object_agg(side, json_build_object('float32', f32, 'int8', i8)) FROM thresholds;
SELECT 'bench:labels', json_object_agg(label, n) FROM (SELECT label, count(*) AS n FROM lab GROUP BY 1) x;
SELECT 'bench:removed', json_agg(json_build_object('side', side, 'step', step, 'label', label,
                                                   'removed', removed, 'pairs', pairs))
  FROM (SELECT d.side, s.step, l.label, count(*) FILTER (WHERE s.removed) AS removed, count(*) AS pairs
          FROM decisions d JOIN lab l USING (id) JOIN thresholds t USING (side),
               LATERAL (VALUES %s) s(step, removed)
         WHERE d.side IN (SELECT * FROM (VALUES %s) v)%s
         GROUP BY 1, 2, 3) x;
""" % (P, P, ",\n                       ".join(steps), sides,
       "\n           AND NOT (d.side = 'peer' AND s.step LIKE 'model float32%%')" if b.a.no_peer_float32 else ""))
    if not b.a.no_peer:
        per = ", ".join("'%s', count(*) FILTER (WHERE ('%s' = ANY (a.rejected_by)) <> ('%s' = ANY (p.rejected_by)))"
                        % (lb, lb, lb) for lb in labels)
        sql.append("""
SELECT 'bench:agreement', json_build_object(
  'pairs', count(*),
  'rules_differ', count(*) FILTER (WHERE NOT (a.rejected_by <@ p.rejected_by AND p.rejected_by <@ a.rejected_by)),
  'rules_differ_per_filter', json_build_object(%s),
  'dedup_differ', count(*) FILTER (WHERE a.dup <> p.dup),
  'float32_null_differ', count(*) FILTER (WHERE (a.f32 IS NULL) <> (p.f32 IS NULL)),
  'float32_max_abs_diff_logprob_per_token', max(abs(ln(a.f32) - ln(p.f32))),
  'float32_mean_abs_diff_logprob_per_token', avg(abs(ln(a.f32) - ln(p.f32))),
  'int8_null_differ', count(*) FILTER (WHERE (a.i8 IS NULL) <> (p.i8 IS NULL)),
  'int8_max_abs_diff_logprob_per_token', max(abs(ln(a.i8) - ln(p.i8))),
  'int8_mean_abs_diff_logprob_per_token', avg(abs(ln(a.i8) - ln(p.i8))),
  'int8_vs_float32_mean_abs_diff_logprob_per_token_corpq', avg(abs(ln(a.i8) - ln(a.f32))),
  'kept_corpq', count(*) FILTER (WHERE a.kept), 'kept_peer', count(*) FILTER (WHERE p.kept),
  'kept_both', count(*) FILTER (WHERE a.kept AND p.kept))
  FROM decisions a JOIN decisions p USING (id) WHERE a.side = 'corpq' AND p.side = 'peer';
""" % per)
    if b.a.curate:
        # curate()'s decisions per label, and the kind of the first reason
        # of each dropped pair (rule, langid, duplicate_of, classifier, ...)
        sql.append("""
SELECT 'bench:curate_removed', json_object_agg(label, json_build_object(
         'pairs', pairs, 'removed', removed, 'first_reason', reasons))
  FROM (SELECT label, sum(n) AS pairs, sum(n) FILTER (WHERE kind IS NOT NULL) AS removed,
               coalesce(json_object_agg(kind, n) FILTER (WHERE kind IS NOT NULL), '{}') AS reasons
          FROM (SELECT l.label, CASE WHEN k.decision = 'drop'
                                     THEN coalesce(split_part(k.reasons[1], ':', 1), '?') END AS kind,
                       count(*) AS n
                  FROM lab l JOIN curation k USING (id) GROUP BY 1, 2) x
         GROUP BY label) y;
-- the clean pairs the trusted ones do not hold: curate()'s lexicon and
-- classifier learnt from the trusted pairs, so these are the unseen ones
SELECT 'bench:curate_clean_unseen', json_build_object(
         'pairs', count(*), 'removed', count(*) FILTER (WHERE k.decision = 'drop'))
  FROM lab l JOIN curation k USING (id) JOIN corpus c USING (id)
 WHERE l.label = 'clean' AND NOT EXISTS (SELECT FROM trusted t WHERE t.src = c.src AND t.tgt = c.tgt);
SELECT 'bench:curate_rows', json_build_object('corpus', (SELECT count(*) FROM corpus),
                                              'written', (SELECT count(*) FROM curation),
                                              'kept', (SELECT count(*) FROM curation WHERE decision = 'keep'));
""")
    out, _, _ = b.psql("".join(sql), "analysis")
    for line in out:
        if line.startswith("bench:"):
            k, v = line[6:].split("|", 1)
            b.info[k] = json.loads(v)


# ---- the report -------------------------------------------------------------
ROWS = [("load (COPY)", "load (COPY)", None),
        ("rule filters + langid", "rule filters + langid", "rule filters + langid"),
        ("dedup", "dedup", "dedup"),
        ("BPE + vocabularies", "BPE + vocabularies", None),
        ("train small", "train small", None),
        ("score float32", "score float32", "score float32"),
        ("quantize / export ONNX", "quantize int8", "export ONNX"),
        ("score int8", "score int8", "score int8"),
        ("select + write out", "select + COPY out", "select + write out"),
        ("curate() (trains what it needs)", "curate()", None),
        ("curate(): kept pairs written out", "curate: COPY out", None)]
PATHS = {"int8": ["load (COPY)", "rule filters + langid", "dedup", "quantize int8", "score int8",
                  "select + COPY out"],
         "float32": ["load (COPY)", "rule filters + langid", "dedup", "score float32", "select + COPY out"]}
PEER_PATHS = {"int8": ["rule filters + langid", "dedup", "export ONNX", "score int8", "select + write out"],
              "float32": ["rule filters + langid", "dedup", "export ONNX", "score float32", "select + write out"]}


def end_to_end(b):
    """The curation without the training (the peer scores corpq's model):
    per scoring precision, the sum of each side's steps."""
    out = {}
    for prec in ("int8", "float32"):
        for side, names in (("corpq", PATHS[prec]), ("peer", PEER_PATHS[prec])):
            st = [s for s in b.steps if s["side"] == side and s["step"] in names]
            if len(st) != len(names):
                continue
            wall, cpu = sum(s["wall_s"] for s in st), sum(s["cpu_s"] for s in st)
            out.setdefault(prec, {})[side] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                                              "cores": round(cpu / wall, 2), "steps": names,
                                              "pairs_per_s": round(b.a.pairs / wall, 1)}
        e = out.get(prec, {})
        if "corpq" in e and "peer" in e:
            e["peer_over_corpq_wall"] = round(e["peer"]["wall_s"] / e["corpq"]["wall_s"], 2)
            e["peer_over_corpq_cpu"] = round(e["peer"]["cpu_s"] / e["corpq"]["cpu_s"], 2)
    # corpq's whole recipe, training included, against one curate() call
    # (which trains what it needs) on the same loaded corpus
    whole = {"recipe": PATHS["int8"] + ["BPE + vocabularies", "train small"],
             "curate": ["load (COPY)", "curate()", "curate: COPY out"]}
    for name, names in whole.items():
        st = [s for s in b.steps if s["side"] == "corpq" and s["step"] in names]
        if len(st) == len(names):
            wall, cpu = sum(s["wall_s"] for s in st), sum(s["cpu_s"] for s in st)
            out.setdefault("with training", {})[name] = {
                "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cores": round(cpu / wall, 2),
                "steps": names, "pairs_per_s": round(b.a.pairs / wall, 1)}
    w = out.get("with training", {})
    if "recipe" in w and "curate" in w:
        w["curate_over_recipe_wall"] = round(w["curate"]["wall_s"] / w["recipe"]["wall_s"], 2)
    return out


def mem(r):
    if r["side"] == "peer":
        return "%.0f" % r["memory"]["process"]["rss_mb"]
    m = r["memory"]
    other = max([m[k]["rss_mb"] for k in ("workers", "job") if k in m] or [0])
    return "%.0f / %s" % (m["backend"]["rss_mb"], "%.0f" % other if other else "-")


def fmt(x, f="%.1f"):
    return "-" if x is None else f % x


def report(b, e2e):
    by = {(s["side"], s["step"]): s for s in b.steps}
    print("\nSteps (wall time; pairs/s of wall time; cores = CPU time / wall time; peak RSS in MB,"
          " corpq: backend / parallel or job worker; peer: its largest process):")
    print("| step | corpq s | pairs/s | cores | RSS MB | peer s | pairs/s | cores | RSS MB | peer / corpq time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, cs, ps in ROWS:
        c, p = by.get(("corpq", cs)), by.get(("peer", ps)) if ps else None
        cells = [fmt(c["wall_s"]), fmt(c["pairs_per_s"], "%.0f"), fmt(c["cores"], "%.2f"), mem(c)] if c else ["-"] * 4
        cells += [fmt(p["wall_s"]), fmt(p["pairs_per_s"], "%.0f"), fmt(p["cores"], "%.2f"), mem(p)] if p else ["-"] * 4
        ratio = "%.2f" % (p["wall_s"] / c["wall_s"]) if c and p and c["wall_s"] > 0 else "-"
        print("| %s | %s | %s |" % (label, " | ".join(cells), ratio))
    for prec, e in e2e.items():
        if prec == "with training":
            continue
        c, p = e.get("corpq"), e.get("peer")
        cells = [fmt(c["wall_s"]), fmt(c["pairs_per_s"], "%.0f"), fmt(c["cores"], "%.2f"), ""] if c else ["-"] * 4
        cells += [fmt(p["wall_s"]), fmt(p["pairs_per_s"], "%.0f"), fmt(p["cores"], "%.2f"), ""] if p else ["-"] * 4
        print("| **end to end, %s scoring** (no training) | %s | %s |" % (
            prec, " | ".join(cells), fmt(e.get("peer_over_corpq_wall"), "%.2f")))
    removed = b.info.get("removed", [])
    labels = [lb for lb in LABELS if lb in b.info.get("labels", {})]
    print("\nShare of each label's pairs removed, %% (recall; 'clean': clean pairs lost; pairs: %s):"
          % ", ".join("%s %d" % (lb, b.info["labels"][lb]) for lb in labels))
    print("| side | step | %s |" % " | ".join(labels))
    print("| --- | --- |%s" % (" ---: |" * len(labels)))
    cell = {(r["side"], r["step"], r["label"]): r for r in removed}
    steps = []
    for r in removed:
        if (r["side"], r["step"]) not in steps:
            steps.append((r["side"], r["step"]))
    for side, step in steps:
        vals = []
        for lb in labels:
            r = cell.get((side, step, lb))
            vals.append("%.1f" % (100.0 * r["removed"] / r["pairs"]) if r else "-")
        print("| %s | %s | %s |" % (side, step, " | ".join(vals)))
    w = e2e.get("with training", {})
    for name, what in (("recipe", "the recipe, training included (load, rules + langid, dedup, BPE, train,"
                        " quantize, score int8, select)"), ("curate", "one curate() call (load, curate(), write out)")):
        if name in w:
            print("\n%s: %.1f s, %.2f cores" % (what, w[name]["wall_s"], w[name]["cores"]), end="")
    if "curate_over_recipe_wall" in w:
        print("\ncurate() / recipe wall time: %.2f" % w["curate_over_recipe_wall"])
    cr = b.info.get("curate_removed")
    if cr:
        print("\ncurate() (%s trusted pairs): share of each label's pairs dropped, %% (first reason's kind:"
              " pairs)" % b.info.get("trusted"))
        print("| label | pairs | dropped | first reasons |")
        print("| --- | ---: | ---: | --- |")
        for lb in [x for x in LABELS if x in cr]:
            r = cr[lb]
            print("| %s | %d | %.1f | %s |" % (lb, r["pairs"], 100.0 * (r["removed"] or 0) / r["pairs"],
                                               ", ".join("%s %d" % kv for kv in sorted(r["first_reason"].items()))))
        u = b.info.get("curate_clean_unseen")
        if u and u["pairs"]:
            print("| clean, not among the trusted pairs | %d | %.1f | |" % (u["pairs"], 100.0 * u["removed"] / u["pairs"]))
        tr = [s for s in b.steps if s["step"] == "curate()"]
        if tr:
            print("curate()'s job result: %s" % json.dumps(tr[0]["figures"].get("result"))[:3000])
    if "agreement" in b.info:
        ag = b.info["agreement"]
        print("\ncorpq against the peer on the same pairs: rules decide differently on %d of %d pairs, dedup on %d;"
              " float32 log p per token differs by %s at most (mean %s), int8 by %s mean; curated %d (corpq),"
              " %d (peer), %d in both; the peer's token ids equal vocab_encode's on %s sampled pairs"
              % (ag["rules_differ"], ag["pairs"], ag["dedup_differ"],
                 fmt(ag["float32_max_abs_diff_logprob_per_token"], "%.2g"),
                 fmt(ag["float32_mean_abs_diff_logprob_per_token"], "%.2g"),
                 fmt(ag["int8_mean_abs_diff_logprob_per_token"], "%.2g"),
                 ag["kept_corpq"], ag["kept_peer"], ag["kept_both"], b.info.get("peer_token_ids_equal", "-")))


def machine():
    import blas_cores
    return {"cpu": blas_cores.cpu_name(), "cores": CORES, "load_average": list(os.getloadavg()),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}


def main():
    a = options(sys.argv[1:])
    if a.check_args:
        return
    import tempfile
    work = a.work or tempfile.mkdtemp(prefix="bench_million.")
    os.makedirs(work, exist_ok=True)
    json_path = a.json or os.path.join(tempfile.gettempdir(), "bench_million-%d-%s.json"
                                       % (a.pairs, time.strftime("%Y%m%d-%H%M%S")))
    b = Bench(a, work)
    t0 = time.time()
    b.info["machine"] = machine()
    print("bench_million: %s, %d cores, load %s; %d pairs, training %d s, drop the lowest %d %%, "
          "%d threads, peer %d processes; files in %s"
          % (b.info["machine"]["cpu"], CORES, " ".join("%.2f" % x for x in os.getloadavg()), a.pairs,
             a.train_seconds, a.drop_percent, a.threads, a.peer_procs, work), flush=True)
    prepare(b)
    # The postmaster's pid from its pid file (the session's backend, whose
    # parent it is, may be gone before /proc is read)
    out, _, _ = b.psql("CREATE EXTENSION corpq;\nSELECT split_part(pg_read_file('postmaster.pid'), E'\\n', 1),"
                       " current_setting('server_version'),"
                       " (SELECT extversion FROM pg_extension WHERE extname = 'corpq');", "setup")
    pid, version, ext = out[0].split("|")
    b.info["server"] = {"postgresql": version, "corpq": ext}
    b.cluster = Cluster(int(pid))
    resolved_spec(b)
    run_corpq_front(b)
    if a.curate_only:
        b.psql("CREATE TABLE scores_f32 (id bigint, score float8);\nCREATE TABLE scores_i8 (id bigint, score float8);\n",
               "no_model")
        open(b.path("curated.tsv"), "w").write("id\tdomain\tsrc\ttgt\n")
    else:
        run_corpq_model(b)
        run_corpq_scoring(b)
    if a.curate:
        run_corpq_curate(b)
    peer_scored = False
    if not a.no_peer:
        import onnx_ort
        node_dir, why = onnx_ort.ensure_runtime()
        if node_dir is None:
            print("bench_million: the peer's scoring is skipped: " + why)
            b.info["peer_scoring_skipped"] = why
        else:
            export_for_peer(b)
        run_peer(b, node_dir is not None)
        peer_scored = node_dir is not None
    b.info["load_average_end"] = list(os.getloadavg())
    analyse(b, peer_scored)
    e2e = end_to_end(b)
    report(b, e2e)
    b.info["total_s"] = round(time.time() - t0, 1)
    with open(json_path, "w") as f:
        json.dump({"options": {k: v for k, v in vars(a).items() if k != "check_args"}, "info": b.info,
                   "steps": b.steps, "end_to_end": e2e}, f, indent=1, default=str)
    print("\nbench_million: total %.0f s; raw figures in %s" % (b.info["total_s"], json_path))
    if not a.work:
        import shutil
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
