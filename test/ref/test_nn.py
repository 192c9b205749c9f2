"""The C transformer core (extension/nn) against the PyTorch reference.

Random float32 weights are written in the corpq format by the Python writer
(test/ref/torch_transformer.py, from models/FORMAT.md), loaded by the C core,
and per-position log p(gold), p_max, entropy and argmax plus the sentence
log-prob and geometric-mean probability are compared with a float64 PyTorch
model of the same architecture, for batch 1 and a padded batch of 8, in eval
mode and in a Monte Carlo dropout pass (the reference draws the same Philox
masks with its own numpy implementation, so the dropout sites, keys and
scaling are checked, not only their determinism).  Also:
batched = single, Monte Carlo dropout masks independent of the batch, MC with
dropout 0 = eval, and the forward's rejection of bad ids and lengths.  The
configurations cover the architecture variants, norm "rms" among them.
"""
import os
import random
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_transformer as tt  # noqa: E402

# Tolerances, float32 core against float64 PyTorch (u = 2^-24 = 6.0e-8):
# every product is a dot product of length K <= 1024 (ffn of `small`), off by
# ~sqrt(K) u = 1.9e-6 relative to sum |x w| with independent roundings (K u =
# 6e-5 in the worst case).  The residual stream collects one such error per
# sublayer, at most 3 + 3 layers x 3 = 18, and layer norm keeps its scale at 1,
# so the final hidden state h is off by ~18 sqrt(K) u = 3.5e-5 relative; a
# logit h.w (|h| ~ sqrt(d) after layer norm, |w| ~ 1) then moves by ~3.5e-5 for
# an error not aligned with w, and a log-softmax value by at most twice the
# largest logit error: 7e-5.  p_max = exp(max logp) <= 1 and the entropy
# ln Z - sum p z move by about as much in absolute terms.
TOL_LOGP = 1e-4       # absolute, per position (log p, p_max, entropy)
# The sentence log-prob sums n positions each within TOL_LOGP, and each |log p|
# of these untrained models is ~ln V >= ln 300 = 5.7 (near-uniform outputs):
# relative error <= TOL_LOGP / 5.7 = 1.8e-5.  The geometric mean exp(mean log p)
# moves by the mean's absolute error, i.e. TOL_LOGP relative.
TOL_SENT = 2e-5       # relative, sentence log-prob
TOL_GEO = TOL_LOGP    # relative, geometric-mean probability
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def random_pairs(rng, n, vs, vt, max_len=20):
    pairs = []
    for i in range(n):
        ls = rng.randint(0, max_len) if i else max_len
        lt = rng.randint(0, max_len) if i != 1 else 0
        pairs.append(([rng.randrange(4, vs) for _ in range(ls)] + [3] * (i % 2),
                      [rng.randrange(4, vt) for _ in range(lt)]))
    return pairs


def compare(name, ref, got):
    """Returns the max errors; records failures."""
    e_lp = e_pm = e_h = e_s = e_g = 0.0
    am_bad = 0
    for r, g in zip(ref, got):
        e_lp = max(e_lp, float(np.abs(r["logp"] - g["logp"]).max()))
        e_pm = max(e_pm, float(np.abs(r["p_max"] - g["p_max"]).max()))
        e_h = max(e_h, float(np.abs(r["entropy"] - g["entropy"]).max()))
        sl = float(r["logp"].sum())
        e_s = max(e_s, abs(g["sent_logp"] - sl) / abs(sl))
        geo_r, geo_g = np.exp(sl / len(r["logp"])), np.exp(g["sent_logp"] / g["count"])
        e_g = max(e_g, abs(geo_g - geo_r) / geo_r)
        check(g["count"] == len(r["logp"]), "%s: count" % name)
        # argmax may differ only where the top two are within float error
        for t in np.nonzero(r["argmax"] != g["argmax"])[0]:
            am_bad += 1
    check(e_lp <= TOL_LOGP, "%s: logp err %.3g" % (name, e_lp))
    check(e_pm <= TOL_LOGP and e_h <= TOL_LOGP, "%s: p_max/entropy err %.3g/%.3g" % (name, e_pm, e_h))
    check(e_s <= TOL_SENT and e_g <= TOL_GEO, "%s: sentence err %.3g/%.3g" % (name, e_s, e_g))
    check(am_bad == 0, "%s: %d argmax mismatches" % (name, am_bad))
    print("  %-34s max|dlogp| %.2e  max|dp_max| %.2e  max|dH| %.2e  rel sent %.2e  rel geo %.2e"
          % (name, e_lp, e_pm, e_h, e_s, e_g))
    return e_lp


def same(a, b, tol):
    return all(np.abs(x[k] - y[k]).max() <= tol for x, y in zip(a, b)
               for k in ("logp", "p_max", "entropy"))


def run_config(core, tmp, label, cfg, seed):
    rng = random.Random(seed)
    w = tt.random_weights(cfg, seed)
    path = os.path.join(tmp, label + ".cqm")
    blob = tt.write_corpq(path, cfg, w)
    ref_model = tt.Transformer(cfg, w)
    m = core.load(blob)
    try:
        vs, vt = cfg["src_vocab_size"], cfg["tgt_vocab_size"]
        batch = random_pairs(rng, 8, vs, vt)
        ref = ref_model.score(batch)
        single = [core.score(m, [p])[0] for p in batch]
        compare(label + " batch 1", ref, single)
        got = core.score(m, batch)
        compare(label + " batch 8", ref, got)
        check(same(got, single, 0.0), label + ": batched != single (bitwise)")
        # Monte Carlo dropout: a pair's masks do not depend on its batch
        keys = [rng.getrandbits(64) for _ in batch]
        mc_b = core.score(m, batch, mc=(1234, 5), keys=keys)
        mc_s = [core.score(m, [p], mc=(1234, 5), keys=[k])[0] for p, k in zip(batch, keys)]
        rev = core.score(m, batch[::-1], mc=(1234, 5), keys=keys[::-1])[::-1]
        check(same(mc_b, mc_s, 0.0) and same(mc_b, rev, 0.0), label + ": MC alone != in batch")
        # the same masks written independently (numpy Philox) in the reference
        compare(label + " MC pass (same masks)", ref_model.score(batch, mc=(1234, 5), keys=keys), mc_b)
        mc_again = core.score(m, batch, mc=(1234, 5), keys=keys)
        check(same(mc_b, mc_again, 0.0), label + ": MC not deterministic")
        mc_other = core.score(m, batch, mc=(1234, 6), keys=keys)
        check(not same(mc_b, mc_other, 1e-3), label + ": MC pass has no effect")
        check(not same(mc_b, got, 1e-3), label + ": MC equals eval")
    finally:
        core.free(m)
    # dropout 0 everywhere: MC mode = eval mode
    cfg0 = dict(cfg, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    m0 = core.load(tt.write_corpq(path, cfg0, w))
    try:
        a = core.score(m0, batch)
        b = core.score(m0, batch, mc=(99, 3), keys=keys)
        check(same(a, b, 0.0), label + ": MC with p = 0 != eval")
        check(same(a, got, 0.0), label + ": dropout config changed eval")
    finally:
        core.free(m0)


TOL_INT8 = 1e-4      # absolute, log p, median over positions (see run_int8)


def dlogp(ref, got):
    return np.concatenate([np.abs(r["logp"] - g["logp"]) for r, g in zip(ref, got)])


def run_int8(core, tmp, label, cfg, seed, bits=8, embeddings="float32"):
    """An int8 model (precision "int8") against the reference's fake-quantized
    products (torch_transformer.int8_linear, written from models/FORMAT.md,
    codes rounded in float32 as the rule says).  Weights are stored in float32,
    so their codes are C's exactly; an activation's code is rounded from C's
    float32 value there and from the float64 reference's here, and a value
    within ~1e-6 of a code boundary may round the other way: one such flip
    moves the later positions of its pair (one in the encoder: all of them).
    So most positions must agree to TOL_INT8 against the int8 reference and
    almost none against float32 (the quantization itself moves every
    position), and the mean error against the int8 reference must be well
    below that against float32.  How far below depends on the flips: over
    8 pairs, one or two flipped pairs give a third of the float32 error
    (small gelu untied, seed 403, with float32 embeddings as with int8 ones),
    none give 1e-7.  The kernels are checked bit for bit in test_qgemm.c.
    A pair's scores are the same bits alone and in a batch."""
    rng = random.Random(seed)
    batch = random_pairs(rng, 8, cfg["src_vocab_size"], cfg["tgt_vocab_size"])
    w = tt.random_weights(cfg, seed)
    c8 = dict(cfg, precision="int8")
    if bits != 8:
        c8["weight_bits"] = bits
        label += ", %d-bit weights" % bits
    if embeddings != "float32":
        c8["embedding_precision"] = embeddings
        label += ", %s embeddings" % embeddings
    m = core.load(tt.write_corpq(os.path.join(tmp, label + ".cqm"), c8, w))
    try:
        got = core.score(m, batch)
        single = [core.score(m, [p])[0] for p in batch]
        check(same(got, single, 0.0), label + ": int8 batched != single (bitwise)")
    finally:
        core.free(m)
    e8 = dlogp(tt.Transformer(c8, w).score(batch), got)
    e32 = dlogp(tt.Transformer(cfg, w).score(batch), got)
    check(np.median(e8) <= TOL_INT8, "%s: int8 median |dlogp| %.3g" % (label, np.median(e8)))
    check((e32 <= TOL_INT8).mean() <= 0.1, "%s: %.0f%% of positions within %g of float32"
          % (label, 100 * (e32 <= TOL_INT8).mean(), TOL_INT8))
    check(e8.mean() * 2 < e32.mean(), "%s: int8 mean |dlogp| %.3g against the int8 reference, "
          "%.3g against float32" % (label, e8.mean(), e32.mean()))
    print("  %-34s int8: |dlogp| median %.1e, mean %.1e, max %.1e against the int8 reference; "
          "mean %.1e against float32" % (label, np.median(e8), e8.mean(), e8.max(), e32.mean()))


def check_c_writer(core):
    """A file written by the C core, read back by the Python reader of
    FORMAT.md, scores the same in PyTorch; its random init follows FORMAT.md."""
    cfg = tt.make_config("tiny", 200, 210, positions="learned", tie_output=False,
                         activation="gelu")
    m = core.create(cfg, 11)
    try:
        blob = core.save(m)
        rcfg, w = tt.read_corpq(blob)
        check(all(rcfg[k] == v if not isinstance(v, float) else abs(rcfg[k] - v) < 1e-7
                  for k, v in cfg.items()), "C writer config %r" % rcfg)
        check(set(w) == set(tt.tensor_shapes(cfg)) and
              all(w[k].shape == s for k, s in tt.tensor_shapes(cfg).items()),
              "C writer tensor table")
        d = cfg["d_model"]
        emb = np.delete(w["encoder.embed_tokens"], tt.PAD, axis=0)
        check(abs(emb.std() - d ** -0.5) < 0.03 * d ** -0.5 and
              not w["encoder.embed_tokens"][tt.PAD].any(), "init: embeddings N(0, 1/d), pad 0")
        fc1 = w["encoder.layers.0.fc1.weight"]
        bound = (6.0 / (cfg["ffn_dim"] + d)) ** 0.5
        check(np.abs(fc1).max() <= bound and np.abs(fc1).max() > 0.98 * bound and
              abs(fc1.std() - bound / 3 ** 0.5) < 0.02 * bound, "init: fc1 Xavier-uniform")
        q = w["decoder.layers.1.self_attn.qkv.weight"][:d]
        qb = 2 ** -0.5 * (6.0 / (2 * d)) ** 0.5
        check(np.abs(q).max() <= qb and np.abs(q).max() > 0.98 * qb, "init: q gain 1/sqrt 2")
        check(not w["decoder.layers.0.fc2.bias"].any() and
              (w["decoder.layer_norm.weight"] == 1).all(), "init: biases 0, LN 1")
        rng = random.Random(5)
        batch = random_pairs(rng, 4, 200, 210)
        ref = tt.Transformer(rcfg, {k: torch.from_numpy(v.copy()) for k, v in w.items()})
        compare("C-written file, torch from Python reader", ref.score(batch), core.score(m, batch))
    finally:
        core.free(m)


def check_philox():
    """The numpy Philox4x32-10 of the reference against Random123's vectors."""
    kat = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
           ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
           ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for c, k, want in kat:
        got = tuple(int(v) for v in tt.philox4x32(*c, *k))
        check(got == want, "numpy philox KAT %r" % (got,))
    m = tt.dropout_mask(7, 1, 99, 5, 200, 300, 0.3)
    check(abs((m == 0).mean() - 0.3) < 0.01, "dropout mask rate %.3f" % (m == 0).mean())
    print("  numpy Philox4x32-10: Random123 known answers; mask drop rate %.3f (p = 0.3)"
          % (m == 0).mean())


def check_rejections(core, tmp):
    cfg = tt.make_config("tiny", 50, 60, max_positions=16)
    m = core.load(tt.write_corpq(os.path.join(tmp, "r.cqm"), cfg, tt.random_weights(cfg, 1)))
    try:
        for pairs, what in [([([4, 50], [5])], "source id = vocab"),
                            ([([4], [60])], "target id = vocab"),
                            ([([4], [-1])], "negative id"),
                            ([([4] * 16, [5])], "source of max_positions"),
                            ([([4], [5] * 16)], "target of max_positions")]:
            try:
                core.score(m, pairs)
                check(False, "accepted " + what)
            except tt.CoreError as e:
                check(e.code == 2, "%s: code %d" % (what, e.code))
        core.score(m, [([4] * 15, [5] * 15)])   # the longest allowed
    finally:
        core.free(m)
    print("  rejections: ids outside the vocabulary and over-long sentences -> CQ_EINVAL")


def main():
    torch.manual_seed(0)
    core = tt.Core()
    with tempfile.TemporaryDirectory() as tmp:
        configs = [
            ("tiny relu sinus tied", tt.make_config("tiny", 300, 350)),
            ("tiny gelu learned untied", tt.make_config("tiny", 300, 350, activation="gelu",
                                                        positions="learned", tie_output=False)),
            ("tiny shared+tied gelu", tt.make_config("tiny", 320, 320, activation="gelu",
                                                     share_embeddings=True)),
            ("small gelu sinus untied", tt.make_config("small", 500, 600, activation="gelu",
                                                       tie_output=False)),
            ("small relu learned tied", tt.make_config("small", 500, 600, positions="learned")),
        ]
        # architecture variants (models/FORMAT.md): the shapes of converted models
        post = dict(norm_position="post", encoder_final_norm=False, decoder_final_norm=False)
        configs += [
            ("fairseq post-norm, offset 2, LN emb", tt.make_config(
                "tiny", 300, 350, position_offset=2, layernorm_embedding=True, **post)),
            ("HF Marian: swish, half, bias, start 1", tt.make_config(
                "tiny", 320, 320, activation="swish", share_embeddings=True,
                sinusoid_denominator="half", output_bias=True, decoder_start_id=1, **post)),
            ("Marian: eps 1e-6, untied, bias", tt.make_config(
                "tiny", 300, 350, layer_norm_eps=1e-6, tie_output=False, output_bias=True,
                decoder_start_id=1, **post)),
            ("pre-norm unscaled, LN emb, 1 final", tt.make_config(
                "tiny", 300, 350, scale_embeddings=False, layernorm_embedding=True,
                encoder_final_norm=False, activation="swish", positions="learned")),
            # norm "rms": every norm an RMSNorm (no bias tensors)
            ("rms pre-norm, emb norm, finals", tt.make_config(
                "tiny", 300, 350, norm="rms", layernorm_embedding=True, activation="swish")),
            ("rms Marian post (dar), eps 1e-6", tt.make_config(
                "tiny", 300, 350, norm="rms", layer_norm_eps=1e-6, tie_output=False,
                output_bias=True, decoder_start_id=1, **post)),
        ]
        for i, (label, cfg) in enumerate(configs):
            run_config(core, tmp, label, cfg, 100 + i)
        for i in (0, 3, 6, 9):
            run_int8(core, tmp, configs[i][0], configs[i][1], 200 + i)
            run_int8(core, tmp, configs[i][0], configs[i][1], 300 + i, bits=7)
            run_int8(core, tmp, configs[i][0], configs[i][1], 400 + i, embeddings="int8")
        run_int8(core, tmp, configs[3][0], configs[3][1], 500, bits=7, embeddings="int8")
        check_rejections(core, tmp)
        check_philox()
        check_c_writer(core)
    print("test_nn: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
