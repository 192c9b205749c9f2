"""corpq-convert --int8: the int8 image written straight from a checkpoint
is the one corpq.model_quantize makes of the float32 conversion.

For small random checkpoints of every format the converter reads (fairseq,
Marian .npz, Hugging Face Marian, Hugging Face BERT in LaBSE's layout and a
sentence-transformers mean-pooling pipeline), tied, untied and shared
embeddings, with each option (--weight-bits 7, --embedding-precision
float32), the model is converted twice: in float32, and with --int8.  The
float32 image is quantized by the C core exactly as corpq.model_quantize
does (extension/pg/model/model_quantize.c: cq_modelfile_load, the three
precision fields of the configuration set, cq_modelfile_write; through
test/libcorpqcore.so), and the --int8 image must have the same tensor table
(names, shapes, dtypes, offsets), the same data section byte for byte (every
code, scale and float32 tensor), the same precision keys, and load in the
core.  Only the configuration JSON's spelling differs (the converter writes
every key, sorted; the core its own order), so the files are not
byte-identical as a whole; test/integration/convert_int8.sh runs the same
comparison through the server (model_import, model_quantize, model_export).

The Python quantizer is also compared with cq_qgemm_quantize_vec_bits on
rows made to be hard (exact halves, all-zero rows, subnormals, huge values,
one non-zero value).

Then the memory: a random BERT checkpoint with the real shapes of a 12-layer
d 768 encoder and a 120,000-token vocabulary (0.71 GB in float32) is
converted with --int8 and in float32 in child processes; their peak RSS
(the child's VmHWM) is logged and must stay below the float32 image size
plus the largest tensor (the float32 converter before this test held the
whole image), and the int8 image must be at most 0.27 of the float32 one.
CORPQ_INT8_MEMORY=0 skips this part.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_convert as tc  # noqa: E402
import test_convert_bert as tb  # noqa: E402
from torch_transformer import _Model  # noqa: E402

cc = tc.cc
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


# ---- the image's parts ------------------------------------------------------------
def parts(blob):
    """(version, configuration dict, [(name, dims, dtype, offset)], data
    section bytes) of a weight file image; checks its CRC."""
    version, clen, ntens, _ = struct.unpack_from("<IIII", blob, 8)
    data_off, data_size = struct.unpack_from("<QQ", blob, 24)
    if struct.unpack_from("<I", blob, data_off + data_size)[0] != zlib.crc32(blob[:data_off + data_size]):
        raise ValueError("checksum")
    if len(blob) != data_off + data_size + 4:
        raise ValueError("length")
    cfg = json.loads(blob[40:40 + clen].decode())
    pos, table = 40 + clen, []
    for _ in range(ntens):
        (nlen,) = struct.unpack_from("<H", blob, pos)
        name = blob[pos + 2:pos + 2 + nlen].decode()
        pos += 2 + nlen
        ndim, dtype = struct.unpack_from("<BB", blob, pos)
        dims = struct.unpack_from("<%dI" % ndim, blob, pos + 2)
        (off,) = struct.unpack_from("<Q", blob, pos + 2 + 4 * ndim)
        pos += 2 + 4 * ndim + 8
        table.append((name, dims, dtype, off))
    return version, cfg, table, blob[data_off:data_off + data_size]


# ---- the core -------------------------------------------------------------------

LIB = ctypes.CDLL(os.environ.get("CORPQ_CORE_LIB", os.path.join(HERE, "..", "libcorpqcore.so")))
PM = ctypes.POINTER(_Model)
LIB.cq_modelfile_load.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(PM), ctypes.c_void_p]
LIB.cq_model_free.argtypes = [PM]
LIB.cq_modelfile_size.argtypes = [PM]
LIB.cq_modelfile_size.restype = ctypes.c_size_t
LIB.cq_modelfile_write.argtypes = [PM, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
LIB.cq_qgemm_quantize_vec_bits.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
LIB.cq_qgemm_quantize_vec_bits.restype = ctypes.c_float


def core_load(blob):
    m = PM()
    err = ctypes.create_string_buffer(1024)
    rc = LIB.cq_modelfile_load(blob, len(blob), ctypes.byref(m), err)
    if rc:
        raise RuntimeError("core refuses the image: %d %s" % (rc, err.raw[4:260].split(b"\0")[0]))
    return m


def core_quantize(blob, bits, emb):
    """corpq.model_quantize's image of a float32 image (model_quantize.c)."""
    m = core_load(blob)
    try:
        m.contents.cfg.precision = 1
        m.contents.cfg.weight_bits = bits
        m.contents.cfg.embedding_precision = 1 if emb == "int8" else 0
        n = LIB.cq_modelfile_size(m)
        buf = ctypes.create_string_buffer(n)
        err = ctypes.create_string_buffer(1024)
        if LIB.cq_modelfile_write(m, buf, n, err):
            raise RuntimeError("cq_modelfile_write failed")
        return buf.raw
    finally:
        LIB.cq_model_free(m)


def core_rows(a, bits):
    a = np.ascontiguousarray(a, np.float32)
    codes = np.zeros(a.shape, np.int8)
    scales = np.zeros(a.shape[0], np.float32)
    for r in range(a.shape[0]):
        scales[r] = LIB.cq_qgemm_quantize_vec_bits(a[r].ctypes.data, a.shape[1], bits,
                                                   codes[r].ctypes.data)
    return codes, scales


# ---- the rule against the core on hard rows ---------------------------------------
def test_rule():
    print("the quantization rule:")
    rng = np.random.default_rng(7)
    rows = [np.zeros(37, np.float32)]
    r = np.zeros(37, np.float32)
    r[:9] = [127, 2.5, -3.5, 0.5, -0.5, 1.5, 126.5, -126.5, 63.5]     # scale 1: exact halves
    rows.append(r)
    r = np.zeros(37, np.float32)
    r[:6] = [63, 31.5, -0.5, 62.5, 1.5, -2.5]                          # scale 1 for 7 bits
    rows.append(r)
    rows.append(np.full(37, 1e-42, np.float32))                       # subnormal: scale 0
    r = np.zeros(37, np.float32)
    r[3] = -3e38                                                       # huge, one value
    rows.append(r)
    rows.append((rng.standard_normal(37) * 1e-39).astype(np.float32))  # subnormal mixture
    rows.append((rng.standard_normal(37) * 1e30).astype(np.float32))
    for _ in range(200):
        rows.append((rng.standard_normal(37) * 10.0 ** rng.uniform(-8, 8)).astype(np.float32))
    # values that fall on halves of the quotient after float32 rounding
    base = rng.integers(-254, 255, size=(64, 37)).astype(np.float32) / 2
    base[:, 0] = 127
    rows.extend(base * np.float32(0.013))
    a = np.stack(rows)
    for bits in (8, 7):
        codes, scales = cc.quantize_rows(a, bits)
        rc, rs = core_rows(a, bits)
        check(np.array_equal(codes, rc) and scales.tobytes() == rs.tobytes(),
              "quantize_rows = cq_qgemm_quantize_vec_bits, %d bits (%d rows differ)"
              % (bits, int((codes != rc).any(axis=1).sum() + (scales != rs).sum())))
    old = cc.QUANTIZE_ROWS
    cc.QUANTIZE_ROWS = 7             # the blocks of rows give the same codes
    codes, scales = cc.quantize_rows(a, 8)
    cc.QUANTIZE_ROWS = old
    rc, rs = core_rows(a, 8)
    check(np.array_equal(codes, rc) and scales.tobytes() == rs.tobytes(), "quantize_rows in blocks of 7 rows")


# ---- each format ----------------------------------------------------------------
VARIANTS = [([], 8, "int8"), (["--weight-bits", "7"], 7, "int8"),
            (["--embedding-precision", "float32"], 8, "float32"),
            (["--weight-bits", "7", "--embedding-precision", "float32"], 7, "float32")]


def compare_int8(tmp, name, argv):
    """Converts argv in float32 and with each --int8 variant; compares each
    int8 image with the core's quantization of the float32 one."""
    tag = name.replace(" ", "_").replace("/", "_")
    out = os.path.join(tmp, tag + ".f32")
    rc, err = tc.run(argv + ["--output", out])
    check(rc == 0, "%s: float32 converts (%s)" % (name, err.strip()))
    if rc:
        return
    f32 = open(os.path.join(out, "model.corpq"), "rb").read()
    for i, (opts, bits, emb) in enumerate(VARIANTS):
        what = "%s --int8 %s" % (name, " ".join(opts))
        o8 = os.path.join(tmp, "%s.i8.%d" % (tag, i))
        rc, err = tc.run(argv + ["--output", o8, "--int8"] + opts)
        check(rc == 0, "%s: converts (%s)" % (what, err.strip()))
        if rc:
            continue
        mine = open(os.path.join(o8, "model.corpq"), "rb").read()
        ref = core_quantize(f32, bits, emb)
        v1, c1, t1, d1 = parts(mine)
        v2, c2, t2, d2 = parts(ref)
        check(v1 == 2 and v2 == 2, "%s: weight file version 2" % what)
        check(t1 == t2, "%s: tensor table = model_quantize's (names, shapes, dtypes, offsets)%s"
              % (what, "" if t1 == t2 else ": %s" % sorted(set(t1) ^ set(t2))[:4]))
        check(d1 == d2, "%s: data section (codes, scales, float32 tensors) byte for byte = "
              "model_quantize's" % what)
        check(c1.get("precision") == "int8" and c1.get("weight_bits") == bits
              and c1.get("embedding_precision") == emb, "%s: precision keys" % what)
        f = {k: v for k, v in c1.items()}
        # the core writes weight_bits 8 and embedding_precision float32 by leaving them out
        same = all(k in f and (np.float32(f[k]) == np.float32(v) if isinstance(v, float) else f[k] == v)
                   for k, v in c2.items())
        check(same, "%s: every key the core writes has the core's value" % what)
        m = None
        try:
            m = core_load(mine)
            check(m.contents.cfg.precision == 1 and m.contents.cfg.weight_bits == bits,
                  "%s: the core loads it as int8" % what)
        except RuntimeError as e:
            check(False, "%s: %s" % (what, e))
        finally:
            if m:
                LIB.cq_model_free(m)
        # the other files are the float32 conversion's
        for fn in sorted(os.listdir(out)):
            if fn != "model.corpq":
                check(open(os.path.join(out, fn), "rb").read() == open(os.path.join(o8, fn), "rb").read(),
                      "%s: %s as in float32" % (what, fn))
    print("  %s: %d variants compared" % (name, len(VARIANTS)))


def test_formats(tmp):
    print("formats:")
    g = torch.Generator().manual_seed(53)
    for name, kw in [("fairseq untied", dict(pre=True, learned=False, share_all=False, tie=False,
                                             lnemb=True, act="gelu")),
                     ("fairseq shared tied", dict(pre=False, learned=True, share_all=True, tie=True,
                                                  lnemb=False, act="relu")),
                     ("fairseq tied", dict(pre=True, learned=False, share_all=False, tie=True,
                                           lnemb=False, act="relu"))]:
        ck, sp, tp, *_ = tc.fairseq_model(tmp, name.replace(" ", "_"), g, **kw)
        compare_int8(tmp, name, ["fairseq", "--checkpoint", ck, "--src-dict", sp, "--tgt-dict", tp])
    V, Vt = 56, 50
    words = tc.marian_vocab(V)
    voc = os.path.join(tmp, "m.vocab.yml")
    tc.write_vocab_yml(voc, words)
    npz, _ = tc.marian_model(tmp, "m_tied", g, tc.marian_yml(), V)
    compare_int8(tmp, "marian tied-all", ["marian", "--model", npz, "--vocab", voc])
    words_t = tc.marian_vocab(Vt)[:2] + ["t%d" % i for i in range(Vt - 2)]
    voc_t = os.path.join(tmp, "t.vocab.yml")
    tc.write_vocab_yml(voc_t, words_t)
    y2 = tc.marian_yml(**{"tied-embeddings": False, "tied-embeddings-all": False,
                          "transformer-ffn-activation": "relu", "dim-vocabs": [V, Vt]})
    npz2, _ = tc.marian_model(tmp, "m_untied", g, y2, V, Vt, untied=True)
    compare_int8(tmp, "marian untied", ["marian", "--model", npz2, "--vocab", voc, "--tgt-vocab", voc_t])
    y3 = tc.marian_yml(**{"transformer-postprocess": "dar", "transformer-postprocess-emb": "dr"})
    npz3, _ = tc.marian_model(tmp, "m_rms", g, y3, V)
    compare_int8(tmp, "marian rms", ["marian", "--model", npz3, "--vocab", voc])
    md, *_ = tc.hf_model(tmp, "hf_opus", g)
    compare_int8(tmp, "hf-marian shared", ["hf-marian", "--model-dir", md])
    md2, *_ = tc.hf_model(tmp, "hf_nopos", g, store_pos=False, scale_embedding=False,
                          activation_function="gelu")
    compare_int8(tmp, "hf-marian no positions", ["hf-marian", "--model-dir", md2])
    md3, *_ = tb.bert_model(tmp, "labse", g)
    compare_int8(tmp, "hf-bert labse", ["hf-bert", "--model-dir", md3])
    md4, *_ = tb.bert_model(tmp, "bert_mean", g, fmt=("safetensors",))
    tb.st_pipeline(md4, g, "mean", dense=False)
    compare_int8(tmp, "hf-bert mean pipeline", ["hf-bert", "--model-dir", md4])
    # options without --int8: a usage error, nothing written
    rc, err = tc.run(["hf-bert", "--model-dir", md3, "--output", os.path.join(tmp, "x"),
                      "--weight-bits", "7"])
    check(rc == 2 and "--int8" in err and not os.path.exists(os.path.join(tmp, "x")),
          "--weight-bits without --int8 is a usage error (%s)" % err.strip())


# ---- sizes and peak memory ----------------------------------------------------------
def labse_config(V):
    return cc.base_config(
        d_model=768, heads=12, encoder_layers=12, decoder_layers=0, ffn_dim=3072, activation="gelu",
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.0, max_positions=512,
        positions="learned", tie_output=True, share_embeddings=True, src_vocab_size=V,
        tgt_vocab_size=V, norm_position="post", encoder_final_norm=False, decoder_final_norm=False,
        scale_embeddings=False, layernorm_embedding=True, layer_norm_eps=1e-12, kind="encoder",
        pooling="cls", pooler=True, token_type_embedding=True)


def test_sizes():
    print("sizes (LaBSE's shapes: 12 layers, d 768, FFN 3072, 512 positions, pooler; its 501,153 "
          "vocab.txt lines make 501,157 rows with corpq's four reserved ones):")
    for V in (501157, 120000):
        cfg = labse_config(V)
        f32 = cc.image_size(cfg)
        cfg.update(precision="int8", weight_bits=8, embedding_precision="int8")
        i8 = cc.image_size(cfg)
        cfg["embedding_precision"] = "float32"
        i8f = cc.image_size(cfg)
        print("  vocabulary %d: float32 %d bytes, int8 %d bytes (%.3f), int8 with float32 "
              "embeddings %d bytes" % (V, f32, i8, i8 / f32, i8f))
        if V == 501157:
            check(f32 == 1883725252, "LaBSE float32: 1,883,725,252 bytes (%d), over the 1 GB of a bytea (the converter hints at model_import_lo)" % f32)
            check(f32 > cc.MAX_IMAGE_BYTES and i8 < cc.MAX_IMAGE_BYTES and i8f > cc.MAX_IMAGE_BYTES,
                  "LaBSE: float32 and int8 with float32 embeddings over 1 GB, int8 under")
            check(i8 == 476594820, "LaBSE int8 image 476,594,820 bytes (%d)" % i8)


def write_big_bert(md, V, d=768, layers=12, ffn=3072, M=512):
    """A BertModel directory with random weights of these shapes, the
    safetensors file written a tensor at a time."""
    os.mkdir(md)
    with open(os.path.join(md, "config.json"), "w") as f:
        json.dump(tb.bert_config(V, d=d, heads=12, ffn=ffn, layers=layers, M=M), f)
    lines = tb.SPECIAL + ["w%d" % i for i in range(V - len(tb.SPECIAL))]
    with open(os.path.join(md, "vocab.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    shapes = {"embeddings.word_embeddings.weight": (V, d), "embeddings.position_embeddings.weight": (M, d),
              "embeddings.token_type_embeddings.weight": (2, d), "embeddings.LayerNorm.weight": (d,),
              "embeddings.LayerNorm.bias": (d,)}
    for i in range(layers):
        p = "encoder.layer.%d." % i
        for x in ("query", "key", "value"):
            shapes[p + "attention.self.%s.weight" % x] = (d, d)
            shapes[p + "attention.self.%s.bias" % x] = (d,)
        shapes.update({p + "attention.output.dense.weight": (d, d), p + "attention.output.dense.bias": (d,),
                       p + "attention.output.LayerNorm.weight": (d,), p + "attention.output.LayerNorm.bias": (d,),
                       p + "intermediate.dense.weight": (ffn, d), p + "intermediate.dense.bias": (ffn,),
                       p + "output.dense.weight": (d, ffn), p + "output.dense.bias": (d,),
                       p + "output.LayerNorm.weight": (d,), p + "output.LayerNorm.bias": (d,)})
    shapes.update({"pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)})
    head, off = {}, 0
    for k, s in shapes.items():
        n = 4 * int(np.prod(s))
        head[k] = {"dtype": "F32", "shape": list(s), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(head).encode()
    rng = np.random.default_rng(120)
    with open(os.path.join(md, "model.safetensors"), "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for k, s in shapes.items():
            rows = s[0]
            for lo in range(0, rows, 8192):
                hi = min(rows, lo + 8192)
                blk = rng.standard_normal((hi - lo,) + tuple(s[1:]), np.float32) * np.float32(0.05)
                f.write(blk.astype("<f4").tobytes())
    return max(4 * int(np.prod(s)) for s in shapes.values())


PEAK = """
import runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    with open("/proc/self/status") as f:
        hwm = [l for l in f if l.startswith("VmHWM:")][0].split()[1]
    sys.stderr.write("VmHWM %s\\n" % hwm)
"""


def peak_of(argv):
    """(exit status, peak RSS in bytes, stderr) of python running argv: the
    child's own VmHWM (the high-water mark of its memory after exec;
    wait4's ru_maxrss would count the pages of this process it was forked
    from)."""
    p = subprocess.run([sys.executable, "-c", PEAK] + argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    hwm = [ln for ln in err.splitlines() if ln.startswith("VmHWM ")]
    rest = "\n".join(ln for ln in err.splitlines() if not ln.startswith("VmHWM "))
    return p.returncode, int(hwm[-1].split()[1]) * 1024 if hwm else 0, rest


def test_memory(tmp):
    print("peak memory, a 12-layer d 768 BERT with 120,000 tokens:")
    md = os.path.join(tmp, "big_bert")
    largest = write_big_bert(md, 120000)
    script = tc.SCRIPT
    base = os.path.join(tmp, "base.py")
    with open(base, "w") as f:
        f.write("import numpy, yaml\n")
    _, base_peak, _ = peak_of([base])
    out8, out32 = os.path.join(tmp, "big.i8"), os.path.join(tmp, "big.f32")
    rc8, peak8, err8 = peak_of([script, "hf-bert", "--model-dir", md, "--output", out8,
                                "--int8"])
    check(rc8 == 0, "the big BERT converts with --int8 (%s)" % err8.strip())
    rc32, peak32, err32 = peak_of([script, "hf-bert", "--model-dir", md, "--output", out32])
    check(rc32 == 0, "the big BERT converts in float32 (%s)" % err32.strip())
    if rc8 or rc32:
        return
    s8 = os.path.getsize(os.path.join(out8, "model.corpq"))
    s32 = os.path.getsize(os.path.join(out32, "model.corpq"))
    print("  float32 image %d bytes, int8 image %d bytes (%.3f), largest tensor %d bytes"
          % (s32, s8, s8 / s32, largest))
    print("  peak RSS: python with numpy %.0f MB, --int8 %.0f MB, float32 %.0f MB"
          % (base_peak / 1e6, peak8 / 1e6, peak32 / 1e6))
    check(s8 < 0.27 * s32, "int8 image at most 0.27 of the float32 one")
    check(peak8 < s32 + largest, "--int8 peak %d below the float32 image + the largest tensor %d"
          % (peak8, s32 + largest))
    check(peak8 < 0.8 * s32, "--int8 peak %d below 0.8 of the float32 image (it holds a tensor at "
          "a time, not the image)" % peak8)
    # and the bytes: the core's quantization of the float32 image
    f32 = open(os.path.join(out32, "model.corpq"), "rb").read()
    ref = core_quantize(f32, 8, "int8")
    del f32
    mine = open(os.path.join(out8, "model.corpq"), "rb").read()
    a, b = parts(mine), parts(ref)
    check(a[2] == b[2] and a[3] == b[3], "the big BERT's int8 image: table and data = model_quantize's")


def main():
    torch.set_num_threads(1)
    test_rule()
    test_sizes()
    with tempfile.TemporaryDirectory(prefix="corpq-convert-int8-") as tmp:
        test_formats(tmp)
    if os.environ.get("CORPQ_INT8_MEMORY", "1") != "0":
        with tempfile.TemporaryDirectory(prefix="corpq-convert-int8-mem-") as tmp:
            test_memory(tmp)
    failures.extend(tc.failures)
    print("test_convert_int8: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
