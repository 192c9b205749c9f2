"""Reference check of the rule filters and duplicate keys (extension/filters)
against OpusFilter's definitions in plain Python (opusfilter_rules.py: the
`regex` module, difflib, BeautifulSoup's html.parser, xxhash).

Every score must be equal (floats bit for bit: both sides compute the same
ratio of the same integers, or -log of the same integer) on
  - hand-picked edge cases (empty, emoji, mixed scripts, broken HTML),
  - fuzz: random strings over the characters each filter cares about,
  - the corpora test/lib.sh finds (the shared en-es corpora): every 20th
    pair for the scores, a sample plus every segment with '<' or '&' for
    html_tags.
Exits non-zero on failure.
"""
import ctypes as C
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opusfilter_rules as ref  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import corpora  # noqa: E402  (test/lib.sh's lookup: the one place that knows)


class UText(C.Structure):
    _fields_ = [("s", C.c_char_p), ("bytes", C.c_size_t),
                ("cp", C.POINTER(C.c_int32)), ("n", C.c_size_t)]


class Error(C.Structure):
    _fields_ = [("code", C.c_int), ("msg", C.c_char * 256)]


lib = C.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))
P = C.POINTER(UText)
lib.cq_utext_init.argtypes = [P, C.c_char_p, C.c_size_t, C.c_void_p]
lib.cq_utext_free.argtypes = [P]
lib.cq_length_ratio.argtypes = [P, P, C.c_int]
lib.cq_length_ratio.restype = C.c_double
lib.cq_alpha_ratio.argtypes = [P, C.c_bool]
lib.cq_alpha_ratio.restype = C.c_double
lib.cq_char_script_ratio.argtypes = [P, C.c_int]
lib.cq_char_script_ratio.restype = C.c_double
lib.cq_script_from_name.argtypes = [C.c_char_p]
lib.cq_terminal_punct_score.argtypes = [P, P]
lib.cq_terminal_punct_score.restype = C.c_double
lib.cq_numerals_match.argtypes = [P, P, C.POINTER(C.c_double), C.c_void_p]
lib.cq_repetition.argtypes = [P, C.c_int, C.c_int, C.c_int, C.POINTER(C.c_int), C.c_void_p]
lib.cq_html_tags.argtypes = [P]
lib.cq_html_tags.restype = C.c_bool
lib.cq_html_same_tags.argtypes = [P, P]
lib.cq_html_same_tags.restype = C.c_bool
lib.cq_dedup_key.argtypes = [P, P, C.c_int, C.c_int, C.POINTER(C.c_int64), C.c_void_p]

REPETITION_ARGS = ((3, 100, 2), (1, 5, 1), (2, 20, 3), (1, 0, 3))
MODES = {'exact': 0, 'lowercase': 1, 'letters': 2, 'near': 3}
SIDES = {'both': 0, 'src': 1, 'tgt': 2}
failures = []


class Text:
    def __init__(self, s):
        self.b = s.encode()
        self.t = UText()
        assert lib.cq_utext_init(C.byref(self.t), self.b, len(self.b), None) == 0

    def __del__(self):
        lib.cq_utext_free(C.byref(self.t))

    @property
    def p(self):
        return C.byref(self.t)


def core_scores(src, tgt):
    a, b = Text(src), Text(tgt)
    r = C.c_double()
    assert lib.cq_numerals_match(a.p, b.p, C.byref(r), None) == 0
    out = {
        'length_ratio word': lib.cq_length_ratio(a.p, b.p, 0),
        'length_ratio char': lib.cq_length_ratio(a.p, b.p, 1),
        'terminal_punct': lib.cq_terminal_punct_score(a.p, b.p),
        'numerals_match': r.value,
    }
    for side, t in (('src', a), ('tgt', b)):
        out['alpha_ratio %s' % side] = lib.cq_alpha_ratio(t.p, False)
        out['alpha_ratio nows %s' % side] = lib.cq_alpha_ratio(t.p, True)
        for script in ('Latin', 'Cyrillic', 'Han'):
            out['script %s %s' % (script, side)] = lib.cq_char_script_ratio(
                t.p, lib.cq_script_from_name(script.encode()))
        for lo, hi, th in REPETITION_ARGS:
            n = C.c_int()
            assert lib.cq_repetition(t.p, lo, hi, th, C.byref(n), None) == 0
            out['repetition %d %d %d %s' % (lo, hi, th, side)] = n.value
    for mode in MODES:
        for side in SIDES:
            k = C.c_int64()
            assert lib.cq_dedup_key(a.p, b.p, MODES[mode], SIDES[side], C.byref(k), None) == 0
            out['dedup %s %s' % (mode, side)] = k.value
    return out


def ref_scores(src, tgt):
    out = {
        'length_ratio word': ref.length_ratio(src, tgt, 'word'),
        'length_ratio char': ref.length_ratio(src, tgt, 'char'),
        'terminal_punct': ref.terminal_punct_score(src, tgt) + 0.0,
        'numerals_match': ref.numerals_match(src, tgt),
    }
    for side, s in (('src', src), ('tgt', tgt)):
        out['alpha_ratio %s' % side] = ref.alpha_ratio(s, False)
        out['alpha_ratio nows %s' % side] = ref.alpha_ratio(s, True)
        for script in ('Latin', 'Cyrillic', 'Han'):
            out['script %s %s' % (script, side)] = ref.char_script_ratio(s, script)
        for lo, hi, th in REPETITION_ARGS:
            out['repetition %d %d %d %s' % (lo, hi, th, side)] = ref.repetition(s, lo, hi, th)
    for mode in MODES:
        for side in SIDES:
            out['dedup %s %s' % (mode, side)] = ref.dedup_key(src, tgt, mode, side)
    return out


def same(x, y):
    if isinstance(x, float) and isinstance(y, float) and math.isinf(x) and math.isinf(y):
        return True
    return x == y


def compare(src, tgt, where):
    c, r = core_scores(src, tgt), ref_scores(src, tgt)
    for k in r:
        if not same(c[k], r[k]):
            failures.append('%s: %s: core %r, reference %r for %r ||| %r'
                            % (where, k, c[k], r[k], src[:80], tgt[:80]))


def compare_html(s, where):
    t = Text(s)
    c, r = lib.cq_html_tags(t.p), ref.html_tags(s)
    if c != r:
        failures.append('%s: html_tags: core %r, bs4 %r for %r' % (where, c, r, s[:120]))


# The formatting and layout elements keep_same_tags compares (its docs)
MARKUP = set("""a abbr b big blockquote br center cite dd div dl dt em font h1 h2 h3 h4 h5 h6 hr i
iframe img ins kbd li meta nobr noscript ol p pre s script small span strike strong style sub sup
tbody td th thead tr tt u ul wbr""".split())


def tag_names(s):
    """The multiset of element names BeautifulSoup's html.parser builds, or
    None where html.parser raises (the one known difference: html_tags)."""
    import bs4
    import collections
    try:
        return collections.Counter(t.name for t in bs4.BeautifulSoup(s, 'html.parser').find_all()
                                   if t.name in MARKUP)
    except (TypeError, UnboundLocalError, NotImplementedError, AssertionError,
            bs4.builder.ParserRejectedMarkup):
        return None


def compare_same_tags(a, b, where):
    """html_tags with keep_same_tags: the two sides' element names, as
    bs4 counts them, are the same multiset."""
    ta, tb = Text(a), Text(b)
    na, nb = tag_names(a), tag_names(b)
    c, r = lib.cq_html_same_tags(ta.p, tb.p), na == nb
    if na is not None and nb is not None and c != r:
        failures.append('%s: html_same_tags: core %r, bs4 %r for %r ||| %r' % (where, c, r, a[:80], b[:80]))


SAME_TAGS_EDGE = [
    ('<b>x</b> y', 'y <B>x</B>'), ('<b>x</b>', '<i>x</i>'), ('<br/> a', 'a <br>'), ('<b>x', 'x'),
    ('x', 'y'), ('<b><b>x', '<b>x'), ('<a href="1">x</a>', '<a href="2" class=c>y</a>'),
    ('<p>a</p><p>b</p>', '<p>ab</p>'), ('a <!-- <b> --> b', 'a b'), ('&#x <b>', 'x'),
    ('<a b="x>y">z', '<a>z'), ('x<y and z>w', '<b>'), ('<file> <b>x</b>', '<archivo> <b>x</b>'),
    ('<object>', '<objeto>'), ('<P>x', '<p>y'), ('x<b and z>w', '<b>'),
]   # more than 64 tags on a side: never the same (the core's bound; test_filters.c)


EDGE = [
    ('', ''), ('', 'x'), (' ', '\u3000'), ('a\x1cb', 'a\x85b'), ('\U0001F600 emoji \U0001F680', 'x'),
    ('Привет мир', 'hello world'), ('日本語のテキスト', '中文文本'), ('ΣΑΣ ΟΔΟΣ', 'İstanbul ǅ'),
    ('line\nbreak', 'tab\there'), ('1 2 3 0 0 10', '3 2 1'), ('...!!!', '?'), ('\u2026', '.'),
    ('ab ab ab ab', 'abc abc  abc'), ('a' * 300, 'b' * 7), ('xy\nxy\nxy', 'z z z z'),
    ('12' * 150, '21' * 120), ('9' * 250 + '1', '1' + '9' * 250), ('Straße', 'STRASSE'),
]

HTML_EDGE = [
    '<b>x</b>', '<br/>', '<br />', 'a<b', 'a < b', 'x<y and z>w', '<!-- <b> -->', '<!-- <b>',
    '<a href="x">', "<a href='x", "<a href='x>y", "<a href= 'x>y", "<a href=='x>", '<a b ="x>',
    '&#; <b>', '&#x <b>', '&#12a <b>', '&#12<b>', '&#x1F;<i>', '</b>', '</ <b>', '<!doctype html><p>',
    '<?xml ?><a>', '<3 <ok>', '<a\x0bb>', '<a/b>', "<a b='c'd>", '<a =x>', '<%s>', '%1$s <%2$s>',
    '<file>', 'Usage: cmd <file> [options]', '<a b="c', '<a\tb="c">', '<A HREF=x>',
]


def fuzz(rng, alphabet, n, length):
    return [''.join(rng.choice(alphabet) for _ in range(rng.randrange(length))) for _ in range(n)]


def main():
    rng = random.Random(20261122)
    for src, tgt in EDGE:
        compare(src, tgt, 'edge')
        compare(tgt, src, 'edge')
    for s in HTML_EDGE:
        compare_html(s, 'edge')
    for a, b in SAME_TAGS_EDGE:
        compare_same_tags(a, b, 'edge')
        compare_same_tags(b, a, 'edge')
    # repetition and numerals fuzz: few distinct characters, many repeats
    for s in fuzz(rng, 'ab ab\n1209', 3000, 40):
        compare(s, s[::-1], 'fuzz')
    for s in fuzz(rng, 'ab  \n\t.x', 3000, 60):
        compare(s, s, 'fuzz spaces')
    for s in fuzz(rng, '123456789', 300, 600):
        compare(s, ''.join(rng.sample(s, len(s))), 'fuzz digits')
    for s in fuzz(rng, '<>/="\' !-?&#;xaA\t', 20000, 24):
        compare_html(s, 'fuzz html')
    tags = fuzz(rng, '<>/="\' !-?&#;xbBa\t', 4000, 20)
    for a, b in zip(tags, tags[1:] + tags[:1]):
        compare_same_tags(a, b, 'fuzz same tags')
        compare_same_tags(a, ''.join(rng.sample(a, len(a))), 'fuzz same tags')
    print('edge cases and fuzz: %d failures' % len(failures))

    cdir, files = corpora.find()
    pairs = html_lines = 0
    for path in files:
        name = os.path.basename(path)
        with open(path, encoding='utf-8') as f:
            rows = [line.rstrip('\n').split('\t') for line in f][1:]
        for i, r in enumerate(rows):
            src, tgt = r[2], r[3]
            if i % 20 == 0:
                compare(src, tgt, name)
                pairs += 1
            for s in (src, tgt):
                if '<' in s or '&' in s or i % 50 == 0:
                    compare_html(s, name)
                    html_lines += 1
            if '<' in src or '<' in tgt:
                compare_same_tags(src, tgt, name)
    print('corpora %s: %d pairs (every 20th), %d segments for html_tags' % (cdir, pairs, html_lines))
    for f in failures[:30]:
        print('FAIL', f)
    print('test_filters: %d failures' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
