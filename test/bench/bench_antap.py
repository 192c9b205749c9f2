"""Benchmark of the ANTAP core (extension/antap) against the PyTorch build of
the same network (test/ref/torch_antap.py), in the same run.

Data: the CAV of real pairs (the corpora test/lib.sh finds; whitespace
tokens, l_max 64) built by the cav core; every target token with a matrix is
one ANTAP input, pooled with cav_view_pool_layer_norm to the default 32 x 32
grid.  The targets are a stand-in (log occurrences, scaled to [0, 1]): this
measures time, not accuracy (test/bench/antap_real.sh does accuracy).

Reports, one thread on both sides (OpenBLAS via test/unit/blas_direct.c,
torch.set_num_threads(1)), best thread CPU time of 3:
  - the input pipeline: tokens/s of the core's sparse LayerNorm + pooling, and
    of torch's dense F.layer_norm + F.adaptive_avg_pool2d on the same tokens;
  - training: ms per epoch (AdamW, batch 32, the same batches and initial
    weights), core vs torch float32, and the losses of both after the epochs;
  - prediction: tokens/s in batches of 256 and one token at a time (what
    corpq.antap_predict does per row), core vs torch (eval, no_grad);
  - memory per token: the pooled input, the dense CAV matrix, and the sparse
    CAV bytes per token.
Usage: bench_antap.py [--quick] [--pairs N] [--epochs E]
"""
import argparse
import ctypes
import math
import os
import platform
import random
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "ref"))
sys.path.insert(0, HERE)


def lib_path():
    p = os.environ.get("CORPQ_CORE_LIB", os.path.join(ROOT, "test", "libcorpqcore.so"))
    if not os.path.exists(p):
        subprocess.check_call(["make", "-s", "-C", ROOT, "test/libcorpqcore.so"])
    os.environ["CORPQ_CORE_LIB"] = p
    return p


lib_path()
import antap_core as ac  # noqa: E402
import corpora  # noqa: E402
import test_cav as tc  # noqa: E402
import torch_antap as ta  # noqa: E402

tc.np = np


def best_time(fn, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        f = ac.lib.openblas_get_corename
        f.restype = ctypes.c_char_p
        core = f().decode()
    except AttributeError:
        core = "?"
    return "%s; OpenBLAS core %s (OPENBLAS_CORETYPE=%s); torch %s; Python %s" % (
        cpu, core, os.environ.get("OPENBLAS_CORETYPE", "default"), torch.__version__,
        platform.python_version())


def read_pairs(n):
    _, files = corpora.find()
    pairs = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            next(f)
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4:
                    pairs.append((parts[2], parts[3]))
    random.Random(1).shuffle(pairs)
    return pairs[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pairs", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    a = ap.parse_args()
    n_pairs = a.pairs or (3000 if a.quick else 30000)
    epochs = a.epochs or (2 if a.quick else 5)
    torch.set_num_threads(1)
    print("bench_antap: %s" % machine())

    # ---- data: the CAV of real pairs, and every target token's input
    pairs = read_pairs(n_pairs)
    l_max = 64
    st = tc.State(l_max)
    t0 = time.time()
    for s, t in pairs:
        st.add(s.encode(), t.encode())
    blob = st.bytes()
    cav = tc.Cav(blob)
    n_tok = cav.v.n_mat
    rows = cav.v.n_src + cav.v.n_tgt
    print("bench_antap: %d pairs -> CAV of %d target tokens, %d x %d per matrix, %.1f MB serialised (%.1f s)"
          % (len(pairs), n_tok, rows, l_max, len(blob) / 1e6, time.time() - t0))
    cfg = ac.config()
    H, W = cfg.pool_rows, cfg.pool_cols
    x = np.empty((n_tok, H, W), np.float32)

    def pipeline_core():
        for i in range(n_tok):
            x[i] = np.array(cav.pool_layer_norm(i, H, W)).reshape(H, W)
    t_pipe = best_time(pipeline_core, 1)
    occ = np.array([cav.token(i)[1] for i in range(n_tok)], np.float64)
    y = np.minimum(1.0, np.log1p(occ) / math.log1p(occ.max())).astype(np.float32)
    n_dense = min(n_tok, 50)
    dense = torch.from_numpy(np.stack([tc.dense_from_c(cav, i) for i in range(n_dense)]).astype(np.float32))
    t_dense = best_time(lambda: ta.pipeline(dense, H, W), 1)
    print("bench_antap: input pipeline (LayerNorm over the matrix + pooling to %d x %d): core (sparse, "
          "through ctypes) %.0f tokens/s; torch dense (float32, matrices already dense) %.0f tokens/s"
          % (H, W, n_tok / t_pipe, n_dense / t_dense))
    nnz = sum(cav.token(i)[2] for i in range(n_tok))
    print("bench_antap: memory per token: pooled input %d B (%d x %d float32); dense CAV matrix %.1f MB "
          "(%d x %d float32); sparse CAV %.0f B (%.1f nonzeros, serialised value / tokens)"
          % (4 * H * W, H, W, 4.0 * rows * l_max / 1e6, rows, l_max, len(blob) / n_tok, nnz / n_tok))

    # ---- training: the same initial weights, batches and optimizer
    core = ac.Antap(cfg, seed=1)
    ref = ta.Antap(cfg.as_dict())
    ref.load_core(core.tensors())
    rng = np.random.default_rng(2)
    orders = [rng.permutation(n_tok) for _ in range(epochs)]
    bs = 32
    tr = ac.Trainer(core, lr=1e-3, batch_size=bs)
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    xb = [[np.ascontiguousarray(x[o[k:k + bs]]) for k in range(0, n_tok, bs)] for o in orders]
    yb = [[np.ascontiguousarray(y[o[k:k + bs]]) for k in range(0, n_tok, bs)] for o in orders]
    xt = [[torch.from_numpy(b) for b in e] for e in xb]
    yt = [[torch.from_numpy(b) for b in e] for e in yb]
    losses = {}

    def train_core():
        s = 0.0
        for e in range(epochs):
            s = sum(tr.step(a_, b_) * len(b_) for a_, b_ in zip(xb[e], yb[e])) / n_tok
        losses["core"] = s

    def train_torch():
        s = 0.0
        for e in range(epochs):
            s = 0.0
            for a_, b_ in zip(xt[e], yt[e]):
                opt.zero_grad()
                loss = F.mse_loss(ref(a_), b_)
                loss.backward()
                opt.step()
                s += loss.item() * len(b_)
            s /= n_tok
        losses["torch"] = s
    t_core = best_time(train_core, 1)
    t_torch = best_time(train_torch, 1)
    print("bench_antap: training, %d epochs of %d tokens (batch %d, %d parameters): core %.1f ms/epoch "
          "(%.0f tokens/s), torch %.1f ms/epoch (%.0f tokens/s), torch/core %.2f; last-epoch MSE core %.5f, "
          "torch %.5f" % (epochs, n_tok, bs, sum(v.size for v in core.tensors().values()),
                          1e3 * t_core / epochs, epochs * n_tok / t_core, 1e3 * t_torch / epochs,
                          epochs * n_tok / t_torch, t_torch / t_core, losses["core"], losses["torch"]))

    # ---- prediction
    ref.eval()
    big = ac.Pass(cfg, 256)
    one = ac.Pass(cfg, 1)
    chunks = [np.ascontiguousarray(x[k:k + 256]) for k in range(0, n_tok, 256)]
    tchunks = [torch.from_numpy(c) for c in chunks]
    n_one = min(n_tok, 2000)
    singles = [np.ascontiguousarray(x[i:i + 1]) for i in range(n_one)]
    tsingles = [torch.from_numpy(s) for s in singles]

    def torch_batches():
        with torch.no_grad():
            for c in tchunks:
                ref(c)

    def torch_ones():
        with torch.no_grad():
            for s in tsingles:
                ref(s)
    tb_core = best_time(lambda: [big.forward(core, c) for c in chunks])
    tb_torch = best_time(torch_batches)
    t1_core = best_time(lambda: [one.forward(core, s) for s in singles])
    t1_torch = best_time(torch_ones)
    print("bench_antap: prediction, batches of 256: core %.0f tokens/s, torch %.0f tokens/s, core/torch %.2f"
          % (n_tok / tb_core, n_tok / tb_torch, tb_torch / tb_core))
    print("bench_antap: prediction, one token per call (%d tokens): core %.0f tokens/s (through ctypes), "
          "torch %.0f tokens/s, core/torch %.2f"
          % (n_one, n_one / t1_core, n_one / t1_torch, t1_torch / t1_core))


if __name__ == "__main__":
    main()
