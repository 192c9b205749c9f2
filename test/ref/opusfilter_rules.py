"""OpusFilter's rule filters in plain Python, written from its documentation
and definitions (filters.py, segment_hash.py; the Vazquez et al. 2019 scores)
as a reference for corpq's C filters (test/ref/test_filters.py) and as the
one-process, line-by-line baseline of test/bench/bench_filters.sh.

Each *_score function returns what the OpusFilter filter of the same purpose
scores for a pair or a segment, with OpusFilter's defaults; keep() applies a
corpq filter spec (the same {name, args, threshold} objects as
corpq.filter_report(), with corpq's defaults for what it leaves out) to a
pair.
Needs the Debian packages python3-regex, python3-bs4 and python3-xxhash.
"""
import difflib
import math
import string

import bs4
import regex
import xxhash

NOT_ALPHA = regex.compile(r'\p{Alphabetic=No}')
WHITESPACE = regex.compile(r'\s')
NOT_LETTER = regex.compile(r'[^\p{L}]')
TERMINAL = ('.', '?', '!', '\u2026')


def length_ratio(src, tgt, unit='word'):
    """LengthRatioFilter: longer / shorter; 0 if both empty, inf if one."""
    lengths = sorted(len(s.split()) if unit == 'word' else len(s) for s in (src, tgt))
    if lengths[0] == 0:
        return 0.0 if lengths[1] == 0 else math.inf
    return lengths[1] / lengths[0]


def alpha_ratio(segment, exclude_whitespace=False):
    """AlphabetRatioFilter: share of Alphabetic characters; 1 if empty."""
    if exclude_whitespace:
        segment = WHITESPACE.sub('', segment)
    if not segment:
        return 1.0
    return len(NOT_ALPHA.sub('', segment)) / len(segment)


_not_script = {}


def char_script_ratio(segment, script):
    """CharacterScoreFilter: share of the Alphabetic characters in script."""
    alphas = NOT_ALPHA.sub('', segment)
    if not alphas:
        return 1.0
    if script not in _not_script:
        _not_script[script] = regex.compile(r'\p{^Script=%s}' % script)
    return len(_not_script[script].sub('', alphas)) / len(alphas)


def terminal_punct_score(src, tgt):
    """TerminalPunctuationFilter."""
    s = sum(1 for c in src if c in TERMINAL)
    t = sum(1 for c in tgt if c in TERMINAL)
    score = abs(s - t) + max(s - 1, 0) + max(t - 1, 0)
    return -math.log(score + 1)


def numerals_match(src, tgt):
    """NonZeroNumeralsFilter: SequenceMatcher ratio of the non-zero digits."""
    nums = [[int(c) for c in s if c in string.digits and c != '0'] for s in (src, tgt)]
    return difflib.SequenceMatcher(None, nums[0], nums[1]).ratio()


_repetition = {}


def repetition(segment, min_length=3, max_length=100, threshold=2):
    """RepetitionFilter: repetitions of the first match, or 0."""
    key = (min_length, max_length, threshold)
    if key not in _repetition:
        _repetition[key] = regex.compile(
            '(\\S.{%d,%d}?)(?: *\\1){%d,}' % (min_length - 1, max_length, threshold))
    m = _repetition[key].search(segment)
    if not m:
        return 0
    return m.group(0).count(m.group(1)) - 1


def html_tags(segment):
    """HtmlTagFilter: does BeautifulSoup's html.parser find an element."""
    try:
        return bool(bs4.BeautifulSoup(segment, 'html.parser').find())
    except (TypeError, UnboundLocalError, NotImplementedError, AssertionError,
            bs4.builder.ParserRejectedMarkup):
        return False


def dedup_key(src, tgt, mode='exact', side='both'):
    """remove_duplicates' key: xxh64 of the normalised sides joined by \\n,
    as a signed 64-bit integer."""
    def prep(s):
        if mode in ('letters', 'near'):
            s = NOT_LETTER.sub('', s)
        if mode in ('lowercase', 'near'):
            s = s.lower()
        return s.replace('\n', '\\n')
    parts = {'both': (src, tgt), 'src': (src,), 'tgt': (tgt,)}[side]
    h = xxhash.xxh64_intdigest('\n'.join(prep(p) for p in parts).encode('utf_16_le'), seed=0)
    return h - (1 << 64) if h >= 1 << 63 else h


def keep(spec, src, tgt):
    """Whether the pair passes one corpq filter spec (langid excepted)."""
    name, args = spec['name'], spec.get('args', {})
    t = spec.get('threshold', SPEC_DEFAULT_THRESHOLDS.get(name))
    if name == 'length_ratio':
        return length_ratio(src, tgt, args.get('unit', 'word')) < t
    if name == 'alpha_ratio':
        ex = args.get('exclude_whitespace', SPEC_DEFAULT_ARGS['alpha_ratio']['exclude_whitespace'])
        return alpha_ratio(src, ex) >= t and alpha_ratio(tgt, ex) >= t
    if name == 'char_script_ratio':
        return (char_script_ratio(src, args['src']) >= t
                and char_script_ratio(tgt, args['tgt']) >= t)
    if name == 'terminal_punct':
        return terminal_punct_score(src, tgt) >= t
    if name == 'numerals_match':
        return numerals_match(src, tgt) >= t
    if name == 'repetition':
        lo, hi = args.get('min_length', 3), args.get('max_length', 100)
        return all(repetition(s, lo, hi, int(t)) < t for s in (src, tgt))
    if name == 'html_tags':
        return not html_tags(src) and not html_tags(tgt)
    raise ValueError('no reference for filter %s' % name)


# What a corpq filter spec means when it leaves an arg or a threshold out:
# OpusFilter's defaults, except alpha_ratio's, which count letters among the
# non-space characters (AlphabetRatioFilter's exclude_whitespace) at 0.5
# instead of all characters at 0.75 (measured: docs/filters.md).
SPEC_DEFAULT_THRESHOLDS = {'length_ratio': 3, 'alpha_ratio': 0.5, 'char_script_ratio': 1,
                           'terminal_punct': -2, 'numerals_match': 0.5, 'repetition': 2,
                           'langid': 0}
SPEC_DEFAULT_ARGS = {'alpha_ratio': {'exclude_whitespace': True}}
