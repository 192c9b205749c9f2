"""A Hugging Face MarianMTModel's forward pass, written for the converter
tests from transformers' own definitions (not from corpq's), on the state
dict of pytorch_model.bin and config.json:

* models/marian/modeling_marian.py: MarianEncoder / MarianDecoder embed
  tokens times embed_scale (sqrt(d_model) if scale_embedding else 1), add
  MarianSinusoidalPositionalEmbedding (positions 0.. (+ past length), table
  pos / 10000^(2 (j // 2) / d) in float64, sin of the even columns in the
  first half, cos of the odd ones in the second, stored float32; a stored
  embed_positions.weight is what the model uses), dropout, then post-norm
  layers: h = LN(h + Drop(SelfAttn(h))), [decoder: h = LN(h + Drop(
  CrossAttn(h, enc)))], h = LN(h + Drop(fc2(Drop(act(fc1(h)))))); no layer
  norm after the stacks, no embedding layer norm.  MarianAttention:
  q_proj(x), k_proj, v_proj, softmax(q k^T * head_dim^-0.5 + mask) v,
  out_proj.  MarianMTModel: logits = lm_head(h) + final_logits_bias,
  lm_head tied to the (decoder) input embedding unless tie_word_embeddings
  is false; decoder_input_ids start with decoder_start_token_id (= pad).
* configuration_marian.py defaults; nn.LayerNorm epsilon 1e-5;
  ACT2FN: swish/silu = x sigmoid(x), gelu exact, relu.
Token ids are the model's (vocab.json: </s> 0, <unk> 1, <pad> last); the
source ends with eos_token_id.  Evaluation mode, float64.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

from ref_marian import pad_batch


def hf_positions(n, d):
    j = np.arange(d)
    enc = np.array([[pos / np.power(10000, 2 * (jj // 2) / d) for jj in j] for pos in range(n)])
    out = torch.empty(n, d, dtype=torch.float32)
    half = d // 2 if d % 2 == 0 else d // 2 + 1
    out[:, :half] = torch.FloatTensor(np.sin(enc[:, 0::2]))
    out[:, half:] = torch.FloatTensor(np.cos(enc[:, 1::2]))
    return out


class HFMarianRef:
    def __init__(self, state_dict, config, dtype=torch.float64):
        self.dt, self.c = dtype, config
        self.w = {(k[6:] if k.startswith("model.") else k): v.to(dtype)
                  for k, v in state_dict.items()}
        self.d = config["d_model"]
        self.heads = config["encoder_attention_heads"]
        self.scale = math.sqrt(self.d) if config.get("scale_embedding", False) else 1.0
        act = config.get("activation_function", "gelu")
        self.act = {"swish": F.silu, "silu": F.silu, "gelu": F.gelu, "relu": torch.relu}[act]
        self.pad = config["pad_token_id"]
        self.eos = config.get("eos_token_id", 0)
        self.start = config.get("decoder_start_token_id", self.pad)
        share = config.get("share_encoder_decoder_embeddings", True)
        self.src_emb = self.w["shared.weight" if share else "encoder.embed_tokens.weight"]
        self.tgt_emb = self.w["shared.weight" if share else "decoder.embed_tokens.weight"]
        if config.get("tie_word_embeddings", True):
            self.lm_head = self.tgt_emb
        else:
            self.lm_head = self.w["lm_head.weight"]
        self.bias = self.w.get("final_logits_bias", torch.zeros(1, self.lm_head.shape[0], dtype=dtype))
        M = config.get("max_position_embeddings", 1024)
        table = hf_positions(M, self.d).to(dtype)
        self.pos = {s: self.w.get(s + ".embed_positions.weight", table) for s in ("encoder", "decoder")}

    def ln(self, x, p):
        return F.layer_norm(x, (self.d,), self.w[p + ".weight"], self.w[p + ".bias"], 1e-5)

    def lin(self, x, p):
        return F.linear(x, self.w[p + ".weight"], self.w[p + ".bias"])

    def attn(self, x, kv, p, mask):
        B, Lq, d = x.shape
        Lk, H = kv.shape[1], self.heads
        dh = d // H
        q = self.lin(x, p + ".q_proj").view(B, Lq, H, dh).transpose(1, 2)
        k = self.lin(kv, p + ".k_proj").view(B, Lk, H, dh).transpose(1, 2)
        v = self.lin(kv, p + ".v_proj").view(B, Lk, H, dh).transpose(1, 2)
        s = (q @ k.transpose(2, 3)) * dh ** -0.5 + mask
        o = torch.softmax(s, dim=-1) @ v
        return self.lin(o.transpose(1, 2).reshape(B, Lq, d), p + ".out_proj")

    def additive(self, ok):             # HF: finfo(dtype).min where masked
        return torch.zeros(ok.shape, dtype=self.dt).masked_fill(~ok, torch.finfo(self.dt).min)

    def encode(self, src, ok):
        h = self.src_emb[src] * self.scale + self.pos["encoder"][:src.shape[1]]
        mask = self.additive(ok)[:, None, None, :]
        for i in range(self.c["encoder_layers"]):
            p = "encoder.layers.%d." % i
            h = self.ln(h + self.attn(h, h, p + "self_attn", mask), p + "self_attn_layer_norm")
            h = self.ln(h + self.lin(self.act(self.lin(h, p + "fc1")), p + "fc2"),
                        p + "final_layer_norm")
        return h

    def decode(self, enc, ok, dec_in):
        T = dec_in.shape[1]
        h = self.tgt_emb[dec_in] * self.scale + self.pos["decoder"][:T]
        causal = self.additive(torch.tril(torch.ones(T, T, dtype=torch.bool)))[None, None]
        cross = self.additive(ok)[:, None, None, :]
        for i in range(self.c["decoder_layers"]):
            p = "decoder.layers.%d." % i
            h = self.ln(h + self.attn(h, h, p + "self_attn", causal), p + "self_attn_layer_norm")
            h = self.ln(h + self.attn(h, enc, p + "encoder_attn", cross), p + "encoder_attn_layer_norm")
            h = self.ln(h + self.lin(self.act(self.lin(h, p + "fc1")), p + "fc2"),
                        p + "final_layer_norm")
        return torch.log_softmax(h @ self.lm_head.T + self.bias, dim=-1)

    def _batch(self, seqs):
        return pad_batch(seqs, self.pad)

    @torch.no_grad()
    def log_probs(self, pairs):
        src, ok = self._batch([list(s) + [self.eos] for s, _ in pairs])
        enc = self.encode(src, ok)
        dec_in, _ = self._batch([[self.start] + list(t) for _, t in pairs])
        lp = self.decode(enc, ok, dec_in)
        return [lp[b, :len(t) + 1] for b, (_, t) in enumerate(pairs)]

    @torch.no_grad()
    def greedy(self, src, max_len):
        """Argmax decoding that never emits pad (generate's bad_words_ids for
        OPUS-MT models), eos forced after max_len tokens."""
        s, ok = self._batch([list(src) + [self.eos]])
        enc = self.encode(s, ok)
        out = []
        while True:
            lp = self.decode(enc, ok, torch.tensor([[self.start] + out]))[0, -1].clone()
            lp[self.pad] = float("-inf")
            tok = self.eos if len(out) >= max_len else int(lp.argmax())
            if tok == self.eos:
                return out
            out.append(tok)
