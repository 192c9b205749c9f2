"""tools/corpq-convert against independent references of each toolkit.

For each layout a synthetic model is written in the toolkit's exact on-disk
layout with random weights (a fairseq checkpoint dict with an
argparse.Namespace or a cfg dict, pre- and post-norm, sinusoidal and learned
positions; a Marian .npz with special:model.yml, post-norm swish, tied-all
embeddings and an output bias, one untied, and one with RMSNorm (marian-dev's
postprocess dar, on the embeddings too); a Hugging Face Marian
directory).  The converter turns it into a corpq directory, the image is
read back with the corpq reader (torch_transformer.read_corpq) and run by
the corpq architecture reference (torch_transformer.Transformer), and the
token log-probabilities over the whole vocabulary are compared with the
toolkit's reference (ref_fairseq.py, ref_marian.py, ref_hf_marian.py,
written from the toolkits' own definitions) through the vocabulary
documents' tokens: equal to 1e-5 relative.  Greedy outputs must be
identical (torch_search.RefTranslator with beam 1 against the reference's
own argmax loop), and the hypotheses of a beam of 4 must carry the
toolkit's teacher-forced log-probabilities.  Then the bad inputs: each
must fail with its message, its exit status, and leave nothing behind.
"""
import argparse
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_transformer as tt  # noqa: E402
import torch_search as ts  # noqa: E402
from ref_fairseq import FairseqRef  # noqa: E402
from ref_marian import MarianRef  # noqa: E402
from ref_hf_marian import HFMarianRef, hf_positions  # noqa: E402

SCRIPT = os.environ.get("CORPQ_CONVERT", os.path.join(HERE, "..", "..", "tools", "corpq-convert"))
_loader = importlib.machinery.SourceFileLoader("corpq_convert", SCRIPT)
_spec = importlib.util.spec_from_loader("corpq_convert", _loader)
cc = importlib.util.module_from_spec(_spec)
_loader.exec_module(cc)

TOL = 1e-5          # relative, per log-probability (|a - b| <= TOL max(1, |b|))
failures = []
torch.set_num_threads(1)


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(argv):
    """(exit status, stderr) of corpq-convert in this process."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cc.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, err.getvalue()


def rnd(g, *shape, scale=None):
    scale = scale if scale is not None else 1.0 / math.sqrt(shape[-1])
    return (torch.randn(*shape, generator=g) * scale).float()


def ln_pair(g, d):
    return (1.0 + 0.2 * torch.randn(d, generator=g)).float(), (0.1 * torch.randn(d, generator=g)).float()


def spm_bytes(pieces):
    """A minimal serialized sentencepiece ModelProto: pieces (field 1, each a
    SentencePiece with piece and score), trainer_spec, normalizer_spec."""
    def varint(n):
        out = b""
        while True:
            b = n & 0x7F
            n >>= 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out

    def ld(tag, payload):
        return bytes([tag]) + varint(len(payload)) + payload
    body = b""
    for i, p in enumerate(pieces):
        pb = p.encode()
        body += ld(0x0A, ld(0x0A, pb) + b"\x15" + np.float32(-i).tobytes())
    body += ld(0x12, b"\x08\x01")            # trainer_spec { model_type: UNIGRAM }
    body += ld(0x1A, ld(0x0A, b"nmt_nfkc"))  # normalizer_spec { name }
    return body


def read_out(out):
    with open(os.path.join(out, "model.corpq"), "rb") as f:
        cfg, w = tt.read_corpq(f.read())
    docs = []
    for name in ("src_vocab.json", "tgt_vocab.json"):
        with open(os.path.join(out, name), encoding="utf-8") as f:
            docs.append(json.load(f))
    check(set(w) == set(tt.tensor_shapes(cfg)),
          "tensor set = the reference's tensor list for the configuration")
    for k, shape in tt.tensor_shapes(cfg).items():
        check(tuple(w[k].shape) == tuple(shape), "shape of %s" % k)
    model = tt.Transformer(cfg, {k: torch.from_numpy(np.array(v)) for k, v in w.items()})
    return cfg, w, docs, model


def compare(name, ref, ref_src_tokens, ref_tgt_tokens, out, rng, n_pairs=6, max_len=12,
            ref_pad=None):
    """Log-probabilities, greedy and beam of the converted model against ref."""
    cfg, w, (sdoc, tdoc), model = read_out(out)
    check(sdoc["tokens"][:4] == cc.SPECIALS and tdoc["tokens"][:4] == cc.SPECIALS,
          name + ": vocabularies start with the reserved tokens")
    s_map = {t: i for i, t in enumerate(sdoc["tokens"])}
    t_map = {t: i for i, t in enumerate(tdoc["tokens"])}
    s_of = [s_map[t] for t in ref_src_tokens]        # toolkit id -> corpq id
    t_of = [t_map[t] for t in ref_tgt_tokens]
    check(len(set(t_of)) == len(t_of), name + ": target permutation is one-to-one")
    normal_s = [i for i, t in enumerate(ref_src_tokens) if t not in cc.SPECIALS]
    normal_t = [i for i, t in enumerate(ref_tgt_tokens) if t not in cc.SPECIALS]
    pairs = []
    for i in range(n_pairs):
        ls = max_len if i == 0 else rng.randint(1, max_len)
        lt = 0 if i == 1 else rng.randint(1, max_len)
        pairs.append(([rng.choice(normal_s) for _ in range(ls)],
                      [rng.choice(normal_t) for _ in range(lt)]))
    ref_lp = ref.log_probs(pairs)
    cq_lp = model.log_probs([([s_of[x] for x in s], [t_of[x] for x in t]) for s, t in pairs])
    worst, added = 0.0, -math.inf
    absent = [j for j in range(len(tdoc["tokens"])) if j not in set(t_of)]
    for a, b in zip(cq_lp, ref_lp):
        a_tk = a[:, t_of]
        worst = max(worst, float(((a_tk - b).abs() / b.abs().clamp(min=1.0)).max()))
        if absent:
            added = max(added, float(a[:, absent].max()))
    check(worst <= TOL, "%s: log-probabilities over the vocabulary, max rel diff %.2e" % (name, worst))
    # the functional training reference (ref_loss) follows the same keys
    cq_pairs = [([s_of[x] for x in s], [t_of[x] for x in t]) for s, t in pairs]
    P = {k: torch.from_numpy(np.array(v)).double() for k, v in w.items()}
    loss, ntok = tt.ref_loss(cfg, P, cq_pairs, 0.0)
    nll = -sum(float(lp[torch.arange(len(t) + 1), torch.tensor(list(t) + [tt.EOS])].sum())
               for (_, t), lp in zip(cq_pairs, cq_lp))
    check(abs(float(loss) - nll) <= 1e-9 * abs(nll) and ntok == sum(len(t) + 1 for _, t in pairs),
          "%s: ref_loss = the reference's summed NLL (%.12g vs %.12g)" % (name, float(loss), nll))
    if absent:
        check(added < -1000, "%s: reserved tokens the toolkit lacks take no probability (%g)"
              % (name, added))
    # greedy: the corpq search (beam 1) against the reference's argmax loop
    tr = ts.RefTranslator(model)
    o = ts.options(beam=1, nbest=1, min_len=0, max_len_a=0.0, max_len_b=max_len)
    srcs = [s for s, _ in pairs[:4]]
    hyps = tr.translate([[s_of[x] for x in s] for s in srcs], list(range(len(srcs))), o)
    inv = {c: i for i, c in enumerate(t_of)}
    same = 0
    for s, h in zip(srcs, hyps):
        mine = [inv.get(x, -1) for x in h[0]["tokens"]]
        same += mine == ref.greedy(s, max_len)
    check(same == len(srcs), "%s: greedy outputs identical (%d of %d)" % (name, same, len(srcs)))
    # beam 4: every hypothesis carries the toolkit's own teacher-forced log-probs
    o = ts.options(beam=4, nbest=4, min_len=0, max_len_a=0.0, max_len_b=max_len)
    hyps = tr.translate([[s_of[x] for x in s] for s in srcs], list(range(len(srcs))), o)
    bw, nh = 0.0, 0
    for s, hs in zip(srcs, hyps):
        for h in hs:
            toks = [inv[x] for x in h["tokens"]]
            lp = ref.log_probs([(s, toks)])[0]
            gold = toks + [ref_eos(ref)]
            r = lp[torch.arange(len(gold)), torch.tensor(gold)]
            bw = max(bw, float(((torch.tensor(h["lps"]) - r).abs() / r.abs().clamp(min=1.0)).max()))
            nh += 1
    check(bw <= TOL, "%s: beam hypotheses' log-probs = the toolkit's, max rel diff %.2e" % (name, bw))
    cw, csame = c_core_run(out, ref, pairs, cq_pairs, srcs, s_of, inv, max_len)
    check(cw <= C_TOL, "%s: the C core's log p(gold) = the toolkit's, max abs diff %.2e" % (name, cw))
    check(csame == len(srcs), "%s: the C core's greedy = the toolkit's (%d of %d)"
          % (name, csame, len(srcs)))
    print("  %-28s lp max rel %.1e, greedy %d/%d identical, beam %d hyps max rel %.1e; "
          "C core: lp max abs %.1e, greedy %d/%d"
          % (name, worst, same, len(srcs), nh, bw, cw, csame, len(srcs)))
    return cfg


# The C core (float32) against the toolkit's reference: per-position
# log-probabilities within test_nn.py's bound for float32 against float64.
C_TOL = 1e-4
_CORE = []


def c_core_run(out, ref, pairs, cq_pairs, srcs, s_of, inv, max_len):
    """Loads the converted image in the C core (as model_import would), scores
    the pairs and decodes greedily; returns (max |log p| diff, greedy same)."""
    if not _CORE:
        _CORE.append(ts.CoreTranslate())
    core = _CORE[0]
    with open(os.path.join(out, "model.corpq"), "rb") as f:
        m = core.load(f.read())
    try:
        got = core.score(m, cq_pairs)
        ref_lp = ref.log_probs(pairs)
        worst = 0.0
        for (_, t), g, b in zip(pairs, got, ref_lp):
            gold = list(t) + [ref_eos(ref)]
            r = b[torch.arange(len(gold)), torch.tensor(gold)].double().numpy()
            worst = max(worst, float(np.abs(np.asarray(g["logp"], dtype=np.float64) - r).max()))
        o = ts.options(beam=1, nbest=1, min_len=0, max_len_a=0.0, max_len_b=max_len)
        hyps = core.translate(m, [[s_of[x] for x in s] for s in srcs], list(range(len(srcs))), o)
        same = sum([inv.get(x, -1) for x in h[0]["tokens"]] == ref.greedy(s, max_len)
                   for s, h in zip(srcs, hyps))
    finally:
        core.free(m)
    return worst, same


def ref_eos(ref):
    return getattr(ref, "eos", 2)


# ---- fairseq -------------------------------------------------------------------
def fairseq_model(tmp, tag, g, pre, learned, share_all, tie, lnemb, act, cfg_dict=False,
                  no_dec_final=False, d=40, heads=8, ffn=64, layers=2, Vs=60, Vt=52, M=64):
    if share_all:
        Vt = Vs
    args = argparse.Namespace(
        arch="transformer", encoder_embed_dim=d, decoder_embed_dim=d, encoder_ffn_embed_dim=ffn,
        decoder_ffn_embed_dim=ffn, encoder_layers=layers, decoder_layers=layers,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_normalize_before=pre, decoder_normalize_before=pre,
        encoder_learned_pos=learned, decoder_learned_pos=learned, activation_fn=act,
        dropout=0.3, attention_dropout=0.1, activation_dropout=0.0, relu_dropout=0.05,
        share_all_embeddings=share_all, share_decoder_input_output_embed=tie,
        no_scale_embedding=False, layernorm_embedding=lnemb, adaptive_softmax_cutoff=None,
        adaptive_input=False, cross_self_attention=False, no_token_positional_embeddings=False,
        no_decoder_final_norm=no_dec_final, decoder_output_dim=d, decoder_input_dim=d,
        max_source_positions=M, max_target_positions=M, tie_adaptive_weights=False)
    sd = {}
    E = rnd(g, Vs, d, scale=d ** -0.5)
    E[1] = 0
    sd["encoder.embed_tokens.weight"] = E
    Dt = E if share_all else rnd(g, Vt, d, scale=d ** -0.5)
    sd["decoder.embed_tokens.weight"] = Dt
    for side in ("encoder", "decoder"):
        if learned:
            sd[side + ".embed_positions.weight"] = rnd(g, M + 2, d, scale=0.5)
        else:
            sd[side + ".embed_positions._float_tensor"] = torch.FloatTensor(1)
        if lnemb:
            sd[side + ".layernorm_embedding.weight"], sd[side + ".layernorm_embedding.bias"] = ln_pair(g, d)
        for i in range(layers):
            p = "%s.layers.%d." % (side, i)
            atts = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
            for a in atts:
                for x in ("q", "k", "v", "out"):
                    sd[p + a + ".%s_proj.weight" % x] = rnd(g, d, d)
                    sd[p + a + ".%s_proj.bias" % x] = rnd(g, d, scale=0.1)
                sd[p + a + "_layer_norm.weight"], sd[p + a + "_layer_norm.bias"] = ln_pair(g, d)
            sd[p + "fc1.weight"], sd[p + "fc1.bias"] = rnd(g, ffn, d), rnd(g, ffn, scale=0.1)
            sd[p + "fc2.weight"], sd[p + "fc2.bias"] = rnd(g, d, ffn), rnd(g, d, scale=0.1)
            sd[p + "final_layer_norm.weight"], sd[p + "final_layer_norm.bias"] = ln_pair(g, d)
        if pre:
            sd[side + ".layer_norm.weight"], sd[side + ".layer_norm.bias"] = ln_pair(g, d)
        sd[side + ".version"] = torch.Tensor([3])
    if no_dec_final:
        del sd["decoder.layer_norm.weight"], sd["decoder.layer_norm.bias"]
    sd["decoder.output_projection.weight"] = Dt if tie else rnd(g, Vt, d, scale=d ** -0.5)
    state = {"model": sd, "extra_state": {"epoch": 3, "val_loss": np.float64(4.5)},
             "optimizer_history": [{"criterion_name": "LabelSmoothedCrossEntropyCriterion",
                                    "num_updates": 100}]}
    if cfg_dict:      # fairseq >= 0.10: cfg dict, model options nested per side
        m = {k: v for k, v in vars(args).items() if not k.startswith(("encoder_", "decoder_"))}
        m["_name"] = m.pop("arch")
        for side in ("encoder", "decoder"):
            m[side] = {k[len(side) + 1:]: v for k, v in vars(args).items() if k.startswith(side + "_")}
        m["decoder_output_dim"], m["decoder_input_dim"] = d, d
        state["cfg"] = {"model": m, "common": {"seed": 1}}
        state["args"] = None
    else:
        state["args"] = args
    ck = os.path.join(tmp, tag + ".pt")
    torch.save(state, ck)

    def dict_file(name, V, pad8):
        n = V - 4
        words = ["w%d" % i for i in range(n)]
        if pad8:           # as fairseq-preprocess writes it: madeupwords included
            words = words[:-3] + ["madeupword%04d" % i for i in range(3)]
        path = os.path.join(tmp, "%s.%s.txt" % (tag, name))
        with open(path, "w", encoding="utf-8") as f:
            for i, wd in enumerate(words):
                f.write("%s %d\n" % (wd, 1000 - i))
        return path, cc.SPECIALS + words
    sp, stoks = dict_file("src", Vs, False)
    tp, ttoks = (sp, stoks) if share_all else dict_file("tgt", Vt, True)
    return ck, sp, tp, stoks, ttoks, args, sd


def test_fairseq(tmp, rng):
    print("fairseq:")
    g = torch.Generator().manual_seed(11)
    cases = [("fairseq pre sinusoidal", dict(pre=True, learned=False, share_all=False, tie=False,
                                               lnemb=True, act="gelu")),
             ("fairseq post learned", dict(pre=False, learned=True, share_all=True, tie=True,
                                            lnemb=False, act="relu")),
             ("fairseq cfg pre no-final", dict(pre=True, learned=False, share_all=False, tie=True,
                                                lnemb=False, act="relu", cfg_dict=True,
                                                no_dec_final=True))]
    for name, kw in cases:
        tag = name.replace(" ", "_")
        ck, sp, tp, stoks, ttoks, args, sd = fairseq_model(tmp, tag, g, **kw)
        out = os.path.join(tmp, tag + ".out")
        rc, err = run(["fairseq", "--checkpoint", ck, "--src-dict", sp, "--tgt-dict", tp,
                       "--output", out])
        check(rc == 0, "%s converts (%s)" % (name, err.strip()))
        if rc:
            continue
        ref = FairseqRef(sd, args)
        cfg = compare(name, ref, stoks, ttoks, out, rng)
        check(cfg["norm_position"] == ("pre" if kw["pre"] else "post"), name + ": norm_position")
        check(cfg["position_offset"] == (0 if kw["learned"] else 2), name + ": position_offset")
        check(cfg["decoder_final_norm"] == (kw["pre"] and not kw.get("no_dec_final", False)),
              name + ": decoder_final_norm")
        check(cfg["activation_dropout"] == 0.05, name + ": relu_dropout taken for activation_dropout")
        with open(os.path.join(out, "tgt_vocab.json"), encoding="utf-8") as f:
            doc = json.load(f)
        check(doc["counts"][4] == 1000 and doc["bpe"] is None and "spm" not in doc,
              name + ": vocabulary document counts and segmenter")
        if name == "fairseq pre sinusoidal":
            legacy_fairseq(tmp, ck, sp, tp, args, sd, out)
    return cases


def legacy_fairseq(tmp, ck, sp, tp, args, sd, out):
    """Older fairseq layouts give the same image: in_proj_weight/bias (before
    0.7), layer_norms.N, embed_out, in torch's legacy (pre-1.6) format."""
    old = {}
    for k, v in sd.items():
        for att in ("self_attn", "encoder_attn"):
            if ".%s.q_proj." % att in k:
                base, kind = k.split(".%s.q_proj." % att)
                pre = base + "." + att
                qkv = [sd["%s.%s_proj.%s" % (pre, x, kind)] for x in "qkv"]
                old["%s.in_proj_%s" % (pre, kind)] = torch.cat(qkv)
        if any(".%s_proj." % x in k for x in "qkv"):
            continue
        for j, nm in enumerate(["self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"]):
            if k.startswith("decoder.layers.") and "." + nm + "." in k:
                k = k.replace(nm, "layer_norms.%d" % j)
        if k.startswith("encoder.layers.") and ".self_attn_layer_norm." in k:
            k = k.replace("self_attn_layer_norm", "layer_norms.0")
        if k.startswith("encoder.layers.") and ".final_layer_norm." in k:
            k = k.replace("final_layer_norm", "layer_norms.1")
        if k == "decoder.output_projection.weight":
            k = "decoder.embed_out"
        old[k] = v
    p = os.path.join(tmp, "legacy.pt")
    torch.save({"model": old, "args": args}, p, _use_new_zipfile_serialization=False)
    out2 = os.path.join(tmp, "legacy.out")
    rc, err = run(["fairseq", "--checkpoint", p, "--src-dict", sp, "--tgt-dict", tp, "--output", out2])
    same = rc == 0 and open(os.path.join(out, "model.corpq"), "rb").read() == \
        open(os.path.join(out2, "model.corpq"), "rb").read()
    check(same, "legacy fairseq names and torch format give the same image (%s)" % err.strip())
    print("  legacy names (in_proj, layer_norms.N, embed_out), legacy torch format: same image")


# ---- Marian -----------------------------------------------------------------------
def marian_yml(**over):
    y = {"type": "transformer", "dim-emb": 40, "enc-depth": 2, "dec-depth": 2,
         "transformer-heads": 8, "transformer-dim-ffn": 64, "transformer-ffn-depth": 2,
         "transformer-ffn-activation": "swish", "transformer-preprocess": "",
         "transformer-postprocess": "dan", "transformer-postprocess-emb": "d",
         "transformer-postprocess-top": "", "transformer-decoder-autoreg": "self-attention",
         "transformer-tied-layers": [], "transformer-no-projection": False,
         "tied-embeddings": True, "tied-embeddings-all": True, "tied-embeddings-src": False,
         "transformer-dropout": 0.1, "transformer-dropout-attention": 0.0,
         "transformer-dropout-ffn": 0.0, "dim-vocabs": [56, 56],
         "version": "v1.10.0 6f6d4846 2021-02-06 15:35:16 -0800"}
    y.update(over)
    return y


MARIAN_WORDS = ["yes", "no", "null", "~", "1.5", "0x10", "'q", "#h", "a: b", "[x", "\u2581the",
                "\u2581d\u00e9j\u00e0", "\"", "-", "on", "Off"]


def marian_vocab(n):
    words = ["</s>", "<unk>"] + MARIAN_WORDS
    words += ["\u2581p%d" % i for i in range(n - len(words))]
    return words[:n]


def marian_model(tmp, tag, g, y, V, Vt=None, untied=False):
    d, ffn = y["dim-emb"], y["transformer-dim-ffn"]
    a = {}
    Vt = Vt or V
    rms = y["transformer-postprocess"] == "dar"     # rmsNorm: a scale, no bias

    def W(name, i, o):
        a[name] = rnd(g, i, o, scale=i ** -0.5).numpy()

    def b(name, n, scale=0.1, base=0.0):
        a[name] = (base + scale * torch.randn(1, n, generator=g)).float().numpy()

    def norm(prefix, suffix=""):
        if rms:
            b(prefix + "_rms_scale" + suffix, d, 0.2, 1.0)
        else:
            b(prefix + "_ln_scale" + suffix, d, 0.2, 1.0)
            b(prefix + "_ln_bias" + suffix, d)
    if untied:
        a["encoder_Wemb"] = rnd(g, V, d, scale=d ** -0.5).numpy()
        a["decoder_Wemb"] = rnd(g, Vt, d, scale=d ** -0.5).numpy()
        a["decoder_ff_logit_out_Wt"] = rnd(g, Vt, d, scale=d ** -0.5).numpy()
    else:
        a["Wemb"] = rnd(g, V, d, scale=d ** -0.5).numpy()
    b("decoder_ff_logit_out_b", Vt, 0.5)
    for side, n in (("encoder", y["enc-depth"]), ("decoder", y["dec-depth"])):
        for i in range(1, n + 1):
            for att in ["self"] + (["context"] if side == "decoder" else []):
                p = "%s_l%d_%s" % (side, i, att)
                for x in "qkvo":
                    W(p + "_W" + x, d, d)
                    b(p + "_b" + x, d)
                norm(p + "_Wo")
            p = "%s_l%d_ffn" % (side, i)
            W(p + "_W1", d, ffn)
            b(p + "_b1", ffn)
            W(p + "_W2", ffn, d)
            b(p + "_b2", d)
            norm(p + "_ffn")
        if set(y["transformer-postprocess-emb"]) & {"n", "r"}:
            norm(side + "_emb", "_pre")
    a["special:model.yml"] = np.frombuffer(yaml.safe_dump(y).encode() + b"\0", dtype=np.int8)
    path = os.path.join(tmp, tag + ".npz")
    np.savez(path, **a)
    return path, a


def write_vocab_yml(path, words):
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({w: i for i, w in enumerate(words)}, f, allow_unicode=True, sort_keys=False)


def test_marian(tmp, rng):
    print("Marian:")
    g = torch.Generator().manual_seed(12)
    V = 56
    words = marian_vocab(V)
    voc = os.path.join(tmp, "opus.spm.vocab.yml")
    write_vocab_yml(voc, words)
    spm_s, spm_t = os.path.join(tmp, "source.spm"), os.path.join(tmp, "target.spm")
    with open(spm_s, "wb") as f:
        f.write(spm_bytes(["<unk>", "<s>", "</s>"] + words[2:40]))
    with open(spm_t, "wb") as f:
        f.write(spm_bytes(["<unk>", "<s>", "</s>"] + words[2:30]))
    y = marian_yml()
    npz, arrays = marian_model(tmp, "marian_tied", g, y, V)
    out = os.path.join(tmp, "marian_tied.out")
    rc, err = run(["marian", "--model", npz, "--vocab", voc, "--src-spm", spm_s, "--tgt-spm", spm_t,
                   "--output", out])
    check(rc == 0, "Marian tied-all converts (%s)" % err.strip())
    if rc == 0:
        cfg = compare("marian post swish tied-all", MarianRef(arrays, y), words, words, out, rng)
        check(cfg["decoder_start_id"] == 1 and cfg["layer_norm_eps"] == 1e-6
              and cfg["activation"] == "swish" and cfg["output_bias"] and cfg["share_embeddings"],
              "Marian configuration keys")
        with open(os.path.join(out, "src_vocab.json"), encoding="utf-8") as f:
            sdoc = json.load(f)
        check(sdoc.get("spm") == "source.spm" and os.path.exists(os.path.join(out, "target.spm")),
              "Marian: SentencePiece models copied and named in the documents")
        check(set(sdoc["tokens"]) == set(words) | {"<s>", "<pad>"},
              "Marian: YAML-trap tokens (yes, null, 1.5, ~ ...) kept as strings")
    # untied, separate vocabularies, relu, no output bias
    Vt = 50
    words_t = marian_vocab(Vt)[:2] + ["t%d" % i for i in range(Vt - 2)]
    voc_t = os.path.join(tmp, "tgt.vocab.yml")
    write_vocab_yml(voc_t, words_t)
    y2 = marian_yml(**{"tied-embeddings": False, "tied-embeddings-all": False,
                       "transformer-ffn-activation": "relu", "dim-vocabs": [V, Vt]})
    npz2, arrays2 = marian_model(tmp, "marian_untied", g, y2, V, Vt, untied=True)
    out2 = os.path.join(tmp, "marian_untied.out")
    rc, err = run(["marian", "--model", npz2, "--vocab", voc, "--tgt-vocab", voc_t, "--output", out2])
    check(rc == 0, "Marian untied converts (%s)" % err.strip())
    if rc == 0:
        compare("marian post relu untied", MarianRef(arrays2, y2), words, words_t, out2, rng)
    # RMSNorm (marian-dev 1.11 and later: postprocess dar), on the embeddings too
    y3 = marian_yml(**{"transformer-postprocess": "dar", "transformer-postprocess-emb": "dr"})
    npz3, arrays3 = marian_model(tmp, "marian_rms", g, y3, V)
    out3 = os.path.join(tmp, "marian_rms.out")
    rc, err = run(["marian", "--model", npz3, "--vocab", voc, "--output", out3])
    check(rc == 0, "Marian RMSNorm converts (%s)" % err.strip())
    if rc == 0:
        cfg = compare("marian post RMSNorm, emb", MarianRef(arrays3, y3), words, words, out3, rng)
        check(cfg["norm"] == "rms" and cfg["layernorm_embedding"] and cfg["layer_norm_eps"] == 1e-6,
              "Marian RMSNorm configuration keys")
    return npz, arrays, voc, y, spm_s


# ---- Hugging Face Marian ----------------------------------------------------------
def hf_model(tmp, tag, g, V=58, d=40, heads=8, ffn=64, layers=2, M=128, store_pos=True, **over):
    c = {"model_type": "marian", "architectures": ["MarianMTModel"], "d_model": d,
         "encoder_layers": layers, "decoder_layers": layers, "encoder_attention_heads": heads,
         "decoder_attention_heads": heads, "encoder_ffn_dim": ffn, "decoder_ffn_dim": ffn,
         "activation_function": "swish", "scale_embedding": True, "vocab_size": V,
         "decoder_vocab_size": V, "pad_token_id": V - 1, "decoder_start_token_id": V - 1,
         "eos_token_id": 0, "max_position_embeddings": M, "dropout": 0.1, "attention_dropout": 0.0,
         "activation_dropout": 0.0, "share_encoder_decoder_embeddings": True,
         "normalize_before": False, "normalize_embedding": False, "static_position_embeddings": True,
         "add_final_layer_norm": False, "bad_words_ids": [[V - 1]]}
    c.update(over)
    sd = {}
    shared = rnd(g, V, d, scale=d ** -0.5)
    sd["model.shared.weight"] = shared
    sd["model.encoder.embed_tokens.weight"] = shared
    sd["model.decoder.embed_tokens.weight"] = shared
    if store_pos:
        P = hf_positions(M, d)
        sd["model.encoder.embed_positions.weight"] = P
        sd["model.decoder.embed_positions.weight"] = P.clone()
    for side in ("encoder", "decoder"):
        for i in range(layers):
            p = "model.%s.layers.%d." % (side, i)
            for att in ["self_attn"] + (["encoder_attn"] if side == "decoder" else []):
                for x in ("k", "v", "q", "out"):
                    sd[p + att + ".%s_proj.weight" % x] = rnd(g, d, d)
                    sd[p + att + ".%s_proj.bias" % x] = rnd(g, d, scale=0.1)
                sd[p + att + "_layer_norm.weight"], sd[p + att + "_layer_norm.bias"] = ln_pair(g, d)
            sd[p + "fc1.weight"], sd[p + "fc1.bias"] = rnd(g, ffn, d), rnd(g, ffn, scale=0.1)
            sd[p + "fc2.weight"], sd[p + "fc2.bias"] = rnd(g, d, ffn), rnd(g, d, scale=0.1)
            sd[p + "final_layer_norm.weight"], sd[p + "final_layer_norm.bias"] = ln_pair(g, d)
    sd["lm_head.weight"] = shared
    sd["final_logits_bias"] = (0.3 * torch.randn(1, V, generator=g)).float()
    md = os.path.join(tmp, tag)
    os.mkdir(md)
    with open(os.path.join(md, "config.json"), "w") as f:
        json.dump(c, f)
    torch.save(sd, os.path.join(md, "pytorch_model.bin"))
    words = ["</s>", "<unk>"] + MARIAN_WORDS + ["\u2581h%d" % i for i in range(V - 3 - len(MARIAN_WORDS))]
    words.append("<pad>")
    with open(os.path.join(md, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({w: i for i, w in enumerate(words)}, f, ensure_ascii=False)
    for n in ("source.spm", "target.spm"):
        with open(os.path.join(md, n), "wb") as f:
            f.write(spm_bytes(["<unk>", "<s>", "</s>"] + words[2:20 if n[0] == "s" else 25]))
    return md, c, sd, words


def write_safetensors(path, sd):
    """The safetensors layout: u64 header length, JSON header, raw data;
    tied tensors stored once, as transformers does."""
    head, blobs, off, seen = {}, [], 0, {}
    for k, v in sd.items():
        key = v.data_ptr()
        if key in seen:
            continue
        seen[key] = k
        raw = v.contiguous().numpy().astype("<f4").tobytes()
        head[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(head).encode()
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def test_hf(tmp, rng):
    print("Hugging Face Marian:")
    g = torch.Generator().manual_seed(13)
    md, c, sd, words = hf_model(tmp, "hf_opus", g)
    out = os.path.join(tmp, "hf_opus.out")
    rc, err = run(["hf-marian", "--model-dir", md, "--output", out])
    check(rc == 0, "HF Marian converts (%s)" % err.strip())
    if rc == 0:
        cfg = compare("hf-marian post swish", HFMarianRef(sd, c), words, words, out, rng)
        check(cfg["positions"] == "sinusoidal" and cfg["sinusoid_denominator"] == "half"
              and cfg["decoder_start_id"] == 1 and not cfg["encoder_final_norm"],
              "HF configuration keys")
        # the same weights as model.safetensors give the same image
        md3 = os.path.join(tmp, "hf_st")
        os.mkdir(md3)
        for f in os.listdir(md):
            if f != "pytorch_model.bin":
                with open(os.path.join(md, f), "rb") as a, open(os.path.join(md3, f), "wb") as b:
                    b.write(a.read())
        write_safetensors(os.path.join(md3, "model.safetensors"), sd)
        out3 = os.path.join(tmp, "hf_st.out")
        rc, err = run(["hf-marian", "--model-dir", md3, "--output", out3])
        check(rc == 0 and open(os.path.join(out, "model.corpq"), "rb").read()
              == open(os.path.join(out3, "model.corpq"), "rb").read(),
              "HF model.safetensors gives the same image (%s)" % err.strip())
    # positions not stored (transformers' _keys_to_ignore_on_save), unscaled, gelu
    md2, c2, sd2, words2 = hf_model(tmp, "hf_nopos", g, store_pos=False, scale_embedding=False,
                                    activation_function="gelu")
    out2 = os.path.join(tmp, "hf_nopos.out")
    rc, err = run(["hf-marian", "--model-dir", md2, "--output", out2])
    check(rc == 0, "HF Marian without stored positions converts (%s)" % err.strip())
    if rc == 0:
        compare("hf-marian gelu unscaled", HFMarianRef(sd2, c2), words2, words2, out2, rng)
    return md, c, sd


# ---- bad input -------------------------------------------------------------------------
def expect_fail(tmp, name, argv, status, needle):
    out = argv[argv.index("--output") + 1]
    before = set(os.listdir(os.path.dirname(out)))
    rc, err = run(argv)
    after = set(os.listdir(os.path.dirname(out)))
    ok = (rc == status and needle.lower() in err.lower() and not os.path.exists(out)
          and after == before)
    check(ok, "%s: status %r (want %d), message %r (want %r), nothing left: %s"
          % (name, rc, status, err.strip(), needle, after == before and not os.path.exists(out)))
    return ok


def test_bad(tmp, rng, fairseq_cases, marian, hf):
    print("bad input:")
    g = torch.Generator().manual_seed(14)
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    n = 0

    def fs(name, status, needle, mutate=None, args_over=None, dicts=None):
        nonlocal n
        n += 1
        ck, sp, tp, _, _, args, sd = fairseq_model(bad, "f%d" % n, g, pre=True, learned=False,
                                                   share_all=False, tie=False, lnemb=False, act="relu")
        if mutate or args_over:
            state = {"model": dict(sd), "args": argparse.Namespace(**vars(args))}
            if mutate:
                mutate(state["model"])
            for k, v in (args_over or {}).items():
                setattr(state["args"], k, v)
            torch.save(state, ck)
        if dicts:
            sp, tp = dicts(sp, tp)
        return expect_fail(bad, name, ["fairseq", "--checkpoint", ck, "--src-dict", sp,
                                       "--tgt-dict", tp, "--output", os.path.join(bad, "o%d" % n)],
                           status, needle)

    def corrupt(path, how):
        with open(path, "rb") as f:
            b = f.read()
        if how == "truncate":
            b = b[:len(b) // 2]
        else:                          # overwrite the archive's central directory
            b = b[:-200] + bytes(200)
        with open(path, "wb") as f:
            f.write(b)

    # fairseq
    n += 1
    ck, sp, tp, *_ = fairseq_model(bad, "f%d" % n, g, pre=True, learned=False, share_all=False,
                                   tie=False, lnemb=False, act="relu")
    for how in ("truncate", "corrupt"):
        c2 = ck + "." + how
        with open(ck, "rb") as f, open(c2, "wb") as h:
            h.write(f.read())
        corrupt(c2, how)
        expect_fail(bad, "fairseq %s checkpoint" % how,
                    ["fairseq", "--checkpoint", c2, "--src-dict", sp, "--tgt-dict", tp,
                     "--output", os.path.join(bad, "o_" + how)], 1, "cannot read fairseq checkpoint")

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + os.path.join(bad, "pwned"),))
    evil = os.path.join(bad, "evil.pt")
    torch.save({"model": {}, "args": Evil()}, evil)
    expect_fail(bad, "fairseq checkpoint calling os.system",
                ["fairseq", "--checkpoint", evil, "--src-dict", sp, "--tgt-dict", tp,
                 "--output", os.path.join(bad, "o_evil")], 1, "refusing to load")
    evil2 = os.path.join(bad, "evil_legacy.pt")
    torch.save({"model": {}, "args": Evil()}, evil2, _use_new_zipfile_serialization=False)
    expect_fail(bad, "legacy-format checkpoint calling os.system",
                ["fairseq", "--checkpoint", evil2, "--src-dict", sp, "--tgt-dict", tp,
                 "--output", os.path.join(bad, "o_evil2")], 1, "refusing to load")
    check(not os.path.exists(os.path.join(bad, "pwned")), "the restricted unpickler ran nothing")

    fs("fairseq missing tensor", 1, "missing tensor decoder.layers.1.fc2.bias",
       mutate=lambda sd: sd.pop("decoder.layers.1.fc2.bias"))
    fs("fairseq extra tensor", 1, "unexpected tensor(s) encoder.layers.0.self_attn.bias_k",
       mutate=lambda sd: sd.__setitem__("encoder.layers.0.self_attn.bias_k", torch.zeros(1, 1, 40)))
    fs("fairseq misshapen tensor", 1, "encoder.layers.0.fc1.weight has shape",
       mutate=lambda sd: sd.__setitem__("encoder.layers.0.fc1.weight", torch.zeros(63, 40)))

    def short_dict(sp, tp):
        with open(sp, encoding="utf-8") as f:
            lines = f.readlines()
        p = sp + ".short"
        with open(p, "w", encoding="utf-8") as f:
            f.writelines(lines[:-20])
        return p, tp
    fs("fairseq dictionary size", 1, "symbols", dicts=short_dict)

    def bad_dict(sp, tp):
        p = sp + ".bad"
        with open(p, "w", encoding="utf-8") as f:
            f.write("hello\n")
        return p, tp
    fs("fairseq malformed dictionary", 1, "expected '<token> <count>", dicts=bad_dict)
    fs("fairseq arch", 2, "fairseq architecture 'lightconv'", args_over={"arch": "lightconv"})
    fs("fairseq adaptive softmax", 2, "adaptive softmax", args_over={"adaptive_softmax_cutoff": "10,20"})
    fs("fairseq cross_self_attention", 2, "cross_self_attention", args_over={"cross_self_attention": True})
    fs("fairseq decoder_output_dim", 2, "decoder_output_dim", args_over={"decoder_output_dim": 32})
    fs("fairseq NormFormer", 2, "NormFormer scale_attn", args_over={"scale_attn": True})
    fs("fairseq no positions", 2, "no_token_positional_embeddings",
       args_over={"no_token_positional_embeddings": True})
    fs("fairseq activation", 2, "activation_fn 'gelu_accurate'", args_over={"activation_fn": "gelu_accurate"})

    # Marian
    npz, arrays, voc, y, spm_s = marian

    def mar(name, status, needle, y_over=None, drop=None, extra=None, vocab=None, spm=None, raw=None):
        nonlocal n
        n += 1
        a = dict(arrays)
        if y_over is not None:
            a["special:model.yml"] = np.frombuffer(yaml.safe_dump(dict(y, **y_over)).encode() + b"\0",
                                                   dtype=np.int8)
        for k in drop or []:
            a.pop(k)
        a.update(extra or {})
        p = os.path.join(bad, "m%d.npz" % n)
        np.savez(p, **a)
        if raw:
            raw(p)
        argv = ["marian", "--model", p, "--vocab", vocab or voc, "--output", os.path.join(bad, "o%d" % n)]
        if spm:
            argv += ["--src-spm", spm, "--tgt-spm", spm_s]
        return expect_fail(bad, name, argv, status, needle)

    mar("Marian AAN decoder", 2, "average attention",
        y_over={"transformer-decoder-autoreg": "average-attention"})
    mar("Marian FFN depth", 2, "FFN depth", y_over={"transformer-ffn-depth": 3})
    mar("Marian pre-norm", 2, "pre-norm", y_over={"transformer-preprocess": "n",
                                                  "transformer-postprocess": "da"})
    mar("Marian layer and RMS norms", 2, "one norm kind per model",
        y_over={"transformer-postprocess-emb": "dr"})
    mar("Marian gelu", 2, "transformer-ffn-activation 'gelu'",
        y_over={"transformer-ffn-activation": "gelu"})
    mar("Marian RNN", 2, "model type 's2s'", y_over={"type": "s2s"})
    mar("Marian factors", 2, "factors", y_over={"factors-dim-emb": 8})
    mar("Marian no model.yml", 1, "no special:model.yml", drop=["special:model.yml"])
    mar("Marian missing tensor", 1, "missing tensor decoder_l2_context_Wk",
        drop=["decoder_l2_context_Wk"])
    mar("Marian extra tensor", 1, "unexpected tensor(s) decoder_l1_aan_W1",
        extra={"decoder_l1_aan_W1": np.zeros((40, 40), np.float32)})
    mar("Marian extra layer", 1, "decoder layers do not match its depth 2",
        extra={"decoder_l3_self_Wq": np.zeros((40, 40), np.float32)})
    mar("Marian truncated", 1, "cannot read Marian model",
        raw=lambda p: corrupt(p, "truncate"))
    short = os.path.join(bad, "short.vocab.yml")
    write_vocab_yml(short, marian_vocab(50))
    mar("Marian vocabulary size", 1, "has 50 tokens but the model's embedding has 56 rows", vocab=short)
    notspm = os.path.join(bad, "not.spm")
    with open(notspm, "w") as f:
        f.write("\u2581the\t-1.0\n\u2581a\t-2.0\n")
    mar("Marian .spm not SentencePiece", 1, "is not a SentencePiece model", spm=notspm)
    nanarr = dict(arrays)["encoder_l1_ffn_b1"].copy()
    nanarr[0, 3] = np.nan
    mar("Marian non-finite weight", 1, "non-finite", extra={"encoder_l1_ffn_b1": nanarr})

    # Hugging Face
    md, c, sd = hf
    import shutil

    def hf(name, status, needle, cfg_over=None, vocab_drop=None, spm_text=False, bin_cut=False):
        nonlocal n
        n += 1
        d2 = os.path.join(bad, "h%d" % n)
        shutil.copytree(md, d2)
        if cfg_over:
            with open(os.path.join(d2, "config.json"), "w") as f:
                json.dump(dict(c, **cfg_over), f)
        if vocab_drop:
            with open(os.path.join(d2, "vocab.json"), encoding="utf-8") as f:
                v = json.load(f)
            v.pop(vocab_drop)
            v = {t: j for j, t in enumerate(sorted(v, key=v.get))}
            with open(os.path.join(d2, "vocab.json"), "w", encoding="utf-8") as f:
                json.dump(v, f)
        if spm_text:
            with open(os.path.join(d2, "target.spm"), "w") as f:
                f.write("not a model\n")
        if bin_cut:
            corrupt(os.path.join(d2, "pytorch_model.bin"), "truncate")
        return expect_fail(bad, name, ["hf-marian", "--model-dir", d2, "--output",
                                       os.path.join(bad, "o%d" % n)], status, needle)
    hf("HF model_type", 2, "model_type 'bart'", cfg_over={"model_type": "bart"})
    hf("HF gelu_new", 2, "activation_function 'gelu_new'", cfg_over={"activation_function": "gelu_new"})
    hf("HF vocabulary size", 1, "tokens but the model's embedding has", vocab_drop="\u2581h3")
    hf("HF .spm not SentencePiece", 1, "is not a SentencePiece model", spm_text=True)
    hf("HF truncated weights", 1, "cannot read model weights", bin_cut=True)
    hf("HF vocab_size", 1, "vocab_size 99 disagrees", cfg_over={"vocab_size": 99})

    # the output directory must not exist yet
    exists = os.path.join(bad, "exists")
    os.mkdir(exists)
    rc, err = run(["hf-marian", "--model-dir", md, "--output", exists])
    check(rc == 1 and "already exists" in err and os.listdir(exists) == [],
          "an existing output directory is refused and left alone")
    # the real command line: exit status 2 and the message on stderr
    p = subprocess.run([sys.executable, SCRIPT, "hf-marian", "--model-dir", os.path.join(bad, "h%d" % (n - 5)),
                        "--output", os.path.join(bad, "cli")], capture_output=True, text=True)
    check(p.returncode == 2 and "unsupported model" in p.stderr and "bart" in p.stderr
          and not os.path.exists(os.path.join(bad, "cli")),
          "command line: exit 2, message on stderr (%d, %r)" % (p.returncode, p.stderr))
    print("  %d bad inputs rejected with their messages, nothing left behind" % (n + 4))


def main():
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="corpq-convert-test-") as tmp:
        fcases = test_fairseq(tmp, rng)
        marian = test_marian(tmp, rng)
        hf = test_hf(tmp, rng)
        test_bad(tmp, rng, fcases, marian, hf)
    print("test_convert: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
