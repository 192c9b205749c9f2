"""The C translator (extension/nn/infer/translate.h) against references.

1. Against the PyTorch reference search (torch_search.RefTranslator, float64,
   written from fairseq's algorithm): a random model and a tiny model trained
   by the core's trainer; beam 1-5, lenpen 1 and 0.6, min_len 0 and 3, n-best
   = beam, no_repeat_ngram, unk_penalty, temperature; sampling with the same
   Philox draws (plain, topk, topp).  Identical hypotheses; scores and every
   token log-probability within TOL_SCORE.
2. Consistency with the teacher-forced C forward: logprob = sent_logprob of
   (source, hypothesis) bit for bit, score = logprob / (T + 1)^lenpen; greedy = the argmax
   loop over the forward; sampling with topk 1 = greedy.
3. Sampling frequencies against the model's probabilities (from the forward):
   a chi-square test over fixed sentence ids (deterministic: it cannot flake),
   which also must reject a wrong distribution (it can fail).
4. In a child process per OPENBLAS_CORETYPE: C = reference again (beam 1,
   beam 5 with lenpen 0.6, sampling with topk), and batch invariance: a
   sentence alone, in batches of 3 and 8, in both orders, gives the same
   bits (the model is packed for the row-independent kernel, nn/ops/rowgemm.h,
   as the extension's model cache packs it).
"""
import os
import random
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_search as ts  # noqa: E402
import torch_transformer as tt  # noqa: E402

# C (float32) vs the float64 reference, per token log-probability and per
# score: float32 rounding moves a log-probability of these models by ~1e-6
# (see TOL_OPENBLAS in test/unit/test_translate.c, measured 1e-6 .. 5e-6
# here); a hypothesis of <= 25 tokens sums <= 26 of them, 1.3e-4 in the
# worst case of equal signs, ~3e-5 for random signs.  The issue asks for 1e-4
# on scores, which bounds the sum as long as errors do not all align.
TOL_SCORE = 1e-4
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def tiny_cfg(vs=40, vt=44, **over):
    c = tt.make_config("tiny", vs, vt, d_model=32, heads=4, encoder_layers=2, decoder_layers=2,
                       ffn_dim=64, max_positions=32, dropout=0.0, attention_dropout=0.0,
                       activation_dropout=0.0)
    c.update(over)
    return c


def random_sources(rng, n, vs, lo=1, hi=9):
    return [[rng.randrange(4, vs) for _ in range(rng.randint(lo, hi))] for _ in range(n)]


def train_tiny(seed=7, updates=300):
    """A tiny model trained by the core on a toy task (target = source
    reversed, each id shifted by 1): peaked, structured distributions."""
    core = tt.TrainCore()
    cfg = tiny_cfg()
    rng = random.Random(seed)
    m = core.load(tt.write_corpq("/dev/null", cfg, tt.random_weights(cfg, seed)))
    st = core.state(m, core.config(dropout=False, label_smoothing=0.1, lr=3e-3,
                                   warmup_init_lr=1e-7, warmup_updates=30, clip_norm=1.0))
    for _ in range(updates):
        batch = []
        for s in random_sources(rng, 16, 40, 2, 8):
            batch.append((s, [t + 1 for t in reversed(s)]))
        stats = core.step(st, [batch])
    w = {k: torch.from_numpy(v.copy()) for k, v in core.weights(st).items()}
    core.lib.cq_train_state_free(st)
    core.free(m)
    print("  trained a tiny model: %d updates, last loss %.3f" % (updates, stats["loss"]))
    return cfg, w


class Model:
    """The same weights in the C core and in the float64 reference."""

    def __init__(self, core, label, cfg, w):
        self.label, self.cfg = label, cfg
        self.m = core.load(tt.write_corpq("/dev/null", cfg, w))
        self.ref = ts.RefTranslator(tt.Transformer(cfg, w))


CUT = [0, 0]        # cut and finished hypotheses over every model: both must occur


def same_hyps(a, b):
    return len(a) == len(b) and all(x["tokens"] == y["tokens"] for x, y in zip(a, b))


def compare(core, M, srcs, o, stats):
    ids = [1000 + i for i in range(len(srcs))]
    got = core.translate(M.m, srcs, ids, o, batch=3)
    ref = M.ref.translate(srcs, ids, o)
    for i, (g, r, src) in enumerate(zip(got, ref, srcs)):
        limit = ts.max_len(o, M.cfg, len(src))
        for h in g:
            # cut: the </s> came at the length limit, where the search forces it
            want = len(h["tokens"]) < limit or limit == 0
            if h["finished"] != want:
                check(False, "%s %s: sentence %d: finished %s for %d tokens, max_len %d" % (
                    M.label, describe(o), i, h["finished"], len(h["tokens"]), limit))
            stats["cut"] += not h["finished"]
        if not same_hyps(g, r):
            check(False, "%s %s: sentence %d: C %s != reference %s" % (
                M.label, describe(o), i, [h["tokens"] for h in g], [h["tokens"] for h in r]))
            continue
        for x, y in zip(g, r):
            stats["score"] = max(stats["score"], abs(x["score"] - y["score"]))
            stats["lp"] = max(stats["lp"], float(np.abs(np.array(x["lps"]) - y["lps"]).max()))
            stats["hyps"] += 1
    return got


def describe(o):
    keys = [k for k in ts.DEFAULTS if o[k] != ts.DEFAULTS[k]]
    return "{" + ", ".join("%s=%s" % (k, o[k]) for k in keys) + "}"


def check_against_reference(core, M, srcs):
    stats = dict(score=0.0, lp=0.0, hyps=0, cut=0)
    runs = 0
    for beam in range(1, 6):
        for lenpen in (1.0, 0.6):
            for min_len in (0, 3):
                compare(core, M, srcs, ts.options(beam=beam, nbest=beam, lenpen=lenpen,
                                                   min_len=min_len, max_len_b=20), stats)
                runs += 1
    extra = [ts.options(beam=3, nbest=3, no_repeat_ngram_size=2, max_len_b=20),
             ts.options(beam=4, nbest=2, unk_penalty=-2.0, max_len_a=1.2, max_len_b=2),
             ts.options(beam=2, nbest=2, temperature=0.7, lenpen=1.3, max_len_b=20),
             ts.options(search="sample", beam=1, seed=3, max_len_b=20),
             ts.options(search="sample", beam=3, nbest=3, seed=4, max_len_b=20),
             ts.options(search="sample", beam=2, nbest=2, topk=5, seed=5, temperature=1.5,
                        max_len_b=20),
             ts.options(search="sample", beam=2, nbest=1, topp=0.8, seed=6, max_len_b=20)]
    for o in extra:
        compare(core, M, srcs, o, stats)
        runs += 1
    check(stats["score"] <= TOL_SCORE and stats["lp"] <= TOL_SCORE,
          "%s: score err %.3g, token log-prob err %.3g" % (M.label, stats["score"], stats["lp"]))
    CUT[0] += stats["cut"]
    CUT[1] += stats["hyps"] - stats["cut"]
    print("  %-14s C = reference on %d runs, %d hypotheses (%d cut): max |dscore| %.2e, "
          "max |dlogprob| %.2e" % (M.label, runs, stats["hyps"], stats["cut"], stats["score"], stats["lp"]))


def check_consistency(core, M, srcs):
    worst = 0.0
    for beam, lenpen in ((1, 1.0), (4, 0.6)):
        o = ts.options(beam=beam, nbest=beam, lenpen=lenpen, min_len=0, max_len_b=20)
        got = core.translate(M.m, srcs, list(range(len(srcs))), o, batch=4)
        for s, hyps in zip(srcs, got):
            tf = core.score(M.m, [(s, h["tokens"]) for h in hyps])
            for h, f in zip(hyps, tf):
                worst = max(worst, abs(h["logprob"] - f["sent_logp"]))
                check(abs(h["score"] - h["logprob"] / (len(h["tokens"]) + 1) ** lenpen) <= 1e-12,
                      "%s: score is not logprob / (T + 1)^lenpen" % M.label)
    # bitwise: the model is packed, so the decoder and the teacher-forced forward
    # run the same row-independent products and attention over the same rows
    check(worst == 0.0, "%s: |logprob - sent_logprob| %.3g (not bit-equal)" % (M.label, worst))
    # greedy against the argmax loop over the teacher-forced forward
    o = ts.options(beam=1, min_len=0, max_len_b=20)
    greedy = core.translate(M.m, srcs, list(range(len(srcs))), o)
    for s, g in zip(srcs, greedy):
        y = []
        while len(y) < ts.max_len(o, M.cfg, len(s)):
            a = int(core.score(M.m, [(s, y)])[0]["argmax"][len(y)])
            check(a not in (ts.PAD, ts.BOS), "%s: the forward's argmax is <pad> or <s>" % M.label)
            if a == ts.EOS:
                break
            y.append(a)
        check(g[0]["tokens"] == y, "%s: greedy %s != argmax loop %s" % (M.label, g[0]["tokens"], y))
    topk1 = core.translate(M.m, srcs, list(range(len(srcs))),
                           ts.options(search="sample", beam=1, topk=1, seed=9, min_len=0,
                                      max_len_b=20))
    check(all(a[0]["tokens"] == b[0]["tokens"] and a[0]["score"] == b[0]["score"]
              for a, b in zip(topk1, greedy)), "%s: sampling topk 1 != greedy" % M.label)
    print("  %-14s |logprob - teacher-forced sent_logprob| <= %.2e; greedy = forward argmax"
          " loop; topk 1 = greedy" % (M.label, worst))


def chi2_critical(df, z=3.0902):
    """Wilson-Hilferty: the chi-square quantile at 1 - 1e-3 (z = 3.09)."""
    return df * (1 - 2 / (9 * df) + z * (2 / (9 * df)) ** 0.5) ** 3


def chi2(counts, p):
    """Pearson's statistic over bins of expected count >= 5 (the rest merged)."""
    n = counts.sum()
    e = n * p
    big = e >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(e[big], e[~big].sum())
    keep = exp > 0
    return float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum()), int(keep.sum()) - 1


def check_sampling_frequencies(core, M, src, other, label, **samp):
    """First tokens of N samples (ids 1..N) vs p(y_1 | src) from the forward,
    with the sampler's temperature / topk / topp applied."""
    V, N = M.cfg["tgt_vocab_size"], 4000
    o = ts.options(search="sample", beam=1, min_len=0, max_len_b=1, seed=17, **samp)
    out = core.translate(M.m, [src] * N, list(range(1, N + 1)), o, batch=64)
    counts = np.bincount([h[0]["tokens"][0] if h[0]["tokens"] else ts.EOS for h in out],
                         minlength=V).astype(float)

    def model_p(s):
        lp = np.array([r["logp"][0] for r in core.score(M.m, [(s, [v]) for v in range(V)])],
                      dtype=np.float64) / o["temperature"]
        lp[ts.PAD] = lp[ts.BOS] = -np.inf
        p = np.exp(lp - lp.max())
        order = np.lexsort((np.arange(V), -p))
        if o["topk"]:
            p[order[o["topk"]:]] = 0
        if o["topp"]:
            cs = np.cumsum(p[order]) / p.sum()
            p[order[min(int((cs < o["topp"]).sum()) + 1, V):]] = 0
        return p / p.sum()
    x2, df = chi2(counts, model_p(src))
    crit = chi2_critical(max(df, 1))
    check(x2 <= crit, "%s %s: chi-square %.1f > %.1f (df %d)" % (M.label, label, x2, crit, df))
    wrong, wdf = chi2(counts, model_p(other))
    check(wrong > chi2_critical(max(wdf, 1)),
          "%s %s: the test cannot tell another source's distribution (%.1f)" % (M.label, label, wrong))
    print("  %-14s sampling %-18s chi-square %6.1f <= %5.1f (df %2d, N %d); another source's"
          " distribution: %.0f" % (M.label, label, x2, crit, df, N, wrong))


# ---- batch invariance under OpenBLAS core types ------------------------------
def differing_sentences(core, m, srcs, verbose):
    """(cases, of which differing): a sentence's hypotheses alone vs in batches."""
    ids = list(range(len(srcs)))
    bad = cases = 0
    for o in (ts.options(beam=4, nbest=2, max_len_b=12), ts.options(beam=1, max_len_b=12),
              ts.options(search="sample", beam=2, nbest=2, topp=0.9, seed=1, max_len_b=12)):
        alone = [core.translate(m, [s], [i], o, batch=1)[0] for i, s in zip(ids, srcs)]
        for batch in (3, 8):
            for order in (1, -1):
                got = core.translate(m, srcs[::order], ids[::order], o, batch=batch)[::order]
                for i, (a, g) in enumerate(zip(alone, got)):
                    cases += 1
                    if a != g:
                        bad += 1
                        if verbose:
                            print("    sentence %d differs in a batch of %d (order %d), %s"
                                  % (i, batch, order, describe(o)))
    return cases, bad


def invariance_child():
    """One OpenBLAS core type: the C translator against the reference, and
    its batch invariance.  Returns the number of failures."""
    core = ts.CoreTranslate()
    cfg = tiny_cfg(40, 44, d_model=64, heads=4, ffn_dim=128)
    w = tt.random_weights(cfg, 3)
    m = core.load(tt.write_corpq("/dev/null", cfg, w))
    srcs = [[]] + random_sources(random.Random(4), 9, 40)
    M = Model(core, "random d64", cfg, w)
    stats = dict(score=0.0, lp=0.0, hyps=0, cut=0)
    for o in (ts.options(beam=1, min_len=0, max_len_b=20),
              ts.options(beam=5, nbest=5, lenpen=0.6, max_len_b=20),
              ts.options(search="sample", beam=2, nbest=2, topk=6, seed=2, max_len_b=20)):
        compare(core, M, srcs, o, stats)
    check(stats["score"] <= TOL_SCORE and stats["lp"] <= TOL_SCORE,
          "score err %.3g, token log-prob err %.3g" % (stats["score"], stats["lp"]))
    print("    C = reference on %d hypotheses: max |dscore| %.2e, max |dlogprob| %.2e"
          % (stats["hyps"], stats["score"], stats["lp"]))
    return len(failures) + invariance(core, m, srcs)


def invariance(core, m, srcs):
    """Models loaded for inference are packed (Core.load, like the extension's
    model cache), so every product runs the row-independent kernel
    (nn/ops/rowgemm.h) whatever the OpenBLAS core: a sentence must decode to the
    same bits alone and in any batch, in any order."""
    n, bad = differing_sentences(core, m, srcs, True)
    print("    %d of %d (sentence, batching) cases differ" % (bad, n))
    return bad


def check_invariance_per_core():
    """A child per core type; test/blas_core (the extension's rule, common/cpu.c)
    says which the CPU can run."""
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blas_core")
    if not os.path.exists(exe):
        subprocess.check_call(["make", "-s", "-C", os.path.join(os.path.dirname(exe), ".."),
                               "test/blas_core"])
    for core_type in ["default", "Prescott", "Sandybridge", "Haswell", "SkylakeX", "Zen"]:
        env = dict(os.environ)
        probe = subprocess.run([exe] + ([] if core_type == "default" else [core_type]),
                               capture_output=True, text=True, env=env)
        if probe.returncode:
            print("  %-11s skipped: %s" % (core_type, probe.stderr.strip()))
            continue
        if probe.stdout.strip():
            env["OPENBLAS_CORETYPE"] = probe.stdout.strip()
        print("  %-11s C = reference; batch invariance (alone vs batches of 3 and 8, both orders):"
              % core_type)
        sys.stdout.flush()
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--invariance"], env=env)
        check(r.returncode == 0, "the checks fail under %s" % core_type)


def main():
    if "--invariance" in sys.argv:
        sys.exit(1 if invariance_child() else 0)
    torch.set_num_threads(1)
    core = ts.CoreTranslate()
    rng = random.Random(11)
    rcfg = tiny_cfg()
    models = [Model(core, "random", rcfg, tt.random_weights(rcfg, 21))]
    models.append(Model(core, "trained", *train_tiny()))
    srcs = [[]] + random_sources(rng, 9, 40)
    for M in models:
        check_against_reference(core, M, srcs)
        check_consistency(core, M, srcs)
    check(CUT[0] > 0 and CUT[1] > 0, "finished flags: %d cut and %d finished hypotheses, each "
          "as the length limit says" % tuple(CUT))
    # the other architecture switches: GELU, learned positions, untied output, shared embeddings
    gcfg = tiny_cfg(44, 44, activation="gelu", positions="learned", tie_output=False,
                    share_embeddings=True)
    G = Model(core, "gelu/learned", gcfg, tt.random_weights(gcfg, 22))
    stats = dict(score=0.0, lp=0.0, hyps=0, cut=0)
    for o in (ts.options(beam=1, min_len=0, max_len_b=20), ts.options(beam=4, nbest=4),
              ts.options(search="sample", beam=2, nbest=2, seed=8, max_len_b=20)):
        compare(core, G, srcs, o, stats)
    check(stats["score"] <= TOL_SCORE and stats["lp"] <= TOL_SCORE,
          "%s: score err %.3g, token log-prob err %.3g" % (G.label, stats["score"], stats["lp"]))
    print("  %-14s C = reference on %d hypotheses: max |dscore| %.2e, max |dlogprob| %.2e"
          % (G.label, stats["hyps"], stats["score"], stats["lp"]))
    # architecture variants (models/FORMAT.md) of converted models: the
    # incremental decoder (post-norm caches keys/values of un-normalised
    # inputs) against the reference and against its own teacher-forced forward
    post = dict(norm_position="post", encoder_final_norm=False, decoder_final_norm=False)
    for label, vcfg in (
            ("fairseq post", tiny_cfg(position_offset=2, layernorm_embedding=True, **post)),
            ("HF Marian", tiny_cfg(44, 44, activation="swish", share_embeddings=True,
                                   sinusoid_denominator="half", output_bias=True,
                                   decoder_start_id=1, **post)),
            ("Marian eps", tiny_cfg(layer_norm_eps=1e-6, tie_output=False, output_bias=True,
                                    decoder_start_id=1, **post)),
            ("rms pre, emb", tiny_cfg(norm="rms", layernorm_embedding=True))):
        vw = tt.random_weights(vcfg, 23)
        if vcfg.get("output_bias"):
            # as corpq-convert writes them: <s>, which Marian lacks, takes no probability
            vw["decoder.output_projection.bias"][tt.BOS] = -1e4
        V = Model(core, label, vcfg, vw)
        stats = dict(score=0.0, lp=0.0, hyps=0, cut=0)
        for o in (ts.options(beam=1, min_len=0, max_len_b=20), ts.options(beam=4, nbest=4),
                  ts.options(search="sample", beam=2, nbest=2, seed=8, max_len_b=20)):
            compare(core, V, srcs, o, stats)
        check(stats["score"] <= TOL_SCORE and stats["lp"] <= TOL_SCORE,
              "%s: score err %.3g, token log-prob err %.3g" % (label, stats["score"], stats["lp"]))
        print("  %-14s C = reference on %d hypotheses: max |dscore| %.2e, max |dlogprob| %.2e"
              % (label, stats["hyps"], stats["score"], stats["lp"]))
        check_consistency(core, V, srcs)
    check_sampling_frequencies(core, models[0], srcs[3], srcs[4], "plain")
    check_sampling_frequencies(core, models[0], srcs[3], srcs[4], "T 0.8, topk 8",
                               temperature=0.8, topk=8)
    check_sampling_frequencies(core, models[1], srcs[5], srcs[6], "T 2, topp 0.9",
                               temperature=2.0, topp=0.9)
    check_invariance_per_core()
    print("test_translate: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
