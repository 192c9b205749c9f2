#!/usr/bin/env bash
# The planner's COST of corpq's per-row functions (docs/scaling.md, "Function
# costs"): the backend CPU time per call of each function over real en-es
# pairs cut to 20 tokens per side, in the planner's units: a function's COST
# counts cpu_operator_costs, and the planner prices a row of a bare scan with
# count() at 5 of them (cpu_tuple_cost + cpu_operator_cost), so a unit is a
# fifth of that scan's measured time per row; units = the COST that says the
# truth on this machine, printed next to the COST pg_proc has (two builtins
# of COST 1 for comparison).  Models untrained (time does not depend on the
# weights): tiny and small, 8000-token vocabularies (an encoder of small on
# a joint one for embed).
# Each figure: CPU time of `SELECT count(f(...)) FROM t` minus that of
# `SELECT count(src) FROM t` (serial plan, jit off), best of 3, divided by
# the rows.  Prints figures; asserts nothing.  About 3 minutes alone.
# Usage: bench_costs.sh [--quick] [--only NAME[,NAME...]]
#   --quick: fewer rows, rougher figures
#   --only:  only these functions (pg_proc names: is_copy,dedup_key), with the
#            two builtins for comparison; the models, the lexicon and the
#            classifier are made only when one of them needs them
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. test/bench/bench_lib.sh
corpq_corpora
corpq_in_cluster -o shared_buffers=256MB -- "$@"

q >/dev/null <<SQL
CREATE EXTENSION corpq;
$(cut_pairs_sql)
VACUUM ANALYZE pairs;
CREATE TABLE p_cheap AS SELECT * FROM pairs ORDER BY id LIMIT 20000;
CREATE TABLE p_mid AS SELECT * FROM pairs ORDER BY id LIMIT 2000;
CREATE TABLE p_model AS SELECT * FROM pairs ORDER BY id LIMIT 200;
CREATE TABLE p_slow AS SELECT * FROM pairs ORDER BY id LIMIT 20;
VACUUM ANALYZE p_cheap;
VACUUM ANALYZE p_mid;
VACUUM ANALYZE p_model;
VACUUM ANALYZE p_slow;
-- nanoseconds this backend ran on a CPU (schedstat): the machine may be busy
CREATE FUNCTION cpu_ns() RETURNS bigint LANGUAGE sql VOLATILE AS
\$\$ SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint \$\$;
SQL
/usr/bin/python3 - "$@" <<'PY'
import os, subprocess, sys

QUICK = "--quick" in sys.argv
ONLY = None
if "--only" in sys.argv:
    i = sys.argv.index("--only")
    if i + 1 >= len(sys.argv):
        sys.exit("--only needs a list of function names")
    ONLY = set(sys.argv[i + 1].split(","))

sys.path.insert(0, "test/bench")
from psql_at import psql  # noqa: E402

SET = ["SET max_parallel_workers_per_gather = 0", "SET jit = off"]

def cpu(stmt, warm):
    """backend CPU seconds of stmt, after warm (loads models, vocabularies)."""
    out = psql(*SET, "\\o /dev/null", warm, "\\o", "SELECT cpu_ns()", "\\o /dev/null", stmt, "\\o",
               "SELECT cpu_ns()").split()
    return (int(out[1]) - int(out[0])) / 1e9

def per_call(expr, table, agg=False, frm="{t}"):
    """seconds per call of expr over table: best of 3, minus the bare scan."""
    rows = int(psql("SELECT count(*) FROM " + table))
    sel = "SELECT %s FROM %s" if agg else "SELECT count(%s) FROM %s"
    stmt = sel % (expr, frm.format(t=table))
    warm = sel % (expr, frm.format(t="(SELECT * FROM %s LIMIT 2) w" % table))
    base = "SELECT count(src) FROM " + table
    reps = 2 if QUICK else 3
    t = min(cpu(stmt, warm) for _ in range(reps))
    b = min(cpu(base, "SELECT 1") for _ in range(reps))
    return max(t - b, 0.0) / rows

def make_models():
    """what the rows of with_models need: BPE codes, vocabularies, untrained
    models, a lexicon and a string-feature classifier (made only when one of
    the chosen rows needs them)"""
    psql("SELECT corpq.bpe_learn('b_bpe', 'SELECT src FROM pairs WHERE id <= 20000', 2000)",
         "SELECT corpq.vocab_build('b_src', 'SELECT src FROM pairs', NULL, 8000)",
         "SELECT corpq.vocab_build('b_tgt', 'SELECT tgt FROM pairs', NULL, 8000)",
         "SELECT corpq.model_create('tiny', '{\"preset\": \"tiny\"}', 'b_src', 'b_tgt', 1)",
         "SELECT corpq.model_create('small', '{\"preset\": \"small\"}', 'b_src', 'b_tgt', 1)",
         "SELECT corpq.model_create('small_b', '{\"preset\": \"small\"}', 'b_tgt', 'b_src', 2)",
         "SELECT corpq.model_quantize('small') AS int8_version",
         "SELECT corpq.vocab_build('b_joint', 'SELECT src FROM pairs UNION ALL SELECT tgt FROM pairs', NULL, 8000)",
         "SELECT corpq.model_create('enc_small', '{\"preset\": \"small\", \"kind\": \"encoder\"}', "
         "'b_joint', 'b_joint', 1)")
    # a pair-quality classifier on the string features only (its COST: what
    # every classifier pays)
    for submit in ("SELECT corpq.lexicon_train('lx', 'SELECT src, tgt FROM pairs WHERE id <= 5000', "
                   "'{\"iterations\": 2}')",
                   "SELECT corpq.classifier_train('pq', 'SELECT src, tgt FROM pairs WHERE id <= 5000')"):
        job = psql(submit).strip()
        if psql("SELECT corpq.job_wait(%s)" % job).strip() != "succeeded":
            sys.exit(psql("SELECT error FROM corpq.jobs WHERE id = %s" % job))

def scan_row():
    """seconds per row of the bare scan count(src) over every pair (about 160000)."""
    t = min(cpu("SELECT count(src) FROM pairs", "SELECT count(src) FROM pairs") for _ in range(3))
    return t / int(psql("SELECT count(*) FROM pairs"))

cheap, mid, model, slow = ("p_mid", "p_model", "p_slow", "p_slow") if QUICK else \
                          ("p_cheap", "p_mid", "p_model", "p_slow")
# The unit: the planner prices a row of that scan at cpu_tuple_cost +
# cpu_operator_cost (count's transition) = 5 cpu_operator_costs, and a
# function's COST is in cpu_operator_costs; so a COST unit is a fifth of the
# scan's measured time per row on this machine.
row = scan_row()
ref = row / 5
TS = "{t}, corpq.token_scores('small@1', src, tgt) t"
# rows that need nothing but the pairs
plain = [
    ("length (builtin, COST 1)", "length(src)", cheap, False, "{t}", None),
    ("md5 (builtin, COST 1)", "md5(src)", cheap, False, "{t}", None),
    ("text_length", "corpq.text_length(src)", cheap, False, "{t}", "text_length"),
    ("length_ratio", "corpq.length_ratio(src, tgt)", cheap, False, "{t}", "length_ratio"),
    ("char_script_ratio", "corpq.char_script_ratio(src, 'Latin')", cheap, False, "{t}", "char_script_ratio"),
    ("alpha_ratio", "corpq.alpha_ratio(src)", cheap, False, "{t}", "alpha_ratio"),
    ("terminal_punct_score", "corpq.terminal_punct_score(src, tgt)", cheap, False, "{t}", "terminal_punct_score"),
    ("numerals_match", "corpq.numerals_match(src, tgt)", cheap, False, "{t}", "numerals_match"),
    ("repetition", "corpq.repetition(src)", cheap, False, "{t}", "repetition"),
    ("html_tags", "corpq.html_tags(src)", cheap, False, "{t}", "html_tags"),
    ("dedup_key", "corpq.dedup_key(src, tgt)", cheap, False, "{t}", "dedup_key"),
    ("is_copy", "corpq.is_copy(src, tgt)", cheap, False, "{t}", "is_copy"),
    ("langid", "(corpq.langid(src)).prob", cheap, False, "{t}", "langid"),
    ("lang_is", "corpq.lang_is(src, 'en')", cheap, False, "{t}", "lang_is"),
    ("filter_keeps (defaults)", "corpq.filter_keeps(src, tgt)", cheap, False, "{t}", "filter_keeps"),
    ("filter_rejects (defaults)", "corpq.filter_rejects(src, tgt)", cheap, False, "{t}", "filter_rejects"),
    ("filter_stats (defaults, per row)", "corpq.filter_stats(src, tgt, corpq.filter_defaults()) IS NOT NULL", cheap, True, "{t}", "filter_stats_trans"),
    ("sentence_bleu", "corpq.sentence_bleu(tgt, src)", cheap, False, "{t}", "sentence_bleu"),
    ("sentence_chrf", "corpq.sentence_chrf(tgt, src)", cheap, False, "{t}", "sentence_chrf"),
    ("bleu (per row)", "corpq.bleu(tgt, src)", cheap, True, "{t}", "bleu_trans"),
    ("chrf (per row)", "corpq.chrf(tgt, src)", cheap, True, "{t}", "chrf_trans"),
    ("bleu_tokenize", "corpq.bleu_tokenize(src)", cheap, False, "{t}", "bleu_tokenize"),
]
# rows that need make_models()
with_models = [
    ("bpe_apply", "corpq.bpe_apply('b_bpe', src)", cheap, False, "{t}", "bpe_apply"),
    ("bpe_tokens", "corpq.bpe_tokens('b_bpe', src)", cheap, False, "{t}", "bpe_tokens"),
    ("vocab_encode", "corpq.vocab_encode('b_src', src)", cheap, False, "{t}", "vocab_encode"),
    ("align", "corpq.align('lx', src, tgt)", mid, False, "{t}", "align"),
    ("align_score", "corpq.align_score('lx', src, tgt)", mid, False, "{t}", "align_score"),
    ("coverage", "corpq.coverage('lx', src, tgt)", mid, False, "{t}", "coverage"),
    ("align_stats", "corpq.align_stats('lx', src, tgt) IS NOT NULL", mid, False, "{t}", "align_stats"),
    ("mono_uncertainty", "corpq.mono_uncertainty('lx', src)", cheap, False, "{t}", "mono_uncertainty"),
    ("word_rarity", "corpq.word_rarity('lx', src)", cheap, False, "{t}", "word_rarity"),
    ("pair_quality (string features, trees)", "corpq.pair_quality('pq@1'::corpq.pinned_model, src, tgt)", mid,
     False, "{t}", "pair_quality"),
    ("cav_accumulate (per row)", "corpq.cav_summary(corpq.cav_accumulate(src, tgt))", mid, True, "{t}", "cav_accumulate_trans"),
    ("sent_prob tiny", "corpq.sent_prob('tiny', src, tgt)", mid, False, "{t}", None),
    ("sent_prob small", "corpq.sent_prob('small@1', src, tgt)", model, False, "{t}", "sent_prob"),
    ("sent_prob small int8", "corpq.sent_prob('small@2', src, tgt)", model, False, "{t}", None),
    ("token_scores small", "t.pos", slow if QUICK else model, False, TS, "token_scores"),
    ("dual_xent small/small", "corpq.dual_xent('small@1', 'small_b', src, tgt)", model, False, "{t}", "dual_xent"),
    ("embed small (encoder)", "corpq.embed('enc_small', src)", model, False, "{t}", "embed"),
    ("embedding_cosine small (encoder)", "corpq.embedding_cosine('enc_small', src, tgt)", model, False, "{t}",
     "embedding_cosine"),
    ("uncertainty small, 30 passes", "corpq.uncertainty('small@1', src, tgt)", slow, False, "{t}", "uncertainty"),
    ("translate small, beam 5", "corpq.translate('small@1', src)", slow, False, "{t}", "translate"),
]
if ONLY is not None:
    unknown = ONLY - {c[5] for c in plain + with_models}
    if unknown:
        sys.exit("--only: no row measures %s" % ", ".join(sorted(unknown)))
    plain = [c for c in plain if c[5] is None or c[5] in ONLY]
    with_models = [c for c in with_models if c[5] in ONLY]
if with_models:
    make_models()
cases = plain + with_models
print("load average at start: %.1f %.1f %.1f; the bare scan %.3f us per row = 5 units: "
      "1 unit = %.4f us" % (os.getloadavg() + (1e6 * row, 1e6 * ref)))
print("| function | rows | us per call | units (the honest COST) | COST in pg_proc |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, expr, table, agg, frm, proname in cases:
    t = per_call(expr, table, agg, frm)
    cost = psql("SELECT string_agg(DISTINCT procost::text, ', ') FROM pg_proc WHERE pronamespace = "
                "'corpq'::regnamespace AND proname = '%s'" % proname).strip() if proname else ""
    print("| %s | %d | %.2f | %.0f | %s |" % (name, int(psql("SELECT count(*) FROM " + table)),
                                              1e6 * t, t / ref if ref > 0 else float("nan"), cost), flush=True)
PY
