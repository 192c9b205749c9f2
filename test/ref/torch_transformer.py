"""Independent PyTorch reference for corpq's transformer core (extension/nn).

* `Transformer`: the pre-norm encoder-decoder of models/FORMAT.md written
  with explicit torch modules, run in float64, padded batches with masks.
* `write_corpq`: a writer of the corpq weight format written from
  models/FORMAT.md (not from the C writer); zlib.crc32 is the checksum.
* `Core`: a ctypes binding of the C core (test/libcorpqcore.so).
"""
import ctypes
import json
import math
import os
import struct
import zlib

import numpy as np
import torch
import torch.nn.functional as F

BOS, EOS, PAD = 0, 2, 1

PRESETS = {
    "tiny": dict(d_model=64, heads=2, encoder_layers=2, decoder_layers=2,
                 ffn_dim=256, max_positions=256),
    "small": dict(d_model=256, heads=4, encoder_layers=3, decoder_layers=3,
                  ffn_dim=1024, max_positions=256),
    "base": dict(d_model=512, heads=8, encoder_layers=6, decoder_layers=6,
                 ffn_dim=2048, max_positions=512),
}


# Architecture variants (models/FORMAT.md, "Architecture variants"): every key
# optional, the default is the original pre-norm architecture.
VARIANT_DEFAULTS = dict(norm_position="pre", encoder_final_norm=True, decoder_final_norm=True,
                        scale_embeddings=True, layernorm_embedding=False, position_offset=0,
                        sinusoid_denominator="half_minus_one", layer_norm_eps=1e-5,
                        output_bias=False, decoder_start_id=EOS, precision="float32",
                        norm="layer",
                        weight_bits=8, embedding_precision="float32")


def variant(cfg, key):
    return cfg.get(key, VARIANT_DEFAULTS[key])


def make_config(preset, src_vocab, tgt_vocab, **over):
    cfg = dict(PRESETS[preset], activation="relu", dropout=0.1,
               attention_dropout=0.1, activation_dropout=0.1,
               positions="sinusoidal", tie_output=True, share_embeddings=False,
               src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab)
    cfg.update(over)
    return cfg


def tensor_shapes(cfg):
    """name -> shape, as listed in models/FORMAT.md."""
    d, f = cfg["d_model"], cfg["ffn_dim"]
    s = {"encoder.embed_tokens": (cfg["src_vocab_size"], d)}
    if not cfg["share_embeddings"]:
        s["decoder.embed_tokens"] = (cfg["tgt_vocab_size"], d)
    if cfg["positions"] == "learned":
        s["encoder.embed_positions"] = (cfg["max_positions"], d)
        s["decoder.embed_positions"] = (cfg["max_positions"], d)

    def ln(p):                  # a norm: RMSNorm has a gain and no bias
        s[p + ".weight"] = (d,)
        if variant(cfg, "norm") == "layer":
            s[p + ".bias"] = (d,)

    def lin(p, o, i):
        s[p + ".weight"] = (o, i)
        s[p + ".bias"] = (o,)
    if variant(cfg, "layernorm_embedding"):
        ln("encoder.layernorm_embedding")
        ln("decoder.layernorm_embedding")
    def layer(p, cross):        # a layer; a decoder's attends to the encoder too
        ln(p + "self_attn_layer_norm")
        lin(p + "self_attn.qkv", 3 * d, d)
        lin(p + "self_attn.out_proj", d, d)
        if cross:
            ln(p + "encoder_attn_layer_norm")
            lin(p + "encoder_attn.q", d, d)
            lin(p + "encoder_attn.kv", 2 * d, d)
            lin(p + "encoder_attn.out_proj", d, d)
        ln(p + "final_layer_norm")
        lin(p + "fc1", f, d)
        lin(p + "fc2", d, f)
    for i in range(cfg["encoder_layers"]):
        layer("encoder.layers.%d." % i, False)
    if variant(cfg, "encoder_final_norm"):
        ln("encoder.layer_norm")
    for i in range(cfg["decoder_layers"]):
        layer("decoder.layers.%d." % i, True)
    if variant(cfg, "decoder_final_norm"):
        ln("decoder.layer_norm")
    if not cfg["tie_output"]:
        s["decoder.output_projection.weight"] = (cfg["tgt_vocab_size"], d)
    if variant(cfg, "output_bias"):
        s["decoder.output_projection.bias"] = (cfg["tgt_vocab_size"],)
    return s


def random_weights(cfg, seed, shapes=None):
    """float32 weights with every parameter non-trivial (LN gains/biases too),
    of tensor_shapes(cfg) or the given shapes."""
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, shape in (shapes or tensor_shapes(cfg)).items():
        if name.endswith("layer_norm.weight") or name.endswith("layernorm_embedding.weight"):
            t = 1.0 + 0.2 * torch.randn(shape, generator=g)
        elif name.endswith(".bias") or len(shape) == 1:
            t = 0.1 * torch.randn(shape, generator=g)
        elif len(shape) == 2 and ("embed" in name or "output_projection" in name):
            t = torch.randn(shape, generator=g) / math.sqrt(cfg["d_model"])
        else:
            t = torch.randn(shape, generator=g) / math.sqrt(shape[1])
        w[name] = t.float()
    return w


# ---- the weight-file writer (models/FORMAT.md) ---------------------------
def write_corpq(path, cfg, weights, order=None, version=1):
    """Writes cfg and weights; tensors in `order` (default: sorted names)."""
    names = order or sorted(weights)
    cjson = json.dumps(cfg).encode()
    table = b""
    off = 0
    blobs = []
    for n in names:
        a = np.ascontiguousarray(weights[n].numpy(), dtype="<f4")
        nb = n.encode()
        table += struct.pack("<H", len(nb)) + nb + struct.pack("<BB", a.ndim, 0)
        table += struct.pack("<%dI" % a.ndim, *a.shape) + struct.pack("<Q", off)
        blob = a.tobytes()
        pad = (-len(blob)) % 64
        blobs.append(blob + b"\0" * pad)
        off += len(blob) + pad
    data = b"".join(blobs)
    data_off = (40 + len(cjson) + len(table) + 63) // 64 * 64
    head = b"CORPQNN\0" + struct.pack("<IIII", version, len(cjson), len(names), 0)
    head += struct.pack("<QQ", data_off, len(data))
    body = head + cjson + table
    body += b"\0" * (data_off - len(body)) + data
    body += struct.pack("<I", zlib.crc32(body))
    with open(path, "wb") as fh:
        fh.write(body)
    return body


# ---- Monte Carlo dropout masks (models/FORMAT.md), written in numpy -------
_MASK32 = (1 << 32) - 1
_IDENT = (lambda x: x)
NO_DROP = {k: None if k in ("attn", "cross", "act") else _IDENT
           for k in ("attn", "cross", "act", "resid_attn", "resid_cross", "resid_ffn")}
KIND = {k: i + 1 for i, k in enumerate(
    ["enc_embed", "dec_embed", "enc_self_attn", "enc_self_resid", "enc_ffn_act",
     "enc_ffn_resid", "dec_self_attn", "dec_self_resid", "dec_cross_attn",
     "dec_cross_resid", "dec_ffn_act", "dec_ffn_resid"])}


def mix64(x):
    """splitmix64's finaliser (on Python ints)."""
    m = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on numpy uint64 arrays holding 32-bit words."""
    c = [np.asarray(v, dtype=np.uint64) for v in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & np.uint64(_MASK32),
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & np.uint64(_MASK32)]
        k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(_MASK32)
        k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(_MASK32)
    return c


def dropout_mask(seed, pass_, pair_key, site, rows, cols, p):
    """[rows, cols] of 0 or 1/(1-p): element j of row t is dropped when the
    uniform from counter (j // 4, t, site, pass) word j % 4 is below p."""
    key = mix64((seed ^ mix64(pair_key)) & ((1 << 64) - 1))
    t = np.arange(rows, dtype=np.uint64)[:, None]
    j = np.arange(cols, dtype=np.uint64)[None, :]
    words = philox4x32(j >> np.uint64(2), np.broadcast_to(t, (rows, cols)), site, pass_,
                       key & _MASK32, key >> 32)
    w = np.choose((j & np.uint64(3)).astype(np.int64), words)
    u = (w >> np.uint64(8)).astype(np.float64) / 16777216.0
    # the core compares in float32; u has 24 bits, so this is exact
    return np.where(u.astype(np.float32) < np.float32(p), 0.0, 1.0 / np.float64(np.float32(1.0) - np.float32(p)))


class PhiloxDropout:
    """The core's dropout masks for a padded batch (per pair, sentence-local)."""

    def __init__(self, cfg, seed, pass_, keys, src_lens, tgt_lens, dtype):
        self.c, self.seed, self.pass_, self.keys = cfg, seed, pass_, keys
        self.src_lens, self.tgt_lens, self.dtype = src_lens, tgt_lens, dtype

    @staticmethod
    def site(kind, layer, head):
        return (kind << 24) | (layer << 12) | head

    def rows(self, x, kind, layer, target, p):
        """x [B, L, n] times per-pair masks over each pair's rows."""
        if p <= 0:
            return x
        B, L, n = x.shape
        m = torch.ones(B, L, n, dtype=self.dtype)
        lens = self.tgt_lens if target else self.src_lens
        for b in range(B):
            m[b, : lens[b]] = torch.from_numpy(dropout_mask(
                self.seed, self.pass_, self.keys[b], self.site(kind, layer, 0), lens[b], n, p))
        return x * m

    def weights(self, P, kind, layer, q_target, k_target, p):
        """P [B, H, Lq, Lk] times per-(pair, head) masks: row = query."""
        if p <= 0:
            return P
        B, H, Lq, Lk = P.shape
        m = torch.ones_like(P)
        for b in range(B):
            lq = (self.tgt_lens if q_target else self.src_lens)[b]
            lk = (self.tgt_lens if k_target else self.src_lens)[b]
            for h in range(H):
                m[b, h, :lq, :lk] = torch.from_numpy(dropout_mask(
                    self.seed, self.pass_, self.keys[b], self.site(kind, layer, h), lq, lk, p))
        return P * m

    def encoder(self, i):
        c, K = self.c, KIND
        return {"attn": lambda P: self.weights(P, K["enc_self_attn"], i, False, False,
                                               c["attention_dropout"]),
                "resid_attn": lambda x: self.rows(x, K["enc_self_resid"], i, False, c["dropout"]),
                "act": lambda h: self.rows(h, K["enc_ffn_act"], i, False, c["activation_dropout"]),
                "resid_ffn": lambda x: self.rows(x, K["enc_ffn_resid"], i, False, c["dropout"])}

    def decoder(self, i):
        c, K = self.c, KIND
        return {"attn": lambda P: self.weights(P, K["dec_self_attn"], i, True, True,
                                               c["attention_dropout"]),
                "resid_attn": lambda x: self.rows(x, K["dec_self_resid"], i, True, c["dropout"]),
                "cross": lambda P: self.weights(P, K["dec_cross_attn"], i, True, False,
                                                c["attention_dropout"]),
                "resid_cross": lambda x: self.rows(x, K["dec_cross_resid"], i, True, c["dropout"]),
                "act": lambda h: self.rows(h, K["dec_ffn_act"], i, True, c["activation_dropout"]),
                "resid_ffn": lambda x: self.rows(x, K["dec_ffn_resid"], i, True, c["dropout"])}


def read_corpq(blob):
    """(cfg, {name: float32 array}) from a weight file image, per FORMAT.md;
    raises ValueError on anything the format forbids."""
    if blob[:8] != b"CORPQNN\0":
        raise ValueError("magic")
    version, clen, ntens, reserved = struct.unpack_from("<IIII", blob, 8)
    data_off, data_size = struct.unpack_from("<QQ", blob, 24)
    if version != 1 or reserved != 0 or data_off % 64 or len(blob) != data_off + data_size + 4:
        raise ValueError("header")
    if struct.unpack_from("<I", blob, data_off + data_size)[0] != zlib.crc32(blob[:data_off + data_size]):
        raise ValueError("checksum")
    cfg = json.loads(blob[40:40 + clen].decode())
    pos, out = 40 + clen, {}
    for _ in range(ntens):
        (nlen,) = struct.unpack_from("<H", blob, pos)
        name = blob[pos + 2:pos + 2 + nlen].decode()
        pos += 2 + nlen
        ndim, zero = struct.unpack_from("<BB", blob, pos)
        dims = struct.unpack_from("<%dI" % ndim, blob, pos + 2)
        (off,) = struct.unpack_from("<Q", blob, pos + 2 + 4 * ndim)
        pos += 2 + 4 * ndim + 8
        n = int(np.prod(dims))
        if zero or off % 64 or off + 4 * n > data_size:
            raise ValueError("tensor " + name)
        out[name] = np.frombuffer(blob, "<f4", n, data_off + off).reshape(dims)
    if any(blob[pos:data_off]):
        raise ValueError("padding")
    return cfg, out


# ---- the reference model ----------------------------------------------------
def int8_rows(v, qmax=127):
    """The int8 rule of models/FORMAT.md (precision "int8"), per row of v
    [..., k], dequantized: in float32, scale = max|v| / Q and codes
    round-half-even(v / scale) clamped to [-Q, Q] (0 for an all-zero row),
    Q = 127 (activations; weights of weight_bits 8) or 63 (weight_bits 7);
    returns codes * scale.  float32 as the rule says: a weight stored in
    float32 gets the same code as in C, which a float64 quotient near a half
    would not always give."""
    v32 = v.float()
    s = v32.abs().amax(-1, keepdim=True) / qmax
    q = torch.round(v32 / torch.where(s > 0, s, torch.ones_like(s))).clamp(-qmax, qmax)
    return q.to(v.dtype) * s.to(v.dtype)


def int8_linear(x, w, b=None, wmax=127):
    """A product of an int8 model: activations per row (position) and
    weights per output row quantized (codes up to wmax), the sum exact
    (float64 here)."""
    y = int8_rows(x) @ int8_rows(w, wmax).T
    return y if b is None else y + b


def sinusoids(n, d, denominator="half_minus_one", offset=0):
    """Rows offset .. offset + n - 1 of the [sin | cos] table, in double:
    f_i = exp(-i ln(10000) / (h - 1)) ("half_minus_one", f_0 = 1 if h = 1) or
    exp(-i ln(10000) / h) ("half"), h = d / 2."""
    h = d // 2
    if denominator == "half":
        step = math.log(10000.0) / h
    else:
        step = math.log(10000.0) / (h - 1) if h > 1 else 0.0
    freq = torch.exp(-step * torch.arange(h, dtype=torch.float64))
    ang = torch.arange(offset, offset + n, dtype=torch.float64)[:, None] * freq[None, :]
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)


def rms_norm(x, g, eps):
    """RMSNorm (models/FORMAT.md, norm "rms"; Zhang and Sennrich 2019):
    x / sqrt(mean(x^2) + eps) * g over the last axis, written from the
    formula (this torch has no torch.nn.RMSNorm); autograd differentiates it."""
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.bias, self.eps = torch.nn.Parameter(torch.ones(d)), None, eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


def make_norm(c):
    """The configuration's norm over d_model: LayerNorm, or RMSNorm (norm "rms")."""
    d, eps = c["d_model"], variant(c, "layer_norm_eps")
    return RMSNorm(d, eps) if variant(c, "norm") == "rms" else torch.nn.LayerNorm(d, eps=eps)


def activate(h, act):
    if act == "relu":
        return torch.relu(h)
    if act == "swish":
        return h * torch.sigmoid(h)
    return F.gelu(h)  # exact erf GELU


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x, mem, mask, wdrop=None):
        """x [B, Lq, d], mem [B, Lk, d], mask [B, Lq, Lk] True = may attend;
        wdrop: dropout of the weights [B, H, Lq, Lk]."""
        B, Lq, d = x.shape
        Lk = mem.shape[1]
        q = self.q(x).view(B, Lq, self.h, self.dh).transpose(1, 2)
        k = self.k(mem).view(B, Lk, self.h, self.dh).transpose(1, 2)
        v = self.v(mem).view(B, Lk, self.h, self.dh).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        s = s.masked_fill(~mask[:, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        if wdrop is not None:
            p = wdrop(p)
        return self.out((p @ v).transpose(1, 2).reshape(B, Lq, d))


class FFN(torch.nn.Module):
    def __init__(self, d, f, act):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d, f), torch.nn.Linear(f, d)
        self.act = act

    def forward(self, x, adrop=None):
        h = activate(self.fc1(x), self.act)
        if adrop is not None:
            h = adrop(h)
        return self.fc2(h)


class EncoderLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.post = variant(c, "norm_position") == "post"
        self.ln1, self.ln2 = make_norm(c), make_norm(c)
        self.attn = Attention(d, c["heads"])
        self.ffn = FFN(d, c["ffn_dim"], c["activation"])

    def forward(self, x, mask, dr=NO_DROP):
        if self.post:   # x = LN(x + Drop(sublayer(x)))
            x = self.ln1(x + dr["resid_attn"](self.attn(x, x, mask, dr["attn"])))
            return self.ln2(x + dr["resid_ffn"](self.ffn(x, dr["act"])))
        h = self.ln1(x)
        x = x + dr["resid_attn"](self.attn(h, h, mask, dr["attn"]))
        return x + dr["resid_ffn"](self.ffn(self.ln2(x), dr["act"]))


class DecoderLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.post = variant(c, "norm_position") == "post"
        self.ln1, self.ln2, self.ln3 = (make_norm(c) for _ in range(3))
        self.self_attn = Attention(d, c["heads"])
        self.cross = Attention(d, c["heads"])
        self.ffn = FFN(d, c["ffn_dim"], c["activation"])

    def forward(self, y, enc, self_mask, cross_mask, dr=NO_DROP):
        if self.post:
            y = self.ln1(y + dr["resid_attn"](self.self_attn(y, y, self_mask, dr["attn"])))
            y = self.ln2(y + dr["resid_cross"](self.cross(y, enc, cross_mask, dr["cross"])))
            return self.ln3(y + dr["resid_ffn"](self.ffn(y, dr["act"])))
        h = self.ln1(y)
        y = y + dr["resid_attn"](self.self_attn(h, h, self_mask, dr["attn"]))
        y = y + dr["resid_cross"](self.cross(self.ln2(y), enc, cross_mask, dr["cross"]))
        return y + dr["resid_ffn"](self.ffn(self.ln3(y), dr["act"]))


class Transformer(torch.nn.Module):
    def __init__(self, cfg, weights, dtype=torch.float64):
        super().__init__()
        self.dtype = dtype
        self.c = c = cfg
        d = c["d_model"]
        self.enc = torch.nn.ModuleList(EncoderLayer(c) for _ in range(c["encoder_layers"]))
        self.dec = torch.nn.ModuleList(DecoderLayer(c) for _ in range(c["decoder_layers"]))
        self.enc_ln, self.dec_ln = make_norm(c), make_norm(c)
        self.emb_ln = {s: make_norm(c) for s in ("encoder", "decoder")}
        self.start = variant(c, "decoder_start_id")
        self.to(dtype)
        for m in self.emb_ln.values():
            m.to(dtype)
        self._load(weights)
        self.wmax = 63 if variant(c, "weight_bits") == 7 else 127
        if variant(c, "embedding_precision") == "int8":
            # token embeddings as codes of the weights' width, per token row,
            # decoded in float32 as the format says (code x scale, rounded
            # once); a tied output projection is quantized from the float32
            # table by the same rule in int8_linear, to the same codes
            def codes(t):
                return int8_rows(t.float(), self.wmax).to(self.dtype)
            src = codes(self.src_embed)
            self.tgt_embed = src if c["share_embeddings"] else codes(self.tgt_embed)
            self.src_embed = src
        if variant(c, "precision") == "int8":
            for m in self.modules():
                if isinstance(m, torch.nn.Linear):
                    m.forward = (lambda x, m=m: int8_linear(x, m.weight, m.bias, self.wmax))

    def _load(self, w):
        c, d = self.c, self.c["d_model"]
        t = {k: v.to(self.dtype) for k, v in w.items()}
        self.src_embed = t["encoder.embed_tokens"]
        self.tgt_embed = self.src_embed if c["share_embeddings"] else t["decoder.embed_tokens"]
        self.out_proj = self.tgt_embed if c["tie_output"] else t["decoder.output_projection.weight"]
        self.out_bias = t.get("decoder.output_projection.bias") if variant(c, "output_bias") else None
        if c["positions"] == "learned":
            self.src_pos, self.tgt_pos = t["encoder.embed_positions"], t["decoder.embed_positions"]
        else:
            self.src_pos = self.tgt_pos = sinusoids(
                c["max_positions"], d, variant(c, "sinusoid_denominator"),
                variant(c, "position_offset")).to(self.dtype)

        def lin(m, p, rows=None):       # a linear layer or a norm (RMSNorm: no bias)
            W, b = t[p + ".weight"], t.get(p + ".bias")
            if rows is not None:
                W, b = W[rows], b[rows]
            m.weight.data.copy_(W)
            if m.bias is not None:
                m.bias.data.copy_(b)

        def self_attn(p, ln, a):        # a self-attention block and its norm
            lin(ln, p + "self_attn_layer_norm")
            for j, m in enumerate((a.q, a.k, a.v)):
                lin(m, p + "self_attn.qkv", slice(j * d, (j + 1) * d))
            lin(a.out, p + "self_attn.out_proj")

        def ffn(p, ln, f):              # a feed-forward block and its norm
            lin(ln, p + "final_layer_norm")
            lin(f.fc1, p + "fc1")
            lin(f.fc2, p + "fc2")
        with torch.no_grad():
            for i, L in enumerate(self.enc):
                p = "encoder.layers.%d." % i
                self_attn(p, L.ln1, L.attn)
                ffn(p, L.ln2, L.ffn)
            if variant(c, "encoder_final_norm"):
                lin(self.enc_ln, "encoder.layer_norm")
            if variant(c, "layernorm_embedding"):
                for side, m in self.emb_ln.items():
                    lin(m, side + ".layernorm_embedding")
            for i, L in enumerate(self.dec):
                p = "decoder.layers.%d." % i
                self_attn(p, L.ln1, L.self_attn)
                lin(L.ln2, p + "encoder_attn_layer_norm")
                lin(L.cross.q, p + "encoder_attn.q")
                lin(L.cross.k, p + "encoder_attn.kv", slice(0, d))
                lin(L.cross.v, p + "encoder_attn.kv", slice(d, 2 * d))
                lin(L.cross.out, p + "encoder_attn.out_proj")
                ffn(p, L.ln3, L.ffn)
            if variant(c, "decoder_final_norm"):
                lin(self.dec_ln, "decoder.layer_norm")

    def _embed(self, toks, table, pos, side=None, first=0):
        """Token embedding (scaled) plus positions first.., then the
        embedding layer norm if configured (side: "encoder"/"decoder")."""
        d = self.c["d_model"]
        scale = math.sqrt(d) if variant(self.c, "scale_embeddings") else 1.0
        x = table[toks] * scale + pos[first: first + toks.shape[1]][None]
        if side is not None and variant(self.c, "layernorm_embedding"):
            x = self.emb_ln[side](x)
        return x

    def enc_final(self, x):
        return self.enc_ln(x) if variant(self.c, "encoder_final_norm") else x

    def logits(self, y):
        """Output logits of decoder states y [..., d]."""
        if variant(self.c, "decoder_final_norm"):
            y = self.dec_ln(y)
        if variant(self.c, "precision") == "int8":
            return int8_linear(y, self.out_proj, self.out_bias, self.wmax)
        z = y @ self.out_proj.T
        return z if self.out_bias is None else z + self.out_bias

    @torch.no_grad()
    def log_probs(self, pairs, mc=None, keys=None):
        """pairs: [(src ids, tgt ids)] -> list of [T+1, V] log-prob tensors.
        mc = (seed, pass): Monte Carlo dropout with PhiloxDropout masks."""
        B = len(pairs)
        srcs = [list(s) + [EOS] for s, _ in pairs]
        dins = [[self.start] + list(t) for _, t in pairs]
        S, T = max(map(len, srcs)), max(map(len, dins))
        src = torch.full((B, S), PAD, dtype=torch.long)
        din = torch.full((B, T), PAD, dtype=torch.long)
        for b in range(B):
            src[b, : len(srcs[b])] = torch.tensor(srcs[b])
            din[b, : len(dins[b])] = torch.tensor(dins[b])
        src_ok = torch.stack([torch.arange(S) < len(s) for s in srcs])
        drop = None
        if mc is not None:
            drop = PhiloxDropout(self.c, mc[0], mc[1], keys or [0] * B,
                                 [len(s) for s in srcs], [len(t) for t in dins], self.dtype)
        x = self._embed(src, self.src_embed, self.src_pos, "encoder")
        if drop:
            x = drop.rows(x, KIND["enc_embed"], 0, False, self.c["dropout"])
        for i, L in enumerate(self.enc):
            x = L(x, src_ok[:, None, :].expand(B, S, S), drop.encoder(i) if drop else NO_DROP)
        enc = self.enc_final(x)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        y = self._embed(din, self.tgt_embed, self.tgt_pos, "decoder")
        if drop:
            y = drop.rows(y, KIND["dec_embed"], 0, True, self.c["dropout"])
        for i, L in enumerate(self.dec):
            y = L(y, enc, causal[None].expand(B, T, T), src_ok[:, None, :].expand(B, T, S),
                  drop.decoder(i) if drop else NO_DROP)
        lp = torch.log_softmax(self.logits(y), dim=-1)
        return [lp[b, : len(dins[b])] for b in range(B)]

    @torch.no_grad()
    def score(self, pairs, mc=None, keys=None):
        """Per pair: dict(logp, p_max, entropy, argmax) per position, as numpy."""
        out = []
        for (s, t), lp in zip(pairs, self.log_probs(pairs, mc, keys)):
            gold = torch.tensor(list(t) + [EOS])
            p = lp.exp()
            out.append(dict(logp=lp.gather(1, gold[:, None])[:, 0].numpy(),
                            p_max=p.max(1).values.numpy(),
                            entropy=(-(p * lp).nansum(1)).numpy(),
                            argmax=lp.argmax(1).numpy()))
        return out


# ---- ctypes binding of the C core -------------------------------------------
class _Pair(ctypes.Structure):
    _fields_ = [("src", ctypes.POINTER(ctypes.c_int32)), ("src_len", ctypes.c_int),
                ("tgt", ctypes.POINTER(ctypes.c_int32)), ("tgt_len", ctypes.c_int),
                ("key", ctypes.c_uint64)]


class _Dropout(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("seed", ctypes.c_uint64), ("pass_", ctypes.c_uint32)]


class _Shape(ctypes.Structure):
    _fields_ = [("n_pairs", ctypes.c_int), ("src_positions", ctypes.c_long),
                ("tgt_positions", ctypes.c_long), ("max_src", ctypes.c_int),
                ("max_tgt", ctypes.c_int)]


class _Out(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in
                ("logp", "p_max", "entropy", "argmax", "sent_logp", "sent_count")]


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 256)]


class _Config(ctypes.Structure):
    _fields_ = [("d_model", ctypes.c_int), ("heads", ctypes.c_int),
                ("encoder_layers", ctypes.c_int), ("decoder_layers", ctypes.c_int),
                ("ffn_dim", ctypes.c_int), ("activation", ctypes.c_int),
                ("dropout", ctypes.c_float), ("attention_dropout", ctypes.c_float),
                ("activation_dropout", ctypes.c_float), ("max_positions", ctypes.c_int),
                ("positions", ctypes.c_int), ("tie_output", ctypes.c_bool),
                ("share_embeddings", ctypes.c_bool), ("src_vocab_size", ctypes.c_int),
                ("tgt_vocab_size", ctypes.c_int),
                # the architecture variants (models/FORMAT.md)
                ("post_norm", ctypes.c_bool), ("encoder_final_norm", ctypes.c_bool),
                ("decoder_final_norm", ctypes.c_bool), ("scale_embeddings", ctypes.c_bool),
                ("layernorm_embedding", ctypes.c_bool), ("position_offset", ctypes.c_int),
                ("sinusoid_half", ctypes.c_bool), ("layer_norm_eps", ctypes.c_float),
                ("output_bias", ctypes.c_bool), ("decoder_start_id", ctypes.c_int),
                ("precision", ctypes.c_int),     # 0 float32, 1 int8
                ("norm", ctypes.c_int),          # 0 layer, 1 rms
                ("weight_bits", ctypes.c_int),   # int8 versions: 8 or 7
                # encoder models (models/FORMAT.md): 0 = translation, mean,
                # no pooler, no token type vector
                ("kind", ctypes.c_int), ("pooling", ctypes.c_int),
                ("pooler", ctypes.c_bool), ("token_type_embedding", ctypes.c_bool),
                ("embedding_precision", ctypes.c_int)]   # 0 float32, 1 int8


class _Model(ctypes.Structure):
    _fields_ = [("cfg", _Config)]     # the leading member of cq_model


class CoreError(Exception):
    def __init__(self, code, message):
        super().__init__("%d: %s" % (code, message))
        self.code = code


class Core:
    """The C core through ctypes: load a weight file, score pairs."""

    def __init__(self, path=None):
        self.lib = lib = ctypes.CDLL(path or os.environ.get(
            "CORPQ_CORE_LIB", os.path.join(os.path.dirname(__file__), "..", "libcorpqcore.so")))
        P = ctypes.c_void_p
        lib.cq_modelfile_load.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.POINTER(_Model)), P]
        lib.cq_model_free.argtypes = [ctypes.POINTER(_Model)]
        lib.cq_batch_shape_of.argtypes = [ctypes.POINTER(_Model), P, ctypes.c_int, P, P]
        lib.cq_forward_workspace_bytes.argtypes = [P, P]
        lib.cq_forward_workspace_bytes.restype = ctypes.c_size_t
        lib.cq_forward.argtypes = [ctypes.POINTER(_Model), P, ctypes.c_int, P, P,
                                   ctypes.c_size_t, P, P]

    def create(self, cfg, seed):
        """A randomly initialised model from the core (cq_model_init_random)."""
        plain = {k: v for k, v in cfg.items() if k in dict(_Config._fields_)
                 and k not in ("activation", "positions", "kind", "pooling", "embedding_precision")}
        c = _Config(**plain)
        c.kind = 1 if cfg.get("kind") == "encoder" else 0
        c.pooling = 1 if cfg.get("pooling") == "cls" else 0
        c.activation = ["relu", "gelu", "swish"].index(cfg["activation"])
        c.positions = 1 if cfg["positions"] == "learned" else 0
        c.post_norm = variant(cfg, "norm_position") == "post"
        c.sinusoid_half = variant(cfg, "sinusoid_denominator") == "half"
        c.norm = ["layer", "rms"].index(variant(cfg, "norm"))
        c.weight_bits = variant(cfg, "weight_bits")
        c.embedding_precision = ["float32", "int8"].index(variant(cfg, "embedding_precision"))
        for k in ("encoder_final_norm", "decoder_final_norm", "scale_embeddings",
                  "layernorm_embedding", "position_offset", "layer_norm_eps", "output_bias",
                  "decoder_start_id"):
            setattr(c, k, variant(cfg, k))
        m = ctypes.POINTER(_Model)()
        err = _Error()
        self.lib.cq_model_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        rc = self.lib.cq_model_new(ctypes.byref(c), ctypes.byref(m), ctypes.byref(err))
        if rc:
            raise CoreError(rc, err.message.decode())
        self.lib.cq_model_init_random.argtypes = [ctypes.POINTER(_Model), ctypes.c_uint64]
        self.lib.cq_model_init_random(m, seed)
        return self._pack(m)

    def save(self, m):
        """The weight file image the core writes (cq_modelfile_write)."""
        self.lib.cq_modelfile_size.argtypes = [ctypes.POINTER(_Model)]
        self.lib.cq_modelfile_size.restype = ctypes.c_size_t
        self.lib.cq_modelfile_write.argtypes = [ctypes.POINTER(_Model), ctypes.c_void_p,
                                                ctypes.c_size_t, ctypes.c_void_p]
        n = self.lib.cq_modelfile_size(m)
        buf = ctypes.create_string_buffer(n)
        err = _Error()
        rc = self.lib.cq_modelfile_write(m, buf, n, ctypes.byref(err))
        if rc:
            raise CoreError(rc, err.message.decode())
        return buf.raw

    def load(self, blob):
        """A model from a file image, packed for inference as the extension's
        model cache does (cq_model_pack); training copies it unpacked."""
        m = ctypes.POINTER(_Model)()
        err = _Error()
        rc = self.lib.cq_modelfile_load(blob, len(blob), ctypes.byref(m), ctypes.byref(err))
        if rc:
            raise CoreError(rc, err.message.decode())
        return self._pack(m)

    def _pack(self, m):
        err = _Error()
        self.lib.cq_model_pack.argtypes = [ctypes.POINTER(_Model), ctypes.c_void_p]
        rc = self.lib.cq_model_pack(m, ctypes.byref(err))
        if rc:
            self.lib.cq_model_free(m)
            raise CoreError(rc, err.message.decode())
        return m

    def free(self, m):
        self.lib.cq_model_free(m)

    def workspace_bytes(self, m, pairs):
        arr, keep = self._pairs(pairs, None)
        shape, err = _Shape(), _Error()
        rc = self.lib.cq_batch_shape_of(m, arr, len(pairs), ctypes.byref(shape), ctypes.byref(err))
        if rc:
            raise CoreError(rc, err.message.decode())
        return self.lib.cq_forward_workspace_bytes(ctypes.byref(m.contents.cfg), ctypes.byref(shape))

    @staticmethod
    def _pairs(pairs, keys):
        arr = (_Pair * len(pairs))()
        keep = []
        for i, (s, t) in enumerate(pairs):
            sa = np.ascontiguousarray(s, dtype=np.int32)
            ta = np.ascontiguousarray(t, dtype=np.int32)
            keep += [sa, ta]
            arr[i].src = sa.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
            arr[i].src_len = len(sa)
            arr[i].tgt = ta.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
            arr[i].tgt_len = len(ta)
            arr[i].key = keys[i] if keys is not None else 0
        return arr, keep

    def prepare(self, m, pairs, mc=None, keys=None):
        """Everything one forward call needs, so that it can be timed alone."""
        arr, keep = self._pairs(pairs, keys)
        nt = sum(len(t) + 1 for _, t in pairs)
        ws = np.empty(self.workspace_bytes(m, pairs), dtype=np.uint8)
        o = dict(logp=np.empty(nt, np.float32), p_max=np.empty(nt, np.float32),
                 entropy=np.empty(nt, np.float32), argmax=np.empty(nt, np.int32),
                 sent_logp=np.empty(len(pairs), np.float64),
                 sent_count=np.empty(len(pairs), np.intc))
        out = _Out(**{k: v.ctypes.data for k, v in o.items()})
        dr = _Dropout(1 if mc else 0, mc[0] if mc else 0, mc[1] if mc else 0)
        err = _Error()
        args = (m, arr, len(pairs), ctypes.byref(dr), ws.ctypes.data, ws.nbytes,
                ctypes.byref(out), ctypes.byref(err))
        return dict(args=args, keep=(keep, ws, out, dr, arr), o=o, err=err)

    def run(self, prep):
        rc = self.lib.cq_forward(*prep["args"])
        if rc:
            raise CoreError(rc, prep["err"].message.decode())
        return prep["o"]

    def score(self, m, pairs, mc=None, keys=None):
        """Per pair dict(logp, p_max, entropy, argmax, sent_logp, count)."""
        o = self.run(self.prepare(m, pairs, mc, keys))
        res, r = [], 0
        for b, (_, t) in enumerate(pairs):
            n = len(t) + 1
            res.append(dict(logp=o["logp"][r:r + n].copy(), p_max=o["p_max"][r:r + n].copy(),
                            entropy=o["entropy"][r:r + n].copy(),
                            argmax=o["argmax"][r:r + n].copy(),
                            sent_logp=float(o["sent_logp"][b]), count=int(o["sent_count"][b])))
            r += n
        return res


# ---- training: a functional autograd model and the C training API ----------
def ref_loss(cfg, P, pairs, eps, dtype=torch.float64, dropout=0.0):
    """Summed label-smoothed cross-entropy (torch's label_smoothing) and the
    token count for pairs under parameters P {corpq name: tensor}; written
    from models/FORMAT.md with padded batches and masks, autograd-ready.
    dropout > 0: torch's own dropout at the core's sites (for benchmarks;
    its masks are not the core's)."""
    def drop(x):
        return F.dropout(x, dropout, True) if dropout > 0 else x
    d, H = cfg["d_model"], cfg["heads"]
    dh = d // H
    B = len(pairs)
    srcs = [list(s) + [EOS] for s, _ in pairs]
    dins = [[variant(cfg, "decoder_start_id")] + list(t) for _, t in pairs]
    golds = [list(t) + [EOS] for _, t in pairs]
    S, T = max(map(len, srcs)), max(map(len, dins))
    src = torch.full((B, S), PAD, dtype=torch.long)
    din = torch.full((B, T), PAD, dtype=torch.long)
    for b in range(B):
        src[b, : len(srcs[b])] = torch.tensor(srcs[b])
        din[b, : len(dins[b])] = torch.tensor(dins[b])
    src_ok = torch.stack([torch.arange(S) < len(s) for s in srcs])
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    src_tab = P["encoder.embed_tokens"]
    tgt_tab = src_tab if cfg["share_embeddings"] else P["decoder.embed_tokens"]
    out_w = tgt_tab if cfg["tie_output"] else P["decoder.output_projection.weight"]
    if cfg["positions"] == "learned":
        spos, tpos = P["encoder.embed_positions"], P["decoder.embed_positions"]
    else:
        spos = tpos = sinusoids(cfg["max_positions"], d, variant(cfg, "sinusoid_denominator"),
                                variant(cfg, "position_offset")).to(dtype)
    eps_ln = variant(cfg, "layer_norm_eps")
    post = variant(cfg, "norm_position") == "post"
    scale = math.sqrt(d) if variant(cfg, "scale_embeddings") else 1.0

    def ln(x, p):
        if variant(cfg, "norm") == "rms":
            return rms_norm(x, P[p + ".weight"], eps_ln)
        return F.layer_norm(x, (d,), P[p + ".weight"], P[p + ".bias"], eps_ln)

    def embed(toks, table, pos, side):
        x = table[toks] * scale + pos[:toks.shape[1]][None]
        if variant(cfg, "layernorm_embedding"):
            x = ln(x, side + ".layernorm_embedding")
        return drop(x)

    def sublayer(x, p, f):
        """Pre-norm x + Drop(f(LN(x))) or post-norm LN(x + Drop(f(x)))."""
        return ln(x + drop(f(x)), p) if post else x + drop(f(ln(x, p)))

    def lin(x, p):
        return F.linear(x, P[p + ".weight"], P[p + ".bias"])

    def heads(t):
        return t.view(B, t.shape[1], H, dh).transpose(1, 2)

    def attend(q, k, v, mask):
        s = heads(q) @ heads(k).transpose(-1, -2) / math.sqrt(dh)
        s = s.masked_fill(~mask[:, None], float("-inf"))
        o = drop(torch.softmax(s, dim=-1)) @ heads(v)
        return o.transpose(1, 2).reshape(B, q.shape[1], d)

    def ffn(x, p):
        h = activate(lin(x, p + "fc1"), cfg["activation"])
        return lin(drop(h), p + "fc2")

    def self_attn(p, mask):
        def f(h):
            q, k, v = lin(h, p + "self_attn.qkv").split(d, -1)
            return lin(attend(q, k, v, mask), p + "self_attn.out_proj")
        return f

    def cross_attn(p):
        def f(h):
            q = lin(h, p + "encoder_attn.q")
            k, v = lin(enc, p + "encoder_attn.kv").split(d, -1)
            return lin(attend(q, k, v, cmask), p + "encoder_attn.out_proj")
        return f

    x = embed(src, src_tab, spos, "encoder")
    emask = src_ok[:, None, :].expand(B, S, S)
    for i in range(cfg["encoder_layers"]):
        p = "encoder.layers.%d." % i
        x = sublayer(x, p + "self_attn_layer_norm", self_attn(p, emask))
        x = sublayer(x, p + "final_layer_norm", lambda h: ffn(h, p))
    enc = ln(x, "encoder.layer_norm") if variant(cfg, "encoder_final_norm") else x
    y = embed(din, tgt_tab, tpos, "decoder")
    smask = causal[None].expand(B, T, T)
    cmask = src_ok[:, None, :].expand(B, T, S)
    for i in range(cfg["decoder_layers"]):
        p = "decoder.layers.%d." % i
        y = sublayer(y, p + "self_attn_layer_norm", self_attn(p, smask))
        y = sublayer(y, p + "encoder_attn_layer_norm", cross_attn(p))
        y = sublayer(y, p + "final_layer_norm", lambda h: ffn(h, p))
    if variant(cfg, "decoder_final_norm"):
        y = ln(y, "decoder.layer_norm")
    logits = y @ out_w.T
    if variant(cfg, "output_bias"):
        logits = logits + P["decoder.output_projection.bias"]
    valid = torch.stack([torch.arange(T) < len(t) for t in dins])
    gold_pad = torch.full((B, T), PAD, dtype=torch.long)
    for b in range(B):
        gold_pad[b, : len(golds[b])] = torch.tensor(golds[b])
    rows, gold = logits[valid], gold_pad[valid]     # pair after pair, as packed
    return F.cross_entropy(rows, gold, reduction="sum", label_smoothing=eps), len(gold)


def inverse_sqrt_lambda(peak, init, warmup):
    """fairseq's inverse_sqrt as a LambdaLR factor of the updates done."""
    def f(u):
        if u < warmup:
            return (init + (peak - init) * u / warmup) / peak
        return math.sqrt(warmup / max(u, 1))
    return f


class _Adam(ctypes.Structure):
    _fields_ = [("beta1", ctypes.c_float), ("beta2", ctypes.c_float),
                ("eps", ctypes.c_float), ("weight_decay", ctypes.c_float)]


class _TrainConfig(ctypes.Structure):
    _fields_ = [("lr", ctypes.c_double), ("warmup_init_lr", ctypes.c_double),
                ("warmup_updates", ctypes.c_int), ("adam", _Adam),
                ("clip_norm", ctypes.c_double), ("label_smoothing", ctypes.c_float),
                ("update_freq", ctypes.c_int), ("max_tokens", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("dropout", ctypes.c_bool),
                # encoder models' dual-encoder loss (dual_pass.h)
                ("margin", ctypes.c_float), ("scale", ctypes.c_float)]


class _TrainState(ctypes.Structure):
    _fields_ = [("tc", _TrainConfig), ("model", ctypes.POINTER(_Model)),
                ("grad", ctypes.POINTER(_Model)), ("exp_avg", ctypes.c_void_p),
                ("exp_avg_sq", ctypes.c_void_p), ("step", ctypes.c_int64),
                ("epoch", ctypes.c_int64), ("batch_in_epoch", ctypes.c_int64),
                ("ws", ctypes.c_void_p), ("ws_bytes", ctypes.c_size_t)]


class _TrainBatch(ctypes.Structure):
    _fields_ = [("pairs", ctypes.c_void_p), ("n_pairs", ctypes.c_int)]


class _TrainStats(ctypes.Structure):
    _fields_ = [("loss", ctypes.c_double), ("nll", ctypes.c_double),
                ("tokens", ctypes.c_long), ("pairs", ctypes.c_int),
                ("grad_norm", ctypes.c_double), ("lr", ctypes.c_double),
                ("step", ctypes.c_int64)]


class TrainCore(Core):
    """The C training API (extension/nn/train/train_state.h) through ctypes."""

    def __init__(self, path=None):
        super().__init__(path)
        lib, P = self.lib, ctypes.c_void_p
        lib.cq_train_config_default.argtypes = [P]
        lib.cq_train_state_new.argtypes = [ctypes.POINTER(_Model), P,
                                           ctypes.POINTER(ctypes.POINTER(_TrainState)), P]
        lib.cq_train_state_free.argtypes = [ctypes.POINTER(_TrainState)]
        lib.cq_model_param_floats.argtypes = [ctypes.POINTER(_Model)]
        lib.cq_model_param_floats.restype = ctypes.c_size_t
        for f in (lib.cq_train_gradients, lib.cq_train_step):
            f.argtypes = [ctypes.POINTER(_TrainState), P, ctypes.c_int, P, P]

    def config(self, **over):
        tc = _TrainConfig()
        self.lib.cq_train_config_default(ctypes.byref(tc))
        for k, v in over.items():
            if k in ("beta1", "beta2", "eps", "weight_decay"):
                setattr(tc.adam, k, v)
            else:
                setattr(tc, k, v)
        return tc

    def state(self, model, tc):
        st = ctypes.POINTER(_TrainState)()
        err = _Error()
        rc = self.lib.cq_train_state_new(model, ctypes.byref(tc), ctypes.byref(st), ctypes.byref(err))
        if rc:
            raise CoreError(rc, err.message.decode())
        return st

    def _batches(self, batches):
        arr = (_TrainBatch * len(batches))()
        keep = []
        for i, pairs in enumerate(batches):
            pa, k = self._pairs(pairs, list(range(len(pairs))))
            keep += [pa, k]
            arr[i].pairs = ctypes.cast(pa, ctypes.c_void_p)
            arr[i].n_pairs = len(pairs)
        return arr, keep

    def _call(self, fn, st, batches):
        arr, keep = self._batches(batches)
        stats, err = _TrainStats(), _Error()
        rc = fn(st, arr, len(batches), ctypes.byref(stats), ctypes.byref(err))
        if rc:
            raise CoreError(rc, err.message.decode())
        return {k: getattr(stats, k) for k, _ in _TrainStats._fields_}

    def gradients(self, st, batches):
        """(stats, {name: gradient array}) of one update's batches."""
        stats = self._call(self.lib.cq_train_gradients, st, batches)
        return stats, read_corpq(self.save(st.contents.grad))[1]

    def step(self, st, batches):
        return self._call(self.lib.cq_train_step, st, batches)

    def weights(self, st):
        return read_corpq(self.save(st.contents.model))[1]
