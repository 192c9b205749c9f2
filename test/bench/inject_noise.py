"""Labelled noise injected into real parallel pairs, deterministic by seed.

Reads parallel TSV files (id, domain, src, tgt, a header line: the shared
corpora, found as test/lib.sh finds them, or the files given) and writes
--rows rows (default: as many as the input has pairs) to stdout, each a clean
pair or a pair with one kind of noise, with a label saying which:

  clean         the pair as it is
  misaligned    the target of another pair, drawn from the whole input
  duplicate     an exact copy (src, tgt, domain) of an earlier clean row
  untranslated  the source copied to the target side
  very_long     consecutive pairs of one file joined (both sides, so still
                aligned) until the source has --long-chars characters
                (default 1500: several hundred subword tokens)
  truncated     one side (src or tgt, even odds) cut after 30-70 % of its
                words; drawn from pairs whose side has >= 4 words
  html          markup left by a crawler on one side or both: a wrapping
                element, a link, an inline tag around a word, a <br/>
  url           one side (even odds) replaced by a URL made of its words

Default shares (--share TYPE=FRACTION changes one): misaligned 0.10,
duplicate 0.05, untranslated 0.03, very_long 0.01, truncated 0.01, html 0.02,
url 0.01; the rest is clean.  Counts are exact (round(share * rows)) and
labels are spread at random over the rows.  The same arguments and input give
the same bytes.

Output: tab-separated with a header line, columns
  id (1..rows)  noise (the label)  origin (input id the row was made from)
  domain  src  tgt
Fields never hold a tab, a newline or a backspace, so PostgreSQL loads them
verbatim with
  \\copy t (id, noise, origin, domain, src, tgt) FROM 'noisy.tsv'
      WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\b', HEADER)

With --rows above the input's pairs, the input is used again in a new order
once it runs out: such rows repeat an earlier row exactly although labelled
clean (their origin tells them apart; stderr says how many).  Standard
library only.
"""
import argparse
import os
import random
import re
import sys

DEFAULT_SHARES = {"misaligned": 0.10, "duplicate": 0.05, "untranslated": 0.03, "very_long": 0.01,
                  "truncated": 0.01, "html": 0.02, "url": 0.01}
HOSTS = ("www.example.com", "example.org", "docs.example.net", "shop.example.es")
WORD = re.compile(r"\w+")


def read_pairs(paths):
    """[(id, domain, src, tgt, file index)] of the parallel files."""
    pairs = []
    for k, path in enumerate(paths):
        with open(path, encoding="utf-8") as f:
            next(f)
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) == 4:
                    pairs.append((*fields, k))
    return pairs


def slug(text, rng):
    words = [w.lower() for w in WORD.findall(text)][: rng.randint(2, 6)]
    return "-".join(words) or "index"


def make_url(text, rng):
    host = rng.choice(HOSTS)
    path = rng.choice(("", "en/", "es/", "docs/", "2019/05/"))
    return "%s://%s/%s%s%s" % (rng.choice(("https", "http")), host, path, slug(text, rng),
                                rng.choice(("", ".html", "/", ".php?id=%d" % rng.randint(1, 9999))))


def add_html(text, rng):
    kind = rng.randrange(5)
    if kind == 0:
        return "<p>%s</p>" % text
    if kind == 1:
        return '<div class="%s">%s</div>' % (rng.choice(("content", "text", "main")), text)
    if kind == 2:
        return '<a href="%s">%s</a>' % (make_url(text, rng), text)
    if kind == 3:
        return text + rng.choice((" <br/>", "<br>", " <br />"))
    words = text.split(" ")
    i = rng.randrange(len(words))
    tag = rng.choice(("b", "i", "strong", "em"))
    words[i] = "<%s>%s</%s>" % (tag, words[i], tag)
    return " ".join(words)


def truncate(text, rng):
    words = text.split(" ")
    keep = max(1, min(len(words) - 1, round(len(words) * rng.uniform(0.3, 0.7))))
    return " ".join(words[:keep])


class Injector:
    def __init__(self, pairs, rng, long_chars):
        self.pairs, self.rng, self.long_chars = pairs, rng, long_chars
        self.order, self.next, self.cycles = [], 0, 0

    def base(self):
        """The next input pair of a shuffled pass (a new pass when one runs out)."""
        if self.next == len(self.order):
            self.order = list(range(len(self.pairs)))
            self.rng.shuffle(self.order)
            self.next, self.cycles = 0, self.cycles + 1
        self.next += 1
        return self.pairs[self.order[self.next - 1]]

    def row(self, noise, clean_rows):
        rng = self.rng
        if noise == "duplicate":
            return rng.choice(clean_rows)
        pid, domain, src, tgt, _ = self.base()
        if noise == "misaligned":
            other = rng.choice(self.pairs)
            while other[3] == tgt:
                other = rng.choice(self.pairs)
            tgt = other[3]
        elif noise == "untranslated":
            tgt = src
        elif noise == "very_long":
            src, tgt = self.very_long()
        elif noise == "truncated":
            side = rng.randrange(2)
            while len((src, tgt)[side].split(" ")) < 4:
                pid, domain, src, tgt, _ = self.base()
            src, tgt = (truncate(src, rng), tgt) if side == 0 else (src, truncate(tgt, rng))
        elif noise == "html":
            where = rng.randrange(3)
            src = add_html(src, rng) if where != 1 else src
            tgt = add_html(tgt, rng) if where != 0 else tgt
        elif noise == "url":
            if rng.randrange(2):
                src = make_url(src, rng)
            else:
                tgt = make_url(tgt, rng)
        return pid, domain, src, tgt

    def very_long(self):
        """The last base pair and its neighbours in its file (after it, then
        before it), joined up to long_chars source characters."""
        first = last = self.order[self.next - 1]
        n = len(self.pairs)
        size = len(self.pairs[first][2])
        while size < self.long_chars:
            if last + 1 < n and self.pairs[last + 1][4] == self.pairs[first][4]:
                last += 1
                size += 1 + len(self.pairs[last][2])
            elif first > 0 and self.pairs[first - 1][4] == self.pairs[last][4]:
                first -= 1
                size += 1 + len(self.pairs[first][2])
            else:
                break           # the whole file is shorter than long_chars
        span = self.pairs[first:last + 1]
        return " ".join(q[2] for q in span), " ".join(q[3] for q in span)


def labels_for(rows, shares, rng):
    labels = []
    for name in sorted(shares):
        labels += [name] * round(shares[name] * rows)
    if len(labels) >= rows:
        sys.exit("inject_noise: the shares add up to all rows or more")
    labels += ["clean"] * (rows - len(labels))
    rng.shuffle(labels)
    # a duplicate copies an earlier clean row: the first row is clean
    first = labels.index("clean")
    labels[0], labels[first] = labels[first], labels[0]
    return labels


def parse_shares(items):
    shares = dict(DEFAULT_SHARES)
    for item in items:
        name, _, value = item.partition("=")
        if name not in shares:
            sys.exit("inject_noise: unknown noise type %r (valid: %s)" % (name, ", ".join(sorted(shares))))
        try:
            shares[name] = float(value)
        except ValueError:
            sys.exit("inject_noise: share of %s must be a number, not %r" % (name, value))
        if not 0 <= shares[name] < 1:
            sys.exit("inject_noise: share of %s must be in [0, 1)" % name)
    return shares


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="parallel TSV files (default: the corpora test/lib.sh finds)")
    ap.add_argument("--rows", type=int, default=0, help="rows to write (default: the input's pairs)")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--share", action="append", default=[], metavar="TYPE=FRACTION")
    ap.add_argument("--long-chars", type=int, default=1500)
    args = ap.parse_args()
    files = args.files
    if not files:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import corpora
        files = corpora.find()[1]
    pairs = read_pairs(files)
    if not pairs:
        sys.exit("inject_noise: no pairs in %s" % ", ".join(files))
    rows = args.rows or len(pairs)
    rng = random.Random(args.seed)
    labels = labels_for(rows, parse_shares(args.share), rng)
    inj = Injector(pairs, rng, args.long_chars)
    out = sys.stdout
    out.write("id\tnoise\torigin\tdomain\tsrc\ttgt\n")
    clean_rows, counts, seen, repeats = [], {}, set(), 0
    for i, noise in enumerate(labels, 1):
        pid, domain, src, tgt = inj.row(noise, clean_rows)
        if noise == "clean":
            clean_rows.append((pid, domain, src, tgt))
            repeats += (src, tgt) in seen
        seen.add((src, tgt))
        counts[noise] = counts.get(noise, 0) + 1
        out.write("%d\t%s\t%s\t%s\t%s\t%s\n" % (i, noise, pid, domain, src, tgt))
    print("inject_noise: %d rows from %d pairs (%d passes over the input); %s" % (
        rows, len(pairs), inj.cycles, ", ".join("%s %d" % kv for kv in sorted(counts.items()))),
        file=sys.stderr)
    if repeats:
        print("inject_noise: %d clean rows repeat an earlier row exactly (the input ran out)" % repeats,
              file=sys.stderr)


if __name__ == "__main__":
    main()
