"""Curation quality in SQL (issue 52; figures in docs/benchmarks.md and
docs/curation.md): the pair-quality classifier trained by
corpq.classifier_train() with each feature set, against the rules alone,
today's manual recipe and OpusFilter's logistic-regression approach over
the same scores, on noise from a generator the classifier never trains on.

Data (the shared en-es corpora, split as bench_curation_core.py splits
them, by a hash of the English side, so no held-out source is trained on):
- the classifier's input: --train clean pairs of the training part (a
  clean query; the classifier makes its own synthetic noise from them) and
  English sentences of mono/en.txt's first half as other-language text;
- the evaluation: held-out pairs with test/bench/inject_noise.py's noise
  (2,000 clean, 400 misaligned, 400 untranslated, 400 truncated, split into
  source and target, 200 HTML, 200 URL) plus 400 appended targets and 400
  English targets (mono/en.txt's second half), made as
  bench_curation_core.py makes them;
- OpusFilter's approach gets what its train_classifier reads: the scores of
  a raw corpus (--train pairs of the training part with inject_noise.py's
  default noise, unlabelled) and a labelled development set (2,000 more
  pairs of the training part with the evaluation's noise mix: the same
  generator as the evaluation, an advantage the classifier does not have).

Methods, each giving a score per evaluation pair (higher = cleaner) and a
decision (keep when the score is at least 0.5):
- rules: filter_keeps(src, tgt) with filter_defaults() (1 or 0);
- rules + langid: filter_defaults() and the langid filter (en, es);
- manual recipe: rules + langid + the copy check of docs/filters.md (the
  sides' near-duplicate keys differ);
- classifier <set>: pair_quality() of a classifier trained with that
  feature set (strings; + langid; + lexicon; + encoder when given);
- OpusFilter LR: OpusFilter's train_classifier re-implemented from its
  documentation over the fullest classifier's features
  (classifier_features()): scores standardised with a clean direction
  (here chosen per feature by its ROC AUC on the development set), a pair
  labelled noisy when any feature is below its quantile cutoff, scikit-learn's
  LogisticRegression with default parameters, the quantiles (initial 0.1,
  bounds [0, 1]) found by its default local search (multiplicative steps
  of 1.25) maximising the development set's ROC AUC; then the probability
  of the clean class.

Per noise type: the share removed (recall), precision of removal against
the 2,000 clean pairs, ROC AUC of the score; and the clean pairs kept.
Deterministic for a seed.  Run by bench_curation.sh (which makes the
cluster, the lexicon and the encoder); the environment names the database.
"""
import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_curation_core as bc  # noqa: E402
from psql_at import psql  # noqa: E402


def copy_in(table, columns, rows):
    """CREATE TABLE table (columns) and COPY rows into it (text format)."""
    psql("DROP TABLE IF EXISTS %s" % table, "CREATE TABLE %s (%s)" % (table, columns))

    def esc(v):
        return (str(v).replace("\\", "\\\\").replace("\t", "\\t")
                .replace("\n", "\\n").replace("\r", "\\r"))
    data = "".join("\t".join(esc(v) for v in r) + "\n" for r in rows)
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c",
                    "COPY %s FROM STDIN" % table], input=data, text=True, check=True)
    psql("ANALYZE %s" % table)


def scores(expr, table="eval"):
    """expr over table's rows (n, kind, src, tgt), in n order, as floats."""
    out = psql("SELECT coalesce((%s)::float8, 0) FROM %s ORDER BY n" % (expr, table))
    return np.array([float(v) for v in out.split()])


def wait(job):
    """Wait for a job; its result, or exit naming how it ended."""
    job = job.strip()
    state = psql("SELECT corpq.job_wait(%s)" % job).strip()
    if state != "succeeded":
        sys.exit("job %s ended %s: %s" % (
            job, state, psql("SELECT error FROM corpq.jobs WHERE id = %s" % job)))
    return json.loads(psql("SELECT result FROM corpq.jobs WHERE id = %s" % job))


def train_classifier(name, options):
    return wait(psql("SELECT corpq.classifier_train(%s, 'SELECT src, tgt FROM train_pairs', %s)"
                     % (lit(name), lit(json.dumps(options)))))


def lit(s):
    return "'" + s.replace("'", "''") + "'"


def features(classifier, table):
    out = psql("SELECT corpq.classifier_features(%s, src, tgt) FROM %s ORDER BY n"
               % (lit(classifier), table))
    rows = [json.loads(line) if line else {} for line in out.splitlines()]
    names = sorted(max(rows, key=len))
    return names, np.array([[np.nan if r.get(k) is None else r[k] for k in names] for r in rows],
                           dtype=float)


# ---- OpusFilter's train_classifier, from its documentation ----

def opus_lr(x_train, x_dev, y_dev, x_eval):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    mean, std = x_train.mean(0), x_train.std(0)
    std[std == 0] = 1
    # the clean direction OpusFilter asks the user for, here read off the
    # labelled development set
    direction = np.array([1.0 if roc_auc_score(y_dev, x_dev[:, j]) >= 0.5 else -1.0
                          for j in range(x_train.shape[1])])

    def z(x):
        return direction * (x - mean) / std
    zt, zd, ze = z(x_train), z(x_dev), z(x_eval)

    def fit(q):
        active = [j for j in range(len(q)) if q[j] > 0]
        if not active:
            return None, -np.inf
        cut = np.array([np.quantile(zt[:, j], q[j]) for j in active])
        labels = (zt[:, active] >= cut).all(1).astype(int)
        if labels.min() == labels.max():
            return None, -np.inf
        m = LogisticRegression().fit(zt[:, active], labels)
        return (m, active), roc_auc_score(y_dev, m.predict_proba(zd[:, active])[:, 1])

    q = np.full(zt.shape[1], 0.1)
    best, best_auc = fit(q)
    step = 1.25
    while True:
        improved = False
        for j in range(len(q)):
            for cand in (q[j] / step, q[j] * step):
                if not 0 <= cand <= 1:
                    continue
                trial = q.copy()
                trial[j] = cand
                model, a = fit(trial)
                if a > best_auc:
                    q, best, best_auc, improved = trial, model, a, True
        if not improved:
            break
    m, active = best
    return m.predict_proba(ze[:, active])[:, 1], best_auc


def main():
    global ENGLISH
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=20000, help="clean training pairs")
    ap.add_argument("--holdout", type=float, default=0.06)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--lexicon", action="store_true",
                    help="train a lexicon (lexicon_train, defaults) on the training part")
    ap.add_argument("--encoder-seconds", type=int, default=0,
                    help="train a small encoder this long on the training part (0: none)")
    ap.add_argument("--noise", default=None,
                    help="classifier_train's noise option (JSON shares), to compare shares")
    ap.add_argument("--last-only", action="store_true",
                    help="train only the classifier with every feature set given (for tuning)")
    ap.add_argument("--on", choices=("eval", "dev"), default="eval",
                    help="the labelled set the tables report on (tune on dev, report on eval)")
    args = ap.parse_args()

    rows, ENGLISH = bc.read_corpora()
    held, rest = bc.split(rows, args.holdout)
    rng = random.Random(args.seed)
    rng.shuffle(rest)
    train = rest[: args.train]
    raw = rest[args.train: 2 * args.train]
    dev = rest[2 * args.train: 2 * args.train + 4000]
    copy_in("train_pairs", "src text, tgt text", [(r[2], r[3]) for r in train])
    # the lexicon and the encoder learn from other pairs than the
    # classifier's: trained on the classifier's own pairs they score them
    # (and its held-out split) higher than any new pair, and the classifier
    # learns a threshold new data never reaches (docs/curation.md)
    copy_in("model_pairs", "src text, tgt text", [(r[2], r[3]) for r in rest[2 * args.train + 4000:]])
    copy_in("other_en", "s text", [(s,) for s in ENGLISH[: len(ENGLISH) // 2]])
    ev = bc.eval_set(held, ENGLISH, args.seed)
    copy_in("eval", "n int, kind text, src text, tgt text",
            [(i, k, s, t) for i, (k, s, t) in enumerate(ev)])
    kinds = np.array([k for k, _, _ in ev])
    on = args.on
    dv = bc.eval_set(dev, ENGLISH, args.seed + 7)
    copy_in("dev", "n int, kind text, src text, tgt text",
            [(i, k, s, t) for i, (k, s, t) in enumerate(dv)])
    y_dev = np.array([k == "clean" for k, _, _ in dv], dtype=int)
    if on == "dev":
        kinds = np.array([k for k, _, _ in dv])
    rw = bc.inject(raw, args.seed + 11)
    copy_in("raw", "n int, src text, tgt text",
            [(i, r["src"], r["tgt"]) for i, r in enumerate(rw)])
    print("corpora: %d pairs, %d held out; %d training pairs, %d raw, %d dev, %d eval" % (
        len(rows), len(held), len(train), len(rw), len(dv), len(ev)))

    if args.lexicon:
        wait(psql("SELECT corpq.lexicon_train('bench_lex', 'SELECT src, tgt FROM model_pairs')"))
        args.lexicon = "bench_lex"
    args.encoder = None
    if args.encoder_seconds:
        psql("SELECT corpq.bpe_learn('bench_joint', 'SELECT src FROM model_pairs UNION ALL "
             "SELECT tgt FROM model_pairs', 7500)",
             "SELECT corpq.vocab_build('bench_joint', 'SELECT src FROM model_pairs UNION ALL "
             "SELECT tgt FROM model_pairs', 'bench_joint', 8000)",
             "SELECT corpq.model_create('bench_enc', '{\"preset\": \"small\", \"kind\": \"encoder\"}', "
             "'bench_joint', 'bench_joint', 1)")
        wait(psql("SELECT corpq.train('bench_enc', 'SELECT src, tgt FROM model_pairs', "
                  "'SELECT src, tgt FROM dev WHERE kind = ''clean'' LIMIT 500', "
                  "'{\"max_seconds\": %d}')" % args.encoder_seconds))
        args.encoder = "bench_enc"

    results = []
    rules = "corpq.filter_keeps(src, tgt)::int"
    langid = ("corpq.filter_keeps(src, tgt, corpq.filter_defaults() || "
              "'[{\"name\": \"langid\", \"args\": {\"src\": \"en\", \"tgt\": \"es\"}}]')::int")
    copy = ("(corpq.dedup_key(src, tgt, 'near', 'src') <> corpq.dedup_key(src, tgt, 'near', 'tgt'))::int")
    results.append(("rules (filter_defaults)", scores(rules, on)))
    results.append(("rules + langid", scores(langid, on)))
    results.append(("manual recipe (rules + langid + copy check)", scores("%s * %s" % (langid, copy), on)))

    base = {"src_lang": "en", "tgt_lang": "es", "seed": args.seed,
            "other_language_query": "SELECT s FROM other_en", "max_pairs": args.train}
    if args.noise:
        base["noise"] = json.loads(args.noise)
    sets = [("strings", {"src_lang": None, "tgt_lang": None}), ("strings + langid", {})]
    if args.lexicon:
        sets.append(("+ lexicon", {"lexicon": args.lexicon}))
    if args.encoder:
        sets.append(("+ lexicon + encoder" if args.lexicon else "+ encoder",
                     dict({"encoder": args.encoder}, **({"lexicon": args.lexicon} if args.lexicon else {}))))
    last = None
    if args.last_only:
        sets = sets[-1:]
    for i, (label, extra) in enumerate(sets):
        opts = dict(base)
        opts.update(extra)
        opts = {k: v for k, v in opts.items() if v is not None}
        name = "bench_c%d" % i
        train_classifier(name, opts)
        results.append(("classifier: " + label, scores("corpq.pair_quality(%s, src, tgt)" % lit(name), on)))
        last = name
    # the cheap steps first, then the classifier
    classifier = results[-1][1]
    recipe = results[2][1]
    results.append(("manual recipe, then the classifier (" + sets[-1][0] + "): curate()'s steps before "
                    "its defaults with a classifier",
                    np.minimum(recipe, results[-1][1])))
    html = scores("corpq.filter_keeps(src, tgt, '[{\"name\": \"html_tags\"}]')::int", on)
    same_tags = scores("corpq.filter_keeps(src, tgt, '[{\"name\": \"html_tags\", "
                       "\"args\": {\"keep_same_tags\": true}}]')::int", on)
    copy_only = scores(copy, on)
    # which cheap steps belong in front of a classifier: each alone, then together
    results.append(("rules (filter_defaults), then the classifier (" + sets[-1][0] + ")",
                    np.minimum(results[0][1], classifier)))
    results.append(("html_tags, then the classifier (" + sets[-1][0] + ")",
                    np.minimum(html, classifier)))
    results.append(("html_tags keeping the same tags on both sides, then the classifier (" + sets[-1][0] +
                     "): curate()'s default with a classifier", np.minimum(same_tags, classifier)))
    results.append(("copy check, then the classifier (" + sets[-1][0] + ")",
                    np.minimum(copy_only, classifier)))
    results.append(("html_tags + copy check, then the classifier (" + sets[-1][0] + ")",
                    np.minimum(html * copy_only, classifier)))

    if on == "dev":
        # tuning: OpusFilter's LR picks its features on dev, so it is left out
        for label, s in results:
            print(bc.table(bc.report(kinds, s), "\n" + label + " (dev):"))
        return
    names, x_raw = features(last, "raw")
    _, x_dev = features(last, "dev")
    _, x_eval = features(last, "eval")
    # a pair a model could not read (too long) has no score: OpusFilter
    # trains without it, and it counts as noise, as pair_quality's NULL does
    x_raw = x_raw[~np.isnan(x_raw).any(1)]
    ok_dev = ~np.isnan(x_dev).any(1)
    ok_eval = ~np.isnan(x_eval).any(1)
    p = np.zeros(len(x_eval))
    p[ok_eval], dev_auc = opus_lr(x_raw, x_dev[ok_dev], y_dev[ok_dev], x_eval[ok_eval])
    print("OpusFilter LR over %d features (%s): dev ROC AUC %.3f" % (len(names), ", ".join(names), dev_auc))
    results.append(("OpusFilter-style LR (same features)", p))

    for label, s in results:
        print(bc.table(bc.report(kinds, s), "\n" + label + ":"))


if __name__ == "__main__":
    main()
