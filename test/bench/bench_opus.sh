#!/usr/bin/env bash
# Benchmark of an OPUS-MT-sized imported model: a Hugging Face Marian
# directory (d 512, 6+6 layers, 8 heads, ffn 2048, a shared vocabulary of
# 58,101, post-norm, swish, output bias; random weights) written in its real
# layout (test/ref/test_convert.py), converted with corpq-convert and imported
# with corpq.model_import.  One thread on every side, the same pairs:
#   - corpq.sent_prob (per row) and corpq.score (batched) pairs/s against the
#     PyTorch reference of the toolkit (test/ref/ref_hf_marian.py, float32,
#     batch 1 and 64)
#   - corpq.translate_rows beam 4 sentences/s against the PyTorch beam search
#     of the same model (test/ref/torch_search.py over torch_transformer.py,
#     float32, the same options, one sentence at a time)
#   - memory: the backend's peak RSS after scoring and translating, the Python
#     process's peak RSS after the same work, and the weight image's size
# Sentences are 20 to 30 tokens of the vocabulary's own pieces (whitespace
# segmentation of the imported tokens: the document's "spm" is dropped), so
# both sides see the same ids.
# Prints figures and ratios of this run; asserts nothing on time.
# Usage: bench_opus.sh [--quick]
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -o shared_buffers=256MB -- "$@"

OPENBLAS_NUM_THREADS=1 CORPQ_CONVERT="$PWD/tools/corpq-convert" /usr/bin/python3 - "$@" <<'PY'
import json, os, random, re, resource, subprocess, sys, tempfile, time
import numpy as np
import torch
sys.path.insert(0, "test/ref")
import test_convert as tc
import torch_search as ts
import torch_transformer as tt
from ref_hf_marian import HFMarianRef

QUICK = "--quick" in sys.argv
N_PAIRS, N_SENT = (64, 8) if QUICK else (256, 32)
torch.set_num_threads(1)


def psql(sql, timing=False):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\t"],
                       input=("\\timing on\n" if timing else "") + sql, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: " + r.stderr)
    return r.stdout


def times(out):
    return [float(x) / 1000 for x in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def best(fn, reps):
    b = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


tmp = tempfile.mkdtemp(prefix="corpq-bench-opus-")
os.chmod(tmp, 0o755)            # the server reads the converted files
g = torch.Generator().manual_seed(3)
V = 58101
md, c, sd, words = tc.hf_model(tmp, "opus", g, V=V, d=512, heads=8, ffn=2048, layers=6, M=512)
out = os.path.join(tmp, "opus.out")
r = subprocess.run([os.environ["CORPQ_CONVERT"], "hf-marian", "--model-dir", md, "--output", out],
                   capture_output=True, text=True)
if r.returncode:
    sys.exit("corpq-convert failed: " + r.stderr)
image = os.path.join(out, "model.corpq")
psql("""CREATE EXTENSION corpq;
SELECT corpq.vocab_import('opus_v', pg_read_file('%s')::jsonb - 'spm');
SELECT corpq.model_import('opus', pg_read_binary_file('%s'), 'opus_v', 'opus_v');
""" % (os.path.join(out, "src_vocab.json"), image))

# sentences of 20..30 pieces "\u2581hN" (ids the same on both sides)
rng = random.Random(7)
pieces = [i for i, w in enumerate(words) if w.startswith("\u2581h")]
def sent():
    return [rng.choice(pieces) for _ in range(rng.randint(20, 30))]
pairs = [(sent(), sent()) for _ in range(N_PAIRS)]
text = lambda ids: " ".join(words[i] for i in ids)
rows = ",\n".join("(%d, '%s', '%s')" % (i, text(s), text(t)) for i, (s, t) in enumerate(pairs))
psql("CREATE TABLE p (id int, src text, tgt text); INSERT INTO p VALUES %s; "
     "CREATE TABLE s AS SELECT id, src FROM p WHERE id < %d;" % (rows, N_SENT))
print("CPU: %s, one thread; OpenBLAS %s" % (cpu_name(), psql("SELECT core FROM corpq.blas_info()").strip()))
print("model: HF Marian layout, d 512, 6+6 layers, 8 heads, ffn 2048, vocabulary %d, post-norm, "
      "swish; %s parameters, image %.0f MB"
      % (V, psql("SELECT parameters FROM corpq.models WHERE name = 'opus'").strip(),
         os.path.getsize(image) / 1e6))

# ---- scoring and translation in one session (first: a statement run before
# the timed ones, e.g. the model load or a quantization)
opt = '{"beam": 4, "max_len_a": 0, "max_len_b": 30}'


def corpq_side(first):
    """(per-row pairs/s, batched pairs/s, beam-4 sentences/s, peak RSS bytes)."""
    o = psql("""SET corpq.threads = 1;
%s;
SELECT count(corpq.sent_prob('opus', src, tgt)) FROM p;
SELECT count(corpq.sent_prob('opus', src, tgt)) FROM p;
SELECT count(*) FROM corpq.score('opus', 'SELECT id, src, tgt FROM p');
SELECT count(*) FROM corpq.score('opus', 'SELECT id, src, tgt FROM p');
SELECT count(*) FROM corpq.translate_rows('opus', 'SELECT id, src FROM s', '%s');
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s+([0-9]+)');
""" % (first, opt), timing=True)
    t = times(o)
    hwm = int([l for l in o.splitlines() if l.isdigit()][-1]) * 1024
    return t[1], N_PAIRS / min(t[2], t[3]), N_PAIRS / min(t[4], t[5]), N_SENT / t[6], hwm


t_first, cq_row, cq_batch, cq_tr, hwm = corpq_side(
    "SELECT corpq.sent_prob('opus', src, tgt) FROM p LIMIT 1")

# The PyTorch side in fresh processes (peak RSS of that work alone): the
# toolkit's reference over the checkpoint as saved, then the beam search over
# the converted image.
with open(os.path.join(out, "src_vocab.json"), encoding="utf-8") as f:
    cq_ids = {w_: i for i, w_ in enumerate(json.load(f)["tokens"])}
job = os.path.join(tmp, "job.json")
with open(job, "w") as f:
    json.dump({"md": md, "image": image, "pairs": pairs, "n_sent": N_SENT,
               "srcs": [[cq_ids[words[i]] for i in s] for s, _ in pairs[:N_SENT]]}, f)
def torch_side(part):
    r = subprocess.run([sys.executable, "-c", TORCH_SIDE, part, job], capture_output=True, text=True,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))
    if r.returncode:
        sys.exit("PyTorch side failed: " + r.stderr)
    return json.loads(r.stdout)
TORCH_SIDE = r"""
import json, resource, sys, time
import numpy as np
import torch
sys.path.insert(0, "test/ref")
torch.set_num_threads(1)
part, job = sys.argv[1], json.load(open(sys.argv[2]))
def best(fn, reps):
    b = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b
res = {}
with torch.no_grad():
    if part == "score":
        from ref_hf_marian import HFMarianRef
        sd = torch.load(job["md"] + "/pytorch_model.bin")
        cfg = json.load(open(job["md"] + "/config.json"))
        ref = HFMarianRef(sd, cfg, dtype=torch.float32)
        del sd
        pairs = job["pairs"]
        res["row"] = len(pairs) / best(lambda: [ref.log_probs([(s, t)]) for s, t in pairs], 2)
        res["batch"] = len(pairs) / best(lambda: [ref.log_probs(pairs[i:i + 64])
                                                  for i in range(0, len(pairs), 64)], 2)
    else:
        import torch_search as ts
        import torch_transformer as tt
        with open(job["image"], "rb") as f:
            cfg, w = tt.read_corpq(f.read())
        model = tt.Transformer(cfg, {k: torch.from_numpy(np.array(v)) for k, v in w.items()},
                               dtype=torch.float32)
        del w
        tr = ts.RefTranslator(model)
        o = ts.options(beam=4, nbest=1, min_len=0, max_len_a=0.0, max_len_b=30)
        n = job["n_sent"]
        res["beam"] = n / best(lambda: tr.translate(job["srcs"], list(range(n)), o), 1)
res["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(res))
"""
sc, bm = torch_side("score"), torch_side("beam")
th_row, th_batch, th_tr = sc["row"], sc["batch"], bm["beam"]

print("scoring, %d pairs of 20-30 tokens, pairs/s: corpq sent_prob %.1f, PyTorch batch 1 %.1f "
      "(x%.2f); corpq score() %.1f, PyTorch batch 64 %.1f (x%.2f)"
      % (N_PAIRS, cq_row, th_row, cq_row / th_row, cq_batch, th_batch, cq_batch / th_batch))
print("first sent_prob in the session (resolve, vocabularies, model load): %.2f s" % t_first)
print("translation, beam 4, %d sentences, sentences/s: corpq translate_rows %.2f, PyTorch %.2f (x%.2f)"
      % (N_SENT, cq_tr, th_tr, cq_tr / th_tr))
# the same model quantized (corpq.model_quantize: int8 products), in a fresh session
_, q_row, q_batch, q_tr, hwm8 = corpq_side("SELECT corpq.model_quantize('opus')")
d8 = float(psql("SELECT avg(abs(corpq.sent_logprob('opus', src, tgt) - corpq.sent_logprob('opus@1', src, tgt)) "
                "/ (array_length(string_to_array(tgt, ' '), 1) + 1)) FROM p").strip())
print("int8 (model_quantize): sent_prob %.1f pairs/s (x%.2f float32), score() %.1f (x%.2f), "
      "translate_rows beam 4 %.2f sentences/s (x%.2f); mean |d log p| per token against float32 %.4f "
      "(random weights); peak RSS %.0f MB"
      % (q_row, q_row / cq_row, q_batch, q_batch / cq_batch, q_tr, q_tr / cq_tr, d8, hwm8 / 1e6))
print("memory, peak RSS: corpq backend (scoring and translation) %.0f MB; PyTorch scoring "
      "process %.0f MB, beam search process %.0f MB; image %.0f MB"
      % (hwm / 1e6, sc["rss"] / 1e6, bm["rss"] / 1e6, os.path.getsize(image) / 1e6))
subprocess.run(["rm", "-rf", tmp])
PY
