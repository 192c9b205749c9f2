"""A fairseq transformer translation model's forward pass, written for the
converter tests from fairseq's own definitions (not from corpq's):

* fairseq/models/transformer/transformer_encoder.py, transformer_decoder.py:
  x = embed_scale * embed_tokens(tokens), embed_scale = sqrt(embed_dim)
  unless no_scale_embedding; + embed_positions(tokens); layernorm_embedding
  if enabled; dropout; encoder padding rows zeroed; layers; final layer_norm
  only with normalize_before (decoder: and not no_decoder_final_norm, and
  only when the state's `version` says the model had one: encoder >= 2,
  decoder > 2); output_projection (no bias), tied to embed_tokens with
  share_decoder_input_output_embed / share_all_embeddings.
* fairseq/modules/transformer_layer.py: residual, [LN if normalize_before],
  sublayer, dropout, add, [LN if not normalize_before]; FFN fc2(act(fc1)).
* fairseq/modules/multihead_attention.py: q = q_proj(x) * head_dim^-0.5,
  softmax(q k^T + masks) v, out_proj; causal mask in the decoder.
* fairseq/modules/sinusoidal_positional_embedding.py (float32 table,
  half_dim = d/2, step log(10000)/(half_dim - 1), [sin | cos], row
  padding_idx zeroed) and learned_positional_embedding.py, positions from
  utils.make_positions: padding_idx + 1 + t for the t-th non-pad token.
* fairseq/utils.py get_activation_fn: relu, gelu (erf).
Token ids are fairseq's (Dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3); the
source gets </s> appended, the decoder reads </s> y_1 .. y_T.  Evaluation
mode (no dropout), float64.
"""
import math

import torch
import torch.nn.functional as F

PAD, EOS = 1, 2


def _opt(args, name, default):
    v = args.get(name) if isinstance(args, dict) else getattr(args, name, None)
    return default if v is None else v


def sinusoidal_table(n, d, padding_idx):
    half = d // 2
    step = math.log(10000) / (half - 1)
    f = torch.exp(torch.arange(half, dtype=torch.float) * -step)
    a = torch.arange(n, dtype=torch.float).unsqueeze(1) * f.unsqueeze(0)
    t = torch.cat([torch.sin(a), torch.cos(a)], dim=1).view(n, -1)
    t[padding_idx, :] = 0
    return t


class FairseqRef:
    def __init__(self, state_dict, args, dtype=torch.float64):
        self.dt = dtype
        self.w = {k: v.to(dtype) for k, v in state_dict.items() if v.is_floating_point()}
        self.ver = {k[:-len(".version")]: float(v.flatten()[0])
                    for k, v in state_dict.items() if k.endswith(".version")}
        self.a = args
        self.d = self.w["encoder.embed_tokens.weight"].shape[1]
        self.heads = _opt(args, "encoder_attention_heads", 8)
        self.pre = bool(_opt(args, "encoder_normalize_before", False))
        self.learned = bool(_opt(args, "encoder_learned_pos", False))
        self.scale = 1.0 if _opt(args, "no_scale_embedding", False) else math.sqrt(self.d)
        self.lnemb = bool(_opt(args, "layernorm_embedding", False))
        act = _opt(args, "activation_fn", "relu")
        self.act = {"relu": torch.relu, "gelu": F.gelu}[act]
        self.enc_layers = _opt(args, "encoder_layers", 6)
        self.dec_layers = _opt(args, "decoder_layers", 6)
        self.share_all = bool(_opt(args, "share_all_embeddings", False))
        self.tie = self.share_all or bool(_opt(args, "share_decoder_input_output_embed", False))
        self.enc_norm = self.pre and self.ver.get("encoder", 1) >= 2
        self.dec_norm = (self.pre and not _opt(args, "no_decoder_final_norm", False)
                         and self.ver.get("decoder", 1) > 2)
        self.sin = sinusoidal_table(1100, self.d, PAD).to(dtype)

    # -- pieces -----------------------------------------------------------
    def ln(self, x, p):
        return F.layer_norm(x, (self.d,), self.w[p + ".weight"], self.w[p + ".bias"], 1e-5)

    def lin(self, x, p):
        return F.linear(x, self.w[p + ".weight"], self.w[p + ".bias"])

    def mha(self, x, mem, p, key_pad, causal):
        B, Lq, d = x.shape
        Lk, H = mem.shape[1], self.heads
        dh = d // H
        q = self.lin(x, p + ".q_proj") * dh ** -0.5
        k, v = self.lin(mem, p + ".k_proj"), self.lin(mem, p + ".v_proj")
        q = q.view(B, Lq, H, dh).transpose(1, 2)
        k = k.view(B, Lk, H, dh).transpose(1, 2)
        v = v.view(B, Lk, H, dh).transpose(1, 2)
        s = q @ k.transpose(-1, -2)
        if causal:
            s = s + torch.triu(torch.full((Lq, Lk), float("-inf"), dtype=self.dt), 1)
        s = s.masked_fill(key_pad[:, None, None, :], float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        return self.lin(o.transpose(1, 2).reshape(B, Lq, d), p + ".out_proj")

    def sub(self, x, p_ln, f):
        r = x
        if self.pre:
            x = self.ln(x, p_ln)
        x = r + f(x)
        return x if self.pre else self.ln(x, p_ln)

    def ffn(self, x, p):
        return self.lin(self.act(self.lin(x, p + "fc1")), p + "fc2")

    def positions(self, toks, side):
        mask = toks.ne(PAD).long()
        pos = torch.cumsum(mask, dim=1) * mask + PAD       # make_positions
        if self.learned:
            return self.w[side + ".embed_positions.weight"][pos]
        return self.sin[pos]

    def embed(self, toks, side):
        table = self.w["encoder.embed_tokens.weight" if side == "encoder" or self.share_all
                       else "decoder.embed_tokens.weight"]
        x = self.scale * table[toks] + self.positions(toks, side)
        if self.lnemb:
            x = self.ln(x, side + ".layernorm_embedding")
        return x

    # -- model -----------------------------------------------------------------
    def encode(self, src):
        pad = src.eq(PAD)
        x = self.embed(src, "encoder")
        x = x * (1 - pad.unsqueeze(-1).type_as(x))
        for i in range(self.enc_layers):
            p = "encoder.layers.%d." % i
            x = self.sub(x, p + "self_attn_layer_norm",
                         lambda h: self.mha(h, h, p + "self_attn", pad, False))
            x = self.sub(x, p + "final_layer_norm", lambda h: self.ffn(h, p))
        if self.enc_norm:
            x = self.ln(x, "encoder.layer_norm")
        return x, pad

    def decode(self, enc, enc_pad, prev):
        """Log-probabilities [B, T, V] for decoder input prev [B, T]."""
        y = self.embed(prev, "decoder")
        self_pad = prev.eq(PAD)
        for i in range(self.dec_layers):
            p = "decoder.layers.%d." % i
            y = self.sub(y, p + "self_attn_layer_norm",
                         lambda h: self.mha(h, h, p + "self_attn", self_pad, True))
            y = self.sub(y, p + "encoder_attn_layer_norm",
                         lambda h: self.mha(h, enc, p + "encoder_attn", enc_pad, False))
            y = self.sub(y, p + "final_layer_norm", lambda h: self.ffn(h, p))
        if self.dec_norm:
            y = self.ln(y, "decoder.layer_norm")
        if self.tie:
            W = self.w["encoder.embed_tokens.weight" if self.share_all else "decoder.embed_tokens.weight"]
        else:
            W = self.w["decoder.output_projection.weight"]
        return torch.log_softmax(y @ W.T, dim=-1)

    @staticmethod
    def _pad(seqs):
        L = max(map(len, seqs))
        t = torch.full((len(seqs), L), PAD, dtype=torch.long)
        for b, s in enumerate(seqs):
            t[b, :len(s)] = torch.tensor(s, dtype=torch.long)
        return t

    @torch.no_grad()
    def log_probs(self, pairs):
        """pairs [(src ids, tgt ids)] -> per pair [T + 1, V] (y_1 .. y_T, </s>)."""
        enc, pad = self.encode(self._pad([list(s) + [EOS] for s, _ in pairs]))
        lp = self.decode(enc, pad, self._pad([[EOS] + list(t) for _, t in pairs]))
        return [lp[b, :len(t) + 1] for b, (_, t) in enumerate(pairs)]

    @torch.no_grad()
    def greedy(self, src, max_len):
        """Argmax decoding (never <pad>), </s> forced after max_len tokens."""
        enc, pad = self.encode(self._pad([list(src) + [EOS]]))
        out = []
        while True:
            lp = self.decode(enc, pad, self._pad([[EOS] + out]))[0, -1].clone()
            lp[PAD] = float("-inf")
            tok = EOS if len(out) >= max_len else int(lp.argmax())
            if tok == EOS:
                return out
            out.append(tok)
