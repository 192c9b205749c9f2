"""ctypes binding of the ANTAP core (extension/antap), for test_antap.py and
test/bench/bench_antap.py.  Tensors travel through the weight file
(models/ANTAP.md): the core writes it, read_file() parses its tensor table,
write_file() builds one from numpy arrays for the core to load.
"""
import ctypes as C
import os
import struct
import zlib

import numpy as np

lib = C.CDLL(os.environ["CORPQ_CORE_LIB"])
P = C.POINTER


class Error(C.Structure):
    _fields_ = [("code", C.c_int), ("msg", C.c_char * 256)]


class Config(C.Structure):
    _fields_ = [(k, C.c_int) for k in ("pool_rows", "pool_cols", "seq_len", "d_model",
                                       "heads", "ffn_dim", "pred_factor")]

    def as_dict(self):
        return {k: getattr(self, k) for k, _ in self._fields_}


class Model(C.Structure):
    """The leading fields of cq_antap_model (the rest is not read here)."""
    _fields_ = [("cfg", Config), ("params", P(C.c_float)), ("n_floats", C.c_size_t)]


class AdamW(C.Structure):
    _fields_ = [("beta1", C.c_float), ("beta2", C.c_float), ("eps", C.c_float),
                ("weight_decay", C.c_float)]


class TrainOptions(C.Structure):
    _fields_ = [("lr", C.c_double), ("adamw", AdamW), ("batch_size", C.c_int),
                ("max_epochs", C.c_int), ("patience", C.c_int), ("seed", C.c_uint64)]


lib.cq_antap_config_default.argtypes = [P(Config)]
lib.cq_antap_new.argtypes = [P(Config), P(P(Model)), P(Error)]
lib.cq_antap_free.argtypes = [P(Model)]
lib.cq_antap_init_random.argtypes = [P(Model), C.c_uint64]
lib.cq_antap_file_size.argtypes = [P(Model)]
lib.cq_antap_file_size.restype = C.c_size_t
lib.cq_antap_file_write.argtypes = [P(Model), C.c_void_p, C.c_size_t, P(Error)]
lib.cq_antap_file_load.argtypes = [C.c_void_p, C.c_size_t, P(P(Model)), P(Error)]
lib.cq_antap_pass_new.argtypes = [P(Config), C.c_int, P(C.c_void_p), P(Error)]
lib.cq_antap_pass_free.argtypes = [C.c_void_p]
lib.cq_antap_forward.argtypes = [P(Model), C.c_void_p, P(C.c_float), C.c_int, P(C.c_float)]
lib.cq_antap_backward.argtypes = [P(Model), C.c_void_p, P(C.c_float), P(Model)]
lib.cq_antap_mse.argtypes = [P(C.c_float), P(C.c_float), C.c_int, P(C.c_float)]
lib.cq_antap_mse.restype = C.c_double
lib.cq_antap_train_options_default.argtypes = [P(TrainOptions)]
lib.cq_antap_trainer_new.argtypes = [P(Model), P(TrainOptions), P(C.c_void_p), P(Error)]
lib.cq_antap_trainer_free.argtypes = [C.c_void_p]
lib.cq_antap_trainer_step.argtypes = [C.c_void_p, P(C.c_float), P(C.c_float), C.c_int,
                                      P(C.c_double), P(Error)]


def check(rc, err):
    if rc != 0:
        raise RuntimeError("antap error %d: %s" % (rc, err.msg.decode()))


def fptr(a):
    return a.ctypes.data_as(P(C.c_float))


def config(**over):
    c = Config()
    lib.cq_antap_config_default(C.byref(c))
    for k, v in over.items():
        setattr(c, k, v)
    return c


class Antap:
    """A core model; .tensors() reads its parameters as numpy arrays."""

    def __init__(self, cfg=None, seed=None, blob=None):
        self.ptr, err = P(Model)(), Error()
        if blob is not None:
            self.buf = C.create_string_buffer(blob, len(blob))
            check(lib.cq_antap_file_load(self.buf, len(blob), C.byref(self.ptr), C.byref(err)), err)
        else:
            check(lib.cq_antap_new(C.byref(cfg), C.byref(self.ptr), C.byref(err)), err)
            if seed is not None:
                lib.cq_antap_init_random(self.ptr, seed)
        self.cfg = self.ptr.contents.cfg

    def blob(self):
        n, err = lib.cq_antap_file_size(self.ptr), Error()
        buf = C.create_string_buffer(n)
        check(lib.cq_antap_file_write(self.ptr, buf, n, C.byref(err)), err)
        return buf.raw

    def tensors(self):
        return read_file(self.blob())[1]

    def zero(self):
        m = self.ptr.contents
        C.memset(m.params, 0, 4 * m.n_floats)

    def __del__(self):
        lib.cq_antap_free(self.ptr)


class Pass:
    def __init__(self, cfg, max_batch):
        self.ptr, err = C.c_void_p(), Error()
        check(lib.cq_antap_pass_new(C.byref(cfg), max_batch, C.byref(self.ptr), C.byref(err)), err)

    def forward(self, model, x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.zeros(x.shape[0], dtype=np.float32)
        lib.cq_antap_forward(model.ptr, self.ptr, fptr(x), x.shape[0], fptr(out))
        self.keep = x
        return out

    def backward(self, model, dout, grad):
        dout = np.ascontiguousarray(dout, dtype=np.float32)
        lib.cq_antap_backward(model.ptr, self.ptr, fptr(dout), grad.ptr)

    def __del__(self):
        lib.cq_antap_pass_free(self.ptr)


class Trainer:
    def __init__(self, model, lr=1e-3, batch_size=32, **adamw):
        self.o = TrainOptions()
        lib.cq_antap_train_options_default(C.byref(self.o))
        self.o.lr = lr
        self.o.batch_size = batch_size
        for k, v in adamw.items():
            setattr(self.o.adamw, k, v)
        self.ptr, err = C.c_void_p(), Error()
        self.model = model
        check(lib.cq_antap_trainer_new(model.ptr, C.byref(self.o), C.byref(self.ptr), C.byref(err)), err)

    def step(self, x, y):
        x = np.ascontiguousarray(x, dtype=np.float32)
        y = np.ascontiguousarray(y, dtype=np.float32)
        loss, err = C.c_double(), Error()
        check(lib.cq_antap_trainer_step(self.ptr, fptr(x), fptr(y), len(y), C.byref(loss),
                                        C.byref(err)), err)
        return loss.value

    def __del__(self):
        lib.cq_antap_trainer_free(self.ptr)


# ---- the weight file, from models/ANTAP.md --------------------------------

MAGIC = b"CORPQAP\0"


def read_file(blob):
    """(config dict, {name: float32 array}) of a weight file; checks the CRC."""
    import json
    assert blob[:8] == MAGIC
    version, clen, ntens, _res, doff, dsize = struct.unpack_from("<IIIIQQ", blob, 8)
    assert version == 1
    assert zlib.crc32(blob[:doff + dsize]) == struct.unpack_from("<I", blob, doff + dsize)[0]
    cfg = json.loads(blob[40:40 + clen])
    pos, out = 40 + clen, {}
    for _ in range(ntens):
        nlen = struct.unpack_from("<H", blob, pos)[0]
        name = blob[pos + 2:pos + 2 + nlen].decode()
        pos += 2 + nlen
        ndim = blob[pos]
        pos += 2
        dims = struct.unpack_from("<%dI" % ndim, blob, pos)
        pos += 4 * ndim
        off = struct.unpack_from("<Q", blob, pos)[0]
        pos += 8
        n = int(np.prod(dims))
        out[name] = np.frombuffer(blob, dtype="<f4", count=n, offset=doff + off).reshape(dims).copy()
    return cfg, out


def write_file(cfg, tensors, order):
    """A weight file of cfg (dict with "model": "antap") and tensors in order."""
    import json
    cj = json.dumps(cfg).encode()
    table, offs, data_size = b"", [], 0
    for name in order:
        offs.append(data_size)
        data_size += (tensors[name].size * 4 + 63) // 64 * 64
    for name, off in zip(order, offs):
        t = tensors[name]
        table += struct.pack("<H", len(name)) + name.encode() + bytes([t.ndim, 0])
        table += struct.pack("<%dI" % t.ndim, *t.shape) + struct.pack("<Q", off)
    doff = (40 + len(cj) + len(table) + 63) // 64 * 64
    head = MAGIC + struct.pack("<IIIIQQ", 1, len(cj), len(order), 0, doff, data_size)
    body = bytearray(head + cj + table + b"\0" * (doff - 40 - len(cj) - len(table)) + b"\0" * data_size)
    for name, off in zip(order, offs):
        b = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        body[doff + off:doff + off + len(b)] = b
    return bytes(body) + struct.pack("<I", zlib.crc32(bytes(body)))
