"""The ANTAP core (extension/antap) against a PyTorch build of the same
network (test/ref/torch_antap.py: nn.Linear, nn.LayerNorm,
nn.MultiheadAttention, F.layer_norm + F.adaptive_avg_pool2d), in float64.

1. Forward: the core's float32 outputs within 1e-5 of the reference, for
   several configurations, random weights and inputs.
2. Input pipeline: CAVs built by the cav core, pooled with
   cav_view_pool_layer_norm and run through the core, against the dense
   matrices through F.layer_norm, adaptive pooling and the torch model.
3. Gradients of the batch MSE: per tensor max |g_core - g_torch| / max
   |g_torch| <= 1e-4.
4. Trajectory: 20 AdamW updates of the core's trainer against
   torch.optim.AdamW on the same batches: every step's loss within 1e-4
   relative, the final weights within 1e-5 of the largest weight (but for
   the attention's key bias, whose exact gradient is zero: see below).
5. The weight file: one written in Python from models/ANTAP.md loads in the
   core and predicts the same.

Tolerances (float32 core, float64 reference): an output is a chain of dot
products of at most 512 terms of magnitude <= ~1; each carries a relative
rounding error of at most ~sqrt(512) * 6e-8 ~ 1.4e-6 (random-walk bound,
OpenBLAS accumulates in float32 with blocked sums), and the chain has ~10
such stages, so outputs of magnitude <= 1 are off by a few 1e-6 at worst:
1e-5 holds with margin.  Gradients go through the same stages backwards and
are compared relative to each tensor's largest entry: a few 1e-6, under
1e-4.  In the trajectory AdamW normalises each coordinate by sqrt(v), so
weights stay as close as the gradients' relative error times the 20 steps of
size lr (measured: ~6e-7 of the largest weight; 1e-5 allowed) -- except
where a gradient is exactly zero in exact arithmetic (the key bias), whose
rounding noise AdamW scales up to full steps.
"""
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import antap_core as ac  # noqa: E402
import test_cav as tc  # noqa: E402
import torch_antap as ta  # noqa: E402

tc.np = np  # test_cav imports numpy lazily, in its main()

TOL_OUT = 1e-5
TOL_GRAD = 1e-4
TOL_LOSS = 1e-4
TOL_WEIGHTS = 1e-5
failures = []

CONFIGS = {
    "default (32x32, S16, D32, 4 heads)": {},
    "small, one head": dict(pool_rows=5, pool_cols=7, seq_len=3, d_model=6, heads=1,
                            ffn_dim=10, pred_factor=3),
    "wide pooling, factor 2": dict(pool_rows=48, pool_cols=8, seq_len=8, d_model=12, heads=3,
                                   ffn_dim=24, pred_factor=2),
}


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def pair(cfg_over, seed):
    """A core model with random weights and the torch model holding the same."""
    cfg = ac.config(**cfg_over)
    core = ac.Antap(cfg, seed=seed)
    ref = ta.Antap(cfg.as_dict()).double()
    ref.load_core(core.tensors())
    return cfg, core, ref


def check_forward_and_gradients(label, over, seed):
    cfg, core, ref = pair(over, seed)
    rng = np.random.default_rng(seed)
    n = 7
    x = rng.normal(0, 1.0, (n, cfg.pool_rows, cfg.pool_cols)).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    p = ac.Pass(cfg, n)
    out = p.forward(core, x)
    xt = torch.from_numpy(x.astype(np.float64))
    want = ref(xt)
    err_out = float(np.abs(out - want.detach().numpy()).max())
    check(err_out <= TOL_OUT, "%s: output error %.3g" % (label, err_out))
    # gradients of the mean squared error
    dout = np.zeros(n, dtype=np.float32)
    ac.lib.cq_antap_mse(ac.fptr(out), ac.fptr(y), n, ac.fptr(dout))
    grad = ac.Antap(cfg)
    p.backward(core, dout, grad)
    g = grad.tensors()
    loss = torch.nn.functional.mse_loss(want, torch.from_numpy(y.astype(np.float64)))
    loss.backward()
    r = ref.core_grads()
    worst, worst_name = 0.0, ""
    for name in r:
        e = float(np.abs(g[name] - r[name]).max() / max(np.abs(r[name]).max(), 1e-30))
        check(e <= TOL_GRAD, "%s: gradient of %s rel err %.3g" % (label, name, e))
        if e > worst:
            worst, worst_name = e, name
    print("  %-38s max |dout| %.2e, max rel grad err %.2e (%s)" % (label, err_out, worst, worst_name))


def check_pipeline():
    """CAV -> LayerNorm -> pool -> network, the core's sparse path against dense torch."""
    rnd = random.Random(5)
    pairs = tc.corpus(200, 5)
    st = tc.State(24)
    for s, t in pairs:
        st.add(s.encode(), t.encode())
    cav = tc.Cav(st.bytes())
    cfg, core, ref = pair(dict(pool_rows=16, pool_cols=8, seq_len=4, d_model=8, heads=2,
                               ffn_dim=16), 3)
    idx = rnd.sample(range(cav.v.n_mat), min(12, cav.v.n_mat))
    x = np.array([np.array(cav.pool_layer_norm(i, 16, 8)).reshape(16, 8) for i in idx],
                 dtype=np.float32)
    out = ac.Pass(cfg, len(idx)).forward(core, x)
    dense = torch.from_numpy(np.stack([tc.dense_from_c(cav, i) for i in idx]).astype(np.float64))
    want = ref(ta.pipeline(dense, 16, 8)).detach().numpy()
    err = float(np.abs(out - want).max())
    check(err <= TOL_OUT, "pipeline: output error %.3g" % err)
    print("  %-38s %d tokens of a %d x %d CAV, max |dout| %.2e"
          % ("CAV -> pipeline -> network", len(idx), cav.v.n_src + cav.v.n_tgt, 24, err))


def check_trajectory():
    over = dict(pool_rows=12, pool_cols=10, seq_len=6, d_model=8, heads=2, ffn_dim=16)
    cfg, core, ref = pair(over, 9)
    rng = np.random.default_rng(1)
    xs = rng.normal(0, 1, (20, 8, cfg.pool_rows, cfg.pool_cols)).astype(np.float32)
    ys = rng.uniform(0, 1, (20, 8)).astype(np.float32)
    lr = 3e-3
    tr = ac.Trainer(core, lr=lr, batch_size=8)
    opt = torch.optim.AdamW(ref.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    worst_loss = 0.0
    first = last = None
    for k in range(20):
        got = tr.step(xs[k], ys[k])
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ref(torch.from_numpy(xs[k].astype(np.float64))),
                                            torch.from_numpy(ys[k].astype(np.float64)))
        loss.backward()
        opt.step()
        rel = abs(got - loss.item()) / abs(loss.item())
        worst_loss = max(worst_loss, rel)
        check(rel <= TOL_LOSS, "trajectory step %d: loss %.8g vs %.8g" % (k + 1, got, loss.item()))
        first = loss.item() if first is None else first
        last = loss.item()
    c, r = core.tensors(), ref.core_tensors()
    # The key bias (rows D..2D-1 of attn.qkv.bias) adds q.b_k to every score
    # of a query's row, which softmax ignores: its exact gradient is 0, so
    # AdamW turns pure rounding noise into +-lr steps in both codes (torch
    # float32 against torch float64 differs there by ~5e-5 too).  Compared
    # apart: it must stay within the 20 lr that AdamW can move anything.
    D = cfg.d_model
    kb = slice(D, 2 * D)
    drift = float(np.abs(c["attn.qkv.bias"][kb] - r["attn.qkv.bias"][kb]).max())
    check(drift <= 2 * 20 * lr, "trajectory: key bias drift %.3g" % drift)
    c["attn.qkv.bias"][kb] = r["attn.qkv.bias"][kb]
    scale = max(float(np.abs(v).max()) for v in r.values())
    werr = max(float(np.abs(c[n] - r[n]).max()) for n in r) / scale
    check(werr <= TOL_WEIGHTS, "trajectory: final weights rel err %.3g" % werr)
    print("  %-38s loss %.4f -> %.4f, max rel loss err %.2e, final weights rel err %.2e"
          % ("20 AdamW steps vs torch.optim.AdamW", first, last, worst_loss, werr))


def check_python_written_file():
    cfg_over = dict(pool_rows=6, pool_cols=5, seq_len=4, d_model=4, heads=2, ffn_dim=8)
    cfg = ac.config(**cfg_over)
    torch.manual_seed(4)
    ref = ta.Antap(cfg.as_dict())
    t = ref.core_tensors()
    order = [name for name, _ in ref.named_core_params()][::-1]  # records may come in any order
    blob = ac.write_file(dict(model="antap", **cfg.as_dict()), t, order)
    core = ac.Antap(blob=blob)
    x = np.random.default_rng(2).normal(0, 1, (5, 6, 5)).astype(np.float32)
    out = ac.Pass(cfg, 5).forward(core, x)
    want = ref.double()(torch.from_numpy(x.astype(np.float64))).detach().numpy()
    err = float(np.abs(out - want).max())
    check(err <= TOL_OUT, "python-written file: output error %.3g" % err)
    again = ac.read_file(core.blob())[1]
    check(all(np.array_equal(again[n], t[n]) for n in t), "python-written file: tensors round-trip")
    print("  %-38s max |dout| %.2e" % ("weight file written from the spec", err))


def main():
    torch.set_num_threads(1)
    for i, (label, over) in enumerate(CONFIGS.items()):
        check_forward_and_gradients(label, over, 100 + i)
    check_pipeline()
    check_trajectory()
    check_python_written_file()
    if failures:
        print("test_antap: %d failures" % len(failures))
        sys.exit(1)
    print("test_antap: ok")


if __name__ == "__main__":
    main()
