"""Render the quality report in headless Chromium and check it (see
report_page.sh, which prepares the database and the pages in --work).

Chromium runs with a fresh profile and everything that would reach the
network switched off (the page needs none: its scripts are inlined).  One run
dumps the DOM after the scripts ran (--virtual-time-budget lets vega-embed's
promises settle), a second takes a screenshot as tall as the page.
"""
import argparse
import html.parser
import json
import os
import subprocess
import sys
import tempfile

from PIL import Image

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0", "--virtual-time-budget=30000",
                  "--hide-scrollbars", "--force-device-scale-factor=1"]
SECTIONS = ["quality", "rejects", "histogram", "pair_quality", "classifier", "curve", "sampling", "uncertain",
            "cav", "jobs"]
failures = []


def fail(msg):
    failures.append(msg)
    print("report_page: FAIL: %s" % msg, file=sys.stderr)


def chromium(page, *extra, height=1000):
    with tempfile.TemporaryDirectory() as profile:
        args = ["chromium"] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile,
                                                "--window-size=1280,%d" % height] + list(extra)
        args.append("file://" + os.path.abspath(page))
        r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    # messages of the page itself (Chromium's own pages, chrome://..., may log
    # too, e.g. about the missing network)
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l and "source: file://" in l]
    return r.stdout, console


class Dom(html.parser.HTMLParser):
    """The parts of the dumped DOM the checks read."""

    def __init__(self):
        super().__init__()
        self.body = {}
        self.charts = {}
        self.empty = set()
        self.tables = {}
        self.errors = ""
        self._table = self._row = None
        self._in_errors = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "div" and a.get("id", "").startswith("chart-"):
            self.charts[a["id"][6:]] = a
        elif tag == "p" and "data-empty" in a:
            self.empty.add(a["data-empty"])
        elif tag == "table" and "data-view" in a:
            self._table = self.tables.setdefault(a["data-view"], [])
        elif tag == "tr" and self._table is not None:
            self._row = {}
        elif tag == "td" and self._row is not None and "data-col" in a:
            self._row[a["data-col"]] = json.loads(a["data-value"])
        elif tag == "pre" and a.get("id") == "report-errors":
            self._in_errors = True

    def handle_endtag(self, tag):
        if tag == "tr" and self._row:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "pre":
            self._in_errors = False

    def handle_data(self, data):
        if self._in_errors:
            self.errors += data


def load(page):
    out, console = chromium(page, "--dump-dom")
    dom = Dom()
    dom.feed(out)
    return dom, console


def psql_json(db, sql):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db,
                        "-c", "SELECT coalesce(json_agg(t), '[]') FROM (%s) t" % sql],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def lit(s):
    return "'" + s.replace("'", "''") + "'"


def expected_views(a):
    """Each section's figures, as this test asks the views for them."""
    c = lit(a.corpus)
    toks = "ARRAY[%s]" % ", ".join(lit(t) for t in a.tokens.split(","))
    scores = lit("SELECT c.domain, corpq.sent_prob(%s, c.src, c.tgt) FROM (%s) AS c(src, tgt, domain)"
                 % (lit(a.model), a.corpus))
    # the classifier has one version here: its name and name@1 are the same
    pinned = a.classifier + "@1"
    quality = lit("SELECT c.domain, corpq.pair_quality(%s, c.src, c.tgt) FROM (%s) AS c(src, tgt, domain)"
                  % (lit(pinned), a.corpus))
    return {
        "quality": "SELECT * FROM corpq.quality_by_domain(%s, %s, %s, classifier => %s) ORDER BY domain"
                   % (c, lit(a.model), lit(a.lexicon), lit(pinned)),
        "pair_quality": "SELECT * FROM corpq.score_histogram(%s, 'linear', 20, 0, 1)" % quality,
        "classifier": "SELECT v.kind, e.key AS feature, (e.value ->> 'weight')::float8 AS weight, "
                      "(e.value ->> 'splits')::int AS splits FROM corpq.classifier_versions v "
                      "JOIN corpq.classifier_catalog c ON c.id = v.model, jsonb_each(v.report -> 'importance') e "
                      "WHERE c.name = %s AND v.version = 1 "
                      "ORDER BY abs(coalesce((e.value ->> 'weight')::float8, (e.value ->> 'splits')::float8)) DESC, e.key"
                      % lit(a.classifier),
        "rejects": "SELECT * FROM corpq.filter_report_by_domain(%s)" % c,
        "histogram": "SELECT * FROM corpq.score_histogram(%s, 'log', 20)" % scores,
        "curve": "SELECT * FROM corpq.train_curve WHERE job = %d ORDER BY split, label, step" % a.job,
        "sampling": "SELECT * FROM corpq.train_sampling_chart WHERE job = %d ORDER BY corpus, step" % a.job,
        "uncertain": "SELECT * FROM corpq.lexicon_uncertain_words WHERE lexicon = %s AND rank <= 20 ORDER BY rank"
                     % lit(a.lexicon),
        "cav": "SELECT c.label, t.token AS query, s.token, s.cosine FROM (%s) AS c(label, cav), unnest(%s) t(token), "
               "corpq.cav_similar(c.cav, t.token, 8) s ORDER BY 1, 2, s.cosine DESC, s.token" % (a.cav, toks),
        "jobs": "SELECT * FROM corpq.job_timeline ORDER BY job",
    }


def check_figures(a, dom):
    for name, sql in expected_views(a).items():
        want = psql_json(a.db, sql)
        got = dom.tables.get(name, [])
        if not want:
            fail("the view behind %s is empty: the test data should fill it" % name)
        if len(got) != len(want):
            fail("%s: the page prints %d rows, the view has %d" % (name, len(got), len(want)))
            continue
        cells = 0
        for i, (g, w) in enumerate(zip(got, want)):
            for col, v in g.items():
                cells += 1
                if w.get(col) != v:
                    fail("%s row %d %s: page %r, view %r" % (name, i + 1, col, v, w.get(col)))
        print("report_page: %s: %d rows, %d figures equal the view's" % (name, len(got), cells))


def check_screenshot(a, dom):
    height = int(dom.body.get("data-height", "3000"))
    shot = os.path.join(a.work, "report.png")
    chromium(os.path.join(a.work, "report.html"), "--screenshot=" + shot, height=height + 50)
    img = Image.open(shot).convert("RGB")
    for name in SECTIONS:
        box = dom.charts.get(name, {}).get("data-box")
        if not box:
            fail("chart %s has no drawn box" % name)
            continue
        x, y, w, h = (int(v) for v in box.split(","))
        if w < 50 or h < 30:
            fail("chart %s is %dx%d pixels" % (name, w, h))
            continue
        crop = img.crop((x, y, min(x + w, img.width), min(y + h, img.height)))
        pixels = list(crop.getdata())
        inked = sum(1 for p in pixels if min(p) < 235)
        colours = len(set(p for p in pixels if min(p) < 235))
        share = inked / max(len(pixels), 1)
        print("report_page: chart %s: %dx%d at (%d, %d), %.1f%% inked, %d colours"
              % (name, w, h, x, y, 100 * share, colours))
        if share < 0.01 or colours < 3:
            fail("chart %s looks blank in the screenshot (%.2f%% inked, %d colours)" % (name, 100 * share, colours))


def main():
    ap = argparse.ArgumentParser()
    for k in ("db", "work", "corpus", "model", "lexicon", "cav", "tokens", "classifier"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--job", type=int, required=True)
    a = ap.parse_args()

    dom, console = load(os.path.join(a.work, "report.html"))
    if dom.body.get("data-done") != "1":
        fail("the page's scripts did not finish")
    if console:
        fail("console messages: %s" % " | ".join(console[:5]))
    if dom.errors.strip():
        fail("errors recorded by the page: %s" % dom.errors.strip()[:500])
    for name in SECTIONS:
        if dom.charts.get(name, {}).get("data-rendered") != "1":
            fail("chart %s did not render" % name)
    if dom.empty:
        fail("sections without data in the full report: %s" % sorted(dom.empty))
    check_figures(a, dom)
    check_screenshot(a, dom)

    empty, console = load(os.path.join(a.work, "empty.html"))
    if console or empty.errors.strip():
        fail("the empty report logged errors: %s %s" % (console[:3], empty.errors[:200]))
    if empty.charts or empty.empty != set(SECTIONS):
        fail("a database without data: charts %s, sentences for %s" % (sorted(empty.charts), sorted(empty.empty)))
    else:
        print("report_page: empty database: a sentence for each of the %d sections, no chart" % len(SECTIONS))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
