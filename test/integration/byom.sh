#!/usr/bin/env bash
# Bring your own model, end to end in SQL: a fairseq checkpoint (pre-norm,
# whitespace dictionaries), a Marian .npz and a Hugging Face Marian directory
# (post-norm, swish, output bias, a SentencePiece model trained here with
# Debian's spm_train on the first parallel corpus test/lib.sh finds: the
# shared Bible, or the corpus it builds) are written in their toolkits' real
# layouts with random weights, converted with the installed corpq-convert and
# imported with the SQL of models/CONVERT.md.  Each then scores Bible pairs
# (token_scores, sent_logprob) and translates greedily (translate_nbest,
# translate) as its toolkit's own reference does (test/ref/ref_*.py); each is
# fine-tuned by train(); one serves as rejuvenate()'s identifier and
# rejuvenator, another as self_train()'s teacher.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

corpq_corpora
corpq_in_cluster -t 1500 -o max_worker_processes=16
# the first parallel file: the shared Bible, or the corpus test/lib.sh builds
CORPQ_BIBLE="${CORPQ_PARALLEL[0]}" \
	CORPQ_CONVERT="$(pg_config --bindir)/corpq-convert" \
	/usr/bin/python3 test/integration/byom.py
