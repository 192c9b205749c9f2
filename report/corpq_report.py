#!/usr/bin/env python3
"""corpq's quality report: one self-contained HTML page from the quality views.

    corpq_report.py --db DBNAME_OR_CONNINFO --out report.html
        [--corpus "SELECT src, tgt, domain FROM corpus"] [--model NAME]
        [--lexicon NAME] [--filters JSON] [--job ID] [--classifier NAME]
        [--cav "SELECT label, cav FROM cavs"] [--tokens a,b]

It reads the views and functions of docs/filters.md "Quality views" through psql
(libpq's environment applies: PGHOST, PGPORT, PGUSER, ...) and draws them
with Vega-Lite.  Vega, Vega-Lite and vega-embed come from npm (pinned in
report/package.json, installed into report/node_modules by `make report`)
and are inlined into the page, so it needs no network to be viewed.  Every
chart has its figures printed beside it (each cell's exact value in a
data-value attribute, for test/integration/report_page.sh); a view with no
rows gives a sentence instead of an empty chart.  Without --model, --lexicon
or --job the latest train job, its model and the latest lexicon are used.
With --classifier (a pair-quality classifier, name or name@N, pinned once to
the version it names now) the page adds its pair_quality per domain (the
quality table's columns and a histogram) and its features' weights or
importances from its report.
Exit status 2 when the database lacks corpq or the query fails.
"""
import argparse
import datetime
import html
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VENDOR = [("vega", "vega/build/vega.min.js"), ("vega-lite", "vega-lite/build/vega-lite.min.js"),
          ("vega-embed", "vega-embed/build/vega-embed.min.js")]


class ReportError(Exception):
    pass


# ---- the database ------------------------------------------------------------
class Db:
    def __init__(self, db):
        self.db = db

    def json(self, sql):
        """Rows of sql as a list of dicts (json_agg)."""
        args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.db]
        wrapped = "SELECT coalesce(json_agg(t), '[]') FROM (%s) t" % sql
        r = subprocess.run(args, input=wrapped, capture_output=True, text=True)
        if r.returncode != 0:
            raise ReportError(r.stderr.strip() or "psql failed")
        return json.loads(r.stdout)

    def value(self, sql):
        rows = self.json(sql)
        return next(iter(rows[0].values())) if rows else None


def sql_literal(s):
    return "'" + s.replace("'", "''") + "'"


def pin_classifier(db, spec):
    """spec ("name" or "name@N") as the "name@N" it names now; ReportError if none."""
    name, _, version = spec.partition("@")
    if version and not version.isdigit():
        raise ReportError("classifier %s: write name or name@N" % spec)
    v = db.value(
        "SELECT v.version FROM corpq.classifier_catalog c JOIN corpq.classifier_versions v ON v.model = c.id "
        "WHERE c.name = %s %s ORDER BY v.version DESC LIMIT 1"
        % (sql_literal(name), "AND v.version = %d" % int(version) if version else ""))
    if v is None:
        raise ReportError("classifier %s does not exist (SELECT name, latest_version FROM corpq.classifiers "
                          "lists them)" % spec)
    return "%s@%d" % (name, v)


# ---- what the page shows ---------------------------------------------------------
def gather(db, a):
    """The data of every section: {name: rows or None (not asked for)}."""
    version = db.value("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'corpq'")
    if version is None:
        raise ReportError("database %s has no corpq extension (run CREATE EXTENSION corpq there, "
                          "or point --db / DB= at the database that has it)" % a.db)
    job = a.job or db.value("SELECT max(job) FROM corpq.job_timeline WHERE kind = 'train'")
    model = a.model or (db.value("SELECT target FROM corpq.job_timeline WHERE job = %d" % job) if job else None)
    lexicon = a.lexicon or db.value(
        "SELECT name FROM corpq.lexicons ORDER BY created DESC, name LIMIT 1")
    filters = sql_literal(a.filters) + "::jsonb" if a.filters else "corpq.filter_defaults()"
    classifier = pin_classifier(db, a.classifier) if a.classifier else None
    d = {"meta": {"database": a.db, "corpq": version, "model": model, "lexicon": lexicon, "job": job,
                  "classifier": classifier, "corpus": a.corpus,
                  "generated": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}}
    if a.corpus:
        c = sql_literal(a.corpus)
        d["quality"] = db.json(
            "SELECT * FROM corpq.quality_by_domain(%s, %s, %s, %s, classifier => %s)"
            % (c, sql_literal(model) if model else "NULL", sql_literal(lexicon) if lexicon else "NULL", filters,
               sql_literal(classifier) if classifier else "NULL"))
        d["rejects"] = db.json(
            "SELECT domain, filter, kept, rejected, rejected_share FROM corpq.filter_report_by_domain(%s, %s, 0)"
            % (c, filters))
        pairs = sql_literal("SELECT c.src, c.tgt FROM (%s\n) AS c(src, tgt, domain)" % a.corpus)
        d["examples"] = db.json(
            "SELECT filter, rejected, examples FROM corpq.filter_report(%s, %s, 3) WHERE rejected > 0"
            % (pairs, filters))
        if model:
            scores = ("SELECT c.domain, corpq.sent_prob(%s, c.src, c.tgt) FROM (%s) AS c(src, tgt, domain)"
                      % (sql_literal(model), a.corpus))
            # log-spaced: sentence probabilities crowd near 0 (linear bins put most
            # of them in the first bin), and a threshold is read off a log axis
            d["histogram"] = db.json(
                "SELECT domain, bin, bin_lo, bin_hi, pairs, share "
                "FROM corpq.score_histogram(%s, 'log', 20)" % sql_literal(scores))
        if classifier:
            quality = ("SELECT c.domain, corpq.pair_quality(%s, c.src, c.tgt) FROM (%s) AS c(src, tgt, domain)"
                       % (sql_literal(classifier), a.corpus))
            # a probability: 20 bins of 0.05 on [0, 1], the filter's 0.5 on an edge
            d["pair_quality"] = db.json(
                "SELECT domain, bin, bin_lo, bin_hi, pairs, share "
                "FROM corpq.score_histogram(%s, 'linear', 20, 0, 1)" % sql_literal(quality))
    if classifier:
        name, _, version = classifier.partition("@")
        # weight (logistic, on the standardised feature) or splits (trees), per feature
        d["classifier"] = db.json(
            "SELECT v.kind, e.key AS feature, (e.value ->> 'weight')::float8 AS weight, "
            "(e.value ->> 'splits')::int AS splits, "
            "coalesce((e.value ->> 'weight')::float8, (e.value ->> 'splits')::float8) AS importance "
            "FROM corpq.classifier_catalog c JOIN corpq.classifier_versions v ON v.model = c.id "
            "CROSS JOIN LATERAL jsonb_each(v.report -> 'importance') AS e "
            "WHERE c.name = %s AND v.version = %s ORDER BY abs(coalesce((e.value ->> 'weight')::float8, "
            "(e.value ->> 'splits')::float8)) DESC, e.key" % (sql_literal(name), version))
    d["curve"] = db.json(
        "SELECT step, split, label, split || ' ' || label AS series, loss, ppl FROM corpq.train_curve "
        "WHERE job = %d ORDER BY split, label, step" % job) if job else []
    sampling_job = db.value("SELECT max(job) FROM corpq.train_sampling_chart")
    d["sampling"] = db.json(
        "SELECT job, strategy, step, corpus, probability FROM corpq.train_sampling_chart "
        "WHERE job = %d ORDER BY corpus, step" % sampling_job) if sampling_job else []
    d["uncertain"] = db.json(
        "SELECT word, links, entropy, rank FROM corpq.lexicon_uncertain_words "
        "WHERE lexicon = %s AND rank <= 20 ORDER BY rank" % sql_literal(lexicon)) if lexicon else []
    if a.cav and a.tokens:
        toks = "ARRAY[%s]::text[]" % ", ".join(sql_literal(t.strip()) for t in a.tokens.split(",") if t.strip())
        d["cav"] = db.json(
            "SELECT c.label::text AS label, t.token AS query, s.token, s.cosine "
            "FROM (%s) AS c(label, cav) CROSS JOIN LATERAL pg_catalog.unnest(%s) AS t(token) "
            "CROSS JOIN LATERAL corpq.cav_similar(c.cav, t.token, 8) AS s "
            "ORDER BY 1, 2, s.cosine DESC, s.token" % (a.cav, toks))
    d["jobs"] = db.json(
        "SELECT job, kind, state, target, created, started, finished, queued_seconds, run_seconds "
        "FROM corpq.job_timeline ORDER BY job")
    return d


# ---- charts (Vega-Lite) ------------------------------------------------------------
def spec(data, mark, encoding, **extra):
    s = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "data": {"values": data},
         "mark": mark, "encoding": encoding, "width": 640, "height": 240}
    s.update(extra)
    return s


def charts(d):
    c = {}
    if d.get("quality"):
        c["quality"] = spec(d["quality"], {"type": "bar", "tooltip": True},
                            {"x": {"field": "domain", "type": "nominal"},
                             "y": {"field": "pairs", "type": "quantitative"}}, height=180)
    if d.get("rejects"):
        c["rejects"] = spec(d["rejects"], {"type": "bar", "tooltip": True},
                            {"x": {"field": "filter", "type": "nominal", "sort": None},
                             "xOffset": {"field": "domain"},
                             "y": {"field": "rejected_share", "type": "quantitative", "title": "rejected share"},
                             "color": {"field": "domain", "type": "nominal"}})
    if d.get("histogram"):
        h = [dict(r, mid=(r["bin_lo"] + r["bin_hi"]) / 2) for r in d["histogram"]
             if r["bin_lo"] is not None and math.isfinite(r["bin_lo"]) and math.isfinite(r["bin_hi"])]
        c["histogram"] = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "data": {"values": h},
                          "facet": {"row": {"field": "domain", "type": "nominal"}},
                          # rects from the edges: a log axis takes no "binned" field
                          "spec": {"width": 640, "height": 110,
                                   "mark": {"type": "rect", "tooltip": True, "stroke": "white", "strokeWidth": 0.5},
                                   "encoding": {"x": {"field": "bin_lo", "type": "quantitative",
                                                      "scale": {"type": "log"}, "title": "sent_prob (log scale)"},
                                                "x2": {"field": "bin_hi"},
                                                "y": {"field": "share", "type": "quantitative"},
                                                "y2": {"datum": 0}}}}
    if d.get("pair_quality"):
        c["pair_quality"] = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json",
                             "data": {"values": d["pair_quality"]},
                             "facet": {"row": {"field": "domain", "type": "nominal"}},
                             "spec": {"width": 640, "height": 110,
                                      "mark": {"type": "rect", "tooltip": True, "stroke": "white",
                                               "strokeWidth": 0.5},
                                      "encoding": {"x": {"field": "bin_lo", "type": "quantitative",
                                                         "scale": {"domain": [0, 1]}, "title": "pair_quality"},
                                                   "x2": {"field": "bin_hi"},
                                                   "y": {"field": "share", "type": "quantitative"},
                                                   "y2": {"datum": 0}}}}
    if d.get("classifier"):
        kind = d["classifier"][0]["kind"]
        c["classifier"] = spec(d["classifier"], {"type": "bar", "tooltip": True},
                               {"y": {"field": "feature", "type": "nominal", "sort": None},
                                "x": {"field": "importance", "type": "quantitative",
                                      "title": "weight (standardised feature)" if kind == "logistic"
                                      else "splits (tree nodes)"}},
                               height={"step": 14})
    if d.get("curve"):
        c["curve"] = spec(d["curve"], {"type": "line", "point": True, "tooltip": True},
                          {"x": {"field": "step", "type": "quantitative"},
                           "y": {"field": "ppl", "type": "quantitative", "scale": {"type": "log"},
                                 "title": "perplexity"},
                           "color": {"field": "series", "type": "nominal"}})
    if d.get("sampling"):
        c["sampling"] = spec(d["sampling"], {"type": "line", "point": True, "tooltip": True},
                             {"x": {"field": "step", "type": "quantitative"},
                              "y": {"field": "probability", "type": "quantitative"},
                              "color": {"field": "corpus", "type": "nominal"}})
    if d.get("uncertain"):
        c["uncertain"] = spec(d["uncertain"], {"type": "bar", "tooltip": True},
                              {"y": {"field": "word", "type": "nominal", "sort": "-x"},
                               "x": {"field": "entropy", "type": "quantitative", "title": "entropy (nats)"}},
                              height={"step": 14})
    if d.get("cav"):
        c["cav"] = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "data": {"values": d["cav"]},
                    "facet": {"row": {"field": "label", "type": "nominal"},
                              "column": {"field": "query", "type": "nominal"}},
                    "spec": {"width": 260, "height": {"step": 14}, "mark": {"type": "bar", "tooltip": True},
                             "encoding": {"y": {"field": "token", "type": "nominal", "sort": "-x"},
                                          "x": {"field": "cosine", "type": "quantitative"}}},
                    "resolve": {"scale": {"y": "independent"}}}
    if d.get("jobs"):
        jobs = [dict(r, name="%s %s" % (r["job"], r["kind"])) for r in d["jobs"] if r["started"]]
        if jobs:
            c["jobs"] = spec(jobs, {"type": "bar", "tooltip": True},
                             {"y": {"field": "name", "type": "nominal", "sort": None, "title": "job"},
                              "x": {"field": "started", "type": "temporal"},
                              "x2": {"field": "finished"},
                              "color": {"field": "state", "type": "nominal"}},
                             height={"step": 18})
    return c


# ---- the page -----------------------------------------------------------------------
SECTIONS = [
    ("quality", "Pairs and quality per domain", "corpq.quality_by_domain",
     "No corpus given, or it has no pairs (--corpus 'SELECT src, tgt, domain FROM ...').",
     ["domain", "pairs", "src_words_mean", "tgt_words_mean", "length_ratio_mean", "rejected_share",
      "sent_prob_p10", "sent_prob_p50", "sent_prob_p90", "inactive_share", "lexicon_coverage_mean",
      "pair_quality_below_half", "pair_quality_mean"]),
    ("rejects", "Filter reject shares", "corpq.filter_report_by_domain",
     "No corpus given, or it has no pairs: no filter report.",
     ["domain", "filter", "kept", "rejected", "rejected_share"]),
    ("histogram", "Sentence probability per domain (log-spaced bins)", "corpq.score_histogram",
     "No model or no corpus: no score histogram.",
     ["domain", "bin", "bin_lo", "bin_hi", "pairs", "share"]),
    ("pair_quality", "Pair quality per domain (the classifier's probability, bins of 0.05)", "corpq.pair_quality",
     "No classifier or no corpus: no pair_quality histogram (--classifier NAME).",
     ["domain", "bin", "bin_lo", "bin_hi", "pairs", "share"]),
    ("classifier", "The classifier's features: weights (logistic) or splits (trees)", "corpq.classifier_versions",
     "No classifier given (--classifier NAME).",
     ["kind", "feature", "weight", "splits"]),
    ("curve", "Training curve", "corpq.train_curve",
     "No training job in this database: corpq.train_curve is empty.",
     ["step", "split", "label", "loss", "ppl"]),
    ("sampling", "MultiUAT / MultiDDS sampling shares over time", "corpq.train_sampling_chart",
     "No multiuat or multidds training was run: corpq.train_sampling_chart is empty.",
     ["step", "corpus", "probability"]),
    ("uncertain", "The lexicon's most uncertain words", "corpq.lexicon_uncertain_words",
     "No lexicon in this database: corpq.lexicon_uncertain_words is empty.",
     ["rank", "word", "links", "entropy"]),
    ("cav", "Corpus Analysis Vectors: most similar tokens", "corpq.cav_similar",
     "No CAVs given (--cav 'SELECT label, cav FROM ...' --tokens a,b), or the tokens are not in them.",
     ["label", "query", "token", "cosine"]),
    ("jobs", "Job timeline", "corpq.job_timeline",
     "No jobs in this database: corpq.job_timeline is empty.",
     ["job", "kind", "state", "target", "queued_seconds", "run_seconds"]),
]


def shown(v):
    if v is None:
        return "&ndash;"
    if isinstance(v, float):
        return "%.4g" % v
    return html.escape(str(v))


def table(rows, columns, name):
    out = ['<table class="figures" data-view="%s"><thead><tr>' % name]
    out += ["<th>%s</th>" % html.escape(c) for c in columns]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>")
        for c in columns:
            v = r.get(c)
            out.append('<td data-col="%s" data-value="%s">%s</td>'
                       % (c, html.escape(json.dumps(v), quote=True), shown(v)))
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def examples_html(rows):
    if not rows:
        return ""
    out = ["<details><summary>Rejected examples (the pairs with the smallest dedup keys)</summary><dl>"]
    for r in rows:
        out.append("<dt>%s (%d rejected)</dt>" % (html.escape(r["filter"]), r["rejected"]))
        out += ["<dd>%s</dd>" % html.escape(e) for e in r["examples"]]
    out.append("</dl></details>")
    return "".join(out)


PAGE_SCRIPT = """
window.corpqErrors = [];
window.addEventListener('error', function (e) { window.corpqErrors.push(String(e.message)); });
(function () {
  var original = console.error;
  console.error = function () {
    window.corpqErrors.push(Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
function corpqDone() {
  document.body.dataset.height = String(document.documentElement.scrollHeight);
  document.getElementById('report-errors').textContent = window.corpqErrors.join('\\n');
  document.body.dataset.done = '1';
}
(function () {
  var specs = JSON.parse(document.getElementById('corpq-specs').textContent);
  var jobs = Object.keys(specs).map(function (name) {
    var el = document.getElementById('chart-' + name);
    return vegaEmbed(el, specs[name], {renderer: 'svg', actions: false}).then(function () {
      var r = el.getBoundingClientRect();
      el.dataset.rendered = '1';
      el.dataset.box = [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height].map(Math.round).join(',');
    }).catch(function (err) { console.error('chart ' + name + ': ' + err); window.corpqErrors.push(name + ': ' + err); });
  });
  Promise.all(jobs).then(corpqDone, corpqDone);
})();
"""

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table.figures { border-collapse: collapse; font-size: 12px; margin: .5em 0; }
table.figures td, table.figures th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
table.figures th { background: #f4f4f4; } .empty { color: #777; font-style: italic; }
.chart { min-height: 40px; } .meta td { padding: 0 1em 0 0; } dd { font-family: monospace; font-size: 12px; }
details.figures-box { margin: .3em 0 1em; } .scroll { overflow-x: auto; } #report-errors { color: #b00; }
"""


def page(d, vendor_js):
    c = charts(d)
    m = d["meta"]
    body = ["<h1>corpq quality report</h1><table class='meta'>"]
    for k in ("database", "corpq", "corpus", "model", "lexicon", "job", "classifier", "generated"):
        body.append("<tr><td>%s</td><td>%s</td></tr>" % (k, shown(m.get(k))))
    body.append("</table>")
    for name, title, view, empty, columns in SECTIONS:
        rows = d.get(name) or []
        body.append('<section id="%s"><h2>%s</h2><p><code>%s</code></p>' % (name, html.escape(title), view))
        if not rows or name not in c:
            body.append('<p class="empty" data-empty="%s">%s</p>' % (name, html.escape(empty)))
        else:
            body.append('<div class="chart" id="chart-%s"></div>' % name)
            # long tables start folded
            body.append('<details class="figures-box"%s><summary>Figures (%d rows)</summary>'
                        '<div class="scroll">%s</div></details>'
                        % (" open" if len(rows) <= 25 else "", len(rows), table(rows, columns, name)))
        if name == "rejects":
            body.append(examples_html(d.get("examples")))
        body.append("</section>")
    specs = json.dumps(c).replace("</", "<\\/")
    scripts = "".join("<script>/* %s */\n%s\n</script>" % (n, js.replace("</script", "<\\/script"))
                      for n, js in vendor_js)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>corpq quality report</title>"
            "<style>%s</style>%s</head><body>%s<pre id='report-errors'></pre>"
            "<script type='application/json' id='corpq-specs'>%s</script><script>%s</script></body></html>"
            % (STYLE, scripts, "".join(body), specs, PAGE_SCRIPT))


def vendored(node_modules):
    out = []
    for name, path in VENDOR:
        p = os.path.join(node_modules, path)
        if not os.path.exists(p):
            raise ReportError("%s is missing: run `make report` (npm ci in report/) first" % p)
        with open(p, encoding="utf-8") as f:
            out.append((name, f.read()))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True, help="database name or libpq connection string")
    ap.add_argument("--out", required=True, help="the HTML file to write")
    ap.add_argument("--corpus", help="SELECT returning (src, tgt, domain)")
    ap.add_argument("--model", help="model for sent_prob (default: that of the latest train job)")
    ap.add_argument("--lexicon", help="lexicon (default: the latest)")
    ap.add_argument("--filters", help="filter spec as JSON (default: corpq.filter_defaults())")
    ap.add_argument("--job", type=int, help="train job for the training curve (default: the latest)")
    ap.add_argument("--classifier", help="pair-quality classifier, name or name@N (default: none)")
    ap.add_argument("--cav", help="SELECT returning (label, cav)")
    ap.add_argument("--tokens", help="comma-separated tokens to look up in the CAVs")
    ap.add_argument("--node-modules", default=os.path.join(HERE, "node_modules"))
    a = ap.parse_args()
    try:
        js = vendored(a.node_modules)
        d = gather(Db(a.db), a)
        text = page(d, js)
    except ReportError as e:
        print("corpq report: %s" % e, file=sys.stderr)
        return 2
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(os.path.abspath(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
