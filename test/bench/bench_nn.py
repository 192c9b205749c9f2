"""Benchmark of the transformer core (extension/nn) against PyTorch eager.

Preset `small` (d 256, 3+3 layers, 4 heads, ffn 1024), vocabulary 8000 on
both sides, 30-token sources and targets, one thread on both sides (the core's
inference kernel nn/ops/rowgemm.c; its training GEMM and PyTorch use OpenBLAS,
torch.set_num_threads(1)).  Both compute the same outputs per target position:
log p(gold), max probability, entropy, argmax.  Prints pairs/s, ratios,
achieved GFLOP/s against single-thread OpenBLAS sgemm measured in the same
run (and the row kernel on the same shapes), where the time goes, and memory.

It runs once per OpenBLAS core type (blas_cores.py: the default the extension
would choose, then each forced core, each in its own process) and ends with a
table of the figures per core.
Usage: bench_nn.py [--quick] [--cores=default,Haswell,...] [--no-ort]
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import blas_cores
import onnx_ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "ref"))
import torch_transformer as tt  # noqa: E402

QUICK = "--quick" in sys.argv
LEN, V = 30, 8000


def lib_path():
    p = os.environ.get("CORPQ_CORE_LIB", os.path.join(ROOT, "test", "libcorpqcore.so"))
    if not os.path.exists(p):
        subprocess.check_call(["make", "-s", "-C", ROOT, "test/libcorpqcore.so"])
    return p


def best_time(fn, reps):
    """Best CPU time of this thread: both sides run single-threaded in it, and
    CPU time is less disturbed than wall time on a shared machine."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def model_flops(cfg, S, T):
    """Multiply-adds x 2 of one pair (S, T positions incl. </s>): GEMM work only."""
    d, f, v = cfg["d_model"], cfg["ffn_dim"], cfg["tgt_vocab_size"]
    enc = cfg["encoder_layers"] * (S * (4 * d * d + 2 * d * f) + 2 * S * S * d)
    dec = cfg["decoder_layers"] * (T * (4 * d * d + 2 * d * d + 2 * d * f) + S * 2 * d * d
                                   + 2 * T * T * d + 2 * T * S * d)
    return 2.0 * (enc + dec + T * d * v)


def sgemm_gflops(lib, m, n, k, reps):
    return blas_cores.sgemm_gflops(lib, m, n, k, lambda fn: best_time(fn, reps))


def gemm_calls(cfg, batch, S, T):
    """(m, n, k, form, count) of every product a forward of `batch` pairs with
    S source and T target positions makes (forward.c, attention.c): "packed"
    for the linear layers and the output projection, "nt" for Q K^T, "nn" for
    P V (nn/ops/rowgemm.h)."""
    d, f, v, h = cfg["d_model"], cfg["ffn_dim"], cfg["tgt_vocab_size"], cfg["heads"]
    rs, rt, dh = batch * S, batch * T, d // h
    L_e, L_d = cfg["encoder_layers"], cfg["decoder_layers"]
    block = min(rt, max(64, (1 << 22) // v))
    calls = [(rs, 3 * d, d, "packed", L_e), (rs, d, d, "packed", L_e), (rs, f, d, "packed", L_e),
             (rs, d, f, "packed", L_e),
             (S, S, dh, "nt", L_e * batch * h), (S, dh, S, "nn", L_e * batch * h),
             (rt, 3 * d, d, "packed", L_d), (rt, d, d, "packed", 3 * L_d), (rs, 2 * d, d, "packed", L_d),
             (rt, f, d, "packed", L_d), (rt, d, f, "packed", L_d),
             (T, T, dh, "nt", L_d * batch * h), (T, dh, T, "nn", L_d * batch * h),
             (T, S, dh, "nt", L_d * batch * h), (T, dh, S, "nn", L_d * batch * h)]
    full, rest = divmod(rt, block)
    calls.append((block, v, d, "packed", full))
    if rest:
        calls.append((rest, v, d, "packed", 1))
    return calls


def bind_qgemm(lib):
    lib.cq_qgemm_machine.restype = ctypes.c_int
    lib.cq_qgemm_isa_name.restype = ctypes.c_char_p


def bind_rowgemm(lib):
    P, I, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_long
    lib.cq_rowgemm_packed_floats.restype = ctypes.c_size_t
    lib.cq_rowgemm_packed_floats.argtypes = [I, I]
    lib.cq_rowgemm_pack.argtypes = [P, L, I, I, P]
    lib.cq_rowgemm_packed.argtypes = [P, I, I, P, P, L, P, L, I]
    for f in (lib.cq_rowgemm_nt, lib.cq_rowgemm_nn):
        f.argtypes = [P, L, P, L, P, P, L, I, I, I]
    lib.cq_rowgemm_isa_name.restype = ctypes.c_char_p
    lib.cq_rowgemm_machine.restype = I


def rowgemm_call(lib, m, n, k, form):
    """A closure running one product of the row kernel on random data."""
    a = np.random.rand(m, k).astype(np.float32)
    c = np.empty((m, n), np.float32)
    if form == "packed":
        w = np.random.rand(n, k).astype(np.float32)
        p = np.empty(lib.cq_rowgemm_packed_floats(n, k), np.float32)
        lib.cq_rowgemm_pack(w.ctypes.data, k, n, k, p.ctypes.data)
        return lambda: lib.cq_rowgemm_packed(p.ctypes.data, n, k, None, a.ctypes.data, k,
                                             c.ctypes.data, n, m), (a, c, w, p)
    if form == "nt":
        b = np.random.rand(n, k).astype(np.float32)
        return lambda: lib.cq_rowgemm_nt(a.ctypes.data, k, b.ctypes.data, k, None,
                                         c.ctypes.data, n, m, n, k), (a, b, c)
    b = np.random.rand(k, n).astype(np.float32)
    return lambda: lib.cq_rowgemm_nn(a.ctypes.data, k, b.ctypes.data, n, None,
                                     c.ctypes.data, n, m, n, k), (a, b, c)


def rowgemm_gflops(lib, m, n, k, reps):
    fn, keep = rowgemm_call(lib, m, n, k, "packed")
    return 2.0 * m * n * k / best_time(fn, reps) / 1e9


def gemm_ceiling(lib, calls, reps):
    """Seconds the forward's products take when timed alone (the row kernel)."""
    total = 0.0
    for m, n, k, form, count in calls:
        fn, keep = rowgemm_call(lib, m, n, k, form)
        loops = max(1, min(count, 200))
        t = best_time(lambda: [fn() for _ in range(loops)], reps)
        total += t / loops * count
    return total


def packed_floats(lib, cfg):
    d, f, v = cfg["d_model"], cfg["ffn_dim"], cfg["tgt_vocab_size"]
    shapes = cfg["encoder_layers"] * [(3 * d, d), (d, d), (f, d), (d, f)]
    shapes += cfg["decoder_layers"] * [(3 * d, d), (d, d), (d, d), (2 * d, d), (d, d), (f, d), (d, f)]
    return sum(lib.cq_rowgemm_packed_floats(n, k) for n, k in shapes + [(v, d)])


def core_rate(core, m, pairs, batch, reps, mc=None):
    preps = [core.prepare(m, pairs[i:i + batch], mc=mc) for i in range(0, len(pairs), batch)]
    t = best_time(lambda: [core.run(p) for p in preps], reps)
    return len(pairs) / t


def torch_rate(ref, pairs, batch, reps):
    t = best_time(lambda: [ref.score(pairs[i:i + batch]) for i in range(0, len(pairs), batch)],
                  reps)
    return len(pairs) / t


REPS = 2 if QUICK else 3


def workload():
    """The model and the pairs, the same in every process: (cfg, weights,
    pairs, 64-word-vocabulary pairs, how many of pairs run at batch 1)."""
    rng = np.random.default_rng(0)
    cfg = tt.make_config("small", V, V)
    w = tt.random_weights(cfg, 1)
    n1, n64 = (16, 128) if QUICK else (64, 256)
    pairs = [(rng.integers(4, V, LEN).tolist(), rng.integers(4, V, LEN).tolist())
             for _ in range(n64)]
    pairs_v = [(rng.integers(4, 64, LEN).tolist(), rng.integers(4, 64, LEN).tolist())
               for _ in range(n64)]
    return cfg, w, pairs, pairs_v, n1


def ort_batch(pairs, start):
    """A batch as ort_run.mjs takes it: src + </s>, start + tgt, tgt + </s>."""
    return dict(src=[list(s) + [tt.EOS] for s, _ in pairs],
                din=[[start] + list(t) for _, t in pairs],
                gold=[list(t) + [tt.EOS] for _, t in pairs])


def ort_rows(res):
    """ONNX Runtime on the same model and pairs, printed next to the default
    core's figures (or the first core's when the default was not run)."""
    import onnx_export
    print("\nONNX Runtime, the same model and pairs (%s)" % onnx_ort.options_line())
    node_dir, why = onnx_ort.ensure_runtime()
    if node_dir is None:
        print("  skipped: " + why)
        return
    torch.set_num_threads(1)
    cfg, w, pairs, _, n1 = workload()
    start = tt.variant(cfg, "decoder_start_id")
    check = pairs[:4]
    with tempfile.TemporaryDirectory() as tmp:
        g = onnx_export.export_all("score", cfg, w, tmp)
        job = dict(mode="score", reps=REPS, threads=1,
                   models={"f32": g["f32"], "int8": g["int8"]},
                   runs=[dict(name="b1", batches=[ort_batch(pairs[i:i + 1], start)
                                                  for i in range(n1)]),
                         dict(name="b64", batches=[ort_batch(pairs[i:i + 64], start)
                                                   for i in range(0, len(pairs), 64)])],
                   check=ort_batch(check, start))
        r = onnx_ort.run(job, node_dir)
    ref = tt.Transformer(cfg, w, dtype=torch.float32).eval().score(check)
    want = np.concatenate([x["logp"] for x in ref])
    dev = {}
    for k in ("f32", "int8"):
        got = np.asarray(r[k]["check"]["logp"], np.float32)
        dev[k] = np.abs(got - want)
    am = np.asarray(r["f32"]["check"]["argmax"]) == np.concatenate([x["argmax"] for x in ref])
    print("  graph: teacher-forced forward, outputs log p(gold), p max, entropy, argmax per "
          "position; int8: %d MatMuls -> DynamicQuantizeLinear (uint8, per tensor) + "
          "MatMulInteger (int8 weights, per output column) + scale" % g["quantized"])
    print("  against PyTorch float32 on %d pairs: ORT float32 max |dlogp| %.1e (argmax equal "
          "%d/%d), ORT int8 mean |dlogp| %.3f (max %.3f)"
          % (len(check), dev["f32"].max(), am.sum(), am.size, dev["int8"].mean(),
             dev["int8"].max()))
    rate = {k: {b: r[k][b]["pairs"] / r[k][b]["cpu"] for b in ("b1", "b64")}
            for k in ("f32", "int8")}
    core = "default" if "default" in res else next(iter(res), None)
    c = res.get(core, {})
    nan = float("nan")
    print("  pairs/s (CPU time, best of %d; corpq and PyTorch from the %s core's run above):"
          % (REPS, core))
    print("  %-16s %10s %10s" % ("", "batch 1", "batch 64"))
    for label, b1, b64 in (("corpq float32", c.get("corpq_b1", nan), c.get("corpq_b64", nan)),
                           ("corpq int8", c.get("int8_b1", nan), c.get("int8_b64", nan)),
                           ("PyTorch float32", c.get("torch_b1", nan), c.get("torch_b64", nan)),
                           ("ORT float32", rate["f32"]["b1"], rate["f32"]["b64"]),
                           ("ORT int8", rate["int8"]["b1"], rate["int8"]["b64"])):
        print("  %-16s %10.1f %10.1f" % (label, b1, b64))
    print("  corpq / ORT: float32 %.2fx at batch 1, %.2fx at batch 64; int8 %.2fx at batch 1, "
          "%.2fx at batch 64"
          % (c.get("corpq_b1", nan) / rate["f32"]["b1"], c.get("corpq_b64", nan) / rate["f32"]["b64"],
             c.get("int8_b1", nan) / rate["int8"]["b1"], c.get("int8_b64", nan) / rate["int8"]["b64"]))
    print("  ORT wall/CPU time at batch 64: float32 %.2f, int8 %.2f (onnxruntime-node %s, node %s)"
          % (r["f32"]["b64"]["wall"] / r["f32"]["b64"]["cpu"],
             r["int8"]["b64"]["wall"] / r["int8"]["b64"]["cpu"],
             r["versions"]["onnxruntime-node"], r["versions"]["node"]))


def main():
    if not blas_cores.is_child():
        print("CPU: %s" % blas_cores.cpu_name(), flush=True)
        res = blas_cores.run_all(__file__, ["corpq_b1", "corpq_b64", "int8_b1", "int8_b64",
                                            "torch_b1", "torch_b64", "sgemm", "b1_of_sgemm",
                                            "b64_of_sgemm"])
        if "--no-ort" not in sys.argv:
            ort_rows(res)
        return
    torch.set_num_threads(1)
    core = tt.Core(lib_path())
    bind_rowgemm(core.lib)
    bind_qgemm(core.lib)
    cfg, w, pairs, pairs_v, n1 = workload()
    with tempfile.TemporaryDirectory() as tmp:
        m = core.load(tt.write_corpq(os.path.join(tmp, "small.cqm"), cfg, w))
        m8 = core.load(tt.write_corpq(os.path.join(tmp, "small8.cqm"), dict(cfg, precision="int8"), w))
        cfg_v = dict(cfg, src_vocab_size=64, tgt_vocab_size=64)
        m_v = core.load(tt.write_corpq(os.path.join(tmp, "v64.cqm"), cfg_v,
                                       tt.random_weights(cfg_v, 1)))
    ref = tt.Transformer(cfg, w, dtype=torch.float32).eval()
    reps = REPS

    print("OpenBLAS core %s; inference kernel %s; load average %.1f"
          % (blas_cores.in_use(), core.lib.cq_rowgemm_isa_name(core.lib.cq_rowgemm_machine()).decode(),
             os.getloadavg()[0]))
    # the same numbers from both
    a, b = core.score(m, pairs[:4]), ref.score(pairs[:4])
    err = max(float(np.abs(x["logp"] - y["logp"]).max()) for x, y in zip(a, b))
    print("small, V=%d, %d+%d tokens, 1 thread; max |dlogp| C vs torch float32: %.1e"
          % (V, LEN, LEN, err))

    c1 = core_rate(core, m, pairs[:n1], 1, reps)
    t1 = torch_rate(ref, pairs[:n1], 1, reps)
    c64 = core_rate(core, m, pairs, 64, reps)
    t64 = torch_rate(ref, pairs, 64, reps)
    print("batch  1: corpq %7.1f pairs/s   torch %7.1f pairs/s   ratio %.2fx" % (c1, t1, c1 / t1))
    print("batch 64: corpq %7.1f pairs/s   torch %7.1f pairs/s   ratio %.2fx" % (c64, t64, c64 / t64))

    # int8 (models/FORMAT.md precision): the same weights quantized at load
    q1 = core_rate(core, m8, pairs[:n1], 1, reps)
    q64 = core_rate(core, m8, pairs, 64, reps)
    a8 = core.score(m8, pairs[:16])
    d8 = np.concatenate([np.abs(x["logp"] - y["logp"]) for x, y in zip(a8, core.score(m, pairs[:16]))])
    print("int8 (kernel %s): batch 1 %7.1f pairs/s (%.2fx float32), batch 64 %7.1f pairs/s (%.2fx "
          "float32, %.2fx torch); mean |dlogp| against float32 %.3f (random weights)"
          % (core.lib.cq_qgemm_isa_name(core.lib.cq_qgemm_machine()).decode(), q1, q1 / c1, q64,
             q64 / c64, q64 / t64, float(d8.mean())))

    cmc = core_rate(core, m, pairs, 64, reps, mc=(1, 0))
    print("batch 64, Monte Carlo dropout pass: %7.1f pairs/s (%.2fx the eval pass)" % (cmc, cmc / c64))

    flops = model_flops(cfg, LEN + 1, LEN + 1)
    g_peak = max(sgemm_gflops(core.lib, 1984, V, 256, reps),
                 sgemm_gflops(core.lib, 1024, 1024, 1024, reps))
    g_ffn = sgemm_gflops(core.lib, 1984, 1024, 256, reps)
    r_out = rowgemm_gflops(core.lib, 1984, V, 256, reps)
    r_ffn = rowgemm_gflops(core.lib, 1984, 1024, 256, reps)
    r_row = rowgemm_gflops(core.lib, LEN + 1, V, 256, reps)
    g_row = sgemm_gflops(core.lib, LEN + 1, V, 256, reps)
    frac = {}
    for label, rate in (("batch  1", c1), ("batch 64", c64)):
        g = flops * rate / 1e9
        frac[label] = g / g_peak
        print("%s: %.2f GFLOP/pair -> %.1f GFLOP/s = %.2f of single-thread sgemm (%.1f GFLOP/s)"
              % (label, flops / 1e9, g, g / g_peak, g_peak))
    print("  products alone, row kernel vs sgemm: output 1984x%dx256 %.1f vs %.1f GFLOP/s, "
          "FFN 1984x1024x256 %.1f vs %.1f, one pair's output %dx%dx256 %.1f vs %.1f"
          % (V, r_out, g_peak, r_ffn, g_ffn, LEN + 1, V, r_row, g_row))
    for label, batch, rate in (("batch  1", 1, c1), ("batch 64", 64, c64)):
        t_gemm = gemm_ceiling(core.lib, gemm_calls(cfg, batch, LEN + 1, LEN + 1), reps)
        t_fwd = batch / rate
        print("%s: the forward's own products timed alone take %.0f%% of its time "
              "(ceiling %.1f GFLOP/s; achieved/ceiling %.2f)"
              % (label, 100 * t_gemm / t_fwd, flops * batch / t_gemm / 1e9, t_gemm / t_fwd))

    # where the time goes: the same network with a 64-word vocabulary
    cv = core_rate(core, m_v, pairs_v, 64, reps)
    share = 1 - (1 / cv) / (1 / c64)
    out_flops = 2.0 * (LEN + 1) * 256 * V / flops
    print("batch 64: output projection + log-softmax over V=%d = %.0f%% of the time "
          "(%.0f%% of the FLOPs)" % (V, 100 * share, 100 * out_flops))

    ws1 = core.workspace_bytes(m, pairs[:1])
    ws64 = core.workspace_bytes(m, pairs[:64])
    nparam = sum(int(np.prod(s)) for s in tt.tensor_shapes(cfg).values())
    print("memory: parameters %.1f MB (%d floats), packed copies %.1f MB; workspace %.2f MB at "
          "batch 1, %.1f MB at batch 64"
          % (nparam * 4 / 1e6, nparam, packed_floats(core.lib, cfg) * 4 / 1e6, ws1 / 1e6, ws64 / 1e6))
    blas_cores.result(corpq_b1=c1, corpq_b64=c64, int8_b1=q1, int8_b64=q64, torch_b1=t1,
                      torch_b64=t64, sgemm=g_peak,
                      b1_of_sgemm=frac["batch  1"], b64_of_sgemm=frac["batch 64"])
    core.free(m)
    core.free(m8)
    core.free(m_v)


if __name__ == "__main__":
    main()
