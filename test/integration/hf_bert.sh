#!/usr/bin/env bash
# A LaBSE-style Hugging Face BERT end to end in SQL: a BertModel directory in
# the real layout with random weights (test/ref/test_convert_bert.py: cased
# vocab.txt with ## pieces, tokenizer_config.json, tokenizer.json, pooler,
# model.safetensors) is converted with the installed corpq-convert hf-bert
# and imported with the SQL of models/CONVERT.md (wordpiece_import,
# vocab_import, model_import).  corpq.embed() of sentences with accents,
# casing, unknown words, punctuation, CJK, special tokens and a word past
# max_input_chars_per_word must equal LaBSE's vector from the reference
# BertModel (test/ref/ref_hf_bert.py: pooler output of [CLS], L2-normalised)
# within 1e-5 per component; the pieces corpq's segmenter writes and the ids
# of the imported vocabulary must be the Hugging Face tokenizer's; a sentence
# over max_positions - 2 tokens gives NULL.  corpq is preloaded, so the model
# segments with the shared copy of its WordPiece segmenter and reads the
# shared copy of its token table (docs/models.md, "One copy per server": the
# first embed() copies them in and reads the copies, the next ones attach).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

corpq_in_cluster -t 600 -o shared_preload_libraries=corpq
CORPQ_CONVERT="$(pg_config --bindir)/corpq-convert" /usr/bin/python3 test/integration/hf_bert.py
