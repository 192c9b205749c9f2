#!/usr/bin/env bash
# SQL scoring against PyTorch: a random `tiny` model written by the reference
# writer (test/ref/torch_transformer.py), imported through corpq.model_import,
# scored with corpq.sent_prob / sent_logprob / token_scores and compared with
# the float64 PyTorch transformer; MC-dropout uncertainty compared with the
# core called directly (ctypes, same pair keys) and numpy formulas.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

server=()
if [ -z "${CORPQ_IN_CLUSTER:-}" ]; then
	make -s test/libcorpqcore.so test/blas_core >/dev/null
	# A core the caller forces with OPENBLAS_CORETYPE (checked by blas_core) is
	# given to the server as corpq.blas_core: pg_ctlcluster does not pass the
	# caller's environment on (test/run-cores.sh covers the environment path).
	if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
		server=(-o "corpq.blas_core=$(test/blas_core)")
	fi
fi
corpq_in_cluster -t 600 "${server[@]}"

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION corpq;
CREATE TABLE tp AS
SELECT g::bigint AS id,
       concat_ws(' ', 'w' || (g * 7 % 53), 'w' || (g * 3 % 41), CASE WHEN g % 3 > 0 THEN 'w' || (g % 29) END,
                 repeat('u' || (g % 13) || ' ', g % 9)) AS src,
       CASE WHEN g % 17 = 0 THEN '' ELSE concat_ws(' ', 'v' || (g * 5 % 47), repeat('z' || (g % 11) || ' ', g % 12)) END AS tgt
  FROM generate_series(1, 120) g;
SELECT corpq.vocab_build('tv_src', 'SELECT src FROM tp');
SELECT corpq.vocab_build('tv_tgt', 'SELECT tgt FROM tp');
SQL

CORPQ_CORE_LIB="$PWD/test/libcorpqcore.so" test/with-blas-core.sh /usr/bin/python3 - <<'PY'
import json, math, os, subprocess, sys
import numpy as np
sys.path.insert(0, "test/ref")
import torch_transformer as tt

def psql(sql, inp=None):
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

# the server's sessions and this process run the same OpenBLAS core (this
# script runs under test/with-blas-core.sh, the server chooses by the same rule
# unless corpq.blas_core or its own OPENBLAS_CORETYPE says otherwise)
server_core, why = psql("SELECT core, reason FROM corpq.blas_info()")[0]
print("  OpenBLAS core: server %s (%s), here %s" % (server_core, why, os.environ.get("OPENBLAS_CORETYPE")))
check(server_core.lower() == os.environ.get("OPENBLAS_CORETYPE", "").lower(),
      "server core %s, Python %s" % (server_core, os.environ.get("OPENBLAS_CORETYPE")))

vs, vt = (int(x) for x in psql("SELECT (SELECT size FROM corpq.vocabularies WHERE name = 'tv_src'), "
                                "(SELECT size FROM corpq.vocabularies WHERE name = 'tv_tgt')")[0])
tgt_tokens = [r[0] for r in psql("SELECT token FROM corpq.vocabulary_tokens WHERE vocabulary = 'tv_tgt' ORDER BY id")]
cfg = tt.make_config("tiny", vs, vt, max_positions=64, activation="gelu", dropout=0.2,
                     attention_dropout=0.1, activation_dropout=0.15)
weights = tt.random_weights(cfg, 11)
blob = tt.write_corpq("/dev/null", cfg, weights)
psql("SELECT corpq.model_import('torch', decode('%s', 'hex'), 'tv_src', 'tv_tgt')" % blob.hex())
check(psql("SELECT corpq.model_export('torch') = decode('%s', 'hex')" % blob.hex())[0][0] == "t",
      "export is not byte-identical to the imported image")

rows = psql("""SELECT id, corpq.vocab_encode('tv_src', src), corpq.vocab_encode('tv_tgt', tgt),
                      corpq.sent_prob('torch', src, tgt), corpq.sent_logprob('torch', src, tgt),
                      (SELECT json_agg(json_build_array(logprob, pred_token, pred_prob, entropy) ORDER BY pos)
                         FROM corpq.token_scores('torch', src, tgt)),
                      corpq.uncertainty('torch', src, tgt, 'entsent', 4, 77),
                      corpq.uncertainty('torch', src, tgt, 'pretp', 4, 77)
                 FROM tp ORDER BY id""")
ids = lambda s: [int(x) for x in s.strip("{}").split(",") if x]
pairs = [(ids(r[1]), ids(r[2])) for r in rows]
ref = tt.Transformer(cfg, weights).score(pairs)

e_prob = e_lp = e_tok = 0.0
am_bad = 0
for r, p, f in zip(rows, pairs, ref):
    sl = float(f["logp"].sum())
    e_lp = max(e_lp, abs(float(r[4]) - sl) / abs(sl))
    gp = math.exp(sl / len(f["logp"]))
    e_prob = max(e_prob, abs(float(r[3]) - gp) / gp)
    toks = json.loads(r[5])
    check(len(toks) == len(p[1]) + 1, "token_scores rows for pair %s" % r[0])
    for t, (lp, pred, pp, h) in enumerate(toks):
        e_tok = max(e_tok, abs(lp - f["logp"][t]), abs(pp - f["p_max"][t]), abs(h - f["entropy"][t]))
        am_bad += pred != tgt_tokens[f["argmax"][t]]
print("  %d pairs: max rel err sent_prob %.2e, sent_logprob %.2e; max abs err token logp/p_max/H %.2e; "
      "argmax mismatches %d" % (len(rows), e_prob, e_lp, e_tok, am_bad))
# float32 server vs float64 PyTorch, u = 2^-24 (the analysis of
# test/ref/test_nn.py for `tiny`: K <= 256, 2 + 2 layers x 3 = 10 sublayers):
# the final hidden state ~10 sqrt(K) u = 1e-5 relative, a log-softmax value
# off by ~2e-5 absolute, p_max and entropy by as much.  A sentence's log-prob
# is ~(T + 1) ln V with V ~ 60 here, so its relative error is <= 2e-5 / ln 60
# = 5e-6; sent_prob = exp(mean log p) is off by the mean's error, 2e-5 relative.
check(e_prob <= 2e-5, "sent_prob rel err %.3g > 2e-5" % e_prob)
check(e_lp <= 5e-6, "sent_logprob rel err %.3g > 5e-6" % e_lp)
check(e_tok <= 2e-5, "token err %.3g > 2e-5" % e_tok)
check(am_bad == 0, "%d argmax mismatches" % am_bad)

# uncertainty: the glue's pair key (corpq_ids_key, pg/model/model_session.c) and the measures over K passes
M = (1 << 64) - 1
def mix(h, v):
    h ^= (v + 0x9E3779B97F4A7C15 + ((h << 6) & M) + (h >> 2)) & M
    h ^= h >> 30; h = (h * 0xBF58476D1CE4E5B9) & M
    h ^= h >> 27; h = (h * 0x94D049BB133111EB) & M
    return h ^ (h >> 31)
def key(s, t):
    h = mix(0, len(s))
    for x in s: h = mix(h, x)
    h = mix(h, len(t))
    for x in t: h = mix(h, x)
    return h
core = tt.Core()
m = core.load(blob)

# determinism contract: the server's per-row functions and the core scoring
# all 120 pairs in ONE batch give the same bits (docs/models.md "Determinism")
whole = core.score(m, pairs)
not_same = 0
for r, w in zip(rows, whole):
    toks = json.loads(r[5])
    not_same += float(r[4]) != w["sent_logp"]
    not_same += any(lp != float(w["logp"][t]) or pp != float(w["p_max"][t]) or h != float(w["entropy"][t])
                    for t, (lp, _, pp, h) in enumerate(toks))
print("  per-row SQL vs core over one batch of %d: %d pairs differ in any bit" % (len(rows), not_same))
check(not_same == 0, "%d pairs differ between per-row SQL and the batched core" % not_same)

keys = [key(s, t) for s, t in pairs]
passes = [core.run(core.prepare(m, pairs, (77, k), keys)) for k in range(4)]
e_unc = 0.0
off = 0
for i, (r, (s, t)) in enumerate(zip(rows, pairs)):
    T = len(t) + 1
    H = np.array([ps["entropy"][off:off + T] for ps in passes], dtype=np.float64)
    P = np.array([ps["p_max"][off:off + T] for ps in passes], dtype=np.float64)
    off += T
    ent = H.mean(axis=1).mean()
    pre = (1 - P.prod(axis=1)).mean()
    e_unc = max(e_unc, abs(float(r[6]) - ent) / ent, abs(float(r[7]) - pre) / max(pre, 1e-300))
print("  uncertainty entsent/pretp K=4 vs core + numpy: max rel err %.2e" % e_unc)
# The per-position float32 inputs are the same bits on both sides (the batch
# invariance checked above, MC passes included); what remains is float64
# arithmetic in another order (numpy's pairwise mean, the glue's running sums
# and products) over at most K x (T + 1) <= 4 x 64 terms, each step rounding
# by at most 2^-53 relative: the entropies and probabilities are positive, so
# the relative error is <= 256 x 2^-53 = 2.8e-14 (pretp: the product's error
# is relative to 1 and pre is ~1 for this untrained model).  1e-12 is that
# bound with margin; a float32-level difference (~1e-7) fails it.
check(e_unc <= 1e-12, "uncertainty rel err %.3g > 1e-12" % e_unc)
sys.exit(1 if fail else 0)
PY
echo "scoring_torch: ok"
