"""test/integration/convert_int8.sh: corpq-convert --int8 against
model_import + model_quantize + model_export in the server."""
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
import test_convert as tc  # noqa: E402  (the toolkits' layouts, written with random weights)
import test_convert_bert as tb  # noqa: E402
from test_convert_int8 import parts  # noqa: E402

failures = []
VARIANTS = [([], {}), (["--weight-bits", "7", "--embedding-precision", "float32"],
                       {"weight_bits": 7, "embedding_precision": "float32"})]


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    failures.extend([] if ok else [what])


def psql(script):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\t"],
                       input=script, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: %s\nin:\n%s" % (r.stderr, script[:2000]))
    return [row.split("\t") for row in r.stdout.splitlines() if row]


def lit(s):
    return "'%s'" % s.replace("'", "''")


def convert(argv, out, extra=()):
    r = subprocess.run([os.environ["CORPQ_CONVERT"]] + argv + ["--output", out] + list(extra),
                       capture_output=True, text=True)
    check(r.returncode == 0, "corpq-convert %s %s (%s)" % (argv[0], " ".join(extra), r.stderr.strip()))
    return r.returncode == 0


def export(model, path):
    """model_export(model) written to path by the server's client (psql's hex output)."""
    rows = psql("SELECT encode(corpq.model_export(%s), 'hex')" % lit(model))
    with open(path, "wb") as f:
        f.write(bytes.fromhex(rows[0][0]))
    return open(path, "rb").read()


def one(tmp, n, name, argv, encoder=False):
    tag = "m%d" % n
    f32 = os.path.join(tmp, tag + ".f32")
    if not convert(argv, f32):
        return
    docs = ["vocab.json"] if encoder else ["src_vocab.json", "tgt_vocab.json"]
    vs = []
    for i, d in enumerate(docs):
        v = "%s_v%d" % (tag, i)
        # the segmenter is not what is compared: a whitespace-segmented vocabulary
        psql("SELECT corpq.vocab_import(%s, pg_read_file(%s)::jsonb - 'spm' - 'wordpiece')"
             % (lit(v), lit(os.path.join(f32, d))))
        vs.append(v)
    if encoder:
        vs.append(vs[0])
    psql("SELECT corpq.model_import(%s, pg_read_binary_file(%s), %s, %s)"
         % (lit(tag), lit(os.path.join(f32, "model.corpq")), lit(vs[0]), lit(vs[1])))
    words = json.load(open(os.path.join(f32, docs[0]), encoding="utf-8"))["tokens"][4:14]
    text = " ".join(w for w in words if " " not in w)
    for k, (opts, qopts) in enumerate(VARIANTS):
        what = "%s --int8 %s" % (name, " ".join(opts))
        i8 = os.path.join(tmp, "%s.i8.%d" % (tag, k))
        if not convert(argv, i8, ["--int8"] + opts):
            continue
        ver = int(psql("SELECT corpq.model_quantize(%s, %s)" % (lit(tag + "@1"), lit(json.dumps(qopts))))[0][0])
        mine = open(os.path.join(i8, "model.corpq"), "rb").read()
        theirs = export("%s@%d" % (tag, ver), os.path.join(tmp, "%s.q%d" % (tag, k)))
        a, b = parts(mine), parts(theirs)
        check(a[0] == b[0] == 2 and a[2] == b[2] and a[3] == b[3],
              "%s: tensor table and data section = model_export(model_quantize(float32 import)) "
              "byte for byte (%d bytes of data)" % (what, len(a[3])))
        own = "%s_i8_%d" % (tag, k)
        psql("SELECT corpq.model_import(%s, pg_read_binary_file(%s), %s, %s)"
             % (lit(own), lit(os.path.join(i8, "model.corpq")), lit(vs[0]), lit(vs[1])))
        back = export(own, os.path.join(tmp, own + ".exp"))
        check(back == mine, "%s: model_import takes the int8 image; model_export gives it back" % what)
        prec = psql("SELECT precision FROM corpq.models WHERE name = %s" % lit(own))
        check(prec and prec[0][0] == "int8", "%s: corpq.models says int8 (%s)" % (what, prec))
        if encoder:
            q = "SELECT array_to_json(corpq.embed(%s, %s))::text"
        else:
            q = "SELECT corpq.sent_logprob(%%s, %%s, %s)::text" % lit(text)
        r1 = psql(q % (lit("%s@%d" % (tag, ver)), lit(text)))
        r2 = psql(q % (lit(own), lit(text)))
        check(r1 == r2 and r1 and r1[0][0] not in ("", "null"),
              "%s: %s of the imported --int8 model = of the quantized version (%s)"
              % (what, "embed" if encoder else "sent_logprob", r1[0][0][:40] if r1 else None))


def main():
    g = torch.Generator().manual_seed(531)
    psql("CREATE EXTENSION corpq;")
    with tempfile.TemporaryDirectory(prefix="corpq-convert-int8-") as tmp:
        os.chmod(tmp, 0o755)
        ck, sp, tp, *_ = tc.fairseq_model(tmp, "fs", g, pre=True, learned=False, share_all=False,
                                          tie=False, lnemb=True, act="gelu")
        one(tmp, 1, "fairseq untied", ["fairseq", "--checkpoint", ck, "--src-dict", sp, "--tgt-dict", tp])
        ck, sp, tp, *_ = tc.fairseq_model(tmp, "fs2", g, pre=True, learned=False, share_all=False,
                                          tie=True, lnemb=False, act="relu")
        one(tmp, 2, "fairseq tied", ["fairseq", "--checkpoint", ck, "--src-dict", sp, "--tgt-dict", tp])
        words = tc.marian_vocab(56)
        voc = os.path.join(tmp, "m.vocab.yml")
        tc.write_vocab_yml(voc, words)
        npz, _ = tc.marian_model(tmp, "marian", g, tc.marian_yml(), 56)
        one(tmp, 3, "marian tied-all", ["marian", "--model", npz, "--vocab", voc])
        md, *_ = tc.hf_model(tmp, "hf", g)
        os.remove(os.path.join(md, "source.spm"))
        os.remove(os.path.join(md, "target.spm"))
        one(tmp, 4, "hf-marian", ["hf-marian", "--model-dir", md])
        md, *_ = tb.bert_model(tmp, "labse", g, fmt=("safetensors",))
        one(tmp, 5, "hf-bert", ["hf-bert", "--model-dir", md], encoder=True)
    print("convert_int8: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
