"""Reference translation for corpq's translator (extension/nn/infer/translate.h).

* `RefTranslator`: beam search, greedy decoding and sampling written from
  fairseq's algorithm (SequenceGenerator._generate with BeamSearch and
  Sampling) with corpq's documented differences (translate.h), over the
  PyTorch model of torch_transformer.py.  Like fairseq it runs the encoder
  once, the cross-attention keys/values once per layer, keeps a key/value
  cache per hypothesis that is reordered with index_select, decodes a batch
  of sentences together and drops finished ones.  float64 for the checks,
  float32 for the benchmarks.
* `CoreTranslate`: the C translator (cq_translate) through ctypes.

A hypothesis is a dict: tokens (y_1 .. y_T, no </s>), lps (T + 1 per-step
search log-probabilities, the last for </s>), logprob (their sum) and score
(logprob / (T + 1)^lenpen).
"""
import ctypes
import math

import numpy as np
import torch

import torch_transformer as tt

BOS, EOS, PAD, UNK = 0, 2, 1, 3
SAMPLE_STREAM = 0x53414d50      # extension/nn/infer/search.c
M64 = (1 << 64) - 1

DEFAULTS = dict(search="beam", beam=5, nbest=1, lenpen=1.0, max_len_a=0.0, max_len_b=200,
                min_len=1, no_repeat_ngram_size=0, unk_penalty=0.0, temperature=1.0,
                topk=0, topp=0.0, seed=0)


def options(**over):
    o = dict(DEFAULTS)
    o.update(over)
    return o


def max_len(o, cfg, src_len):
    """fairseq's a * src_len + b with src_len counting </s>; 0 for an empty source."""
    if src_len == 0:
        return 0
    n = math.trunc(o["max_len_a"] * (src_len + 1) + o["max_len_b"])
    return max(0, min(n, cfg["max_positions"] - 1))


def uniforms(seed, sent_id, step, n):
    """The C sampler's uniforms for hypotheses 0 .. n-1 of a sentence at a step:
    Philox4x32-10 keyed by mix64(seed ^ mix64(id)), counter (i, step, stream, 0),
    53 bits from words 0 and 1."""
    key = tt.mix64((seed ^ tt.mix64(sent_id)) & M64)
    w = tt.philox4x32(np.arange(n, dtype=np.uint64), step, SAMPLE_STREAM, 0,
                      key & 0xFFFFFFFF, key >> 32)
    hi = (w[0] >> np.uint64(5)).astype(np.float64)
    lo = (w[1] >> np.uint64(6)).astype(np.float64)
    return (hi * 67108864.0 + lo) / 9007199254740992.0


def banned_by_ngrams(y, n):
    """Tokens that would repeat an n-gram of y (fairseq's NGramRepeatBlock
    over y_1 .. y_s)."""
    if n <= 0 or len(y) < n - 1:
        return []
    key = tuple(y[len(y) - (n - 1):]) if n > 1 else ()
    return [y[i + n - 1] for i in range(len(y) - n + 1) if tuple(y[i:i + n - 1]) == key]


class RefTranslator:
    def __init__(self, model):
        self.m, self.c, self.dt = model, model.c, model.dtype
        self.d = self.c["d_model"]
        self.H = self.c["heads"]
        self.dh = self.d // self.H

    def _heads(self, t):
        return t.view(t.shape[0], t.shape[1], self.H, self.dh).transpose(1, 2)

    def encode(self, srcs):
        """Encoder output once; cross keys/values per decoder layer [B, H, S, dh]."""
        m = self.m
        seqs = [list(s) + [EOS] for s in srcs]
        B, S = len(seqs), max(map(len, seqs))
        src = torch.full((B, S), PAD, dtype=torch.long)
        for b, s in enumerate(seqs):
            src[b, :len(s)] = torch.tensor(s)
        ok = torch.stack([torch.arange(S) < len(s) for s in seqs])
        x = m._embed(src, m.src_embed, m.src_pos, "encoder")
        for L in m.enc:
            x = L(x, ok[:, None, :].expand(B, S, S))
        enc = m.enc_final(x)
        cross = [(self._heads(L.cross.k(enc)), self._heads(L.cross.v(enc))) for L in m.dec]
        return cross, ok

    def step(self, tok, pos, cache, cross, ok, temperature):
        """Log-probabilities [R, V] of the rows' next token; appends the rows'
        keys/values at `pos` to cache."""
        m, d = self.m, self.d
        y = m._embed(tok[:, None], m.tgt_embed, m.tgt_pos, "decoder", pos)
        post = tt.variant(self.c, "norm_position") == "post"
        for i, L in enumerate(m.dec):
            h = y if post else L.ln1(y)
            q = self._heads(L.self_attn.q(h))
            k = torch.cat([cache[i][0], self._heads(L.self_attn.k(h))], dim=2)
            v = torch.cat([cache[i][1], self._heads(L.self_attn.v(h))], dim=2)
            cache[i] = (k, v)
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh), dim=-1) @ v
            y = y + L.self_attn.out(a.transpose(1, 2).reshape(-1, 1, d))
            if post:
                y = L.ln1(y)
            q = self._heads(L.cross.q(y if post else L.ln2(y)))
            s = q @ cross[i][0].transpose(-1, -2) / math.sqrt(self.dh)
            s = s.masked_fill(~ok[:, None, None, :], float("-inf"))
            a = torch.softmax(s, dim=-1) @ cross[i][1]
            y = y + L.cross.out(a.transpose(1, 2).reshape(-1, 1, d))
            if post:
                y = L.ln2(y)
                y = L.ln3(y + L.ffn(y))
            else:
                y = y + L.ffn(L.ln3(y))
        logits = m.logits(y[:, 0])
        return torch.log_softmax(logits / temperature, dim=-1)

    # ---- the search --------------------------------------------------------
    def _mask(self, lp, o, step, maxl, minl, toks):
        lp[torch.isnan(lp)] = float("-inf")
        lp[:, BOS] = float("-inf")   # reserved tokens without text are never chosen
        lp[:, PAD] = float("-inf")
        lp[:, UNK] -= o["unk_penalty"]
        force = step >= maxl
        if force.any():
            eos = lp[force, EOS].clone()
            lp[force] = float("-inf")
            lp[force, EOS] = eos
        ban = (~force) & (step < minl)
        lp[ban, EOS] = float("-inf")
        if o["no_repeat_ngram_size"] > 0:
            for r in range(lp.shape[0]):
                for t in banned_by_ngrams(toks[r], o["no_repeat_ngram_size"]):
                    lp[r, t] = float("-inf")

    def _beam(self, lp3, cum, step, K):
        b, _, V = lp3.shape
        if step == 0:
            x = lp3[:, 0, :]
        else:
            x = (lp3 + cum.view(b, K, 1)).reshape(b, K * V)
        sc, idx = torch.topk(x, min(2 * K, x.shape[1] - 1), dim=1)
        beams, toks = idx // V, idx % V
        return sc, toks, beams

    def _sample(self, lp3, cum, step, K, o, ids):
        b, _, V = lp3.shape
        sc = torch.empty(b, K, dtype=lp3.dtype)
        toks = torch.empty(b, K, dtype=torch.long)
        beams = torch.empty(b, K, dtype=torch.long)
        for s in range(b):
            u = uniforms(o["seed"], ids[s], step, K)
            for i in range(K):
                row = 0 if step == 0 else i
                lp = lp3[s, row].numpy().astype(np.float64)
                order = np.lexsort((np.arange(V), -lp))      # by -lp, then id
                if o["topk"] > 0:
                    cand = order[:o["topk"]]
                elif o["topp"] > 0:
                    cs = np.cumsum(np.exp(lp[order]))
                    cand = order[:min(int((cs < o["topp"]).sum()) + 1, V)]
                else:
                    cand = np.arange(V)
                w = np.exp(lp[cand])
                total = w.sum()
                if not total > 0:
                    tok, val = EOS, float("-inf")
                else:
                    j = int(np.searchsorted(np.cumsum(w), u[i] * total, side="right"))
                    pos = np.nonzero(w > 0)[0]
                    j = min(max(j, pos[0]), pos[-1])
                    while w[j] <= 0:
                        j += 1
                    tok = int(cand[j])
                    val = (cum[s * K + row].item() if step else 0.0) + lp[tok]
                sc[s, i], toks[s, i], beams[s, i] = val, tok, row
        return sc, toks, beams

    @torch.no_grad()
    def translate(self, srcs, ids, o):
        """Per source, its nbest hypotheses, best first (see the module doc)."""
        c, K, V = self.c, o["beam"], self.c["tgt_vocab_size"]
        cross, ok = self.encode(srcs)
        maxl = [max_len(o, c, len(s)) for s in srcs]
        minl = [min(o["min_len"], x) for x in maxl]
        finals = [[] for _ in srcs]
        alive = list(range(len(srcs)))
        rows = torch.arange(len(srcs)).repeat_interleave(K)
        cross = [(k[rows], v[rows]) for k, v in cross]
        ok = ok[rows]
        cache = [(torch.empty(len(rows), self.H, 0, self.dh, dtype=self.dt),) * 2
                 for _ in self.m.dec]
        toks = [[] for _ in rows]
        lps = [[] for _ in rows]
        cum = torch.zeros(len(rows), dtype=self.dt)
        ignore = torch.zeros(len(srcs), K, dtype=torch.bool)
        for step in range(max(maxl) + 1):
            last = torch.tensor([self.m.start if step == 0 else t[-1] for t in toks])
            lp = self.step(last, step, cache, cross, ok, o["temperature"])
            rmax = torch.tensor(maxl)[alive].repeat_interleave(K)
            rmin = torch.tensor(minl)[alive].repeat_interleave(K)
            self._mask(lp, o, step, rmax, rmin, toks)
            b = len(alive)
            lp3 = lp.view(b, K, V)
            if o["search"] == "sample":
                sc, ctok, cbeam = self._sample(lp3, cum, step, K, o, [ids[a] for a in alive])
            else:
                sc, ctok, cbeam = self._beam(lp3, cum, step, K)
            clp = lp3[torch.arange(b)[:, None], cbeam, ctok]
            eos = (ctok == EOS) & (sc != float("-inf"))
            fin = eos[:, :K] & ~ignore
            for s, i in fin.nonzero().tolist():
                f = finals[alive[s]]
                if len(f) < K:
                    r = s * K + cbeam[s, i].item()
                    hl = lps[r] + [clp[s, i].item()]
                    f.append(dict(tokens=list(toks[r]), lps=hl, logprob=sc[s, i].item(),
                                  score=sc[s, i].item() / (step + 1) ** o["lenpen"]))
            keep = [s for s in range(b) if len(finals[alive[s]]) < K and step < maxl[alive[s]]]
            if not keep:
                break
            excluded = eos.clone()
            excluded[:, :K] |= ignore
            key = excluded.long() * (2 * K) + torch.arange(eos.shape[1])
            kval, active = torch.topk(key, K, dim=1, largest=False)
            kt = torch.tensor(keep)
            src = (torch.gather(cbeam, 1, active) + torch.arange(b)[:, None] * K)[kt].reshape(-1)
            ntok = torch.gather(ctok, 1, active)[kt].reshape(-1).tolist()
            nlp = torch.gather(clp, 1, active)[kt].reshape(-1).tolist()
            cum = torch.gather(sc, 1, active)[kt].reshape(-1)
            toks = [toks[r] + [t] for r, t in zip(src.tolist(), ntok)]
            lps = [lps[r] + [x] for r, x in zip(src.tolist(), nlp)]
            cache = [(k[src], v[src]) for k, v in cache]
            cross = [(k[src], v[src]) for k, v in cross]
            ok = ok[src]
            ignore = (kval >= 2 * K)[kt]
            alive = [alive[s] for s in keep]
        return [sorted(f, key=lambda h: -h["score"])[:o["nbest"]] for f in finals]


# ---- the C translator through ctypes ---------------------------------------
class _Options(ctypes.Structure):
    _fields_ = [("search", ctypes.c_int), ("beam", ctypes.c_int), ("nbest", ctypes.c_int),
                ("lenpen", ctypes.c_double), ("max_len_a", ctypes.c_double),
                ("max_len_b", ctypes.c_int), ("min_len", ctypes.c_int),
                ("no_repeat_ngram_size", ctypes.c_int), ("unk_penalty", ctypes.c_double),
                ("temperature", ctypes.c_double), ("topk", ctypes.c_int),
                ("topp", ctypes.c_double), ("seed", ctypes.c_uint64)]


class _Source(ctypes.Structure):
    _fields_ = [("ids", ctypes.POINTER(ctypes.c_int32)), ("len", ctypes.c_int),
                ("id", ctypes.c_uint64), ("tag", ctypes.c_int64)]


class _Hyp(ctypes.Structure):
    _fields_ = [("tokens", ctypes.POINTER(ctypes.c_int32)), ("len", ctypes.c_int),
                ("token_logprobs", ctypes.POINTER(ctypes.c_float)),
                ("logprob", ctypes.c_double), ("score", ctypes.c_double),
                ("finished", ctypes.c_bool)]


class _Translation(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("tag", ctypes.c_int64), ("n_hyps", ctypes.c_int),
                ("hyps", ctypes.POINTER(_Hyp))]


class Progress(ctypes.Structure):
    _fields_ = [("sentences", ctypes.c_int64), ("tokens", ctypes.c_int64),
                ("steps", ctypes.c_int64), ("positions", ctypes.c_int64),
                ("active", ctypes.c_int)]


_EMIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(_Translation))
_TICK = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.POINTER(Progress))


class _IO(ctypes.Structure):
    _fields_ = [("emit", _EMIT), ("tick", _TICK), ("arg", ctypes.c_void_p)]


class CoreTranslate(tt.Core):
    """cq_translate through ctypes; hypotheses as in the module doc."""

    def __init__(self, path=None):
        super().__init__(path)
        P = ctypes.c_void_p
        self.lib.cq_translate_bytes.argtypes = [ctypes.POINTER(tt._Model), P, P, ctypes.c_int,
                                                ctypes.c_int]
        self.lib.cq_translate_bytes.restype = ctypes.c_size_t
        self.lib.cq_translate.argtypes = [ctypes.POINTER(tt._Model), P, P, ctypes.c_int,
                                          ctypes.c_int, P, ctypes.c_size_t, P, P]
        self.lib.cq_blas_bind.argtypes = [P]
        self.lib.cq_blas_bind.restype = P

    @staticmethod
    def _options(o):
        oo = _Options()
        for k, _ in _Options._fields_:
            setattr(oo, k, {"beam": 0, "sample": 1}[o[k]] if k == "search" else o[k])
        return oo

    def prepare_translate(self, m, srcs, ids, o, batch):
        """Everything one cq_translate call needs (so that it can be timed alone)."""
        arr = (_Source * len(srcs))()
        keep = []
        for i, s in enumerate(srcs):
            a = np.ascontiguousarray(s, dtype=np.int32)
            keep.append(a)
            arr[i] = _Source(a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), len(a),
                             ids[i], i)
        oo = self._options(o)
        n = self.lib.cq_translate_bytes(m, ctypes.byref(oo), arr, len(srcs), batch)
        ws = np.empty(max(n, 1), dtype=np.uint8)
        out = [None] * len(srcs)
        ticks = []

        def emit(_, t):
            t = t.contents
            out[t.tag] = [dict(tokens=h.tokens[:h.len], lps=h.token_logprobs[:h.len + 1],
                               logprob=h.logprob, score=h.score, finished=h.finished)
                          for h in t.hyps[:t.n_hyps]]

        def tick(_, p):
            ticks.append(p.contents.steps)
            return True
        io = _IO(_EMIT(emit), _TICK(tick), None)
        err = tt._Error()
        args = (m, ctypes.byref(oo), arr, len(srcs), batch, ws.ctypes.data, n,
                ctypes.byref(io), ctypes.byref(err))
        return dict(args=args, keep=(keep, arr, oo, ws, io), out=out, err=err, ticks=ticks)

    def run_translate(self, prep):
        rc = self.lib.cq_translate(*prep["args"])
        if rc:
            raise tt.CoreError(rc, prep["err"].message.decode())
        return prep["out"]

    def translate(self, m, srcs, ids, o, batch=32):
        return self.run_translate(self.prepare_translate(m, srcs, ids, o, batch))
