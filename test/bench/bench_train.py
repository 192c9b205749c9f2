"""Training throughput of the C core (cq_train_step) against a PyTorch CPU
training loop on the same model, batch and thread count (steps alternate
between the two so that both see the same machine load).

`small` (d 256, 4 heads, 3 + 3 layers, FFN 1024), vocab 8000 both sides, one
batch of ~4k target tokens (random ids, lengths 10..40), dropout 0.1,
label smoothing 0.1, AdamW.  PyTorch runs test/ref/torch_transformer.ref_loss
(padded batch, F.* ops, autograd) in float32 + torch.optim.AdamW.  Also the
single-thread sgemm rate of OpenBLAS (1024^3) as the ceiling, the GFLOP/s of
each side, and the core's memory (state + workspace).  Training multiplies
with OpenBLAS on both sides, so the kernels matter: it runs once per OpenBLAS
core type (blas_cores.py: the default the extension would choose, then each
forced core, each in its own process) and ends with a table per core.

Usage: /usr/bin/python3 test/bench/bench_train.py [steps] [--cores=default,Haswell,...]
"""
import ctypes
import os
import random
import sys
import time

import numpy as np
import torch

import blas_cores

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import torch_transformer as tt  # noqa: E402


def sgemm_peak():
    lib = ctypes.CDLL("libopenblas.so.0")
    lib.openblas_set_num_threads(1)
    n = 1024
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    c = np.empty((n, n), np.float32)
    P = ctypes.c_void_p
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, P, ctypes.c_int, P,
                                                       ctypes.c_int, ctypes.c_float, P, ctypes.c_int]
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        lib.cblas_sgemm(101, 111, 111, n, n, n, 1.0, a.ctypes.data, n, b.ctypes.data, n,
                        0.0, c.ctypes.data, n)
        best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best / 1e9


def step_flops(cfg, pairs):
    """Multiply-adds x 2 of forward matmuls, x 3 for forward + backward."""
    d, f, V = cfg["d_model"], cfg["ffn_dim"], cfg["tgt_vocab_size"]
    E, D = cfg["encoder_layers"], cfg["decoder_layers"]
    ns = sum(len(s) + 1 for s, _ in pairs)
    nt = sum(len(t) + 1 for _, t in pairs)
    att_e = sum((len(s) + 1) ** 2 for s, _ in pairs) * 2 * d
    att_d = sum((len(t) + 1) ** 2 + (len(t) + 1) * (len(s) + 1) for s, t in pairs) * 2 * d
    fwd = E * (ns * (4 * d * d + 2 * d * f) + att_e)
    fwd += D * (nt * (6 * d * d + 2 * d * f) + ns * 2 * d * d + att_d)
    fwd += nt * V * d
    return 3 * 2 * fwd


def main():
    if not blas_cores.is_child():
        blas_cores.run_all(__file__, ["core_tok_s", "torch_tok_s", "ratio", "sgemm"])
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    steps = int(args[0]) if args else 3
    torch.set_num_threads(1)
    rng = random.Random(1)
    cfg = tt.make_config("small", 8000, 8000)
    pairs, nt = [], 0
    while nt < 4000:
        ls, lt = rng.randint(10, 40), rng.randint(10, 40)
        pairs.append(([rng.randrange(4, 8000) for _ in range(ls)],
                      [rng.randrange(4, 8000) for _ in range(lt)]))
        nt += lt + 1
    budget = len(pairs) * max(max(len(s), len(t)) + 1 for s, t in pairs)
    w = tt.random_weights(cfg, 1)
    core = tt.TrainCore()
    m = core.load(tt.write_corpq("/dev/null", cfg, w))
    st = core.state(m, core.config(lr=5e-4, warmup_updates=4000))
    flops = step_flops(cfg, pairs)
    peak0 = sgemm_peak()

    n_floats = core.lib.cq_model_param_floats(st.contents.model)

    P = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    names = sorted(P)
    opt = torch.optim.AdamW([P[n] for n in names], lr=5e-4, betas=(0.9, 0.98), eps=1e-9,
                            weight_decay=1e-4)

    def torch_step():
        opt.zero_grad()
        loss, n = tt.ref_loss(cfg, P, pairs, 0.1, dtype=torch.float32, dropout=0.1)
        (loss / n).backward()
        opt.step()
        return loss.item() / n
    # alternate the two so that both see the same machine load
    core.step(st, [pairs])      # warm-up, sizes the workspace
    torch_step()
    c_time = t_time = 0.0
    for _ in range(steps):
        t = time.perf_counter()
        s = core.step(st, [pairs])
        c_time += (time.perf_counter() - t) / steps
        t = time.perf_counter()
        torch_step()
        t_time += (time.perf_counter() - t) / steps
    ws = st.contents.ws_bytes
    peak = max(peak0, sgemm_peak())     # best of before and after: the machine is shared
    print("OpenBLAS core %s; load average %.1f" % (blas_cores.in_use(), os.getloadavg()[0]))
    print("small, vocab 8000, %d pairs, %d target tokens (fairseq budget %d), 1 thread, %d steps"
          % (len(pairs), nt, budget, steps))
    print("  core   : %.3f s/step  %7.0f target tok/s  %5.1f GFLOP/s  (%.0f%% of sgemm peak)"
          % (c_time, nt / c_time, flops / c_time / 1e9, 100 * flops / c_time / 1e9 / peak))
    print("  pytorch: %.3f s/step  %7.0f target tok/s  %5.1f GFLOP/s"
          % (t_time, nt / t_time, flops / t_time / 1e9))
    print("  ratio core/pytorch throughput: %.2fx" % (t_time / c_time))
    print("  sgemm 1024^3 single thread: %.1f GFLOP/s; step = %.1f GFLOP" % (peak, flops / 1e9))
    print("  core memory: state 4 x %d floats = %.1f MB, workspace %.1f MB"
          % (n_floats, 16 * n_floats / 2 ** 20, ws / 2 ** 20))
    print("  last core loss %.3f" % s["loss"])
    blas_cores.result(core_tok_s=nt / c_time, torch_tok_s=nt / t_time, ratio=t_time / c_time,
                      sgemm=peak)
    core.lib.cq_train_state_free(st)
    core.free(m)


if __name__ == "__main__":
    main()
