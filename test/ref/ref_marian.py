"""A Marian transformer's forward pass, written for the converter tests from
Marian's own definitions (not from corpq's), on the .npz arrays and the
special:model.yml options:

* src/models/transformer.h: embeddings times sqrt(dim-emb), plus the
  sinusoidal signal of addPositionalEmbeddings / inits::
  sinusoidalPositionEmbeddings (float32: num_timescales = d/2, increment
  log(10000)/(num_timescales - 1), [sin | cos], positions from `start` = 0);
  preProcess(prefix + "_emb", transformer-postprocess-emb) (d = dropout,
  n = layerNorm "_pre"); per layer LayerAttention: preProcess(prefix_Wo,
  transformer-preprocess) of the input as queries, keys and values from
  the layer input, MultiHead (x W + b, W stored [in, out]), postProcess
  ops of transformer-postprocess (d dropout, a add the layer input,
  n layerNorm prefix_Wo_ln_{scale,bias}); LayerFFN likewise with
  prefix_ffn, dense W1/b1, activation (swish / relu), dense W2/b2;
  postProcess(prefix + "_top", transformer-postprocess-top) after the stack.
  Attention: softmax(q k^T / sqrt(dk) + mask) v, per head.  The decoder
  reads the target embeddings shifted right by one with a zero vector first
  (decoder.h: shift(y, {1, 0, 0}); embeddingsFromPrediction: zeros when
  there is no previous word), its mask is causal.
* src/layers/generic.h / tensor_operators.cpp: layerNorm with epsilon 1e-6,
  (x - mean) / sqrt(eps + var) * scale + bias; rmsNorm (marian-dev 1.11 and
  later, the op `r` of pre/postprocess: RMSNormalizationImpl), epsilon 1e-6,
  scale * (x / sqrt(sum x^2 / cols + eps)), parameter prefix_rms_scale
  (suffix "_pre" in preProcess), no bias.
* src/layers/output.cpp: logits = x Wt^T + b with Wt the tied embedding
  (Wemb or decoder_Wemb) or decoder_ff_logit_out_Wt, b decoder_ff_logit_out_b.
* swish(x) = x * sigmoid(x) (expression_operators.cpp SwishNodeOp).
Token ids are Marian's (</s> 0, <unk> 1 in OPUS-MT vocabularies); the
source ends with </s>.  Inference mode (no dropout), float64.
"""
import math

import numpy as np
import torch


def marian_signal(n, d, start=0):
    nt = np.float32(d / 2)
    inc = np.float32(np.log(np.float32(10000.0)) / (nt - np.float32(1.0)))
    out = np.zeros((n, d), np.float32)
    for p in range(start, start + n):
        for i in range(int(nt)):
            v = np.float32(p) * np.exp(np.float32(i) * -inc, dtype=np.float32)
            out[p - start, i] = np.sin(v, dtype=np.float32)
            out[p - start, int(nt) + i] = np.cos(v, dtype=np.float32)
    return out



def pad_batch(seqs, pad):
    """Sequences of ids as one [B, L] tensor padded with pad, and its [B, L] mask
    of real positions (ref_hf_marian.py too)."""
    L = max(map(len, seqs))
    t = torch.full((len(seqs), L), pad, dtype=torch.long)
    ok = torch.zeros(len(seqs), L, dtype=torch.bool)
    for b, s in enumerate(seqs):
        t[b, :len(s)] = torch.tensor(s, dtype=torch.long)
        ok[b, :len(s)] = True
    return t, ok

class MarianRef:
    def __init__(self, arrays, yml, dtype=torch.float64):
        self.dt = dtype
        self.p = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype)
                  for k, v in arrays.items() if k != "special:model.yml"}
        self.y = yml
        self.d = int(yml["dim-emb"])
        self.heads = int(yml["transformer-heads"])
        self.eos = 0
        tied_all = yml.get("tied-embeddings-all", False)
        tied_src = yml.get("tied-embeddings-src", False)
        self.src_emb = "Wemb" if tied_all or tied_src else "encoder_Wemb"
        self.tgt_emb = "Wemb" if tied_all or tied_src else "decoder_Wemb"
        if tied_all or yml.get("tied-embeddings", False):
            self.out_w = self.p[self.tgt_emb]
        else:
            self.out_w = self.p["decoder_ff_logit_out_Wt"]
        self.out_b = (self.p["decoder_ff_logit_out_b"][0] if "decoder_ff_logit_out_b" in self.p
                      else torch.zeros(self.out_w.shape[0], dtype=dtype))
        act = yml.get("transformer-ffn-activation", "swish")
        self.act = {"swish": lambda x: x * torch.sigmoid(x), "relu": torch.relu}[act]
        self.signal = torch.from_numpy(marian_signal(200, self.d)).to(dtype)

    def layer_norm(self, x, prefix, suffix=""):
        g = self.p[prefix + "_ln_scale" + suffix][0]
        b = self.p[prefix + "_ln_bias" + suffix][0]
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return g * ((x - mean) / torch.sqrt(1e-6 + var)) + b

    def rms_norm(self, x, prefix, suffix=""):
        g = self.p[prefix + "_rms_scale" + suffix][0]
        return g * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6))

    def pre(self, prefix, ops, x):
        for op in ops:
            if op == "n":
                x = self.layer_norm(x, prefix, "_pre")
            elif op == "r":
                x = self.rms_norm(x, prefix, "_pre")
            elif op != "d":
                raise ValueError(op)
        return x

    def post(self, prefix, ops, x, prev):
        for op in ops:
            if op == "a":
                x = x + prev
            elif op == "n":
                x = self.layer_norm(x, prefix)
            elif op == "r":
                x = self.rms_norm(x, prefix)
            elif op != "d":
                raise ValueError(op)
        return x

    def affine(self, x, W, b):
        return x @ self.p[W] + self.p[b][0]

    def multi_head(self, prefix, q, keys, values, mask):
        B, Lq, d = q.shape
        H, dk = self.heads, d // self.heads
        Lk = keys.shape[1]
        qh = self.affine(q, prefix + "_Wq", prefix + "_bq").view(B, Lq, H, dk).transpose(1, 2)
        kh = self.affine(keys, prefix + "_Wk", prefix + "_bk").view(B, Lk, H, dk).transpose(1, 2)
        vh = self.affine(values, prefix + "_Wv", prefix + "_bv").view(B, Lk, H, dk).transpose(1, 2)
        z = (qh @ kh.transpose(-1, -2)) * (1.0 / math.sqrt(dk)) + mask
        o = torch.softmax(z, dim=-1) @ vh
        o = o.transpose(1, 2).reshape(B, Lq, d)
        return self.affine(o, prefix + "_Wo", prefix + "_bo")

    def layer_attention(self, prefix, x, keys, mask):
        out = self.pre(prefix + "_Wo", self.y.get("transformer-preprocess", ""), x)
        out = self.multi_head(prefix, out, keys, keys, mask)
        return self.post(prefix + "_Wo", self.y.get("transformer-postprocess", "dan"), out, x)

    def layer_ffn(self, prefix, x):
        out = self.pre(prefix + "_ffn", self.y.get("transformer-preprocess", ""), x)
        out = self.act(self.affine(out, prefix + "_W1", prefix + "_b1"))
        out = self.affine(out, prefix + "_W2", prefix + "_b2")
        return self.post(prefix + "_ffn", self.y.get("transformer-postprocess", "dan"), out, x)

    def embed(self, e, prefix):
        x = math.sqrt(self.d) * e + self.signal[:e.shape[1]][None]
        return self.pre(prefix + "_emb", self.y.get("transformer-postprocess-emb", "d"), x)

    @staticmethod
    def log_mask(ok):                   # (1 - mask) * -99999999 as Marian
        return (1.0 - ok.double()) * -99999999.0

    def encode(self, src, src_ok):
        x = self.embed(self.p[self.src_emb][src], "encoder")
        mask = self.log_mask(src_ok)[:, None, None, :]
        for i in range(1, int(self.y["enc-depth"]) + 1):
            x = self.layer_attention("encoder_l%d_self" % i, x, x, mask)
            x = self.layer_ffn("encoder_l%d_ffn" % i, x)
        return self.post("encoder_top", self.y.get("transformer-postprocess-top", ""), x, None)

    def decode(self, enc, src_ok, prev):
        """prev [B, T] target words y_0 .. y_{T-1} (the shifted input is a zero
        vector, then their embeddings); log-probabilities [B, T, V]."""
        B, T = prev.shape
        e = self.p[self.tgt_emb][prev]
        e = torch.cat([torch.zeros(B, 1, self.d, dtype=self.dt), e[:, :-1]], dim=1)
        y = self.embed(e, "decoder")
        self_mask = self.log_mask(torch.tril(torch.ones(T, T, dtype=torch.bool)))[None, None]
        cross_mask = self.log_mask(src_ok)[:, None, None, :]
        for i in range(1, int(self.y["dec-depth"]) + 1):
            y = self.layer_attention("decoder_l%d_self" % i, y, y, self_mask)
            y = self.layer_attention("decoder_l%d_context" % i, y, enc, cross_mask)
            y = self.layer_ffn("decoder_l%d_ffn" % i, y)
        y = self.post("decoder_top", self.y.get("transformer-postprocess-top", ""), y, None)
        return torch.log_softmax(y @ self.out_w.T + self.out_b, dim=-1)

    def _batch(self, seqs):
        return pad_batch(seqs, 0)

    @torch.no_grad()
    def log_probs(self, pairs):
        """pairs [(src ids, tgt ids)] -> per pair [T + 1, V] (y_1 .. y_T, </s>)."""
        src, ok = self._batch([list(s) + [self.eos] for s, _ in pairs])
        enc = self.encode(src, ok)
        tgt, _ = self._batch([list(t) + [self.eos] for _, t in pairs])
        lp = self.decode(enc, ok, tgt)
        return [lp[b, :len(t) + 1] for b, (_, t) in enumerate(pairs)]

    @torch.no_grad()
    def greedy(self, src, max_len):
        s, ok = self._batch([list(src) + [self.eos]])
        enc = self.encode(s, ok)
        out = []
        while True:
            lp = self.decode(enc, ok, torch.tensor([out + [self.eos]]))[0, -1]
            tok = self.eos if len(out) >= max_len else int(lp.argmax())
            if tok == self.eos:
                return out
            out.append(tok)
