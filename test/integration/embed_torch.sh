#!/usr/bin/env bash
# corpq.embed() against PyTorch: random encoder models (mean pooling; LaBSE's
# layout with the first position, pooler, token type vector and post-norm)
# written by the reference writer (test/ref/torch_encoder.py), imported
# through corpq.model_import, every sentence of a table embedded in SQL by
# name and by pinned version and compared with the float64 reference (within
# 1e-5 per component); a sentence over max_positions - 2 tokens gives NULL.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	make -s test/libcorpqcore.so test/blas_core >/dev/null
fi
corpq_in_cluster -t 600

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE es AS
SELECT g::bigint AS id,
       CASE WHEN g % 19 = 0 THEN '' ELSE
       concat_ws(' ', 'w' || (g * 7 % 53), 'v' || (g * 3 % 41), repeat('u' || (g % 13) || ' ', g % 11)) END AS s
  FROM generate_series(1, 80) g;
SELECT corpq.vocab_build('ev', 'SELECT s FROM es');
SQL

/usr/bin/python3 - <<'PY'
import subprocess, sys
import numpy as np
sys.path.insert(0, "test/ref")
import torch_transformer as tt
import torch_encoder as te

def psql(sql):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\t"],
                       input=sql, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: " + r.stderr)
    return [l.split("\t") for l in r.stdout.splitlines() if l]

fail = []
def check(ok, what):
    if not ok:
        fail.append(what)
        print("FAIL:", what)

v = int(psql("SELECT size FROM corpq.vocabularies WHERE name = 'ev'")[0][0])
layouts = [("mean", dict(activation="gelu")),
           ("labse", dict(norm_position="post", positions="learned", layernorm_embedding=True,
                          token_type_embedding=True, pooling="cls", pooler=True,
                          encoder_final_norm=False))]
for i, (name, over) in enumerate(layouts):
    cfg = te.encoder_config("tiny", v, max_positions=12, **over)
    w = te.encoder_weights(cfg, 30 + i)
    blob = tt.write_corpq("/dev/null", cfg, w)
    psql("SELECT corpq.model_import('e_%s', decode('%s', 'hex'), 'ev', 'ev')" % (name, blob.hex()))
    rows = psql("""SELECT id, corpq.vocab_encode('ev', s), corpq.embed('e_%s', s),
                          corpq.embed('e_%s@1'::corpq.pinned_model, s) IS NOT DISTINCT FROM corpq.embed('e_%s', s)
                     FROM es ORDER BY id""" % (name, name, name))
    ids = [[int(x) for x in r[1].strip("{}").split(",") if x] for r in rows]
    most = cfg["max_positions"] - 2
    fit = [k for k, t in enumerate(ids) if len(t) <= most]
    check(all(rows[k][2] == "" for k in range(len(rows)) if k not in fit),
          "%s: a sentence over %d tokens has a vector" % (name, most))
    check(all(r[3] == "t" for r in rows), "%s: the pinned version gives other bits" % name)
    got = np.array([[float(x) for x in rows[k][2].strip("{}").split(",")] for k in fit])
    ref = te.embed(cfg, w, [ids[k] for k in fit]).numpy()
    err = float(np.abs(got - ref).max())
    print("  %-5s %d of %d sentences embedded (%d over %d tokens NULL), max |SQL - torch| %.2e"
          % (name, len(fit), len(rows), len(rows) - len(fit), most, err))
    check(len(fit) >= 40 and len(fit) < len(rows), "%s: the table does not test both cases" % name)
    check(err <= 1e-5, "%s: vectors differ by %.2e > 1e-5" % (name, err))
sys.exit(1 if fail else 0)
PY
echo "embed_torch: ok"
