"""The C training core (extension/nn/train) against PyTorch autograd.

0. The norm object (extension/nn/layers/norm.h) of each kind, LayerNorm and
   RMSNorm, through ctypes: its inference forward (at a row stride), its
   training forward and its backward against float64 PyTorch (F.layer_norm;
   RMSNorm written from its formula, torch_transformer.rms_norm) with
   autograd, for d = 40 and 64 and an epsilon that matters (rows of tiny
   magnitude).
1. Gradients: the same float32 weights and batch through the core's
   cq_train_gradients (dropout off, label smoothing 0.1, gradients of the
   summed loss / tokens) and through an independent functional float64
   PyTorch model (torch_transformer.ref_loss, F.cross_entropy with
   label_smoothing) with autograd.  Per tensor: max |g_core - g_torch| /
   max |g_torch| <= 1e-3.  Two configurations cover ReLU / GELU, sinusoidal /
   learned positions, tied / untied output, shared / separate embeddings.
2. Trajectory: 20 updates of AdamW + inverse_sqrt warm-up + clipping with 2
   micro-batches per update against torch.optim.AdamW + LambdaLR +
   clip_grad_norm_ on the same data order: per-step loss within 1e-3
   relative, final weights compared too.
Both run on layer-norm models and on models of norm "rms".
"""
import ctypes
import os
import random
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_transformer as tt  # noqa: E402

TOL_GRAD = 1e-3
TOL_LOSS = 1e-3
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def small_cfg(**over):
    c = tt.make_config("tiny", 50, 60, d_model=32, heads=4, encoder_layers=2,
                       decoder_layers=2, ffn_dim=48, max_positions=32)
    c.update(over)
    return c


def random_batch(rng, n, vs, vt, lo=0, hi=12):
    return [([rng.randrange(4, vs) for _ in range(rng.randint(lo, hi))],
             [rng.randrange(4, vt) for _ in range(rng.randint(lo, hi))]) for _ in range(n)]


def torch_params(w, dtype=torch.float64):
    return {k: torch.tensor(v.numpy() if hasattr(v, "numpy") else v, dtype=dtype,
                            requires_grad=True) for k, v in w.items()}


class _Norm(ctypes.Structure):
    _fields_ = [("w", ctypes.c_void_p), ("b", ctypes.c_void_p), ("d", ctypes.c_int),
                ("kind", ctypes.c_int), ("eps", ctypes.c_float)]


class _NormStats(ctypes.Structure):
    _fields_ = [("mean", ctypes.c_void_p), ("rstd", ctypes.c_void_p)]


TOL_NORM = 1e-5     # float32 kernels against float64, relative to the largest value


def norm_case(core, kind, d, eps, seed):
    """The C norm object against PyTorch: (forward error, backward error)."""
    lib, rows, ld = core.lib, 7, d + 5
    g = np.random.default_rng(seed)
    x = (g.normal(0, 1, (rows, d)) + g.normal(0, 2, (rows, 1))).astype(np.float32)
    x[1] *= 1e-3                    # mean(x^2) ~ eps: the epsilon matters
    w = (1 + 0.3 * g.normal(0, 1, d)).astype(np.float32)
    b = (0.2 * g.normal(0, 1, d)).astype(np.float32)
    c = g.normal(0, 1, (rows, d)).astype(np.float32)
    ptr = (lambda a: a.ctypes.data)
    n = _Norm(ptr(w), ptr(b) if kind == 0 else None, d, kind, eps)
    # inference forward over rows at stride ld; the columns past d untouched
    xs = np.full((rows, ld), 7.0, np.float32)
    xs[:, :d] = x
    ys = np.full((rows, ld), -3.0, np.float32)
    lib.cq_norm_forward(ctypes.byref(n), ptr(xs), ptr(ys), rows, ld)
    # training forward and backward of L = sum c y (gradients accumulate)
    yk, mean, rstd = (np.zeros(s, np.float32) for s in ((rows, d), rows, rows))
    st = _NormStats(ptr(mean), ptr(rstd))
    lib.cq_norm_forward_keep(ctypes.byref(n), ptr(x), ptr(yk), rows, ctypes.byref(st))
    dx, gw, gb = np.zeros((rows, d), np.float32), np.zeros(d, np.float32), np.zeros(d, np.float32)
    gn = _Norm(ptr(gw), ptr(gb) if kind == 0 else None, d, kind, eps)
    lib.cq_norm_backward(ctypes.byref(n), ctypes.byref(gn), ptr(x), ctypes.byref(st), ptr(c),
                         ptr(dx), rows)
    X, W, B = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    eps64 = float(np.float32(eps))
    Y = F.layer_norm(X, (d,), W, B, eps64) if kind == 0 else tt.rms_norm(X, W, eps64)
    (Y * torch.from_numpy(c.astype(np.float64))).sum().backward()

    def rel(a, ref):
        return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-30))
    ref = Y.detach().numpy()
    e_fwd = max(rel(ys[:, :d], ref), rel(yk, ref))
    check((xs[:, d:] == 7.0).all() and (ys[:, d:] == -3.0).all(),
          "norm kind %d: the forward stays in its rows' d columns" % kind)
    e_bwd = max(rel(dx, X.grad.numpy()), rel(gw, W.grad.numpy()))
    if kind == 0:
        e_bwd = max(e_bwd, rel(gb, B.grad.numpy()))
    else:
        check(not gb.any(), "rms: no bias gradient")
    return e_fwd, e_bwd


def check_norm_ops(core):
    lib, P = core.lib, ctypes.c_void_p
    lib.cq_norm_forward.argtypes = [P, P, P, ctypes.c_long, ctypes.c_long]
    lib.cq_norm_forward_keep.argtypes = [P, P, P, ctypes.c_long, P]
    lib.cq_norm_backward.argtypes = [P, P, P, P, P, P, ctypes.c_long]
    for kind, name in ((0, "layer"), (1, "rms")):
        worst = [0.0, 0.0]
        for i, (d, eps) in enumerate(((40, 1e-5), (64, 1e-6), (64, 1e-2))):
            errs = norm_case(core, kind, d, eps, 10 * kind + i)
            worst = [max(a, e) for a, e in zip(worst, errs)]
        check(worst[0] <= TOL_NORM and worst[1] <= TOL_NORM,
              "norm %s: forward rel err %.3g, backward %.3g" % (name, worst[0], worst[1]))
        print("  norm object, %-5s forward (inference and training) max rel err %.2e, "
              "backward (dx, dw%s) %.2e" % (name, worst[0], ", db" if kind == 0 else "", worst[1]))


def check_gradients(core, label, cfg, seed):
    rng = random.Random(seed)
    w = tt.random_weights(cfg, seed)
    blob = tt.write_corpq("/dev/null", cfg, w)
    m = core.load(blob)
    st = core.state(m, core.config(dropout=False, label_smoothing=0.1))
    batch = random_batch(rng, 6, cfg["src_vocab_size"], cfg["tgt_vocab_size"])
    stats, g = core.gradients(st, [batch])
    P = torch_params(w)
    loss, ntok = tt.ref_loss(cfg, P, batch, 0.1)
    (loss / ntok).backward()
    check(abs(stats["loss"] - loss.item() / ntok) <= 1e-5 * loss.item() / ntok,
          "%s: loss %.8f vs %.8f" % (label, stats["loss"], loss.item() / ntok))
    check(stats["tokens"] == ntok, "%s: tokens" % label)
    worst, worst_name = 0.0, ""
    for name in sorted(w):
        ref = P[name].grad.numpy()
        err = float(np.abs(g[name] - ref).max() / max(np.abs(ref).max(), 1e-30))
        check(err <= TOL_GRAD, "%s: gradient of %s rel err %.3g" % (label, name, err))
        if err > worst:
            worst, worst_name = err, name
    print("  %-28s loss %.6f (torch %.6f), %d tensors, max rel grad err %.2e (%s)"
          % (label, stats["loss"], loss.item() / ntok, len(w), worst, worst_name))
    core.lib.cq_train_state_free(st)
    core.free(m)


def without_key_bias(name, a, cfg):
    """The attention key biases have an exactly zero true gradient (softmax
    is invariant to adding q.b_k to a whole row), so both sides give Adam pure
    rounding noise, which it normalises into lr-sized steps: those entries
    are left out of the weight comparison."""
    d = cfg["d_model"]
    if name.endswith("self_attn.qkv.bias"):
        return np.concatenate([a[:d], a[2 * d:]])
    if name.endswith("encoder_attn.kv.bias"):
        return a[d:]
    return a


def check_trajectory(core, cfg, seed, steps=20, label=""):
    rng = random.Random(seed)
    w = tt.random_weights(cfg, seed)
    m = core.load(tt.write_corpq("/dev/null", cfg, w))
    hp = dict(lr=2e-3, warmup_init_lr=1e-7, warmup_updates=5, clip_norm=0.5,
              beta1=0.9, beta2=0.98, eps=1e-9, weight_decay=0.01)
    st = core.state(m, core.config(dropout=False, label_smoothing=0.1, **hp))
    data = [[random_batch(rng, 4, cfg["src_vocab_size"], cfg["tgt_vocab_size"]),
             random_batch(rng, 3, cfg["src_vocab_size"], cfg["tgt_vocab_size"])]
            for _ in range(4)]
    P = torch_params(w)
    names = sorted(P)
    opt = torch.optim.AdamW([P[n] for n in names], lr=hp["lr"], betas=(0.9, 0.98),
                            eps=1e-9, weight_decay=hp["weight_decay"])
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, tt.inverse_sqrt_lambda(hp["lr"], hp["warmup_init_lr"], hp["warmup_updates"]))
    worst = 0.0
    clipped = 0
    curve = []
    for s in range(steps):
        micro = data[s % len(data)]
        c = core.step(st, micro)
        opt.zero_grad()
        total, ntok = 0.0, 0
        for b in micro:
            loss, n = tt.ref_loss(cfg, P, b, 0.1)
            loss.backward()
            total += loss.item()
            ntok += n
        for n in names:
            P[n].grad /= ntok
        norm = float(torch.nn.utils.clip_grad_norm_([P[n] for n in names], hp["clip_norm"]))
        clipped += norm > hp["clip_norm"]
        lr = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
        ref = total / ntok
        err = abs(c["loss"] - ref) / ref
        worst = max(worst, err)
        curve.append((c["loss"], ref))
        check(err <= TOL_LOSS, "trajectory step %d: loss %.6f vs %.6f" % (s + 1, c["loss"], ref))
        check(abs(c["lr"] - lr) <= 1e-9 * max(lr, 1e-12) + 1e-15,
              "trajectory step %d: lr %.6g vs %.6g" % (s + 1, c["lr"], lr))
        check(abs(c["grad_norm"] - norm) <= 1e-3 * norm,
              "trajectory step %d: grad norm %.6g vs %.6g" % (s + 1, c["grad_norm"], norm))
    wc = core.weights(st)
    werr = max(float(np.abs(without_key_bias(n, wc[n] - P[n].detach().numpy(), cfg)).max())
               for n in names)
    print("  20-step trajectory%s (2 micro-batches/update, clip 0.5 active on %d steps):"
          % (label, clipped))
    print("    losses core/torch: " + ", ".join("%.4f/%.4f" % c for c in curve[::4]))
    print("    max rel loss err %.2e, max |w_core - w_torch| after 20 updates %.2e (key biases excluded)" % (worst, werr))
    check(clipped > 0, "clipping never active in the trajectory")
    check(werr <= 1e-4, "trajectory weights differ by %.3g" % werr)
    core.lib.cq_train_state_free(st)
    core.free(m)


def main():
    torch.set_num_threads(1)
    core = tt.TrainCore()
    print("the norm object vs torch autograd (float64):")
    check_norm_ops(core)
    print("gradients vs torch autograd (float64), label smoothing 0.1, dropout off:")
    check_gradients(core, "relu/sinusoid/tied", small_cfg(), 1)
    check_gradients(core, "gelu/learned/untied/shared",
                    small_cfg(activation="gelu", positions="learned", tie_output=False,
                              share_embeddings=True, tgt_vocab_size=50), 2)
    check_gradients(core, "tied+shared, 1+3 layers",
                    small_cfg(share_embeddings=True, tgt_vocab_size=50, encoder_layers=1,
                              decoder_layers=3), 3)
    # architecture variants (models/FORMAT.md), as converted models have them
    post = dict(norm_position="post", encoder_final_norm=False, decoder_final_norm=False)
    check_gradients(core, "fairseq post-norm, LN emb",
                    small_cfg(position_offset=2, layernorm_embedding=True, **post), 5)
    check_gradients(core, "HF Marian post, swish, bias",
                    small_cfg(activation="swish", sinusoid_denominator="half", output_bias=True,
                              decoder_start_id=1, share_embeddings=True, tgt_vocab_size=50,
                              **post), 6)
    check_gradients(core, "pre unscaled, eps, LN emb",
                    small_cfg(scale_embeddings=False, layer_norm_eps=1e-6, positions="learned",
                              tie_output=False, output_bias=True, layernorm_embedding=True,
                              decoder_final_norm=False), 7)
    # norm "rms" at every norm site: pre-norm with final and embedding norms,
    # and a Marian-style post-norm model (marian-dev's transformer-postprocess dar)
    check_gradients(core, "rms pre, emb norm, finals",
                    small_cfg(norm="rms", layernorm_embedding=True, activation="swish"), 9)
    check_gradients(core, "rms post (Marian dar)",
                    small_cfg(norm="rms", layer_norm_eps=1e-6, output_bias=True,
                              decoder_start_id=1, **post), 10)
    check_trajectory(core, small_cfg(), 4)
    check_trajectory(core, small_cfg(activation="swish", output_bias=True, decoder_start_id=1,
                                     **post), 8)
    check_trajectory(core, small_cfg(norm="rms", layernorm_embedding=True), 11, label=", rms")
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("test_train_torch: ok")


if __name__ == "__main__":
    main()
