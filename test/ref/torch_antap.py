"""ANTAP (paper 002, Sec. 3.2, Eqs. 6-8) built from PyTorch modules, from
the paper and models/ANTAP.md, independently of the C core: the reference
of test_antap.py and test/bench/bench_antap.py.

  input pipeline   F.layer_norm over the whole CAV matrix (no affine),
                   F.adaptive_avg_pool2d to pool_rows x pool_cols
  downscale        GELU, Linear on the distance axis, transpose, GELU,
                   Linear on the dictionary axis
  attention        x + nn.MultiheadAttention(LN(x)) (pre-norm), then the FFN
                   Linear-ReLU-Linear without a residual (Eq. 7 as written)
  prediction       flatten, Linear+GELU shrinking by pred_factor, Linear to 1
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def pred_dims(cfg):
    dims = [cfg["seq_len"] * cfg["d_model"]]
    while dims[-1] > cfg["pred_factor"]:
        dims.append(math.ceil(dims[-1] / cfg["pred_factor"]))
    return dims + [1]


def pipeline(dense, rows, cols, eps=1e-5):
    """Dense CAV matrices [n, N, L] -> network inputs [n, rows, cols]."""
    z = F.layer_norm(dense, dense.shape[-2:], eps=eps)
    return F.adaptive_avg_pool2d(z[:, None], (rows, cols))[:, 0]


class Antap(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, W, S, D = cfg["pool_rows"], cfg["pool_cols"], cfg["seq_len"], cfg["d_model"]
        self.emb_cols = nn.Linear(W, S)
        self.emb_rows = nn.Linear(H, D)
        self.attn_ln = nn.LayerNorm(D, eps=1e-5)
        self.attn = nn.MultiheadAttention(D, cfg["heads"], dropout=0.0, batch_first=True)
        self.fc1 = nn.Linear(D, cfg["ffn_dim"])
        self.fc2 = nn.Linear(cfg["ffn_dim"], D)
        dims = pred_dims(cfg)
        self.pred = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x):                       # x [n, H, W]
        a = F.gelu(x)
        c = F.gelu(self.emb_cols(a).transpose(1, 2))   # [n, S, H]
        e = self.emb_rows(c)                            # [n, S, D]
        h = self.attn_ln(e)
        y = e + self.attn(h, h, h, need_weights=False)[0]
        z = self.fc2(F.relu(self.fc1(y)))
        p = z.flatten(1)
        for i, lin in enumerate(self.pred):
            p = lin(p)
            if i + 1 < len(self.pred):
                p = F.gelu(p)
        return p[:, 0]

    # ---- the core's tensor names (models/ANTAP.md) <-> this module ----
    def named_core_params(self):
        yield "emb_cols.weight", self.emb_cols.weight
        yield "emb_cols.bias", self.emb_cols.bias
        yield "emb_rows.weight", self.emb_rows.weight
        yield "emb_rows.bias", self.emb_rows.bias
        yield "attn_ln.weight", self.attn_ln.weight
        yield "attn_ln.bias", self.attn_ln.bias
        yield "attn.qkv.weight", self.attn.in_proj_weight
        yield "attn.qkv.bias", self.attn.in_proj_bias
        yield "attn.out_proj.weight", self.attn.out_proj.weight
        yield "attn.out_proj.bias", self.attn.out_proj.bias
        yield "ffn.fc1.weight", self.fc1.weight
        yield "ffn.fc1.bias", self.fc1.bias
        yield "ffn.fc2.weight", self.fc2.weight
        yield "ffn.fc2.bias", self.fc2.bias
        for i, lin in enumerate(self.pred):
            yield "pred.%d.weight" % i, lin.weight
            yield "pred.%d.bias" % i, lin.bias

    def load_core(self, tensors):
        with torch.no_grad():
            for name, p in self.named_core_params():
                p.copy_(torch.from_numpy(tensors[name]).to(p.dtype))

    def core_tensors(self):
        return {name: p.detach().to(torch.float32).numpy().copy()
                for name, p in self.named_core_params()}

    def core_grads(self):
        return {name: p.grad.detach().numpy().copy() for name, p in self.named_core_params()}
