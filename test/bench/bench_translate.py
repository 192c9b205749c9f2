"""Benchmark of the translator (extension/nn/infer/translate.h) against the PyTorch
reference decoder (test/ref/torch_search.py: fairseq's search over the same
network with its own key/value cache, float32), same model, same thread
count, same run.

Model: preset `small` (d 256, 3+3 layers, ffn 1024) with V = 8000 on both
sides, random weights (or --model FILE, a corpq weight file, e.g. from
corpq.model_export).  Sources: random ids, 25 tokens for the latency, 15-35
for the throughput.  Outputs: max_len = |src| + 1 (max_len_a 1, max_len_b 0);
with random weights min_len = max_len (a random model would emit </s> at
once), so every hypothesis has that length on both sides; with --model,
min_len 1.

Prints: the CPU and OpenBLAS core; target tokens/s (tokens of the best
hypotheses, </s> included) of both at batch 1 and 32, beam 1 and 5, and the
ratio; the C side's GFLOP/s at batch 32, beam 5 (weight products: every
hypothesis position through the decoder's linear layers and the output
projection, every source position through the encoder's and the
cross-attention keys/values; attention left out) against single-thread
sgemm measured in the same run; per-sentence latency of a 25-token source.
Times are the CPU time of this thread (best of several runs): both sides
run single-threaded in it (OpenBLAS and torch at 1 thread, the default), so
other jobs on a shared machine disturb it less than wall time.  With
--threads N > 1 every side gets N threads (corpq: its kernel pool,
common/parallel.h; torch: intra-op threads; ORT: intra-op threads) and the
times are wall times.

Then sentences/s at beam 4, batch 32 (the sources of the batch-32 rows) for
corpq float32, corpq int8 (the same weights quantized at load), PyTorch
float32 and ONNX Runtime (onnxruntime-node, ort_run.mjs) float32 and int8,
and corpq / ORT.  ORT runs the reference model exported by onnx_export.py
as an encoder graph and a decoder-step graph with an incremental
self-attention cache, driven by a beam search written in JavaScript from
the same algorithm as torch_search.py; int8 is the dynamically quantized
graph (onnx_export.quantize).  ORT: one intra-op thread (--threads), one
inter-op thread, graph optimisation 'all', CPU time of the node process.
Usage: bench_translate.py [--quick] [--threads N] [--model FILE] [--no-ort]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "ref"))
import torch_search as ts  # noqa: E402
import torch_transformer as tt  # noqa: E402
import onnx_ort  # noqa: E402
import blas_cores  # noqa: E402

V = 8000


def lib_path():
    p = os.environ.get("CORPQ_CORE_LIB", os.path.join(ROOT, "test", "libcorpqcore.so"))
    if not os.path.exists(p):
        subprocess.check_call(["make", "-s", "-C", ROOT, "test/libcorpqcore.so"])
    return p


def openblas():
    lib = ctypes.CDLL("libopenblas.so.0")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_get_config.restype = ctypes.c_char_p
    return lib


def timed(fn, reps, threads):
    """Best of reps after one untimed warm-up run (first-touch page faults,
    OpenBLAS's buffers): CPU time of this thread with 1 thread, else wall time."""
    clock = time.thread_time if threads == 1 else time.perf_counter
    best, out = float("inf"), fn()
    for _ in range(reps):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def tokens(out):
    return sum(len(h[0]["tokens"]) + 1 for h in out)


def same(a, b):
    return sum(x[0]["tokens"] == y[0]["tokens"] for x, y in zip(a, b))


def weight_flops(cfg, srcs, out, beam):
    """2 x multiply-adds of the weight products the C translator ran."""
    d, f, v = cfg["d_model"], cfg["ffn_dim"], cfg["tgt_vocab_size"]
    enc_pos = sum(len(s) + 1 for s in srcs)
    enc = enc_pos * (cfg["encoder_layers"] * (4 * d * d + 2 * d * f)
                     + cfg["decoder_layers"] * 2 * d * d)
    # rows decoded: 1 at step 0, then beam per step until the sentence ended
    steps = [max(len(h["tokens"]) for h in o) + 1 for o in out]
    rows = sum(1 + beam * (s - 1) for s in steps)
    dec = rows * (cfg["decoder_layers"] * (6 * d * d + 2 * d * f) + d * v)
    return 2.0 * (enc + dec)


def sgemm_gflops(lib, m, n, k, reps):
    return blas_cores.sgemm_gflops(lib, m, n, k, lambda fn: timed(fn, reps, 1)[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model")
    ap.add_argument("--no-ort", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    core = ts.CoreTranslate(lib_path())
    ob = openblas()
    ob.openblas_set_num_threads(args.threads)
    # the core's own pool runs the inference kernels (common/parallel.h)
    core.lib.cq_parallel_set_threads(args.threads)
    if args.model:
        with open(args.model, "rb") as fh:
            blob = fh.read()
        cfg, w = tt.read_corpq(blob)
        w = {k: torch.from_numpy(v.copy()) for k, v in w.items()}
    else:
        cfg = tt.make_config("small", V, V)
        w = tt.random_weights(cfg, 1)
        blob = tt.write_corpq("/dev/null", cfg, w)
    m = core.load(blob)
    ref = ts.RefTranslator(tt.Transformer(cfg, w, dtype=torch.float32).eval())
    rng = np.random.default_rng(0)
    vs = cfg["src_vocab_size"]
    n1, n32 = (4, 32) if args.quick else (16, 128)
    reps = 2 if args.quick else 3
    srcs = [rng.integers(4, vs, rng.integers(15, 36)).tolist() for _ in range(n32)]
    ids = list(range(n32))
    print("CPU: %s; OpenBLAS %s, core %s; torch %s; %d thread(s); %s"
          % (blas_cores.cpu_name(), ob.openblas_get_config().decode(), ob.openblas_get_corename().decode(),
             torch.__version__, args.threads,
             args.model or "preset small, V=%d, random weights" % V))
    print("target tokens/s (best hypotheses, </s> included); %d sentences at batch 1, %d at 32"
          % (n1, n32))
    rows = {}
    min_len = 1 if args.model else 1000
    for beam in (1, 5):
        o = ts.options(beam=beam, max_len_a=1.0, max_len_b=0, min_len=min_len)
        for batch, n in ((1, n1), (32, n32)):
            prep = core.prepare_translate(m, srcs[:n], ids[:n], o, batch)
            tc, out_c = timed(lambda: list(core.run_translate(prep)), reps, args.threads)
            tr, out_r = timed(lambda: sum((ref.translate(srcs[i:i + batch], ids[i:i + batch], o)
                                           for i in range(0, n, batch)), []), reps, args.threads)
            rc, rr = tokens(out_c) / tc, tokens(out_r) / tr
            rows[(beam, batch)] = (tc, out_c, n)
            print("  beam %d batch %2d: corpq %8.1f tok/s   torch+cache %8.1f tok/s   ratio %5.2fx"
                  "   (same best hypothesis: %d/%d)"
                  % (beam, batch, rc, rr, rc / rr, same(out_c, out_r), n))
    tc, out_c, n = rows[(5, 32)]
    g = weight_flops(cfg, srcs[:n], out_c, 5) / tc / 1e9
    peak = max(sgemm_gflops(core.lib, 1024, 1024, 1024, reps),
               sgemm_gflops(core.lib, 160, cfg["ffn_dim"], cfg["d_model"], reps))
    print("beam 5 batch 32: %.1f GFLOP/s in weight products = %.2f of single-thread sgemm"
          " (%.1f GFLOP/s, the best of 1024^3 and 160x%dx%d)"
          % (g, g / peak, peak, cfg["ffn_dim"], cfg["d_model"]))
    src25 = rng.integers(4, vs, 25).tolist()
    for beam in (1, 5):
        o = ts.options(beam=beam, max_len_a=1.0, max_len_b=0, min_len=min_len)
        prep = core.prepare_translate(m, [src25], [0], o, 1)
        tc, _ = timed(lambda: core.run_translate(prep), max(reps, 3), args.threads)
        tr, _ = timed(lambda: ref.translate([src25], [0], o), max(reps, 3), args.threads)
        print("latency, one 25-token source, beam %d: corpq %.1f ms, torch+cache %.1f ms (%.2fx)"
              % (beam, 1e3 * tc, 1e3 * tr, tr / tc))
    core.free(m)
    beam4(core, cfg, w, ref, srcs[:n32], min_len, reps, args)


def beam4(core, cfg, w, ref, srcs, min_len, reps, args):
    """Sentences/s at beam 4, batch 32: corpq float32 and int8, PyTorch,
    ONNX Runtime float32 and int8 on the same sources."""
    K, batch, n = 4, 32, len(srcs)
    o = ts.options(beam=K, max_len_a=1.0, max_len_b=0, min_len=min_len)
    ids = list(range(n))
    print("beam %d batch %d, %d sentences: sentences/s (%s, best of %d)"
          % (K, batch, n, "CPU time" if args.threads == 1 else "wall time", reps))
    rate, outs = {}, {}
    for key, prec in (("corpq float32", "float32"), ("corpq int8", "int8")):
        mm = core.load(tt.write_corpq("/dev/null", dict(cfg, precision=prec), w))
        prep = core.prepare_translate(mm, srcs, ids, o, batch)
        t, out = timed(lambda: list(core.run_translate(prep)), reps, args.threads)
        rate[key], outs[key] = n / t, [h[0]["tokens"] for h in out]
        core.free(mm)
    t, out = timed(lambda: sum((ref.translate(srcs[i:i + batch], ids[i:i + batch], o)
                                for i in range(0, n, batch)), []), reps, args.threads)
    rate["PyTorch float32"], outs["PyTorch float32"] = n / t, [h[0]["tokens"] for h in out]
    note = ""
    if args.no_ort:
        note = "ONNX Runtime: not run (--no-ort)"
    else:
        note = ort_translate(cfg, w, srcs, o, K, batch, reps, args.threads, rate, outs)
    torch_out = outs["PyTorch float32"]
    for key, r in rate.items():
        same = sum(a == b for a, b in zip(outs[key], torch_out))
        print("  %-16s %8.2f sentences/s   (same best hypothesis as PyTorch: %d/%d)"
              % (key, r, same, n))
    if "ORT float32" in rate:
        print("  corpq / ORT: float32 %.2fx, int8 %.2fx"
              % (rate["corpq float32"] / rate["ORT float32"], rate["corpq int8"] / rate["ORT int8"]))
    print("  " + note)


def ort_translate(cfg, w, srcs, o, K, batch, reps, threads, rate, outs):
    """Fills rate and outs with ONNX Runtime's rows; returns a line saying
    how it ran (or why not)."""
    import tempfile
    import onnx_export
    node_dir, why = onnx_ort.ensure_runtime()
    if node_dir is None:
        return "ONNX Runtime: skipped: " + why
    maxl = [ts.max_len(o, cfg, len(s)) for s in srcs]
    with tempfile.TemporaryDirectory() as tmp:
        g = onnx_export.export_all("translate", cfg, w, tmp)
        job = dict(mode="translate", reps=reps, threads=threads, batch=batch,
                   models={"f32": g["f32"], "int8": g["int8"]},
                   srcs=[list(s) for s in srcs], maxl=maxl,
                   minl=[min(o["min_len"], x) for x in maxl],
                   search=dict(beam=K, V=cfg["tgt_vocab_size"], heads=cfg["heads"],
                               dh=cfg["d_model"] // cfg["heads"], layers=cfg["decoder_layers"],
                               start=tt.variant(cfg, "decoder_start_id"), lenpen=o["lenpen"]))
        r = onnx_ort.run(job, node_dir)
    for key, k in (("ORT float32", "f32"), ("ORT int8", "int8")):
        # as the other rows: CPU time on one thread, wall time on several
        rate[key] = r[k]["sentences"] / r[k]["cpu" if threads == 1 else "wall"]
        outs[key] = r[k]["hyps"]
    return ("ORT: %s;\n  encoder graph once per batch + decoder-step graph with an incremental "
            "self-attention cache (reordered in the graph), beam search in JavaScript;\n  int8: "
            "%d MatMuls dynamically quantized (uint8 activations per tensor, int8 weights per "
            "output column);\n  share of ORT's CPU time inside session.run (the rest: the "
            "JavaScript search, building tensors): float32 %.2f, int8 %.2f; wall/CPU %.2f"
            % (onnx_ort.options_line(threads, r["versions"]["onnxruntime-node"]), g["quantized"], r["f32"]["in_run"],
               r["int8"]["in_run"], r["f32"]["wall"] / r["f32"]["cpu"]))


if __name__ == "__main__":
    main()
