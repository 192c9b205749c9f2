#!/usr/bin/env bash
# The million-pair walkthrough (docs/scaling.md), timed step by step against
# the way users curate today, on the same data in the same run.
#
# Data: test/bench/inject_noise.py over the shared en-es corpora (the pairs
# used again once they run out) with its default labelled noise: 10 %
# misaligned, 5 % duplicates, 3 % untranslated, 1 % very long, 1 % truncated,
# 2 % HTML, 1 % URLs.  Written as a corpus TSV (id, domain, src, tgt) both
# sides read, and the labels, which only the analysis reads.
#
# corpq, the SQL of the walkthrough, each step in a new session:
#   load                 CREATE TABLE, \copy, ANALYZE
#   rule filters+langid  CREATE TABLE rejects AS ... filter_rejects(src, tgt,
#                        filter_defaults() + langid en/es) over every pair
#   dedup                the ids after the first of each dedup_key
#   BPE + vocabularies   7500 merges and 8000 tokens a side, on the candidates
#                        (the pairs no filter rejects, first of their key)
#   train small          model_create(small), train() for --train-seconds
#                        (default options otherwise), 500 candidates as dev
#   score float32        score_job over every pair, threads = --threads
#   quantize int8        model_quantize
#   score int8           score_job over every pair with the int8 version
#   select + COPY out    the candidates whose int8 sent_prob is at least the
#                        --drop-percent quantile of the candidates' scores (a
#                        bin edge of score_histogram's quantile bins), \copy out
# With --curate, the same corpus again in one call (issue 52): curate() given
# a table of trusted pairs (--trusted distinct clean pairs of the corpus,
# loaded untimed: the pairs a user trusts) and the two languages, nothing
# else; then the kept pairs \copy out.  Timed against the recipe with its
# training; its decisions per label with the first reason of each drop.
# --score-candidates scores only the candidates (what the recipe needs);
# --no-float32 leaves the float32 scoring out.
# The peer (million_peer.py), one process per step on files: the rule filters
# with OpusFilter's definitions in Python (test/ref/opusfilter_rules.py, the
# same resolved spec, CLD2 as pycld2 calls it) over --peer-procs processes;
# OpusFilter's remove_duplicates; the same model exported to ONNX (float32,
# and ONNX Runtime's dynamic int8 pattern); subword-nmt BPE in Python and
# onnxruntime-node batch scoring with --threads intra-op threads; the same
# selection rule with numpy.  The peer scores corpq's model: it has no
# training step, and the end-to-end figures leave training out on both sides.
#
# Per step: wall time, pairs/s, CPU time and cores used (CPU / wall), peak
# memory.  corpq: the CPU time of every server process (the postmaster's own,
# its live children's and the children it reaped, from /proc) plus psql's
# (wait4); peak RSS of the step's backend (its VmHWM from /proc/self/status
# at the end of the session) and of the parallel workers and the job's
# worker (VmHWM sampled every 0.2 s from /proc; it counts the shared buffers
# a process touched; the JSON also has the largest private RSS, RssAnon).
# The peer: wait4's rusage of the step's process, which includes its
# waited-for children (the filter processes, node): CPU time, and the peak
# RSS of the largest of them.  Then, from the labels, the share of each noise
# type each step removes (its recall) and the clean pairs it loses, for both
# sides; how corpq's and the peer's decisions and scores differ.  Prints
# Markdown tables and writes every figure as JSON.
#
# Usage: bench_million.sh [--pairs N] [--train-seconds S] [--drop-percent P]
#                         [--threads N] [--peer-procs N] [--json FILE]
#                         [--work DIR] [--no-peer] [--curate [--trusted N]]
#                         [--score-candidates] [--no-float32]  (--help says more)
#   e.g. bench_million.sh --pairs 20000 --train-seconds 60   (a test run)
# Needs the installed extension (make install), the shared corpora, node and
# npm (onnx_ort.py installs onnxruntime-node), Debian's python3-torch,
# -onnx, -regex, -bs4, -xxhash, -numpy.  Asserts nothing on time; run it
# alone on the machine.  A million pairs with 600 s of training take hours
# (test/bench/README.md).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
/usr/bin/python3 test/bench/million_run.py --check-args "$@"
case " $* " in *" -h "* | *" --help "*) exit 0 ;; esac
corpq_corpora
[ -n "${CORPQ_IN_CLUSTER:-}" ] || make -s test/libcorpqcore.so
corpq_in_cluster -o max_worker_processes=16 -o max_wal_size=4GB -- "$@"
exec /usr/bin/python3 test/bench/million_run.py "$@"
