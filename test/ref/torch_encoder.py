"""Independent PyTorch reference for corpq's encoder models (kind encoder,
models/FORMAT.md "Encoder models"), on the modules of torch_transformer.py.

* `encoder_config`, `encoder_weights`: a configuration and random float32
  weights with the tensors FORMAT.md lists for an encoder (no decoder; the
  token type vector and the pooler when configured), written by
  torch_transformer.write_corpq.
* `embed`: the sentence vectors in float64, padded batch with a key mask:
  <s> ids </s>, embeddings (+ token type) and their norm, the encoder
  layers, the final norm, mean or first-position pooling over each
  sentence's own positions, tanh pooler, torch.nn.functional.normalize.
* `dual_loss`: the dual encoder's additive-margin softmax in both
  directions, for autograd checks.
* `CoreEncoder`: cq_encode through ctypes.
"""
import ctypes
import math

import numpy as np
import torch
import torch.nn.functional as F

import torch_transformer as tt


def encoder_config(preset, vocab, **over):
    """A preset made an encoder's (cq_config_make_encoder) with over applied."""
    cfg = tt.make_config(preset, vocab, vocab, decoder_layers=0, share_embeddings=True,
                         tie_output=True, kind="encoder")
    cfg.update(over)
    return cfg


def encoder_shapes(cfg):
    """name -> shape of an encoder's tensors (FORMAT.md)."""
    s = {k: v for k, v in tt.tensor_shapes(cfg).items() if not k.startswith("decoder.")}
    d = cfg["d_model"]
    if cfg.get("token_type_embedding"):
        s["encoder.embed_token_type"] = (d,)
    if cfg.get("pooler"):
        s["encoder.pooler.dense.weight"] = (d, d)
        s["encoder.pooler.dense.bias"] = (d,)
    return s


def encoder_weights(cfg, seed):
    """Random float32 weights (torch_transformer.random_weights' rules; the
    token type vector drawn as a bias)."""
    return tt.random_weights(cfg, seed, encoder_shapes(cfg))


def reference_model(cfg, w, dtype=torch.float64):
    """torch_transformer.Transformer over the encoder's weights: the decoder
    tensors it expects are aliases it never uses."""
    alias = dict(w)
    for k in ("embed_positions", "layernorm_embedding.weight", "layernorm_embedding.bias",
              "layer_norm.weight", "layer_norm.bias"):
        if "encoder." + k in w:
            alias.setdefault("decoder." + k, w["encoder." + k])
    return tt.Transformer(dict(cfg, decoder_final_norm=False), alias, dtype=dtype)


def padded(sentences):
    """<s> ids </s> of each sentence as a padded [n, L] batch, and its mask of
    real positions."""
    toks = [[tt.BOS] + list(s) + [tt.EOS] for s in sentences]
    n, L = len(toks), max(map(len, toks))
    ids = torch.full((n, L), tt.PAD, dtype=torch.long)
    valid = torch.zeros((n, L), dtype=torch.bool)
    for i, t in enumerate(toks):
        ids[i, :len(t)] = torch.tensor(t)
        valid[i, :len(t)] = True
    return ids, valid


@torch.no_grad()
def embed(cfg, w, sentences):
    """float64 [n, d] vectors of the sentences (lists of ids, no <s> </s>)."""
    model = reference_model(cfg, w)
    d = cfg["d_model"]
    ids, valid = padded(sentences)
    n, L = ids.shape
    scale = math.sqrt(d) if tt.variant(cfg, "scale_embeddings") else 1.0
    x = model.src_embed[ids] * scale + model.src_pos[:L][None]
    if cfg.get("token_type_embedding"):
        x = x + w["encoder.embed_token_type"].double()
    if tt.variant(cfg, "layernorm_embedding"):
        x = model.emb_ln["encoder"](x)
    mask = valid[:, None, :].expand(n, L, L)
    for layer in model.enc:
        x = layer(x, mask)
    h = model.enc_final(x)
    if cfg.get("pooling", "mean") == "cls":
        p = h[:, 0]
    else:
        p = (h * valid[..., None]).sum(1) / valid.sum(1, keepdim=True)
    if cfg.get("pooler"):
        p = torch.tanh(p @ w["encoder.pooler.dense.weight"].double().T
                       + w["encoder.pooler.dense.bias"].double())
    return F.normalize(p, dim=-1, eps=1e-12)


def dual_loss(ex, ey, margin, scale):
    """sum over both directions of the additive-margin softmax cross-entropy
    (Yang et al. 2019, LaBSE), ex, ey [n, d] unit vectors."""
    sim = ex @ ey.T
    logits = scale * (sim - margin * torch.eye(sim.shape[0], dtype=sim.dtype))
    target = torch.arange(sim.shape[0])
    return (F.cross_entropy(logits, target, reduction="sum")
            + F.cross_entropy(logits.T, target, reduction="sum"))


class _Sentence(ctypes.Structure):
    _fields_ = [("ids", ctypes.POINTER(ctypes.c_int32)), ("len", ctypes.c_int),
                ("key", ctypes.c_uint64)]


class CoreEncoder:
    """cq_encode of the C core (test/libcorpqcore.so) through ctypes."""

    def __init__(self, core):
        self.core, lib = core, core.lib
        P = ctypes.c_void_p
        lib.cq_encode_sentences_bytes.argtypes = [P, P, ctypes.c_int]
        lib.cq_encode_sentences_bytes.restype = ctypes.c_size_t
        lib.cq_encode.argtypes = [P, P, ctypes.c_int, P, P, ctypes.c_size_t, P, P]

    def embed(self, m, sentences, d):
        arr = (_Sentence * len(sentences))()
        keep = []
        for i, s in enumerate(sentences):
            a = np.ascontiguousarray(s, dtype=np.int32)
            keep.append(a)
            arr[i].ids = a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
            arr[i].len = len(a)
        lib = self.core.lib
        cfg = ctypes.addressof(m.contents.cfg)
        nb = lib.cq_encode_sentences_bytes(cfg, ctypes.addressof(arr), len(sentences))
        ws = np.empty(max(nb, 1), dtype=np.uint8)
        out = np.empty((len(sentences), d), dtype=np.float32)
        err = tt._Error()
        rc = lib.cq_encode(ctypes.cast(m, ctypes.c_void_p), ctypes.addressof(arr), len(sentences),
                           None, ws.ctypes.data, nb, out.ctypes.data, ctypes.addressof(err))
        if rc:
            raise tt.CoreError(rc, err.message.decode())
        return out
