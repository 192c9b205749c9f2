"""The driver of hf_bert.sh (runs inside its throw-away cluster): see hf_bert.sh."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(HERE, "..", "ref"), os.path.join(HERE, "..", "docs")):
    sys.path.insert(0, p)
import test_convert_bert as tb  # noqa: E402  (the BERT layout, written with random weights)
from ref_hf_bert import HFBertRef, HFBertTokenizer  # noqa: E402
import examples  # noqa: E402  (the SQL blocks of the documents)

TOL = 1e-5            # float32 corpq against the float64 reference, per component
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    failures.extend([] if ok else [what])


def psql(script):
    """The rows (tab-separated fields) psql prints for script; exits on an error."""
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\t"],
                       input=script, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: %s\nin:\n%s" % (r.stderr, script[:2000]))
    return [row.split("\t") for row in r.stdout.splitlines() if row]


def lit(s):
    """s as an SQL string literal (standard_conforming_strings)."""
    return "'%s'" % s.replace("'", "''")


def read(path, mode="r"):
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as f:
        return f.read()


def main():
    g = torch.Generator().manual_seed(46)
    with tempfile.TemporaryDirectory(prefix="corpq-hf-bert-") as tmp:
        md, c, sd, vtext, opts = tb.bert_model(tmp, "labse", g, fmt=("safetensors",))
        out = os.path.join(tmp, "labse.out")
        r = subprocess.run([os.environ["CORPQ_CONVERT"], "hf-bert", "--model-dir", md, "--output", out],
                           capture_output=True, text=True)
        check(r.returncode == 0, "corpq-convert hf-bert (%s)" % (r.stderr.strip() or r.stdout.strip()))
        if r.returncode:
            sys.exit(1)
        wp = read(os.path.join(out, "wordpiece.json"))
        # the import as docs/embeddings.md writes it, from the directory (the
        # server reads it: pg_read_file, as the superuser of this cluster)
        os.chmod(tmp, 0o755)
        ours = examples.fragments("docs/embeddings.md", "test/integration/hf_bert.sh")
        check(len(ours) == 1 and "/path/labse" in "\n".join(ours[0]),
              "docs/embeddings.md has the import block this test runs")
        psql("CREATE EXTENSION corpq;\n" + "\n".join(ours[0]).replace("/path/labse", out))
        doc = json.loads(read(os.path.join(out, "vocab.json")))
    long_one = "the " * 39
    sents = tb.SENTENCES + [long_one]
    psql("CREATE TABLE sent (id int, s text);\nINSERT INTO sent VALUES %s;"
         % ", ".join("(%d, %s)" % (i, lit(s)) for i, s in enumerate(sents)))
    rows = psql("""SELECT id, coalesce(array_to_json(corpq.embed('labse', s))::text, 'null'),
       array_to_json(corpq.vocab_encode('labse', s)), array_to_json(corpq.bpe_tokens('labse_wp', s))
  FROM sent ORDER BY id""")
    # preloaded (hf_bert.sh): the embeddings came from the shared segmenter's copy
    check(psql("SELECT kind FROM corpq.shared_vocab_cache() WHERE vocabulary = 'labse_wp'") == [["wordpiece"]],
          "the WordPiece segmenter labse_wp is in the shared cache")
    ref = HFBertRef(sd, c)
    tok = HFBertTokenizer(vtext, dict(json.loads(wp)))
    # corpq id -> BERT id: the reserved four take [CLS], [PAD], [SEP], [UNK]'s rows
    bert_id = [tok.ids[opts[k]] for k in ("cls_token", "pad_token", "sep_token", "unk_token")]
    bert_id += [tok.ids[t] for t in doc["tokens"][4:]]
    worst, same_ids, same_pieces = 0.0, 0, 0
    for (i, vec, ids, pieces), s in zip(rows, sents):
        same_pieces += json.loads(pieces) == tok.pieces(s)
        same_ids += [bert_id[x] for x in json.loads(ids)] == tok.piece_ids(s)
        if s is long_one:
            check(vec == "null", "a sentence of %d tokens (over max_positions - 2) embeds to NULL"
                  % len(tok.pieces(s)))
            continue
        want = ref.labse(tok.encode(s)).numpy()
        got = np.array(json.loads(vec), dtype=np.float64)
        err = float(np.abs(got - want).max())
        worst = max(worst, err)
        if err > TOL:
            check(False, "embed(%r) differs from the reference by %.2e" % (s, err))
    check(same_pieces == len(sents), "bpe_tokens = the Hugging Face tokenizer's pieces (%d of %d)"
          % (same_pieces, len(sents)))
    check(same_ids == len(sents), "vocab_encode ids = the Hugging Face tokenizer's ids (%d of %d)"
          % (same_ids, len(sents)))
    check(worst <= TOL, "embed() of %d sentences = LaBSE's vector of the reference BertModel, "
          "max abs diff %.2e" % (len(sents) - 1, worst))
    print("hf_bert: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
