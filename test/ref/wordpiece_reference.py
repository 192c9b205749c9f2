"""Hugging Face's BERT tokenizers in plain Python, from their sources.

Two readings, for the two implementations corpq's WordPiece segmenter
(extension/text/wordpiece.h) follows:

* "slow": transformers' Python BertTokenizer (models/bert/tokenization_bert.py:
  BasicTokenizer, WordpieceTokenizer; and PreTrainedTokenizer.tokenize in
  tokenization_utils.py, which lower-cases around the special tokens and
  cuts the text at them first);
* "fast": tokenizers' BertNormalizer (normalizers/bert.rs), BertPreTokenizer
  (pre_tokenizers/bert.rs) and WordPiece model (models/wordpiece), as
  BertTokenizerFast assembles them, the special tokens cut out of the raw
  text first (tokenizer/added_vocabulary.rs).

Written from reading that code, not copied; nothing here imports transformers.
"""
import re
import unicodedata

SPECIAL_KEYS = ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def read_vocab(text):
    """vocab.txt as transformers reads it: Python text mode (universal newlines)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def category(ch):
    return unicodedata.category(ch)


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return category(ch)[0] == "P"


def is_cjk(cp, fast):
    ext_e = 0x2B920 if fast else 0x2B820
    ranges = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (ext_e, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
    return any(lo <= cp <= hi for lo, hi in ranges)


def drop_marks(text):
    return "".join(c for c in unicodedata.normalize("NFD", text) if category(c) != "Mn")


def split_punctuation(word):
    out, cur = [], ""
    for c in word:
        if is_punctuation(c):
            if cur:
                out.append(cur)
                cur = ""
            out.append(c)
        else:
            cur += c
    if cur:
        out.append(cur)
    return out


class Bert:
    def __init__(self, vocab, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True,
                 max_input_chars_per_word=100, variant="slow", **specials):
        self.vocab = set(vocab)
        self.lower = do_lower_case
        self.strip = do_lower_case if strip_accents is None else strip_accents
        self.cjk = tokenize_chinese_chars
        self.max_chars = max_input_chars_per_word
        self.is_fast = variant == "fast"
        defaults = dict(zip(SPECIAL_KEYS, ("[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]")))
        defaults.update(specials)
        self.unk = defaults["unk_token"]
        self.specials = []
        for k in SPECIAL_KEYS:
            if defaults[k] and defaults[k] not in self.specials:
                self.specials.append(defaults[k])

    # ---- the special tokens: leftmost occurrence, longest there ----
    def cut_specials(self, text):
        parts, start, i = [], 0, 0
        while i < len(text):
            hits = [s for s in self.specials if text.startswith(s, i)]
            if not hits:
                i += 1
                continue
            s = max(hits, key=len)
            if i > start:
                parts.append((False, text[start:i]))
            parts.append((True, s))
            i += len(s)
            start = i
        if start < len(text):
            parts.append((False, text[start:]))
        return parts

    # ---- WordpieceTokenizer / models::wordpiece ----
    def wordpiece(self, word):
        if len(word) > self.max_chars:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:
                return [self.unk]
            pieces.append(piece)
            start = end
        return pieces

    # ---- transformers ----
    def slow_clean(self, text):
        out = []
        for c in text:
            if ord(c) in (0, 0xFFFD) or (c not in "\t\n\r" and category(c)[0] == "C"):
                continue
            out.append(" " if c in " \t\n\r" or category(c) == "Zs" else c)
        return "".join(out)

    def slow_basic(self, text):
        text = self.slow_clean(text)
        if self.cjk:
            text = "".join(" %s " % c if is_cjk(ord(c), False) else c for c in text)
        text = unicodedata.normalize("NFC", text)
        words = []
        for w in text.split():
            if w in self.specials:
                words.append(w)
                continue
            if self.lower:
                w = w.lower()
            if self.strip:
                w = drop_marks(w)
            words.extend(split_punctuation(w))
        return " ".join(words).split()

    def slow(self, text):
        if self.lower:
            alternatives = "|".join(re.escape(s) for s in self.specials)
            text = re.sub("(" + alternatives + r")|(.+?)",
                          lambda m: m.group(1) or m.group(2).lower(), text)
        out = []
        for special, part in self.cut_specials(text):
            if special:
                out.append(part)
            else:
                for w in self.slow_basic(part):
                    out.extend(self.wordpiece(w))
        return out

    # ---- tokenizers ----
    def fast_normalize(self, text):
        out = []
        for c in text:
            if ord(c) in (0, 0xFFFD) or (c not in "\t\n\r" and category(c)[0] == "C"):
                continue
            if c in "\t\n\r" or c.isspace():
                out.append(" ")
            elif self.cjk and is_cjk(ord(c), True):
                out.append(" %s " % c)
            else:
                out.append(c)
        text = "".join(out)
        if self.strip:
            text = drop_marks(text)
        if self.lower:
            text = "".join(c.lower() for c in text)
        return text

    def fast(self, text):
        out = []
        for special, part in self.cut_specials(text):
            if special:
                out.append(part)
                continue
            for w in self.fast_normalize(part).split():
                for p in split_punctuation(w):
                    out.extend(self.wordpiece(p))
        return out

    def tokenize(self, text):
        return self.fast(text) if self.is_fast else self.slow(text)


def tokens_to_string(tokens):
    """BertTokenizer.convert_tokens_to_string."""
    return " ".join(tokens).replace(" ##", "").strip()
