"""corpq-convert hf-bert against a reference written from transformers'
BERT (test/ref/ref_hf_bert.py).

Hugging Face BertModel directories in the real layout with random weights
(config.json, vocab.txt, tokenizer_config.json, tokenizer.json, weights
as model.safetensors and as pytorch_model.bin written by torch.save) are
converted; the image is read back with the corpq reader
(torch_transformer.read_corpq) and its sentence vectors computed by the
corpq encoder reference (torch_encoder.embed, float64) and by the C core
(cq_encode through ctypes, float32), on the ids corpq's WordPiece segmenter
gives (test/ref/wordpiece_reference.py with the converted wordpiece.json,
mapped through the converted vocab.json), against LaBSE's vector from the
reference BertModel on the Hugging Face tokenizer's ids: within 1e-9
(float64 both) and 1e-5 (the C core).  Every piece's corpq embedding row
must be its BERT row.  Three layouts: LaBSE's (cased, fast tokenizer with
tokenizer.json, pooler; safetensors and pytorch_model.bin give the same
image); an uncased BertForPreTraining-style state dict (bert. prefix,
TF-era gamma / beta, cls.* heads, the position_ids buffer) with the slow
tokenizer; one without a pooler ([CLS] normalised); and two
sentence-transformers directories (modules.json): LaBSE's pipeline (CLS
pooling, 2_Dense with tanh, Normalize; the BertModel's own pooler, which
the pipeline does not use, holds other weights) and mean pooling.  Then the
bad inputs: each fails with its status and one line, leaving nothing.
"""
import json
import os
import random
import shutil
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_convert as tc  # noqa: E402  (run, rnd, ln_pair, write_safetensors, expect_fail; tc.cc)
import torch_transformer as tt  # noqa: E402
import torch_encoder as te  # noqa: E402
from ref_hf_bert import HFBertRef, HFBertTokenizer  # noqa: E402
from wordpiece_reference import Bert  # noqa: E402

cc = tc.cc
REF_TOL = 1e-9      # float64 corpq reference against float64 BERT reference
C_TOL = 1e-5        # the float32 C core, per component of a unit vector
failures = []

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [".", ",", "!", "?", "'", "-", "(", ")", "the", "a", "house", "is", "small", "big",
         "un", "##believ", "##able", "believ", "##s", "##ed", "##ing", "hello", "world",
         "Hello", "World", "The", "House", "BIG", "cafe", "café", "caf", "##é", "##e", "naive",
         "naïve", "über", "uber", "Über", "el", "niño", "nino", "ni", "##ño", "##no", "fail",
         "down", "##load", "to", "list", "中", "文", "text", "don", "t", "yes", "no", "the", ""]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
LINES = SPECIAL + WORDS + LETTERS + ["##" + c for c in LETTERS]
SENTENCES = [
    "Hello World!", "the house is small.", "The House is BIG", "café naïve über Über",
    "Unbelievable!!", "unbelievable", "el niño, el nino", "中文 text", "a [MASK] house",
    "supercalifragilisticexpialidocious house", "жук and 🙂", "", "  spaces\tand\nnewlines  ",
    "don't (yes) - no?", "Café-Über NAÏVE", "[CLS] the [SEP]",
]


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def tokenizer_json(lines, lower, max_chars=20):
    vocab = {t: i for i, t in enumerate(lines) if t}
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in SPECIAL]
    tmpl = [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                           "strip_accents": None, "lowercase": lower},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing", "single": tmpl,
                               "pair": tmpl + [{"Sequence": {"id": "B", "type_id": 1}},
                                               {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                               "special_tokens": {}},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": max_chars, "vocab": vocab}}


def bert_state(g, V, d=32, heads=4, ffn=64, layers=2, M=40, types=2, pooler=True):
    """A BertModel state dict with random weights, BertModel's names."""
    sd = {"embeddings.word_embeddings.weight": tc.rnd(g, V, d, scale=0.5),
          "embeddings.position_embeddings.weight": tc.rnd(g, M, d, scale=0.3),
          "embeddings.token_type_embeddings.weight": tc.rnd(g, types, d, scale=0.3)}
    sd["embeddings.LayerNorm.weight"], sd["embeddings.LayerNorm.bias"] = tc.ln_pair(g, d)
    for i in range(layers):
        p = "encoder.layer.%d." % i
        for x in ("query", "key", "value"):
            sd[p + "attention.self.%s.weight" % x] = tc.rnd(g, d, d)
            sd[p + "attention.self.%s.bias" % x] = tc.rnd(g, d, scale=0.1)
        sd[p + "attention.output.dense.weight"] = tc.rnd(g, d, d)
        sd[p + "attention.output.dense.bias"] = tc.rnd(g, d, scale=0.1)
        for name, (rows, cols) in (("intermediate.dense", (ffn, d)), ("output.dense", (d, ffn))):
            sd[p + name + ".weight"], sd[p + name + ".bias"] = tc.rnd(g, rows, cols), tc.rnd(g, rows, scale=0.1)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            sd[p + name + ".weight"], sd[p + name + ".bias"] = tc.ln_pair(g, d)
    if pooler:
        sd["pooler.dense.weight"], sd["pooler.dense.bias"] = tc.rnd(g, d, d), tc.rnd(g, d, scale=0.1)
    return sd


def bert_config(V, d=32, heads=4, ffn=64, layers=2, M=40, **over):
    c = {"architectures": ["BertModel"], "model_type": "bert", "attention_probs_dropout_prob": 0.1,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": d, "initializer_range": 0.02,
         "intermediate_size": ffn, "layer_norm_eps": 1e-12, "max_position_embeddings": M,
         "num_attention_heads": heads, "num_hidden_layers": layers, "pad_token_id": 0,
         "pooler_type": "first_token_transform", "position_embedding_type": "absolute",
         "type_vocab_size": 2, "vocab_size": V, "directionality": "bidi"}
    c.update(over)
    return c


def bert_model(tmp, tag, g, lower=False, fmt=("safetensors", "bin"), tok_json=True, pooler=True,
               prefix="", tf_names=False, heads_too=False, tok_over=None, **over):
    """A model directory: (path, config, BertModel state dict, vocab text, tokenizer options)."""
    V = len(LINES) + 3                    # rows vocab.txt does not reach, as some models have
    sd = bert_state(g, V, pooler=pooler)
    c = bert_config(V, **over)
    md = os.path.join(tmp, tag)
    os.mkdir(md)
    with open(os.path.join(md, "config.json"), "w") as f:
        json.dump(c, f)
    vocab_text = "\n".join(LINES) + "\n"
    with open(os.path.join(md, "vocab.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(vocab_text)
    tcfg = {"do_lower_case": lower, "strip_accents": None, "tokenize_chinese_chars": True,
            "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
            "mask_token": "[MASK]", "model_max_length": 512, "tokenizer_class": "BertTokenizer",
            "never_split": None, "do_basic_tokenize": True}
    tcfg.update(tok_over or {})
    with open(os.path.join(md, "tokenizer_config.json"), "w") as f:
        json.dump(tcfg, f)
    if tok_json:
        with open(os.path.join(md, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(LINES, lower), f, ensure_ascii=False)
    stored = {}
    for k, v in sd.items():
        k = prefix + k
        if tf_names:
            k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        stored[k] = v
    if heads_too:                         # BertForPreTraining: heads and the position_ids buffer
        stored[prefix + "embeddings.position_ids"] = torch.arange(c["max_position_embeddings"])[None]
        stored["cls.predictions.bias"] = torch.zeros(V)
        stored["cls.predictions.transform.dense.weight"] = tc.rnd(g, 32, 32)
        stored["cls.seq_relationship.weight"] = tc.rnd(g, 2, 32)
    if "bin" in fmt:
        torch.save(stored, os.path.join(md, "pytorch_model.bin"))
    if "safetensors" in fmt:
        tc.write_safetensors(os.path.join(md, "model.safetensors"), stored)
    opts = {k: v for k, v in tcfg.items() if k in ("do_lower_case", "tokenize_chinese_chars")
            or k.endswith("_token")}
    return md, c, sd, vocab_text, opts


def st_pipeline(md, g, pooling, dense=True, d=32, modules=None, pool_cfg=None, dense_cfg=None):
    """Makes md a sentence-transformers directory: modules.json, 1_Pooling,
    2_Dense (torch.save of linear.weight / linear.bias; the BertModel's
    pooler stays, with other weights, as such directories have it),
    3_Normalize, sentence_bert_config.json.  Returns the Dense (weight, bias)."""
    kinds = ["Transformer", "Pooling"] + (["Dense"] if dense else []) + ["Normalize"]
    mods = [{"idx": i, "name": str(i), "path": "" if i == 0 else "%d_%s" % (i, k),
             "type": "sentence_transformers.models." + k} for i, k in enumerate(modules or kinds)]
    with open(os.path.join(md, "modules.json"), "w") as f:
        json.dump(mods, f)
    for m in mods[1:]:
        os.mkdir(os.path.join(md, m["path"]))
    pc = {"word_embedding_dimension": d, "pooling_mode_cls_token": pooling == "cls",
          "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
          "pooling_mode_mean_sqrt_len_tokens": False}
    pc.update(pool_cfg or {})
    with open(os.path.join(md, mods[1]["path"], "config.json"), "w") as f:
        json.dump(pc, f)
    with open(os.path.join(md, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 256, "do_lower_case": False}, f)
    if not dense:
        return None
    w = (tc.rnd(g, d, d), tc.rnd(g, d, scale=0.1))
    dc = {"in_features": d, "out_features": d, "bias": True,
          "activation_function": "torch.nn.modules.activation.Tanh"}
    dc.update(dense_cfg or {})
    with open(os.path.join(md, "2_Dense", "config.json"), "w") as f:
        json.dump(dc, f)
    torch.save({"linear.weight": w[0], "linear.bias": w[1]}, os.path.join(md, "2_Dense", "pytorch_model.bin"))
    return w


def read_converted(out):
    with open(os.path.join(out, "model.corpq"), "rb") as f:
        blob = f.read()
    cfg, w = tt.read_corpq(blob)
    with open(os.path.join(out, "vocab.json"), encoding="utf-8") as f:
        doc = json.load(f)
    with open(os.path.join(out, "wordpiece.json"), encoding="utf-8") as f:
        wp = json.load(f)
    with open(os.path.join(out, "vocab.txt"), encoding="utf-8", newline="") as f:
        vtext = f.read()
    return blob, cfg, w, doc, wp, vtext


_CORE = []


def compare(name, out, ref, hf_tok, pooled=True, vector=None, pooling="cls"):
    """The converted model's vectors against the reference's on SENTENCES
    (vector(ids): the reference's; default LaBSE's, or [CLS] without a pooler)."""
    blob, cfg, w, doc, wp, vtext = read_converted(out)
    check(set(w) == set(te.encoder_shapes(cfg)), name + ": tensor set = an encoder's of the configuration")
    check(cfg["kind"] == "encoder" and cfg["pooling"] == pooling and cfg["pooler"] == pooled
          and cfg["token_type_embedding"] and cfg["norm_position"] == "post"
          and cfg["positions"] == "learned" and cfg["layernorm_embedding"]
          and not cfg["encoder_final_norm"] and not cfg["scale_embeddings"]
          and cfg["activation"] == "gelu" and cfg["layer_norm_eps"] == 1e-12,
          name + ": configuration keys %s" % cfg)
    check(doc["tokens"][:4] == cc.SPECIALS and doc["wordpiece"] == "vocab.txt",
          name + ": vocab.json names its segmenter")
    # corpq's side: its segmenter (the reference of corpq.wordpiece_import's
    # options) and the vocabulary document; a missing piece is <unk> (3)
    seg = Bert(hf_tok.lines, **wp)
    index = {t: i for i, t in enumerate(doc["tokens"])}
    sents, hf_ids = [], []
    for s in SENTENCES:
        pieces = seg.tokenize(s)
        sents.append([index.get(p, 3) for p in pieces])
        hf_ids.append(hf_tok.encode(s))
        check(pieces == hf_tok.pieces(s), name + ": pieces of %r" % s)
    E = w["encoder.embed_tokens"]
    W = ref.w["embeddings.word_embeddings.weight"].float().numpy()
    rows_ok = all(np.array_equal(E[[0] + c + [2]], W[h]) for c, h in zip(sents, hf_ids))
    check(rows_ok, name + ": every piece's corpq row is its BERT row ([CLS] <s>, [SEP] </s>)")
    vector = vector or (ref.labse if pooled else ref.cls)
    want = torch.stack([vector(h) for h in hf_ids]).numpy()
    mine = te.embed(cfg, {k: torch.from_numpy(np.array(v)) for k, v in w.items()}, sents).numpy()
    e1 = float(np.abs(mine - want).max())
    check(e1 <= REF_TOL, name + ": corpq reference vs BERT reference %.2e" % e1)
    if not _CORE:
        core = tt.Core()
        _CORE.append((core, te.CoreEncoder(core)))
    core, enc = _CORE[0]
    m = core.load(blob)
    try:
        got = enc.embed(m, sents, cfg["d_model"])
    finally:
        core.free(m)
    e2 = float(np.abs(got - want).max())
    check(e2 <= C_TOL, name + ": C core vs BERT reference %.2e" % e2)
    print("  %-24s %d sentences, %d tokens: |corpq ref - BERT| %.1e, |C core - BERT| %.1e"
          % (name, len(SENTENCES), sum(map(len, sents)), e1, e2))
    return cfg, doc, wp, vtext


def test_layouts(tmp):
    g = torch.Generator().manual_seed(45)
    # LaBSE: cased, fast tokenizer (tokenizer.json), pooler, both weight files
    md, c, sd, vtext, opts = bert_model(tmp, "labse", g)
    out = os.path.join(tmp, "labse.out")
    rc, err = tc.run(["hf-bert", "--model-dir", md, "--output", out])
    check(rc == 0, "LaBSE layout converts (%s)" % err.strip())
    if rc == 0:
        hf_tok = HFBertTokenizer(vtext, dict(opts, variant="fast", max_input_chars_per_word=20))
        cfg, doc, wp, vt = compare("labse fast+pooler", out, HFBertRef(sd, c), hf_tok)
        check(wp == dict(opts, variant="fast", max_input_chars_per_word=20),
              "wordpiece.json = tokenizer_config.json's options + tokenizer.json's %s" % wp)
        check(vt == vtext, "vocab.txt copied unchanged")
        check(len(doc["tokens"]) == 4 + len(set(LINES) - {""}),
              "vocab.json: the reserved four, every other line once (%d)" % len(doc["tokens"]))
        check(cfg["src_vocab_size"] == len(doc["tokens"]) and cfg["max_positions"] == 40,
              "vocabulary size and positions")
        check(cfg["dropout"] == 0.1 and cfg["attention_dropout"] == 0.1, "dropout rates")
        images = [open(os.path.join(out, "model.corpq"), "rb").read()]
        for only in ("safetensors", "bin"):
            d2 = os.path.join(tmp, "labse_" + only)
            shutil.copytree(md, d2)
            os.remove(os.path.join(d2, "pytorch_model.bin" if only == "safetensors" else "model.safetensors"))
            o2 = d2 + ".out"
            rc, err = tc.run(["hf-bert", "--model-dir", d2, "--output", o2])
            images.append(open(os.path.join(o2, "model.corpq"), "rb").read() if rc == 0 else b"")
        check(images[1] == images[0] and images[2] == images[0],
              "model.safetensors and pytorch_model.bin give the same image")
    # uncased, BertForPreTraining names, slow tokenizer, no tokenizer.json
    md, c, sd, vtext, opts = bert_model(tmp, "uncased", g, lower=True, fmt=("bin",), tok_json=False,
                                        prefix="bert.", tf_names=True, heads_too=True)
    out = os.path.join(tmp, "uncased.out")
    rc, err = tc.run(["hf-bert", "--model-dir", md, "--variant", "slow", "--output", out])
    check(rc == 0, "uncased BertForPreTraining layout converts (%s)" % err.strip())
    if rc == 0:
        hf_tok = HFBertTokenizer(vtext, dict(opts, variant="slow"))
        _, _, wp, _ = compare("uncased slow", out, HFBertRef(sd, c), hf_tok)
        check(wp["variant"] == "slow" and wp["do_lower_case"] and "max_input_chars_per_word" not in wp,
              "slow: options %s" % wp)
    # no pooler: the [CLS] state
    md, c, sd, vtext, opts = bert_model(tmp, "nopool", g, pooler=False, fmt=("safetensors",),
                                        tok_json=False)
    out = os.path.join(tmp, "nopool.out")
    rc, err = tc.run(["hf-bert", "--model-dir", md, "--output", out])
    check(rc == 0, "a BERT without a pooler converts (%s)" % err.strip())
    if rc == 0:
        compare("no pooler", out, HFBertRef(sd, c), HFBertTokenizer(vtext, dict(opts, variant="fast")),
                pooled=False)
    # sentence-transformers: LaBSE's pipeline (CLS, 2_Dense tanh, Normalize) and mean pooling
    for tag, pooling, dense in (("st_labse", "cls", True), ("st_mean", "mean", False)):
        md, c, sd, vtext, opts = bert_model(tmp, tag, g, fmt=("safetensors",))
        dw = st_pipeline(md, g, pooling, dense)
        out = os.path.join(tmp, tag + ".out")
        rc, err = tc.run(["hf-bert", "--model-dir", md, "--output", out])
        check(rc == 0, "sentence-transformers %s converts (%s)" % (tag, err.strip()))
        if rc == 0:
            ref = HFBertRef(sd, c)
            hf_tok = HFBertTokenizer(vtext, dict(opts, variant="fast", max_input_chars_per_word=20))
            compare("sentence-transformers " + pooling, out, ref, hf_tok, pooled=dense, pooling=pooling,
                    vector=lambda h: ref.sentence_transformers(h, pooling, dw))
    return bert_model(tmp, "base_bad", g)


def test_bad(tmp, base):
    md, c, sd, vtext, opts = base
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    n = [0]

    def case(name, status, needle, cfg_over=None, tok_over=None, tj=None, vocab=None, drop=None,
             args=()):
        n[0] += 1
        d2 = os.path.join(bad, "b%d" % n[0])
        shutil.copytree(md, d2)
        if cfg_over:
            with open(os.path.join(d2, "config.json"), "w") as f:
                json.dump(dict(c, **cfg_over), f)
        if tok_over:
            with open(os.path.join(d2, "tokenizer_config.json")) as f:
                t = json.load(f)
            with open(os.path.join(d2, "tokenizer_config.json"), "w") as f:
                json.dump(dict(t, **tok_over), f)
        if tj:
            with open(os.path.join(d2, "tokenizer.json"), encoding="utf-8") as f:
                t = json.load(f)
            tj(t)
            with open(os.path.join(d2, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(t, f)
        if vocab is not None:
            with open(os.path.join(d2, "vocab.txt"), "wb") as f:
                f.write(vocab if isinstance(vocab, bytes) else vocab.encode("utf-8"))
        for f in drop or ():
            os.remove(os.path.join(d2, f))
        tc.expect_fail(bad, "hf-bert " + name, ["hf-bert", "--model-dir", d2, *args,
                                                "--output", os.path.join(bad, "o%d" % n[0])],
                       status, needle)

    print("bad input:")
    case("model_type", 2, "model_type 'roberta'", cfg_over={"model_type": "roberta"})
    case("gelu_new", 2, "hidden_act 'gelu_new'", cfg_over={"hidden_act": "gelu_new"})
    case("relative positions", 2, "position_embedding_type 'relative_key'",
         cfg_over={"position_embedding_type": "relative_key"})
    case("is_decoder", 2, "is_decoder true", cfg_over={"is_decoder": True})
    case("cross-attention", 2, "add_cross_attention true", cfg_over={"add_cross_attention": True})
    case("heads", 2, "attention heads do not divide", cfg_over={"num_attention_heads": 5})
    case("layers", 1, "layers do not match num_hidden_layers = 3", cfg_over={"num_hidden_layers": 3})
    case("vocab_size", 1, "vocab_size 99", cfg_over={"vocab_size": 99})
    case("eps", 2, "epsilon", cfg_over={"layer_norm_eps": 0})
    case("hidden_size 'big'", 1, "hidden_size is 'big', not an integer", cfg_over={"hidden_size": "big"})
    case("vocab.txt longer than the embedding", 1, "lines but the model's word embedding has",
         vocab="\n".join(LINES + ["x%d" % i for i in range(10)]) + "\n")
    case("no [CLS] line", 1, "cls_token '[CLS]' is not a line of vocab.txt",
         vocab="\n".join(t for t in LINES if t != "[CLS]") + "\n", drop=["tokenizer.json"])
    case("vocab.txt not UTF-8", 1, "is not UTF-8", vocab=b"caf\xe9\n", drop=["tokenizer.json"])
    case("never_split", 2, "never_split", tok_over={"never_split": ["[FOO]"]})
    case("do_basic_tokenize", 2, "do_basic_tokenize", tok_over={"do_basic_tokenize": False})
    case("cls_token null", 2, "cls_token is null", tok_over={"cls_token": None})
    case("lstrip special", 2, "lstrip true",
         tok_over={"mask_token": {"content": "[MASK]", "lstrip": True, "__type": "AddedToken"}})
    case("extra added token", 2, "added token '[FOO]'",
         tok_over={"added_tokens_decoder": {"9": {"content": "[FOO]", "special": True}}})
    case("tokenizer class", 2, "tokenizer_class 'XLMRobertaTokenizer'",
         tok_over={"tokenizer_class": "XLMRobertaTokenizer"})
    case("tokenizer.json normalizer", 2, "normalizer is 'Sequence', not BertNormalizer",
         tj=lambda t: t.__setitem__("normalizer", {"type": "Sequence", "normalizers": []}))
    case("tokenizer.json vocabulary", 1, "vocabulary differs from vocab.txt",
         tj=lambda t: t["model"]["vocab"].__setitem__("zzz", 5))
    case("tokenizer.json template", 2, "post-processor does not make",
         tj=lambda t: t["post_processor"]["single"].pop())
    case("tokenizer.json prefix", 2, "continuing_subword_prefix '@@'",
         tj=lambda t: t["model"].__setitem__("continuing_subword_prefix", "@@"))
    case("max-positions override", 1, "--max-positions cannot change", args=("--max-positions", "20"))
    case("no weights", 1, "has neither pytorch_model.bin nor model.safetensors",
         drop=["pytorch_model.bin", "model.safetensors"])
    # the tensors: through pytorch_model.bin
    d2 = os.path.join(bad, "tensors")

    def tensors(name, status, needle, mutate):
        n[0] += 1
        shutil.rmtree(d2, ignore_errors=True)
        shutil.copytree(md, d2)
        os.remove(os.path.join(d2, "model.safetensors"))
        s2 = dict(sd)
        mutate(s2)
        torch.save(s2, os.path.join(d2, "pytorch_model.bin"))
        tc.expect_fail(bad, "hf-bert " + name, ["hf-bert", "--model-dir", d2,
                                                "--output", os.path.join(bad, "o%d" % n[0])],
                       status, needle)
    tensors("missing tensor", 1, "missing tensor encoder.layer.1.attention.self.value.bias",
            lambda s: s.pop("encoder.layer.1.attention.self.value.bias"))
    tensors("misshapen tensor", 1, "encoder.layer.0.intermediate.dense.weight has shape [63, 32]",
            lambda s: s.__setitem__("encoder.layer.0.intermediate.dense.weight", torch.zeros(63, 32)))
    tensors("extra tensor", 1, "unexpected tensor(s) classifier.weight",
            lambda s: s.__setitem__("classifier.weight", torch.zeros(2, 32)))
    tensors("prefixed twice", 1, "hold embeddings.LayerNorm.weight twice",
            lambda s: s.__setitem__("bert.embeddings.LayerNorm.weight", torch.ones(32)))
    tensors("non-finite weight", 1, "non-finite",
            lambda s: s.__setitem__("pooler.dense.bias", torch.full((32,), float("nan"))))
    # A checkpoint whose tensors claim more than the converter reads (16 GB as
    # float32): LaBSE's shapes with d 16,384 (16 heads), 33 GB of token
    # embeddings, refused from the configuration and the safetensors header (a
    # sparse file) before a weight is read.  LaBSE itself (1.9 GB) converts:
    # test/bench/bench_big_import.sh
    n[0] += 1
    big = os.path.join(bad, "over_read_cap")
    os.mkdir(big)
    V, d, f, L, M = 501153, 16384, 3072, 12, 512
    with open(os.path.join(big, "config.json"), "w") as fh:
        json.dump(bert_config(V, d=d, heads=16, ffn=f, layers=L, M=M), fh)
    with open(os.path.join(big, "vocab.txt"), "w") as fh:
        fh.write("\n".join(SPECIAL + ["w%d" % i for i in range(V - len(SPECIAL))]) + "\n")
    # every tensor's shape: a small state with d 4, FFN 8 scaled up
    small = bert_state(torch.Generator().manual_seed(1), 8, d=4, ffn=8, layers=L, M=4)
    dims = {"embeddings.word_embeddings.weight": [V, d], "embeddings.position_embeddings.weight": [M, d],
            "embeddings.token_type_embeddings.weight": [2, d]}
    head, off = {}, 0
    for k, v in small.items():
        sh = dims.get(k) or [{4: d, 8: f}[x] for x in v.shape]
        nb = 4 * int(np.prod(sh))
        head[k] = {"dtype": "F32", "shape": sh, "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(head).encode()
    path = os.path.join(big, "model.safetensors")
    with open(path, "wb") as fh:
        fh.write(len(h).to_bytes(8, "little") + h)
    os.truncate(path, 8 + len(h) + off)
    tc.expect_fail(bad, "hf-bert d 16,384 (%.1f GB of weights)" % (off / 1e9),
                   ["hf-bert", "--model-dir", big, "--output", os.path.join(bad, "o%d" % n[0])], 2,
                   "the tensors take more than 17179869184 bytes")
    shutil.rmtree(big)
    # sentence-transformers pipelines corpq does not compute
    def st_case(name, status, needle, **kw):
        n[0] += 1
        d2 = os.path.join(bad, "st%d" % n[0])
        shutil.copytree(md, d2)
        st_pipeline(d2, torch.Generator().manual_seed(n[0]), "cls", **kw)
        tc.expect_fail(bad, "hf-bert " + name, ["hf-bert", "--model-dir", d2,
                                                "--output", os.path.join(bad, "o%d" % n[0])],
                       status, needle)
    st_case("max pooling", 2, "pooling pooling_mode_max_tokens",
            pool_cfg={"pooling_mode_cls_token": False, "pooling_mode_max_tokens": True})
    st_case("two poolings", 2, "pooling_mode_cls_token, pooling_mode_mean_tokens",
            pool_cfg={"pooling_mode_mean_tokens": True})
    st_case("Dense to 16 features", 2, "Dense of 32 -> 16 features", dense_cfg={"out_features": 16})
    st_case("Dense identity", 2, "activation 'torch.nn.modules.linear.Identity'",
            dense_cfg={"activation_function": "torch.nn.modules.linear.Identity"})
    st_case("no Normalize", 2, "modules Transformer, Pooling, Dense (corpq computes",
            modules=["Transformer", "Pooling", "Dense"])
    st_case("pooling dimension", 1, "word_embedding_dimension 64 is not hidden_size 32",
            pool_cfg={"word_embedding_dimension": 64})
    print("  %d bad inputs rejected with their messages, nothing left behind" % n[0])


def main():
    random.seed(45)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="corpq-convert-bert-") as tmp:
        print("Hugging Face BERT (LaBSE layout):")
        base = test_layouts(tmp)
        test_bad(tmp, base)
    failures.extend(tc.failures)          # tc.expect_fail reports through test_convert's list
    print("test_convert_bert: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
