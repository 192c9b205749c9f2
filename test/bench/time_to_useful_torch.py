"""PyTorch reference run of bench_time_to_useful.sh: the corpq model's
architecture and initial weights trained with fairseq's recipe for a wall
time budget, on the token ids corpq trains on.

- model and loss: test/ref/torch_transformer.ref_loss (padded batches, F.*
  ops, autograd, float32), dropout at the model's rate, label smoothing;
- optimizer: torch.optim.AdamW (decoupled weight decay, as fairseq's Adam and
  corpq), betas 0.9 / 0.98, eps 1e-9, the corpq job's lr and weight decay,
  no clipping unless the job clips;
- schedule: inverse-sqrt (torch_transformer.inverse_sqrt_lambda) with the
  same rule as corpq: a calibration of the update rate on gradient passes
  over the first batches, expected updates from the time left, warm-up
  from them (the core's own functions through ctypes, so the rule cannot
  drift), unless the job's options fix warmup or steps;
- batches: corpq's batcher (the core through ctypes) over the same pairs in
  the same order with the job's max_tokens and seed, so both see the same
  batches of the same ids in the same order.

Weights are written (corpq format, torch_transformer.write_corpq) at every
tenth of the budget and at the end as OUT/NNN_SECONDS_STEP.corpq, SECONDS the
training time so far (writing excluded).

Usage: time_to_useful_torch.py --data train.tsv --init init.b64
       --options JSON --seconds S --out DIR
(train.tsv: two int[] columns per line from COPY; init.b64: the base64 weight
image from COPY.)  Needs CORPQ_CORE_LIB or test/libcorpqcore.so.
"""
import argparse
import base64
import ctypes
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import torch_transformer as tt  # noqa: E402


class _Calibration(ctypes.Structure):
    _fields_ = [("budget", ctypes.c_double), ("passes", ctypes.c_int),
                ("first", ctypes.c_double), ("timed", ctypes.c_double)]


class _Batcher(ctypes.Structure):      # the leading fields of cq_batcher
    _fields_ = [("n_pairs", ctypes.c_long), ("n_kept", ctypes.c_long),
                ("n_skipped", ctypes.c_long), ("n_batches", ctypes.c_long)]


def core_lib():
    path = os.environ.get("CORPQ_CORE_LIB") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "libcorpqcore.so")
    lib = ctypes.CDLL(path)
    C = ctypes.POINTER(_Calibration)
    lib.cq_calibration_start.argtypes = [C, ctypes.c_double]
    lib.cq_calibration_more.argtypes = [C]
    lib.cq_calibration_more.restype = ctypes.c_bool
    lib.cq_calibration_add.argtypes = [C, ctypes.c_double]
    for f in (lib.cq_calibration_seconds, lib.cq_calibration_seconds_per_update):
        f.argtypes = [C]
        f.restype = ctypes.c_double
    lib.cq_schedule_expected_updates.argtypes = [ctypes.c_double, ctypes.c_double]
    lib.cq_schedule_expected_updates.restype = ctypes.c_int64
    lib.cq_schedule_warmup.argtypes = [ctypes.c_int64]
    lib.cq_schedule_warmup.restype = ctypes.c_int
    B = ctypes.POINTER(_Batcher)
    lib.cq_batcher_new.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                   ctypes.c_long, ctypes.c_int, ctypes.c_int, ctypes.c_uint64,
                                   ctypes.POINTER(B), ctypes.c_void_p]
    lib.cq_batcher_batch.argtypes = [B, ctypes.c_int64, ctypes.c_long,
                                     ctypes.POINTER(ctypes.POINTER(ctypes.c_long)),
                                     ctypes.POINTER(ctypes.c_int), ctypes.c_void_p]
    return lib


def read_pairs(path, max_positions):
    """(src, tgt) id lists as the job keeps them: a side of max_positions
    tokens or more is left out (with </s> it would not fit)."""
    pairs = []
    with open(path) as fh:
        for line in fh:
            s, t = line.rstrip("\n").split("\t")
            s = [int(x) for x in s.strip("{}").split(",") if x]
            t = [int(x) for x in t.strip("{}").split(",") if x]
            if len(s) < max_positions and len(t) < max_positions:
                pairs.append((s, t))
    return pairs


class Batches:
    """corpq's batcher over the pairs: batch i of epoch e, as the job's."""

    def __init__(self, lib, pairs, max_tokens, max_positions, seed):
        n = len(pairs)
        sl = (ctypes.c_int * n)(*[len(s) for s, _ in pairs])
        tl = (ctypes.c_int * n)(*[len(t) for _, t in pairs])
        self.lib, self.pairs = lib, pairs
        self.b = ctypes.POINTER(_Batcher)()
        self.err = ctypes.create_string_buffer(512)
        if lib.cq_batcher_new(sl, tl, n, max_tokens, max_positions, seed, ctypes.byref(self.b), self.err):
            raise RuntimeError("cq_batcher_new failed")
        self.n_batches = self.b.contents.n_batches

    def batch(self, epoch, index):
        idx, n = ctypes.POINTER(ctypes.c_long)(), ctypes.c_int()
        if self.lib.cq_batcher_batch(self.b, epoch, index, ctypes.byref(idx), ctypes.byref(n), self.err):
            raise RuntimeError("cq_batcher_batch failed")
        return [self.pairs[idx[i]] for i in range(n.value)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--options", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    o = json.loads(a.options)
    lib = core_lib()
    torch.set_num_threads(int(o.get("threads", 1)))
    with open(a.init) as fh:
        blob = base64.b64decode(fh.read().replace("\\n", "").replace("\n", ""))
    cfg, w0 = tt.read_corpq(blob)
    drop = float(o.get("dropout", cfg["dropout"]))
    P = {k: torch.tensor(v.copy()).requires_grad_(True) for k, v in w0.items()}
    names = sorted(P)
    pairs = read_pairs(a.data, cfg["max_positions"])
    uf = int(o.get("update_freq", 1))
    data = Batches(lib, pairs, int(o["max_tokens"]), cfg["max_positions"], int(o.get("seed", 0)))
    eps = float(o.get("label_smoothing", 0.1))
    clip = float(o.get("clip_norm", 0))

    def gradients(batches):
        for p in P.values():
            p.grad = None
        tokens = 0
        losses = []
        for b in batches:
            loss, n = tt.ref_loss(cfg, P, b, eps, dtype=torch.float32, dropout=drop)
            losses.append(loss)
            tokens += n
        (sum(losses) / tokens).backward()
        return tokens

    cursor = [0, 0]         # epoch, next batch

    def take(n):
        out = []
        for _ in range(n):
            out.append(data.batch(cursor[0], cursor[1]))
            cursor[1] += 1
            if cursor[1] == data.n_batches:
                cursor[0], cursor[1] = cursor[0] + 1, 0
        return out

    # the schedule, by corpq's rule (explicit steps / warmup win)
    spent = 0.0
    expected = int(o.get("steps", 0))
    if expected == 0 and a.seconds > 0:
        cal = _Calibration()
        lib.cq_calibration_start(ctypes.byref(cal), a.seconds)
        k = 0
        while lib.cq_calibration_more(ctypes.byref(cal)):
            bs = [data.batch(0, (k * uf + j) % data.n_batches) for j in range(uf)]
            t = time.perf_counter()
            gradients(bs)
            lib.cq_calibration_add(ctypes.byref(cal), time.perf_counter() - t)
            k += 1
        spent = lib.cq_calibration_seconds(ctypes.byref(cal))
        expected = lib.cq_schedule_expected_updates(a.seconds - spent,
                                                    lib.cq_calibration_seconds_per_update(ctypes.byref(cal)))
    warmup = int(o["warmup"]) if "warmup" in o else lib.cq_schedule_warmup(expected)
    peak, init = float(o["lr"]), float(o.get("warmup_init_lr", 1e-7))
    opt = torch.optim.AdamW([P[n] for n in names], lr=peak, betas=(0.9, 0.98), eps=1e-9,
                            weight_decay=float(o.get("weight_decay", 1e-4)))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, tt.inverse_sqrt_lambda(peak, init, warmup))
    print("time_to_useful_torch: %d pairs, %d batches per epoch, threads %d, expected updates %d, warm-up %d, "
          "calibration %.1f s" % (len(pairs), data.n_batches, torch.get_num_threads(), expected, warmup, spent))

    os.makedirs(a.out, exist_ok=True)
    saves, step, tokens = 0, 0, 0

    def save():
        nonlocal saves
        saves += 1
        w = {n: P[n].detach().clone() for n in names}
        tt.write_corpq(os.path.join(a.out, "%03d_%.1f_%d.corpq" % (saves, spent, step)), cfg, w)

    while spent < a.seconds and (o.get("steps", 0) == 0 or step < int(o["steps"])):
        t = time.perf_counter()
        n = gradients(take(uf))
        if clip > 0:
            torch.nn.utils.clip_grad_norm_([P[n_] for n_ in names], clip)
        opt.step()
        sched.step()
        step += 1
        tokens += n
        spent += time.perf_counter() - t
        if spent >= a.seconds * (saves + 1) / 10 and spent < a.seconds:
            save()
    save()
    print("time_to_useful_torch: %d updates, %d target tokens in %.1f s = %.0f tok/s"
          % (step, tokens, spent, tokens / max(spent, 1e-9)))


if __name__ == "__main__":
    main()
