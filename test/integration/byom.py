"""The driver of byom.sh (runs inside its throw-away cluster): see byom.sh."""
import collections
import csv
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
import test_convert as tc  # noqa: E402  (the toolkits' layouts, written with random weights)
from ref_fairseq import FairseqRef  # noqa: E402
from ref_marian import MarianRef  # noqa: E402
from ref_hf_marian import HFMarianRef  # noqa: E402

# float32 (corpq) against float64 (the references), per token log-probability
TOL = 1e-4
MAX_LEN = 12                      # greedy: max_len_a 0, max_len_b 12
N_PAIRS = 8
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def psql(sql):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\t"],
                       input=sql, capture_output=True, text=True)
    if r.returncode:
        sys.exit("psql failed: " + r.stderr + "\nin:\n" + sql[:2000])
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def lit(s):
    return "'" + s.replace("'", "''") + "'"


def blob(path):
    with open(path, "rb") as f:
        return "'\\x" + f.read().hex() + "'::bytea"


def pg_array(s):
    """A one-dimensional text[] / float8[] in psql's unaligned output."""
    body = s[1:-1]
    out, cur, quoted, i = [], "", False, 0
    while i < len(body):
        c = body[i]
        if quoted and c == "\\":
            cur += body[i + 1]
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if body:
        out.append(cur)
    return out


# ---- data -------------------------------------------------------------------
def short(s, n):
    return " ".join(s.split()[:n])


def bible(n):
    with open(os.environ["CORPQ_BIBLE"], encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:n + 1]
    return [(r[2], r[3]) for r in rows]


PAIRS = bible(400)


def load_corpus():
    values = ",\n".join("(%d, %s, %s)" % (i + 1, lit(s), lit(t)) for i, (s, t) in enumerate(PAIRS))
    psql("CREATE EXTENSION IF NOT EXISTS corpq;\n"
         "SET client_min_messages = warning;\n"
         "CREATE TABLE bible (id bigint PRIMARY KEY, src text, tgt text);\n"
         "INSERT INTO bible VALUES %s;\n"
         "CREATE VIEW bible_train AS SELECT id, src, tgt FROM bible WHERE id %% 10 <> 0;\n"
         "CREATE VIEW bible_dev AS SELECT src, tgt FROM bible WHERE id %% 10 = 0;\n"
         "CREATE TABLE mono AS SELECT id, src FROM bible WHERE id %% 4 = 1;\n" % values)


def train_spm(tmp):
    """A SentencePiece model over both sides, as OPUS-MT's joint models."""
    text = os.path.join(tmp, "spm.txt")
    with open(text, "w", encoding="utf-8") as f:
        for s, t in PAIRS:
            f.write(s + "\n" + t + "\n")
    prefix = os.path.join(tmp, "opus")
    subprocess.run(["spm_train", "--input=" + text, "--model_prefix=" + prefix, "--vocab_size=300",
                    "--model_type=unigram", "--character_coverage=1.0", "--num_threads=1",
                    "--minloglevel=2"], check=True, capture_output=True)
    with open(prefix + ".vocab", encoding="utf-8") as f:
        pieces = [line.split("\t")[0] for line in f]
    return prefix + ".model", pieces


# ---- the three models, each in its toolkit's layout ------------------------------
def fairseq(tmp, g):
    """Pre-norm, sinusoidal, gelu, layernorm_embedding; dictionaries of the
    corpus's most frequent whitespace tokens (fairseq-preprocess's order)."""
    Vs, Vt = 160, 168
    ck, sp, tp, _, _, args, sd = tc.fairseq_model(tmp, "fs", g, pre=True, learned=False,
                                                  share_all=False, tie=False, lnemb=True,
                                                  act="gelu", Vs=Vs, Vt=Vt, M=128)
    vocabs = []
    for path, V, side in ((sp, Vs, 0), (tp, Vt, 1)):
        counts = collections.Counter(w for p in PAIRS for w in p[side].split())
        words = [w for w, _ in counts.most_common(V - 4)]
        with open(path, "w", encoding="utf-8") as f:
            for w in words:
                f.write("%s %d\n" % (w, counts[w]))
        vocabs.append(["<s>", "<pad>", "</s>", "<unk>"] + words)
    out = convert(["fairseq", "--checkpoint", ck, "--src-dict", sp, "--tgt-dict", tp], tmp, "fs")
    return dict(name="fs", out=out, ref=FairseqRef(sd, args), src_ids=vocabs[0], tgt_ids=vocabs[1],
                unk=3, spm=None)


def marian(tmp, g, spm, pieces):
    words = ["</s>", "<unk>"] + pieces[3:]
    V = len(words)
    y = tc.marian_yml(**{"dim-vocabs": [V, V]})
    npz, arrays = tc.marian_model(tmp, "mar", g, y, V)
    voc = os.path.join(tmp, "opus.spm300.vocab.yml")
    tc.write_vocab_yml(voc, words)
    out = convert(["marian", "--model", npz, "--vocab", voc, "--src-spm", spm, "--tgt-spm", spm],
                  tmp, "mar")
    return dict(name="mar", out=out, ref=MarianRef(arrays, y), src_ids=words, tgt_ids=words, unk=1,
                spm=True)


def hf_marian(tmp, g, spm, pieces):
    words = ["</s>", "<unk>"] + pieces[3:] + ["<pad>"]
    md, c, sd, _ = tc.hf_model(tmp, "hf", g, V=len(words))
    with open(os.path.join(md, "vocab.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps({w: i for i, w in enumerate(words)}, ensure_ascii=False))
    for n in ("source.spm", "target.spm"):
        with open(spm, "rb") as a, open(os.path.join(md, n), "wb") as b:
            b.write(a.read())
    out = convert(["hf-marian", "--model-dir", md], tmp, "hf")
    return dict(name="hf", out=out, ref=HFMarianRef(sd, c), src_ids=words, tgt_ids=words, unk=1,
                spm=True)


def convert(argv, tmp, tag):
    """The one command: the installed corpq-convert."""
    out = os.path.join(tmp, tag + ".out")
    r = subprocess.run([os.environ["CORPQ_CONVERT"]] + argv + ["--output", out],
                       capture_output=True, text=True)
    check(r.returncode == 0, "%s: corpq-convert %s (%s)" % (tag, argv[0], r.stderr.strip()[-300:]))
    return out


def import_sql(m):
    """The SQL of models/CONVERT.md, with the files' bytes as literals."""
    n, out = m["name"], m["out"]
    sql = []
    if m["spm"]:
        sql.append("SELECT corpq.spm_import('%s_spm', %s);" % (n, blob(os.path.join(out, "source.spm"))))
    for side in ("src", "tgt"):
        with open(os.path.join(out, side + "_vocab.json"), encoding="utf-8") as f:
            doc = lit(f.read()) + "::jsonb"
        if m["spm"]:
            doc += " || '{\"spm\": \"%s_spm\"}'" % n
        sql.append("SELECT corpq.vocab_import('%s_%s', %s);" % (n, side, doc))
    sql.append("SELECT corpq.model_import('%s', %s, '%s_src', '%s_tgt');"
               % (n, blob(os.path.join(out, "model.corpq")), n, n))
    psql("\n".join(sql))
    rows = psql("SELECT latest_version, src_vocab, tgt_vocab FROM corpq.models WHERE name = '%s'" % n)
    check(rows == [["1", n + "_src", n + "_tgt"]], "%s: imported as version 1 (%s)" % (n, rows))


# ---- scoring and greedy translation against the toolkit's reference ---------------
def tokens(m, side, text):
    """The text's tokens as corpq segments it: SentencePiece pieces or words."""
    if not m["spm"]:
        return text.split()
    return pg_array(psql("SELECT corpq.bpe_tokens('%s_spm', %s)" % (m["name"], lit(text)))[0][0])


def ids(m, side, toks):
    index = {t: i for i, t in enumerate(m[side + "_ids"])}
    return [index.get(t, m["unk"]) for t in toks]


def detok(m, toks):
    if m["spm"]:
        return "".join(toks).replace("\u2581", " ").strip()
    return " ".join(toks)


def score_and_translate(m):
    n, ref = m["name"], m["ref"]
    worst, sums, greedy_same, text_same, texts = 0.0, 0, 0, 0, 0
    pairs = [(short(s, 10), short(t, 10)) for s, t in PAIRS[:N_PAIRS]]
    opts = '{"beam": 1, "max_len_a": 0, "max_len_b": %d, "min_len": 0}' % MAX_LEN
    for src, tgt in pairs:
        st, tt = tokens(m, "src", src), tokens(m, "tgt", tgt)
        s_ids, t_ids = ids(m, "src", st), ids(m, "tgt", tt)
        lp = ref.log_probs([(s_ids, t_ids)])[0]
        gold = t_ids + [getattr(ref, "eos", 2)]
        want = [float(lp[i, g]) for i, g in enumerate(gold)]
        rows = psql("SELECT token, logprob FROM corpq.token_scores('%s', %s, %s) ORDER BY pos"
                    % (n, lit(src), lit(tgt)))
        check([r[0] for r in rows] == tt + ["</s>"],
              "%s: token_scores' tokens are the segmenter's (%d)" % (n, len(tt)))
        got = [float(r[1]) for r in rows]
        if len(got) == len(want):
            worst = max([worst] + [abs(a - b) for a, b in zip(got, want)])
        else:
            worst = float("inf")
        total = float(psql("SELECT corpq.sent_logprob('%s', %s, %s)" % (n, lit(src), lit(tgt)))[0][0])
        sums += abs(total - sum(got)) <= 1e-9 * max(1.0, abs(total))
        # greedy: the reference's argmax loop against corpq's beam-1 search
        out = ref.greedy(s_ids, MAX_LEN)
        olp = ref.log_probs([(s_ids, out)])[0]
        ref_lps = [float(olp[i, g]) for i, g in enumerate(out + [getattr(ref, "eos", 2)])]
        hyp, lps = psql("SELECT hyp, token_logprobs FROM corpq.translate_nbest('%s', %s, '%s')"
                        % (n, lit(src), opts))[0]
        lps = [float(x) for x in pg_array(lps)]
        greedy_same += len(lps) == len(ref_lps) and max(abs(a - b) for a, b in zip(lps, ref_lps)) <= TOL
        words = [m["tgt_ids"][i] for i in out]
        if not any(w.startswith("<") for w in words):
            texts += 1
            text_same += hyp == detok(m, words)
        one = psql("SELECT corpq.translate('%s', %s, '%s')" % (n, lit(src), opts))
        text_same -= (one[0][0] if one else "") != hyp
    check(worst <= TOL, "%s: token log-probabilities = the toolkit's, max abs diff %.1e" % (n, worst))
    check(sums == N_PAIRS, "%s: sent_logprob = the sum of token_scores (%d of %d)" % (n, sums, N_PAIRS))
    check(greedy_same == N_PAIRS, "%s: greedy translations = the toolkit's (%d of %d)"
          % (n, greedy_same, N_PAIRS))
    check(text_same == texts, "%s: translated text = the toolkit's tokens detokenised (%d of %d)"
          % (n, text_same, texts))


# ---- fine-tuning and the pipelines ------------------------------------------------
def wait(job, what):
    state = psql("SELECT corpq.job_wait(%s, '600 s')" % job)[0][0]
    err = psql("SELECT coalesce(error, '') FROM corpq.jobs WHERE id = %s" % job)
    check(state == "succeeded", "%s: job %s %s %s" % (what, job, state, err[0][0] if err else ""))


def fine_tune(m):
    n = m["name"]
    job = psql("SELECT corpq.train('%s', 'SELECT src, tgt FROM bible_train', "
               "'SELECT src, tgt FROM bible_dev', '{\"steps\": 40, \"max_tokens\": 2048, "
               "\"lr\": 0.002, \"warmup\": 5, \"seed\": 1, \"threads\": 1}')" % n)[0][0]
    wait(job, n + ": train() fine-tunes it")
    before, after = (float(x) for x in psql(
        "SELECT avg(corpq.sent_logprob('%s@1', src, tgt)), avg(corpq.sent_logprob('%s', src, tgt)) "
        "FROM bible_train WHERE id <= 60" % (n, n))[0])
    check(after > before + 1.0, "%s: fine-tuning raises the training pairs' log-probability "
          "(%.2f -> %.2f nats per pair)" % (n, before, after))


PIPE = ('"model": {"preset": "tiny", "max_positions": 128}, '
        '"translate": {"batch": 16, "threads": 1, "chunk_rows": 16, "max_len_a": 0, "max_len_b": 20}, '
        '"train": {"steps": 30, "max_tokens": 2048, "lr": 0.003, "warmup": 5, "seed": 3, "threads": 1}')


def rejuvenate(m):
    n = m["name"]
    job = psql("SELECT corpq.rejuvenate('SELECT id, src, tgt FROM bible_train', "
               "'SELECT src, tgt FROM bible_dev', '{\"name\": \"rj\", \"ratio\": 0.1, "
               "\"identifier\": \"%s\", \"rejuvenator\": \"%s\", \"src_vocab\": \"%s_src\", "
               "\"tgt_vocab\": \"%s_tgt\", %s}')" % (n, n, n, n, PIPE))[0][0]
    wait(job, n + ": rejuvenate() with it as identifier and rejuvenator")
    # every pair that fits the model's 128 positions scored with it; the
    # others unscored, counted, and kept active
    other = psql("SELECT count(*) FILTER (WHERE prob IS NOT NULL), count(*) FILTER (WHERE prob IS NULL), "
                 "count(*) FILTER (WHERE prob IS DISTINCT FROM CASE WHEN "
                 "cardinality(corpq.vocab_encode('%s_src', src)) < 128 AND "
                 "cardinality(corpq.vocab_encode('%s_tgt', tgt)) < 128 "
                 "THEN corpq.sent_prob('%s', src, tgt) END), "
                 "count(*) FILTER (WHERE prob IS NULL AND inactive IS DISTINCT FROM false), "
                 "(SELECT output->>'unscored' FROM corpq.pipeline_stages WHERE pipeline = 'rj' AND stage = 1) "
                 "FROM rj_pairs" % (n, n, n))
    # (the shared Bible has such pairs; a generated corpus may have none)
    check(other and int(other[0][0]) > 0 and other[0][2] == "0"
          and other[0][3] == "0" and other[0][4] == other[0][1],
          "%s: identification scored every pair that fits it with it; the too long ones "
          "unscored, counted and active (%s)" % (n, other))


def self_train(m):
    n = m["name"]
    wait(psql("SELECT corpq.lexicon_train('bl', 'SELECT src, tgt FROM bible_train')")[0][0],
         "lexicon for self-training")
    job = psql("SELECT corpq.self_train('%s', 'bl', 'SELECT src, tgt FROM bible_train', "
               "'SELECT id, src FROM mono', '{\"name\": \"st\", \"k\": 20, \"seed\": 5, %s}')"
               % (n, PIPE))[0][0]
    wait(job, n + ": self_train() with it as teacher")
    differ = psql("SELECT count(*), count(*) FILTER (WHERE t.hyp IS DISTINCT FROM r.hyp) "
                  "FROM st_translations t JOIN corpq.translate_rows('%s', "
                  "'SELECT id, src FROM st_sample ORDER BY id', "
                  "'{\"beam\": 5, \"max_len_a\": 0, \"max_len_b\": 20}') r USING (id)" % n)
    check(differ and differ[0][0] == "20" and differ[0][1] == "0",
          "%s: the teacher's translations are its translate_rows (%s)" % (n, differ))


def main():
    g = torch.Generator().manual_seed(21)
    load_corpus()
    with tempfile.TemporaryDirectory(prefix="corpq-byom-") as tmp:
        spm, pieces = train_spm(tmp)
        models = [fairseq(tmp, g), marian(tmp, g, spm, pieces), hf_marian(tmp, g, spm, pieces)]
        for m in models:
            import_sql(m)
            score_and_translate(m)
    # the pipelines use version 1 (the latest until fine-tuning)
    rejuvenate(models[2])
    self_train(models[0])
    for m in models:
        fine_tune(m)
    print("byom: %d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
