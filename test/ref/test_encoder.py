"""Encoder models (kind encoder) of the C core against the PyTorch reference
(test/ref/torch_encoder.py): random float32 weights written by the Python
writer, loaded and packed by the core, sentence vectors from cq_encode
compared with the float64 reference for a batch of sentences of mixed
lengths (the empty sentence and the longest the model takes among them),
alone and in the batch (the same bits), for the layouts: pre-norm with
sinusoids and mean pooling; LaBSE's (post-norm, learned positions,
embedding norm, token type vector, first-position pooling and pooler, no
final norm); RMSNorm with mean pooling and a pooler.  Also the dual
encoder's loss (both directions, additive margin) of the reference
differentiated by autograd against central differences, a check of the
formula the C loss is tested against (test/unit/test_encoder.c).
"""
import os
import random
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_transformer as tt  # noqa: E402
import torch_encoder as te  # noqa: E402

# float32 core against float64 PyTorch: the final hidden states are off by
# ~1e-6 relative (test_nn.py's analysis, 2 layers here), and pooling,
# the pooler and the normalisation keep that scale; a unit vector's
# components are within 1e-5 absolute.
TOL = 1e-5
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


CONFIGS = [
    ("pre/sin/mean", dict(activation="gelu")),
    ("labse layout", dict(norm_position="post", positions="learned", layernorm_embedding=True,
                          token_type_embedding=True, pooling="cls", pooler=True,
                          encoder_final_norm=False)),
    ("rms/mean/pooler", dict(norm="rms", pooler=True, activation="swish")),
]


def run(core, enc, tmp, label, over, seed):
    cfg = te.encoder_config("tiny", 300, max_positions=40, **over)
    w = te.encoder_weights(cfg, seed)
    path = os.path.join(tmp, "m.corpq")
    blob = tt.write_corpq(path, cfg, w)
    m = core.load(blob)
    rng = random.Random(seed)
    most = cfg["max_positions"] - 2
    sents = [[rng.randrange(3, 300) for _ in range(rng.randint(0, 20))] for _ in range(10)]
    sents += [[], [rng.randrange(4, 300) for _ in range(most)]]
    ref = te.embed(cfg, w, sents).numpy()
    got = enc.embed(m, sents, cfg["d_model"])
    err = float(np.abs(got - ref).max())
    print("  %-16s %d sentences, d %d: max |core - torch| %.2e, norms %.7f..%.7f"
          % (label, len(sents), cfg["d_model"], err, np.linalg.norm(got, axis=1).min(),
             np.linalg.norm(got, axis=1).max()))
    check(err <= TOL, "%s: vectors differ by %.2e > %.0e" % (label, err, TOL))
    alone = np.stack([enc.embed(m, [s], cfg["d_model"])[0] for s in sents])
    check(np.array_equal(alone, got), "%s: a sentence alone has other bits than in the batch" % label)
    try:
        enc.embed(m, [[5] * (most + 1)], cfg["d_model"])
        check(False, "%s: a sentence of %d tokens was embedded" % (label, most + 1))
    except tt.CoreError as e:
        check("at most %d" % most in str(e), "%s: wrong error %s" % (label, e))
    core.free(m)


def check_translation_refused(core, enc, tmp):
    cfg = tt.make_config("tiny", 300, 300, max_positions=40)
    m = core.load(tt.write_corpq(os.path.join(tmp, "t.corpq"), cfg, tt.random_weights(cfg, 1)))
    try:
        enc.embed(m, [[5, 6]], cfg["d_model"])
        check(False, "a translation model embedded a sentence")
    except tt.CoreError as e:
        check("translation model" in str(e), "wrong error %s" % e)
    core.free(m)


def check_loss_gradient():
    """Autograd of the reference loss against central differences (float64)."""
    g = torch.Generator().manual_seed(5)
    zx = torch.randn(6, 8, dtype=torch.float64, generator=g)
    zy = torch.randn(6, 8, dtype=torch.float64, generator=g)

    def loss(a, b):
        return te.dual_loss(torch.nn.functional.normalize(a, dim=-1),
                            torch.nn.functional.normalize(b, dim=-1), 0.3, 20.0)
    ok = torch.autograd.gradcheck(loss, (zx.requires_grad_(), zy.requires_grad_()))
    check(ok, "dual loss: autograd differs from central differences")
    # margin 0, scale 1, identical sides: each row's softmax over n equal
    # cosines but its own, loss = 2 n (log(sum_j exp(S_ij)) - S_ii)
    e = torch.nn.functional.normalize(zx, dim=-1)
    s = e @ e.T
    byhand = 2 * sum(float(torch.logsumexp(s[i], 0) - s[i, i]) for i in range(6))
    check(abs(float(te.dual_loss(e, e, 0.0, 1.0)) - byhand) < 1e-12, "dual loss by hand")


def main():
    core = tt.Core()
    enc = te.CoreEncoder(core)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, over) in enumerate(CONFIGS):
            run(core, enc, tmp, label, over, 20 + i)
        check_translation_refused(core, enc, tmp)
    check_loss_gradient()
    if failures:
        sys.exit("test_encoder: %d failures" % len(failures))
    print("test_encoder: ok")


main()
