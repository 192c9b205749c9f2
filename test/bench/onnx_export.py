"""ONNX graphs of the PyTorch reference model (test/ref/torch_transformer.py)
for the ONNX Runtime rows of bench_nn.py and bench_translate.py.

* `export_score`: one graph, src ids + decoder input ids + gold ids (teacher
  forcing) -> per target position log p(gold), max probability, entropy and
  argmax: the four outputs the core's cq_forward computes.
* `export_translate`: an encoder graph (src ids -> each decoder layer's
  cross-attention keys/values, computed once per sentence as the core and
  torch_search.py do) and a decoder-step graph with an incremental
  self-attention cache (one new token per hypothesis per call; the cache is
  reordered by the beam's choices inside the graph).  The step returns each
  hypothesis's best 2 x beam + 3 tokens (TopK in the graph: the search needs
  the best 2 x beam over a sentence's hypotheses after at most 3 masked
  tokens, BOS, PAD and </s>, are dropped) and its </s> log-probability,
  not the whole [hypotheses, V] table: that would cross into JavaScript on
  every step and be scanned there, work that belongs to the runtime.
* `quantize`: the int8 variant of a float32 graph, written here with the
  onnx package alone (no onnxruntime in Python): every MatMul whose weight is
  a constant becomes DynamicQuantizeLinear (activations uint8, one scale and
  zero point per tensor, computed at run time) + MatMulInteger against int8
  weights quantized symmetrically per output column + a scale multiply, the
  pattern ONNX Runtime's own dynamic quantizer writes (so its graph optimiser
  fuses it into its int8 kernel the same way).

Needs /usr/bin/python3 (Debian's torch and python3-onnx).
"""
import math
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
import torch_transformer as tt  # noqa: E402

OPSET = 17     # LayerNormalization is an ONNX op from 17 on


def need_onnx():
    """The onnx package; installs Debian's python3-onnx when missing (as root),
    since benchmarks install what they need."""
    try:
        import onnx
    except ImportError:
        if os.geteuid() != 0:
            sys.exit("bench: the onnx Python package is missing (apt-get install python3-onnx)")
        subprocess.check_call(["apt-get", "install", "-y", "-q", "python3-onnx"],
                              stdout=subprocess.DEVNULL)
        import onnx
    return onnx


def _heads(t, H):
    return t.reshape(t.shape[0], t.shape[1], H, -1).transpose(1, 2)


class _Score(torch.nn.Module):
    """The teacher-forced forward of tt.Transformer.log_probs on padded id
    tensors (pairs are padded with PAD, which no real token uses)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, src, din, gold):
        m = self.m
        B, S, T = src.shape[0], src.shape[1], din.shape[1]
        ok = src != tt.PAD
        x = m._embed(src, m.src_embed, m.src_pos, "encoder")
        for L in m.enc:
            x = L(x, ok[:, None, :].expand(B, S, S))
        enc = m.enc_final(x)
        ar = torch.arange(T)
        causal = ar[None, :] <= ar[:, None]
        y = m._embed(din, m.tgt_embed, m.tgt_pos, "decoder")
        for L in m.dec:
            y = L(y, enc, causal[None].expand(B, T, T), ok[:, None, :].expand(B, T, S))
        lp = torch.log_softmax(m.logits(y), dim=-1)
        top, arg = lp.max(-1)
        return (lp.gather(2, gold[..., None])[..., 0], top.exp(),
                -(lp.exp() * lp).sum(-1), arg)


class _Encoder(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, src):
        m, H = self.m, self.m.c["heads"]
        B, S = src.shape[0], src.shape[1]
        ok = src != tt.PAD
        x = m._embed(src, m.src_embed, m.src_pos, "encoder")
        for L in m.enc:
            x = L(x, ok[:, None, :].expand(B, S, S))
        enc = m.enc_final(x)
        out = []
        for L in m.dec:
            out += [_heads(L.cross.k(enc), H), _heads(L.cross.v(enc), H)]
        return tuple(out)


class _Step(torch.nn.Module):
    """One decoder step for R = B x K hypotheses (K per sentence, sentence
    after sentence), as torch_search.RefTranslator.step computes it.  The
    cross keys/values stay one per sentence [B, H, S, dh]: the K queries of a
    sentence attend to them together, so nothing is copied per hypothesis."""

    def __init__(self, m, topk):
        super().__init__()
        self.m, self.topk = m, topk

    def forward(self, tok, pos, ok, beam_idx, *cache):
        m, c = self.m, self.m.c
        d, H = c["d_model"], c["heads"]
        dh = d // H
        n = len(m.dec)
        B, K = tok.shape[0], tok.shape[1]
        R = B * K
        scale = math.sqrt(d) if tt.variant(c, "scale_embeddings") else 1.0
        y = (m.tgt_embed[tok.reshape(-1)] * scale + m.tgt_pos[pos][None])[:, None, :]
        if tt.variant(c, "layernorm_embedding"):
            y = m.emb_ln["decoder"](y)
        post = tt.variant(c, "norm_position") == "post"
        new = []
        for i, L in enumerate(m.dec):
            sk, sv, ck, cv = cache[2 * i], cache[2 * i + 1], cache[2 * n + 2 * i], cache[2 * n + 2 * i + 1]
            h = y if post else L.ln1(y)
            q = _heads(L.self_attn.q(h), H)
            k = torch.cat([sk.index_select(0, beam_idx), _heads(L.self_attn.k(h), H)], dim=2)
            v = torch.cat([sv.index_select(0, beam_idx), _heads(L.self_attn.v(h), H)], dim=2)
            new += [k, v]
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1) @ v
            y = y + L.self_attn.out(a.transpose(1, 2).reshape(R, 1, d))
            if post:
                y = L.ln1(y)
            q = L.cross.q(y if post else L.ln2(y)).reshape(B, K, H, dh).transpose(1, 2)
            s = q @ ck.transpose(-1, -2) / math.sqrt(dh)
            s = s.masked_fill(~ok[:, None, None, :], float("-inf"))
            a = (torch.softmax(s, dim=-1) @ cv).transpose(1, 2).reshape(R, 1, d)
            y = y + L.cross.out(a)
            if post:
                y = L.ln2(y)
                y = L.ln3(y + L.ffn(y))
            else:
                y = y + L.ffn(L.ln3(y))
        lp = torch.log_softmax(m.logits(y[:, 0]), dim=-1)
        top, idx = torch.topk(lp, self.topk, dim=-1)
        return (top, idx, lp[:, tt.EOS]) + tuple(new)


def _float_model(cfg, w):
    """The float32 reference model (an int8 cfg is exported as float32: the
    int8 graph is made from the float32 one by `quantize`)."""
    return tt.Transformer(dict(cfg, precision="float32"), w, dtype=torch.float32).eval()


def _export(module, args, path, inputs, outputs, axes):
    with torch.no_grad():
        torch.onnx.export(module, args, path, input_names=inputs, output_names=outputs,
                          dynamic_axes=axes, opset_version=OPSET, do_constant_folding=True)


def export_score(cfg, w, path):
    m = _float_model(cfg, w)
    ids = torch.full((2, 5), 4, dtype=torch.long)
    ax = {"src": {0: "B", 1: "S"}, "din": {0: "B", 1: "T"}, "gold": {0: "B", 1: "T"}}
    ax.update({o: {0: "B", 1: "T"} for o in ("logp", "p_max", "entropy", "argmax")})
    _export(_Score(m), (ids, ids, ids), path, ["src", "din", "gold"],
            ["logp", "p_max", "entropy", "argmax"], ax)


def export_translate(cfg, w, enc_path, step_path, beam):
    m = _float_model(cfg, w)
    n, H = len(m.dec), cfg["heads"]
    dh = cfg["d_model"] // H
    cross_names = ["cross_%s%d" % (kv, i) for i in range(n) for kv in "kv"]
    _export(_Encoder(m), (torch.full((2, 5), 4, dtype=torch.long),), enc_path, ["src"],
            cross_names, dict({"src": {0: "B", 1: "S"}},
                              **{c: {0: "B", 2: "S"} for c in cross_names}))
    B, K, S, t = 2, 3, 5, 2
    self_in = ["self_%s%d" % (kv, i) for i in range(n) for kv in "kv"]
    self_out = ["new_%s%d" % (kv, i) for i in range(n) for kv in "kv"]
    args = (torch.full((B, K), 4, dtype=torch.long), torch.tensor(t, dtype=torch.long),
            torch.ones(B, S, dtype=torch.bool), torch.arange(B * K))
    args += tuple(torch.zeros(B * K, H, t, dh) for _ in self_in)
    args += tuple(torch.zeros(B, H, S, dh) for _ in cross_names)
    ax = {"tok": {0: "B", 1: "K"}, "ok": {0: "B", 1: "S"}, "beam_idx": {0: "R"},
          "top_lp": {0: "R"}, "top_id": {0: "R"}, "eos_lp": {0: "R"}}
    ax.update({s: {0: "Rp", 2: "t"} for s in self_in})
    ax.update({s: {0: "R", 2: "t1"} for s in self_out})
    ax.update({c: {0: "B", 2: "S"} for c in cross_names})
    _export(_Step(m, 2 * beam + 3), args, step_path,
            ["tok", "pos", "ok", "beam_idx"] + self_in + cross_names,
            ["top_lp", "top_id", "eos_lp"] + self_out, ax)


def quantize(src_path, dst_path):
    """The dynamically quantized int8 graph (module doc); returns how many
    MatMuls were quantized."""
    onnx = need_onnx()
    from onnx import helper, numpy_helper, TensorProto
    g_model = onnx.load(src_path)
    g = g_model.graph
    # weights are initializers, or Constant nodes where the exporter folded
    # a transpose (the tied output projection)
    consts = {t.name: t for t in g.initializer}
    consts.update({n.output[0]: n.attribute[0].t for n in g.node
                   if n.op_type == "Constant" and n.attribute[0].name == "value"})
    nodes, added, count = [], [], 0
    for node in g.node:
        w = consts.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2:
            nodes.append(node)
            continue
        W = numpy_helper.to_array(w).astype(np.float32)      # [K, N]: y = x W
        # per output column, symmetric: zero point 0, codes in [-127, 127]
        s = np.abs(W).max(axis=0) / 127.0
        s = np.where(s > 0, s, 1.0).astype(np.float32)
        q = np.clip(np.rint(W / s), -127, 127).astype(np.int8)
        p = "%s_q%d" % (node.name or "matmul", count)
        count += 1
        added += [numpy_helper.from_array(q, p + "_w"),
                  numpy_helper.from_array(s, p + "_w_scale"),
                  numpy_helper.from_array(np.zeros(W.shape[1], np.int8), p + "_w_zero")]
        x, y = node.input[0], node.output[0]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [p + "_x", p + "_x_scale", p + "_x_zero"],
                             name=p + "_dql"),
            helper.make_node("MatMulInteger", [p + "_x", p + "_w", p + "_x_zero", p + "_w_zero"],
                             [p + "_acc"], name=p + "_mmi"),
            helper.make_node("Cast", [p + "_acc"], [p + "_accf"], to=TensorProto.FLOAT,
                             name=p + "_cast"),
            helper.make_node("Mul", [p + "_x_scale", p + "_w_scale"], [p + "_scale"],
                             name=p + "_scale_mul"),
            helper.make_node("Mul", [p + "_accf", p + "_scale"], [y], name=p + "_out_mul")]
    used = {i for n in nodes for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    nodes = [n for n in nodes if n.op_type != "Constant" or n.output[0] in used]
    del g.initializer[:]
    g.initializer.extend(keep + added)
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(g_model)
    onnx.save(g_model, dst_path)
    return count


def export_all(kind, cfg, w, out_dir, beam=4):
    """Writes the float32 and int8 graphs of `kind` ("score" or "translate",
    for this beam size) into out_dir; returns {"f32": [paths], "int8":
    [paths], "quantized": n}."""
    need_onnx()
    os.makedirs(out_dir, exist_ok=True)
    if kind == "score":
        f32 = [os.path.join(out_dir, "score.onnx")]
        export_score(cfg, w, f32[0])
    else:
        f32 = [os.path.join(out_dir, "encoder.onnx"), os.path.join(out_dir, "step.onnx")]
        export_translate(cfg, w, *f32, beam)
    int8 = [p.replace(".onnx", ".int8.onnx") for p in f32]
    n = sum(quantize(a, b) for a, b in zip(f32, int8))
    return {"f32": f32, "int8": int8, "quantized": n}


if __name__ == "__main__":
    # a self-check: export the small model's graphs into the directory given
    cfg = tt.make_config("small", 8000, 8000)
    w = tt.random_weights(cfg, 1)
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/corpq-onnx"
    print(export_all("score", cfg, w, out))
    print(export_all("translate", cfg, w, out))
