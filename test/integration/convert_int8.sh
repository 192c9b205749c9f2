#!/usr/bin/env bash
# corpq-convert --int8 through the server: small random fairseq, Marian,
# Hugging Face Marian and BERT (LaBSE layout) checkpoints are converted by the
# installed corpq-convert in float32 and with --int8 (default options, and
# --weight-bits 7 --embedding-precision float32); the float32 image is
# imported (model_import), quantized (model_quantize with the same options)
# and exported (model_export): its tensor table and data section must equal
# the --int8 file's byte for byte.  The --int8 image imports as a model of
# its own (model_import takes an int8 image as it is: its export is the file)
# and scores (sent_logprob) or embeds (embed) exactly as the quantized version.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

corpq_in_cluster -t 600
CORPQ_CONVERT="$(pg_config --bindir)/corpq-convert" /usr/bin/python3 test/integration/convert_int8.py
