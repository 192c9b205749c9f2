"""tools/corpq-convert against hostile inputs (issue 41: High 2, Medium 4,
Medium 5, Low 9, and the routes of the same families found with them).

Every file is built here: checkpoints are written as torch writes them (a
zip of data.pkl and data/N records, or the legacy stream) from a pickle made
by this test, so a record, a storage size, a stride or a numpy object can be
anything; zips are written by hand (a record of zeros is a hole of a sparse
file, a deflate bomb is one compressed block repeated); safetensors headers,
.npz members, config.json and YAML are edited directly.

Each case runs corpq-convert's main() in a forked child whose address space
may grow by at most HEADROOM (256 MB) over this process's, with 60 s of CPU:
a converter that allocates before it checks runs out of memory there, one
that trusts a pointer dies by a signal.  A case passes when the converter
exits with the expected status, says what it refuses in one line on stderr
(no traceback, no "internal error") and leaves nothing behind.  Valid models
converted under the same limit show that the limit leaves room for real work.
"""
import argparse
import collections
import io
import json
import os
import pickle
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
import zlib

import numpy as np
import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_convert as tc  # noqa: E402  (the toolkits' layouts; loads the converter as tc.cc)

cc = tc.cc
HEADROOM = 256 << 20
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


# ---- running the converter in a bounded child -------------------------------------------
def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def run_limited(argv, headroom=HEADROOM, cpu=60):
    """(status, stderr, seconds) of cc.main(argv) in a forked child limited to
    headroom bytes of address space over this process and cpu seconds; a
    child killed by a signal gives -signal, a traceback status 99."""
    err = tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.time()
    pid = os.fork()
    if pid == 0:
        rc = 98
        try:
            os.dup2(err.fileno(), 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            limit = vm_size() + headroom
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
            try:
                rc = cc.main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 2
            except BaseException:
                traceback.print_exc()
                rc = 99
        finally:
            sys.stderr.flush()
            os._exit(rc if isinstance(rc, int) else 97)
    deadline = time.time() + cpu + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            done, status = os.waitpid(pid, 0)
            break
        time.sleep(0.02)
    err.seek(0)
    return os.waitstatus_to_exitcode(status), err.read().decode("utf-8", "replace"), time.time() - t0


def expect(name, argv, status, needle):
    """A hostile case: status, a one-line message holding needle, nothing left
    (in the output's directory, unless that is /proc)."""
    out = argv[argv.index("--output") + 1]
    parent = os.path.dirname(out)
    listed = os.path.isdir(parent) and not parent.startswith("/proc")
    before = set(os.listdir(parent)) if listed else set()
    rc, err, secs = run_limited(argv)
    after = set(os.listdir(parent)) if listed else set()
    line = err.strip()
    ok = (rc == status and needle.lower() in line.lower() and "\n" not in line
          and line.startswith("corpq-convert: ") and "Traceback" not in err
          and "internal error" not in line and not os.path.exists(out) and after == before)
    check(ok, "%s: status %s (want %d), %.1f s, stderr %r (want %r), nothing left: %s"
          % (name, rc, status, secs, line[-600:], needle, after == before and not os.path.exists(out)))
    if ok:
        print("  %-58s exit %d in %.2f s: %s" % (name, rc, secs, line[15:][:110]))


def expect_ok(name, argv):
    """argv converts within the limit, and so does it with --int8 (the
    int8 image, written beside it)."""
    out = argv.index("--output") + 1
    for extra, tag in (([], ""), (["--int8"], " --int8")):
        a = argv[:out] + [argv[out] + tag.replace(" --", "_")] + argv[out + 1:] + extra
        rc, err, secs = run_limited(a)
        check(rc == 0 and os.path.isfile(os.path.join(a[out], "model.corpq")),
              "%s%s converts within the limit (status %s, %r)" % (name, tag, rc, err.strip()[-400:]))
        if rc == 0:
            print("  %-58s exit 0 in %.2f s" % (name + tag, secs))


# ---- writing files as the toolkits do, with any content ------------------------------------
def crc_zeros(n, crc=0):
    block = bytes(1 << 20)
    while n:
        k = min(n, len(block))
        crc = zlib.crc32(block[:k] if k < len(block) else block, crc)
        n -= k
    return crc


def deflated_zeros(prefix, n):
    """A raw deflate stream of prefix and n zero bytes (n a multiple of 1 MB):
    after a full flush the compressor starts afresh, so a compressed block of
    1 MB of zeros is the same each time and is repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    return head + block * (n >> 20) + c.flush()


def write_zip(path, members):
    """A zip written by hand (ZIP64 records throughout): members are
    (name, bytes) stored, (name, n) n zero bytes stored as a hole of a sparse
    file, or (name, (prefix, n)) prefix and n zero bytes deflated; a third
    item declares another uncompressed size than the data's."""
    central = []
    with open(path, "wb") as f:
        for name, data, *declared in members:
            nb = name.encode()
            method, crc = 0, None
            if isinstance(data, int):
                size = csize = data
                crc = crc_zeros(data)
            elif isinstance(data, tuple):
                method, size = 8, len(data[0]) + data[1]
                crc = crc_zeros(data[1], zlib.crc32(data[0]))
                data = deflated_zeros(data[0], data[1])
                csize = len(data)
            else:
                size = csize = len(data)
                crc = zlib.crc32(data)
            size = declared[0] if declared else size
            off = f.tell()
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc,
                                0xFFFFFFFF, 0xFFFFFFFF, len(nb), 20) + nb
                    + struct.pack("<HHQQ", 1, 16, size, csize))
            if isinstance(data, int):
                f.seek(data, 1)
            else:
                f.write(data)
            central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, method, 0, 0x21,
                                       crc, 0xFFFFFFFF, 0xFFFFFFFF, len(nb), 28, 0, 0, 0, 0, 0xFFFFFFFF)
                           + nb + struct.pack("<HHQQQ", 1, 24, size, csize, off))
        cd, cd_off = b"".join(central), f.tell()
        f.write(cd)
        z64 = f.tell()
        f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(members),
                            len(members), len(cd), cd_off))
        f.write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))


class R:
    """Any object as pickle's __reduce__ gives it: (callable, args[, state])."""

    def __init__(self, *rv):
        self.rv = rv

    def __reduce__(self):
        return self.rv


class Storage:
    def __init__(self, key, numel, stype="FloatStorage"):
        self.key, self.numel, self.stype = key, numel, stype


def tensor(storage, size, stride=None, offset=0):
    """A tensor as torch pickles it, with any storage, size, stride and offset."""
    if stride is None:
        stride = [int(np.prod(size[i + 1:])) for i in range(len(size))]
    return R(torch._utils._rebuild_tensor_v2, (storage, offset, tuple(size), tuple(stride), False,
                                               collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def __init__(self, f, legacy=False):
        super().__init__(f, protocol=2)
        self.legacy = legacy

    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            pid = ("storage", getattr(torch, obj.stype), obj.key, "cpu", obj.numel)
            return pid + (None,) if self.legacy else pid
        return None


def pickled(obj, legacy=False):
    buf = io.BytesIO()
    Pickler(buf, legacy).dump(obj)
    return buf.getvalue()


def as_records(sd):
    """{name: tensor} -> ({name: pickled tensor}, {key: bytes}): each tensor its own record."""
    out, records = {}, {}
    for i, (k, v) in enumerate(sd.items()):
        v = v.detach().contiguous()
        records[str(i)] = v.numpy().tobytes()
        out[k] = tensor(Storage(str(i), v.numel()), list(v.shape))
    return out, records


def write_checkpoint(path, state, records, extra=()):
    """A torch zip checkpoint of state (Storage/tensor() leaves) and records
    {key: bytes or a count of zero bytes}."""
    write_zip(path, [("archive/data.pkl", pickled(state))]
              + [("archive/data/" + k, v) for k, v in records.items()]
              + [("archive/version", b"3\n")] + list(extra))


def write_legacy(path, state, records):
    """torch's legacy stream: magic, protocol, system info, the object, the
    keys, then each record as an 8-byte count and its bytes ((count, bytes))."""
    with open(path, "wb") as f:
        for obj in (0x1950A86A20F9469CFC6C, 1001,
                    {"protocol_version": 1001, "little_endian": True,
                     "type_sizes": {"short": 2, "int": 4, "long": 4}}):
            pickle.dump(obj, f, protocol=2)
        f.write(pickled(state, legacy=True))
        pickle.dump(list(records), f, protocol=2)
        for count, data in records.values():
            f.write(struct.pack("<q", count) + data)


# ---- the cases ------------------------------------------------------------------------------
def fairseq_base(d):
    g = torch.Generator().manual_seed(41)
    ck, sp, tp, _, _, args, sd = tc.fairseq_model(d, "base", g, pre=True, learned=False,
                                                  share_all=False, tie=False, lnemb=False, act="relu")
    return ck, sp, tp, args, sd


class Fairseq:
    """A valid fairseq checkpoint's parts, and hostile variants of it as cases."""

    def __init__(self, d, n):
        self.d, self.n = d, n
        self.ck, self.sp, self.tp, self.args, self.sd = fairseq_base(d)
        self.model, self.records = as_records(self.sd)

    def state(self, extra=None, model_over=None, args_over=None):
        a = argparse.Namespace(**dict(vars(self.args), **(args_over or {})))
        m = dict(self.model)
        m.update(model_over or {})
        return {"model": m, "args": a, "extra_state": extra or {"epoch": 3}}

    def argv(self, path):
        self.n[0] += 1
        return ["fairseq", "--checkpoint", path, "--src-dict", self.sp, "--tgt-dict", self.tp,
                "--output", os.path.join(self.d, "o%d" % self.n[0])]

    def case(self, name, status, needle, state=None, records=None, legacy=None, raw=None):
        path = os.path.join(self.d, "f%d.pt" % (self.n[0] + 1))
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        elif legacy is not None:
            write_legacy(path, *legacy)
        else:
            write_checkpoint(path, state or self.state(), self.records if records is None else records)
        expect(name, self.argv(path), status, needle)


def fairseq_numpy(F):
    print("High 2: numpy objects in a checkpoint")
    obj8 = R(np.dtype, ("O8", False, True), (3, "|", None, None, None, -1, -1, 0))
    F.case("numpy scalar of an object dtype (pointer 0x4141...)", 1, "refusing numpy dtype 'O8'",
           F.state({"x": R(np.core.multiarray.scalar, (obj8, b"A" * 8))}))
    field = R(np.dtype, ("V8", False, True), (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 1, 0))
    F.case("numpy dtype with an object field, flags 0", 1, "refusing numpy dtype 'V8'",
           F.state({"x": R(np.core.multiarray.scalar, (field, b"A" * 8))}))
    sub = R(np.dtype, ("f8", False, True), (3, "<", (np.dtype("f8"), (2,)), None, None, 16, 8, 0))
    F.case("numpy dtype with a subarray", 1, "refusing numpy dtype 'f8' with state",
           F.state({"x": R(np.core.multiarray.scalar, (sub, b"A" * 16))}))
    arr = R(np.core.multiarray._reconstruct, (np.ndarray, (0,), b"b"),
            (1, (2,), np.dtype("O"), False, [1, 2]))
    F.case("numpy object array", 1, "refusing numpy dtype 'O8'", F.state({"x": arr}))


def fairseq_records(F):
    print("Medium 4: records shorter than their storages")
    short = dict(F.records, **{"0": F.records["0"][:-8]})
    F.case("record data/0 8 bytes shorter than its storage", 1,
           "record data/0 holds %d bytes, but its storage" % len(short["0"]), records=short)
    big = {"encoder.layers.0.self_attn.bias_k": tensor(Storage("big", 800000), [800000])}
    F.case("a 3.2 MB storage over a 376-byte record", 1, "record data/big holds 376 bytes",
           F.state(model_over=big), dict(F.records, big=bytes(376)))
    # hardening (torch refused it too, with another message): a view past its storage
    past = {"encoder.layers.0.fc1.bias": tensor(Storage("past", 64), [64], offset=8)}
    F.case("a tensor past the end of its storage", 1, "lies outside its storage of 64",
           F.state(model_over=past), dict(F.records, past=bytes(256)))
    F.case("legacy format: a storage declared 100M values, 64 stored", 1,
           "its block holds 64 values, but the pickle declares 100000000",
           legacy=({"model": {"x": tensor(Storage("k", 100000000), [64])}}, {"k": (64, bytes(256))}))


def fairseq_memory(F):
    print("Medium 5: allocations before checks")
    huge = 100000000                  # 400 MB of float32: beyond the child's headroom
    ver = {"encoder.version": tensor(Storage("v", huge), [huge])}
    F.case("encoder.version holding 100M values (400 MB record)", 1,
           "encoder.version holds 100000000 values of type <f4, not one value",
           F.state(model_over=ver), dict(F.records, v=huge * 4))
    F.case("checkpoint pickle with a memo index of 2^31", 1, "no 'model' entry",
           raw=pickle_zip(b"\x80\x02}r\xff\xff\xff\x7f."))
    F.case("checkpoint pickle declaring 2^40 bytes", 1, "the pickle ends early",
           raw=pickle_zip(b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b"x."))
    F.case("checkpoint pickle of 6M objects (12 MB)", 1, "more than 1000000 operations",
           raw=pickle_zip(b"\x80\x02](" + b"}" * 6000000 + b"e."))
    path = os.path.join(F.d, "ignored.pt")
    ign = {"encoder.embed_positions._float_tensor": tensor(Storage("big", huge), [huge])}
    write_checkpoint(path, F.state(model_over=ign), dict(F.records, big=huge * 4))
    expect_ok("fairseq whose ignored buffer has a 400 MB record", F.argv(path))
    expect_ok("fairseq (torch.save, zip)", F.argv(F.ck))
    legacy = os.path.join(F.d, "legacy.pt")
    torch.save({"model": F.sd, "args": F.args}, legacy, _use_new_zipfile_serialization=False)
    expect_ok("fairseq (torch.save, legacy format)", F.argv(legacy))


def fairseq_errors(F):
    print("Low 9 and its family: tracebacks")
    F.case("fairseq arch that is a list", 2, "fairseq architecture a list of 1 items",
           F.state(args_over={"arch": ["transformer"]}))
    F.case("fairseq dropout 'abc'", 1, "fairseq option dropout is 'abc', not a number",
           F.state(args_over={"dropout": "abc"}))
    F.case("fairseq heads 2^20000", 1, "encoder_attention_heads is an integer of 20001 bits",
           F.state(args_over={"encoder_attention_heads": 1 << 20000}))
    one = dict(F.records, one=bytes(4))
    F.case("fairseq state dict key that is not a string", 1, "has a key 7, not a name",
           F.state(model_over={7: tensor(Storage("one", 1), [1])}), one)
    lnk = "encoder.layers.0.layer_norms.x.weight.y"
    F.case("fairseq legacy layer_norms name with extra parts", 1, "unexpected tensor(s) " + lnk,
           F.state(model_over={lnk: tensor(Storage("one", 1), [1])}), one)
    with open(F.ck, "rb") as f:
        good = f.read()
    # hardening (torch refused it too, with another message)
    F.case("fairseq checkpoint in torch's pre-0.4 tar format", 1, "tar format",
           raw=b"\0" * 257 + b"ustar" + good[:300])


def pickle_zip(data):
    """A torch zip checkpoint whose data.pkl is data, as bytes."""
    path = tempfile.mktemp(suffix=".pt")
    write_zip(path, [("archive/data.pkl", data), ("archive/version", b"3\n")])
    with open(path, "rb") as f:
        raw = f.read()
    os.remove(path)
    return raw


def st_write(path, sd, over=None, alias=None, raw_header=None, head_len=None, gap=0):
    """model.safetensors of sd (tied tensors once) with header entries
    changed: over[name] = dtype, alias[name] = a tensor whose offsets it
    takes; gap bytes of padding after the first tensor; another header or
    header length."""
    head, blobs, off, seen = {}, [], 0, {}
    for k, v in sd.items():
        if v.data_ptr() in seen:
            continue
        seen[v.data_ptr()] = k
        raw = v.contiguous().numpy().astype("<f4").tobytes()
        head[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
        if gap and len(blobs) == 1:
            blobs.append(bytes(gap))
            off += gap
    for k, dtype in (over or {}).items():
        head[k]["dtype"] = dtype
    for k, other in (alias or {}).items():
        head[k]["data_offsets"] = head[other]["data_offsets"]
    h = raw_header if raw_header is not None else json.dumps(head).encode()
    with open(path, "wb") as f:
        f.write((head_len or len(h)).to_bytes(8, "little") + h + b"".join(blobs))


def hf_cases(d, n):
    g = torch.Generator().manual_seed(42)
    md, c, sd, _ = tc.hf_model(d, "hfbase", g, store_pos=False)

    def hf(name, status, needle, cfg_over=None, cfg_raw=None, st=None, out=None, vocab=None):
        n[0] += 1
        d2 = os.path.join(d, "h%d" % n[0])
        shutil.copytree(md, d2)
        if vocab is not None:
            with open(os.path.join(d2, "vocab.json"), "w") as f:
                f.write(vocab)
        if cfg_over is not None or cfg_raw is not None:
            with open(os.path.join(d2, "config.json"), "w") as f:
                f.write(cfg_raw if cfg_raw is not None else json.dumps(dict(c, **cfg_over)))
        if st is not None:
            os.remove(os.path.join(d2, "pytorch_model.bin"))
            st_write(os.path.join(d2, "model.safetensors"), sd, **st)
        expect(name, ["hf-marian", "--model-dir", d2, "--output", out or os.path.join(d, "o%d" % n[0])],
               status, needle)

    print("Medium 4: safetensors")
    hf("safetensors F16 declared for F32 data", 1, "F16 of shape [64], needs 128 bytes but its "
       "data_offsets span 256", st={"over": {"model.encoder.layers.0.fc1.bias": "F16"}})
    hf("safetensors tensors at the same offsets", 1, "already runs",
       st={"alias": {"model.decoder.layers.0.fc2.bias": "model.encoder.layers.0.fc2.bias"}})
    hf("safetensors data with a gap", 1, "where the data of the tensors before it ends",
       st={"gap": 64})
    hf("safetensors header that is an array", 1, "the header is a list of 0 items, not an object",
       st={"raw_header": b"[]"})
    hf("safetensors header nested 100,000 deep", 1, "header is nested too deeply",
       st={"raw_header": b"[" * 100000 + b"]" * 100000})
    # hardening (refused before, with another message)
    hf("safetensors header longer than the file", 1, "a header of 1000000 bytes",
       st={"head_len": 1000000})

    print("Medium 5: config checks before allocations")
    hf("max_position_embeddings 3e7 (sinusoids of 9.6 GB)", 2,
       "max_position_embeddings 30000000 is outside 1..65536", cfg_over={"max_position_embeddings": 3e7})

    print("Low 9: tracebacks")
    hf("d_model '1e9'", 1, "d_model is '1e9', not an integer", cfg_over={"d_model": "1e9"})
    hf("d_model 'abc'", 1, "d_model is 'abc', not an integer", cfg_over={"d_model": "abc"})
    hf("negative max_position_embeddings", 2, "max_position_embeddings -5 is outside",
       cfg_over={"max_position_embeddings": -5})
    hf("config.json nested 100,000 deep", 1, "is nested too deeply",
       cfg_raw="[" * 100000 + "]" * 100000)
    hf("config.json that is an array", 1, "is a list of 1 items, not an object", cfg_raw="[1]")
    with open(os.path.join(md, "vocab.json"), encoding="utf-8") as f:
        v = json.load(f)
    v["\ud800"] = v.pop("\u2581h3")
    hf("vocab.json token that is a lone surrogate", 1, "token '\\ud800' cannot be stored",
       vocab=json.dumps(v))
    hf("--output under /proc", 1, "cannot write /proc/corpq-convert-test",
       out="/proc/corpq-convert-test")
    expect_ok("hf-marian (pytorch_model.bin)", ["hf-marian", "--model-dir", md,
                                               "--output", os.path.join(d, "ok_hf")])
    d3 = os.path.join(d, "hf_st")
    shutil.copytree(md, d3)
    os.remove(os.path.join(d3, "pytorch_model.bin"))
    st_write(os.path.join(d3, "model.safetensors"), sd)
    expect_ok("hf-marian (model.safetensors)", ["hf-marian", "--model-dir", d3,
                                               "--output", os.path.join(d, "ok_st")])


def bert_cases(d, n):
    """hf-bert's readers: its tensors by name and shape, its configuration
    and tokenizer files (test_convert_bert.py has the full list)."""
    import test_convert_bert as tb
    g = torch.Generator().manual_seed(45)
    md, c, sd, _, _ = tb.bert_model(d, "bertbase", g, fmt=("safetensors",))

    def bert(name, status, needle, cfg_over=None, drop=None, shape=None, raw=None, sparse=None):
        n[0] += 1
        d2 = os.path.join(d, "b%d" % n[0])
        shutil.copytree(md, d2)
        if cfg_over is not None:
            with open(os.path.join(d2, "config.json"), "w") as f:
                json.dump(dict(c, **cfg_over), f)
        if drop or shape:
            sd2 = {k: v for k, v in sd.items() if k not in (drop or ())}
            sd2.update({k: torch.zeros(*v) for k, v in (shape or {}).items()})
            st_write(os.path.join(d2, "model.safetensors"), sd2)
        for f, data in (raw or {}).items():
            with open(os.path.join(d2, f), "wb") as h:
                h.write(data)
        for f, size in (sparse or {}).items():
            os.truncate(os.path.join(d2, f), size)
        expect(name, ["hf-bert", "--model-dir", d2, "--output", os.path.join(d, "o%d" % n[0])],
               status, needle)

    print("hf-bert")
    bert("BERT missing tensor", 1, "missing tensor encoder.layer.0.attention.self.key.weight",
         drop=["encoder.layer.0.attention.self.key.weight"])
    bert("BERT wrong shape", 1, "embeddings.token_type_embeddings.weight has shape [2, 31]",
         shape={"embeddings.token_type_embeddings.weight": (2, 31)})
    bert("BERT safetensors declaring 2^40 x 32 values in 16 bytes", 1, "the tensors cover",
         raw={"model.safetensors": _st_huge_embedding()})
    bert("BERT hidden_act relu", 2, "hidden_act 'relu'", cfg_over={"hidden_act": "relu"})
    bert("BERT max_position_embeddings 1e8", 2, "max_position_embeddings 100000000 is outside",
         cfg_over={"max_position_embeddings": 100000000})
    bert("BERT type_vocab_size 1e9", 2, "type_vocab_size 1000000000 is outside",
         cfg_over={"type_vocab_size": 1000000000})
    bert("BERT tokenizer.json nested 100,000 deep", 1, "is nested too deeply",
         raw={"tokenizer.json": b"[" * 100000 + b"]" * 100000})
    bert("BERT tokenizer_config.json that is a string", 1, "is 'x', not an object",
         raw={"tokenizer_config.json": b'"x"'})
    bert("BERT vocab.txt of 300 MB (a sparse file)", 1, "holds more than the",
         sparse={"vocab.txt": 300 << 20})
    expect_ok("hf-bert (model.safetensors)", ["hf-bert", "--model-dir", md,
                                             "--output", os.path.join(d, "ok_bert")])


def _st_huge_embedding():
    """model.safetensors whose header declares a word embedding of 2^40 x 32
    values over 16 bytes: refused from the header, nothing allocated."""
    buf = io.BytesIO()
    head = {"embeddings.word_embeddings.weight": {"dtype": "F32", "shape": [1 << 40, 32],
                                                  "data_offsets": [0, (1 << 40) * 128]}}
    h = json.dumps(head).encode()
    buf.write(len(h).to_bytes(8, "little") + h + bytes(16))
    return buf.getvalue()


def npz_members(arrays):
    """(name, .npy bytes) of np.savez's members."""
    out = []
    for k, a in arrays.items():
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.asanyarray(a), allow_pickle=False)
        out.append((k + ".npy", buf.getvalue()))
    return out


def marian_cases(d, n):
    g = torch.Generator().manual_seed(43)
    V = 56
    words = tc.marian_vocab(V)
    voc = os.path.join(d, "m.vocab.yml")
    tc.write_vocab_yml(voc, words)
    y = tc.marian_yml()
    npz, arrays = tc.marian_model(d, "mbase", g, y, V)

    def mar(name, status, needle, extra=(), over=None, y_over=None, y_raw=None, vocab=None, edit=None):
        n[0] += 1
        a = dict(arrays, **(over or {}))
        if y_over is not None or y_raw is not None:
            text = y_raw if y_raw is not None else yaml.safe_dump(dict(y, **y_over)).encode()
            a["special:model.yml"] = np.frombuffer(text + b"\0", dtype=np.int8)
        members = npz_members(a) + list(extra)
        path = os.path.join(d, "m%d.npz" % n[0])
        write_zip(path, [edit(m) for m in members] if edit else members)
        expect(name, ["marian", "--model", path, "--vocab", vocab or voc,
                      "--output", os.path.join(d, "o%d" % n[0])], status, needle)

    print("Medium 5: .npz")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (100 << 20,)})
    header = header.getvalue()
    mar("npz deflate bomb (400 MB in 400 KB) as an extra member", 1,
        "unexpected tensor(s) decoder_l1_aan_W1",
        extra=[("decoder_l1_aan_W1.npy", (header, 400 << 20))])
    mar("npz member whose header says 400 MB, zip size 64 bytes more", 1,
        "member decoder_l1_aan_W1.npy holds %d bytes, but its header" % (len(header) + 64),
        extra=[("decoder_l1_aan_W1.npy", header + bytes(64))])
    # hardening (refused before, with another message)
    mar("npz member 16 bytes shorter than its header says", 1,
        "member encoder_l1_ffn_b1.npy holds",
        edit=lambda m: (m[0], m[1][:-16]) if m[0] == "encoder_l1_ffn_b1.npy" else m)
    mar("npz weights of complex numbers", 1, "member encoder_l1_ffn_b1.npy is not a plain numeric",
        over={"encoder_l1_ffn_b1": arrays["encoder_l1_ffn_b1"].astype(np.complex64)})

    print("Low 9 and its family: special:model.yml and vocabularies")
    mar("npz member name with a newline and a terminal escape", 1,
        "unexpected tensor(s) evil\\n\\x1b[31mFAKE",
        extra=[("evil\n\x1b[31mFAKE.npy", npz_members({"x": np.zeros(3, np.float32)})[0][1])])
    mar("special:model.yml dim-emb 'abc'", 1, "dim-emb is 'abc', not an integer",
        y_over={"dim-emb": "abc"})
    laughs = "a0: &a0 [x, x]\n" + "".join("a%d: &a%d [*a%d, *a%d]\n" % (i, i, i - 1, i - 1)
                                            for i in range(1, 40))
    mar("special:model.yml billion laughs in an option", 1, "special:model.yml uses a YAML alias",
        y_raw=(yaml.safe_dump(y) + laughs + "transformer-tied-layers: *a39\n").encode())
    mar("special:model.yml nested 100,000 deep", 1, "special:model.yml is nested more than 16 deep",
        y_raw=b"a: " + b"[" * 100000 + b"]" * 100000)
    deep = os.path.join(d, "deep.vocab.yml")
    with open(deep, "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    mar("vocabulary YAML nested 100,000 deep (LibYAML recursion)", 1,
        "is not a token -> id mapping", vocab=deep)
    expect_ok("marian (.npz)", ["marian", "--model", npz, "--vocab", voc,
                                "--output", os.path.join(d, "ok_marian")])


def main():
    with tempfile.TemporaryDirectory(prefix="corpq-convert-hostile-") as d:
        n = [0]
        F = Fairseq(d, n)
        for part in (fairseq_numpy, fairseq_records, fairseq_memory, fairseq_errors):
            part(F)
        hf_cases(d, n)
        bert_cases(d, n)
        marian_cases(d, n)
    print("test_convert_hostile: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
