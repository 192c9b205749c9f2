"""Extract an English-Spanish parallel corpus from installed Debian packages.

bible: SWORD modules engWEB2015eb (sword-text-web) and spaRV1909eb
(sword-text-sparv), dumped with mod2imp (libsword-utils), markup, notes and
headings removed, paired by book/chapter/verse.
l10n: every Spanish gettext catalog under /usr/share/locale/es/LC_MESSAGES,
read directly from the .mo format, plural forms and headers skipped,
multi-line messages split into line pairs when both sides have as many lines.

Exits with status 1 when neither source yields pairs.  Standard library only.
"""
import argparse
import glob
import html
import os
import re
import shutil
import struct
import subprocess
import sys
import unicodedata

TAG = re.compile(r"<[^>]*>")
NOTE = re.compile(r"<note\b.*?</note>", re.S)
TITLE = re.compile(r"<title\b.*?</title>", re.S)
REF = re.compile(r"^\$\$\$(.+?) (\d+):(\d+)\s*$")
DROP_CAP = re.compile(r"^([A-ZÁÉÍÓÚÑ]{2,})(\s+[a-záéíóúñ])")


def clean(text):
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch in "\t\n")
    return " ".join(text.replace("\u00b6", " ").split())


def sword_verses(module):
    """{(book, chapter, verse): text} of a SWORD module, markup removed."""
    try:
        dump = subprocess.run(["mod2imp", module], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    verses, key, buf = {}, None, []

    def flush():
        if key and key[1] > 0 and key[2] > 0:
            raw = TITLE.sub(" ", NOTE.sub(" ", "\n".join(buf)))
            text = clean(html.unescape(TAG.sub(" ", raw)))
            text = re.sub(r"\s+([,.;:!?])", r"\1", text)
            m = DROP_CAP.match(text)
            if m:
                text = m.group(1).capitalize() + text[len(m.group(1)):]
            if text:
                verses[key] = text

    for line in dump.splitlines():
        if line.startswith("$$$"):
            flush()
            m = REF.match(line)
            key = (m.group(1).replace(" ", ""), int(m.group(2)), int(m.group(3))) if m else None
            buf = []
        else:
            buf.append(line)
    flush()
    return verses


def bible_pairs():
    en, es = sword_verses("engWEB2015eb"), sword_verses("spaRV1909eb")
    for key in en:
        if key in es:
            yield ("bible.%s.%d.%d" % key, "bible", en[key], es[key])


def mo_messages(path):
    """(msgid, msgstr) pairs of a GNU .mo file, without header and plurals."""
    data = open(path, "rb").read()
    if len(data) < 28:
        return
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if end is None:
        return
    n, orig, trans = struct.unpack(end + "III", data[8:20])
    for i in range(n):
        ol, oo = struct.unpack(end + "II", data[orig + 8 * i: orig + 8 * i + 8])
        tl, to = struct.unpack(end + "II", data[trans + 8 * i: trans + 8 * i + 8])
        msgid, msgstr = data[oo:oo + ol], data[to:to + tl]
        if not msgid or b"\0" in msgid:
            continue
        if b"\x04" in msgid:
            msgid = msgid.split(b"\x04", 1)[1]
        try:
            yield i, msgid.decode("utf-8"), msgstr.decode("utf-8")
        except UnicodeDecodeError:
            continue


def l10n_pairs():
    for path in sorted(glob.glob("/usr/share/locale/es/LC_MESSAGES/*.mo")):
        domain = os.path.basename(path)[:-3]
        for index, src, tgt in mo_messages(path):
            src_lines = [l for l in src.split("\n") if l.strip()]
            tgt_lines = [l for l in tgt.split("\n") if l.strip()]
            if len(src_lines) > 1 and len(src_lines) == len(tgt_lines):
                for k, (s, t) in enumerate(zip(src_lines, tgt_lines)):
                    yield ("l10n.%s.%d.%d" % (domain, index, k), "l10n", clean(s), clean(t))
            else:
                yield ("l10n.%s.%d" % (domain, index), "l10n", clean(src), clean(tgt))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-per-domain", type=int, default=0, help="keep at most N pairs per domain (0: all)")
    args = ap.parse_args()
    seen, rows, per_domain = set(), [], {}
    sources = [bible_pairs] if shutil.which("mod2imp") else []
    for source in sources + [l10n_pairs]:
        for rid, domain, src, tgt in source():
            if not src or not tgt or src == tgt or len(src) > 1000 or len(tgt) > 1000:
                continue
            if (src, tgt) in seen:
                continue
            if args.max_per_domain and per_domain.get(domain, 0) >= args.max_per_domain:
                continue
            seen.add((src, tgt))
            per_domain[domain] = per_domain.get(domain, 0) + 1
            rows.append((rid, domain, src, tgt))
    if not rows:
        print("make_corpus: no pairs found", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("id\tdomain\tsrc\ttgt\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
