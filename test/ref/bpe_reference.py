"""A straightforward pure-Python BPE (subword-nmt's learn_bpe / apply_bpe).

Written from the algorithm description (Sennrich et al. 2016; subword-nmt's
documented behaviour), not from its code, as the independent reference for
corpq's C core.  Deliberately simple: learning recounts every pair from
scratch at each merge.

Words are maximal runs of non-whitespace ASCII (corpq also splits on tabs;
subword-nmt splits on spaces only).  Learning takes the exact maximum of
(count, pair); subword-nmt's pruning heuristic is not reproduced.
"""

import re

EOW = "</w>"
SEP = "@@"
_SPLIT = re.compile(r"[ \t\n\v\f\r]+")


def words(line):
    return [w for w in _SPLIT.split(line) if w]


def word_counts(lines):
    counts = {}
    for line in lines:
        for w in words(line):
            counts[w] = counts.get(w, 0) + 1
    return counts


def pair_counts(vocab):
    stats = {}
    for symbols, freq in vocab.items():
        for pair in zip(symbols, symbols[1:]):
            stats[pair] = stats.get(pair, 0) + freq
    return stats


def merge_word(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def learn(counts, num_merges, min_frequency=2):
    """The merges, in order, as a list of (left, right)."""
    vocab = {}
    for w, c in counts.items():
        key = tuple(w[:-1]) + (w[-1] + EOW,)
        vocab[key] = vocab.get(key, 0) + c
    merges = []
    for _ in range(num_merges):
        stats = pair_counts(vocab)
        if not stats:
            break
        best = max(stats, key=lambda p: (stats[p], p))
        if stats[best] < min_frequency:
            break
        merges.append(best)
        new_vocab = {}
        for symbols, freq in vocab.items():
            key = merge_word(symbols, best) if best[0] in symbols else symbols
            new_vocab[key] = new_vocab.get(key, 0) + freq
        vocab = new_vocab
    return merges


def codes_text(merges, version=2):
    head = "#version: 0.2\n" if version == 2 else ""
    return head + "".join("%s %s\n" % m for m in merges)


def parse_codes(text):
    """(version, ranks) from a codes file; ranks keep a pair's first rank."""
    lines = text.split("\n")
    version = 1
    if lines and lines[0].startswith("#version:"):
        version = 2 if lines[0].split()[-1].startswith("0.2") else 1
        lines = lines[1:]
    body = "\n".join(lines).rstrip("\n")
    ranks = {}
    if body:
        for i, line in enumerate(body.split("\n")):
            pair = tuple(line.strip("\r\n ").split(" "))
            if len(pair) != 2:
                raise ValueError("invalid line %d" % (i + 1))
            ranks.setdefault(pair, i)
    return version, ranks


def segment_word(word, ranks, version=2):
    if len(word) == 1:
        return [word]
    if version == 2:
        symbols = list(word[:-1]) + [word[-1] + EOW]
    else:
        symbols = list(word) + [EOW]
    while len(symbols) > 1:
        cands = [(ranks[p], p) for p in zip(symbols, symbols[1:]) if p in ranks]
        if not cands:
            break
        best = min(cands)[1]
        symbols = list(merge_word(symbols, best))
    if symbols[-1] == EOW:
        symbols = symbols[:-1]
    elif symbols[-1].endswith(EOW):
        symbols[-1] = symbols[-1][:-len(EOW)]
    return symbols


def apply(line, ranks, version=2):
    out = []
    for w in words(line):
        segs = segment_word(w, ranks, version)
        out.extend(s + SEP for s in segs[:-1])
        out.append(segs[-1])
    return " ".join(out)
