#!/usr/bin/env python3
"""The SQL examples of README.md and docs/*.md (test/integration/docs_examples.sh).

Every ```sql block runs, or is a fragment that says why it cannot and which
test runs its SQL.  The lines `<!-- ... -->` directly above the fence (blank
lines between them allowed) say which:

* no marker: test/integration/docs_examples.sh runs the block with psql
  (ON_ERROR_STOP) in its own copy of the fixture database, test/docs/fixture.sql.
  A block that shows psql output (a header line, a dashed rule, rows) after its
  statements must print exactly that output.  A block whose last line is a
  comment `-- ERROR:  message` must run up to its last statement and fail
  there with exactly that message.
* `<!-- run after: SQL -->`: SQL (an object the example assumes, beyond the
  fixture) runs first, in the same session.
* `<!-- run with: OLD => NEW -->` (one or more lines): the block runs with
  the text OLD replaced by NEW, for sizes that take too long in a test (a
  training run's steps, a preset); OLD must stand in the block.
* `<!-- run in: tables -->`: the block runs in a copy of the fixture's tables
  without the extension (a block that creates it).
* `<!-- fragment: REASON; tested by FILE[, FILE...] -->`: a block that cannot
  run on one server with the fixture (REASON: several servers, Citus, ...).
  Each FILE must be a test CI runs (test/** but not test/bench/),
  and that test must run the block's SQL: either it reads the block from the
  document through `fragments("docs/x.md", "test/y.sh")` below (and runs it
  as written), or each statement of the block stands in one of the FILEs in
  the same shape: the same words in the same order, with other literals,
  numbers, host names and psql or shell variables.
* `<!-- outline: REASON; tested by FILE[, FILE...] -->`: SQL that the named
  tests run in another form (a pipeline stage's statements with the
  placeholders its C source fills in; other host names and options): every
  key name of the block must appear in the FILEs: each corpq function or view
  it names (`corpq.x`; in a test or in the named source that composes the
  statements) and each table it creates (in a test CI runs; a table p_x also
  matches as _x: pipelines prefix their tables).  This catches a renamed or
  removed function, view or table, not a changed statement: an outline is a
  fragment waiting for its test to read it through `fragments()`.

* `<!-- corpora: FILE -->`: the block is also a step of its page's recipe
  on the shared corpora themselves: FILE (test/integration/newcomer.sh)
  names the page and reads its marked blocks through `recipe("docs/x.md", FILE)` below
  and runs them in the document's order in one database that holds the
  corpora, loaded with the statement of docs/scaling.md, at PostgreSQL's
  default settings; it then checks what they made.  The fixture's `run
  after` and `run with` do not apply there; instead
  `<!-- corpora after: SQL -->` runs SQL first (an object the page's recipe
  assumes) and `<!-- corpora with: OLD => NEW -->` replaces a training
  budget (max_seconds, steps) that is too long for a test; OLD must stand
  in the block.

`examples.py check OUTDIR` checks the markers (exit 1 on a failure) and writes
each block to run as OUTDIR/NNN.sql (its expected output as NNN.out, its
expected error as NNN.err), with OUTDIR/index listing
"NNN<TAB>file:line<TAB>database" (fixture or tables).
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
MARKER = re.compile(r'^<!--\s*(.*?)\s*-->$')
COVERED = re.compile(r'^(fragment|outline):\s*(.+?);\s*tested by\s+(.+)$')
RULE = re.compile(r'^-+(\+-+)*$')
ERROR = re.compile(r'^--\s*(ERROR:\s+.*\S)\s*$')


class Block:
    def __init__(self, path, line, markers, body):
        self.path, self.line, self.body = path, line, body
        self.where = f'{path}:{line}'
        self.kind, self.reason, self.files = 'run', None, []
        self.setup, self.subst, self.database, self.errors = [], [], 'fixture', []
        self.corpora, self.corpora_setup, self.corpora_subst = None, [], []
        for m in markers:
            self.parse(m)

    def parse(self, m):
        c = COVERED.match(m)
        if c:
            self.kind, self.reason = c.group(1), c.group(2)
            self.files = [f.strip() for f in c.group(3).split(',') if f.strip()]
        elif m.startswith('run after:'):
            self.setup.append(m[len('run after:'):].strip())
        elif m.startswith('run with:') and '=>' in m:
            old, new = m[len('run with:'):].split('=>', 1)
            self.subst.append((old.strip(), new.strip()))
        elif m.startswith('corpora after:'):
            self.corpora_setup.append(m[len('corpora after:'):].strip())
        elif m.startswith('corpora with:') and '=>' in m:
            old, new = m[len('corpora with:'):].split('=>', 1)
            self.corpora_subst.append((old.strip(), new.strip()))
        elif m.startswith('corpora:'):
            self.corpora = m[len('corpora:'):].strip()
        elif m == 'run in: tables':
            self.database = 'tables'
        elif m.startswith('tested by'):
            self.errors.append('a "tested by" marker must say why the block cannot run: '
                               '<!-- fragment: REASON; tested by FILE --> (or outline: for placeholders)')
        else:
            self.errors.append(f'unknown marker <!-- {m} -->')

    @property
    def marker(self):
        """The named tests of a fragment or outline (None for a block to run)."""
        return ', '.join(self.files) if self.kind != 'run' else None


def doc_files():
    files = ['README.md']
    d = os.path.join(ROOT, 'docs')
    files += sorted('docs/' + f for f in os.listdir(d) if f.endswith('.md'))
    return files


def read_blocks(path):
    """Every ```sql block of the document, with the markers above it."""
    lines = open(os.path.join(ROOT, path), encoding='utf-8').read().split('\n')
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == '```sql':
            start, j, markers = i, i - 1, []
            while j >= 0 and (not lines[j].strip() or MARKER.match(lines[j].strip())):
                if lines[j].strip():
                    markers.insert(0, MARKER.match(lines[j].strip()).group(1))
                j -= 1
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith('```'):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit(f'{path}:{start + 1}: unterminated ```sql block')
            out.append(Block(path, start + 1, markers, body))
        i += 1
    return out


def blocks(path):
    """(line of the fence, named tests or None, run-after SQL, body lines) of every ```sql block."""
    return [(b.line, b.marker, '\n'.join(b.setup) or None, b.body) for b in read_blocks(path)]


def fragments(path, test):
    """The bodies of the fragments of a document that name test as theirs: a
    test reads them with this to run them as the document writes them."""
    return [b.body for b in read_blocks(path) if b.kind == 'fragment' and test in b.files]


def recipe(path, test):
    """The steps of a page's recipe on the shared corpora that test runs: the
    blocks marked <!-- corpora: test -->, in the document's order, each as
    (file:line, SQL) with its `corpora after:` SQL first and its `corpora
    with:` replacements made (the fixture's `run after`/`run with` do not
    apply there), the psql output it shows left out."""
    out = []
    for b in read_blocks(path):
        if b.corpora != test:
            continue
        text = '\n'.join(split_output(b.body)[0])
        for old, new in b.corpora_subst:
            if old not in text:
                raise SystemExit(f'{b.where}: "corpora with" replaces {old}, which the block does not hold')
            text = text.replace(old, new)
        out.append((b.where, ''.join(s + '\n' for s in b.corpora_setup) + text + '\n'))
    return out


def check_corpora(b, errors):
    if b.corpora is None:
        if b.corpora_setup or b.corpora_subst:
            errors.append(f'{b.where}: "corpora after/with" without <!-- corpora: TEST -->')
        return
    p = os.path.join(ROOT, b.corpora)
    if not is_ci_test(b.corpora) or not os.path.isfile(p):
        errors.append(f'{b.where}: "corpora" names {b.corpora}, not a test that CI runs')
    else:
        text = open(p, encoding='utf-8', errors='replace').read()
        if 'examples.recipe(' not in text or b.path not in text:
            errors.append(f'{b.where}: {b.corpora} does not read the recipe of {b.path} '
                          '(it must name the page and read it through examples.recipe())')
    text = '\n'.join(b.body)
    for old, _ in b.corpora_subst:
        if old not in text:
            errors.append(f'{b.where}: "corpora with" replaces {old}, which the block does not hold')


def split_output(body):
    """The statements and the psql output a block shows after them (or None)."""
    for k, line in enumerate(body):
        if k > 0 and RULE.match(line.strip()) and '|' in body[k - 1]:
            h = k - 1
            while h > 0 and body[h - 1].strip():
                h -= 1  # the header line is the first line after a blank one
            return body[:h], body[h:]
    return body, None


def strip_comments(sql):
    out = []
    for line in sql.split('\n'):
        # a -- comment, outside a string literal (good enough for the docs)
        q = False
        for k, ch in enumerate(line):
            if ch == "'":
                q = not q
            elif not q and line.startswith('--', k):
                line = line[:k]
                break
        out.append(line)
    return '\n'.join(out)


def key_names(body):
    code = strip_comments('\n'.join(body))
    names = set(re.findall(r'\bcorpq\.([a-z_][a-z0-9_]*)', code))
    keys = {'corpq.' + n for n in names}
    for t in re.findall(r'\bCREATE\s+(?:FOREIGN\s+)?TABLE\s+([a-z_][a-z0-9_]*)', code, re.I):
        keys.add(t)
    return keys


# the shape of SQL: literals, numbers, host names and variables become '?'
SHAPE = [(re.compile(p), r) for p, r in [
    (r"\bif not exists\b", ' '),
    (r"\$\$|\$[a-z_]*\$", ' '),                     # dollar quotes: the words inside count
    (r"E?'(?:[^']|'')*'", '?'),                     # string literals
    (r":'[a-z_]+'|:\"[a-z_]+\"|:[a-z_]+\b", '?'),   # psql variables
    (r"\$\{[a-z_]+\}|\$[a-z_]+\b|\$[0-9]\b", '?'),  # shell variables
    (r"\b[0-9]+(\.[0-9]+)?(e-?[0-9]+)?\b", '?'),    # numbers
    (r"\\", ''),                                    # shell escapes
    (r'"', ''),
    (r"\s*([(),;=])\s*", r'\1'),
    (r"\s+", ' '),
]]


def shape(sql):
    s = strip_comments(sql).lower()
    for p, r in SHAPE:
        s = p.sub(r, s)
    return s.strip()


def statements(body):
    """The block's statements, split at a ';' that ends a line outside $$."""
    out, cur, dollar = [], [], False
    for line in strip_comments('\n'.join(body)).split('\n'):
        cur.append(line)
        dollar ^= line.count('$$') % 2 == 1
        if not dollar and line.rstrip().endswith(';'):
            out.append('\n'.join(cur))
            cur = []
    if '\n'.join(cur).strip():
        out.append('\n'.join(cur))
    return [s for s in out if s.strip()]


def is_ci_test(f):
    return f.startswith('test/') and not f.startswith('test/bench/')


def check_covered(b, errors):
    text = ''
    for f in b.files:
        p = os.path.join(ROOT, f)
        if not os.path.isfile(p):
            errors.append(f'{b.where}: "tested by" names {f}, which does not exist')
            continue
        if not is_ci_test(f) and b.kind == 'fragment':
            errors.append(f'{b.where}: "tested by" names {f}, not a test that CI runs (test/ but not test/bench/)')
        text += open(p, encoding='utf-8', errors='replace').read() + '\n'
    if b.kind == 'outline':
        tests = ''.join(open(os.path.join(ROOT, f), encoding='utf-8', errors='replace').read().lower() + '\n'
                        for f in b.files if is_ci_test(f) and os.path.isfile(os.path.join(ROOT, f)))
        if not tests:
            errors.append(f'{b.where}: "tested by" names no test that CI runs (test/ but not test/bench/)')
        for k in sorted(key_names(b.body)):
            # a pipeline's tables are named prefix_x: another prefix will do
            alt = k[k.index('_'):] if '_' in k and not k.startswith('corpq.') else k
            where = text.lower() if k.startswith('corpq.') else tests
            if k.lower() not in where and alt.lower() not in where:
                errors.append(f'{b.where}: {k} appears in none of {", ".join(b.files)}')
        return
    if f'fragments("{b.path}"' in text:
        return  # the test runs the block as the document writes it
    have = shape(text)
    for s in statements(b.body):
        if shape(s).rstrip(';') not in have:
            first = ' '.join(s.split())[:80]
            errors.append(f'{b.where}: no statement of {", ".join(b.files)} has the shape of "{first}"')


def write_run(b, name, outdir, errors):
    body = b.body
    for old, new in b.subst:
        joined = '\n'.join(body)
        if old not in joined:
            errors.append(f'{b.where}: "run with" replaces {old}, which the block does not hold')
        body = joined.replace(old, new).split('\n')
    sql, expected = split_output(body)
    last = [l for l in sql if l.strip()]
    err = ERROR.match(last[-1].strip()) if last else None
    with open(os.path.join(outdir, name + '.sql'), 'w', encoding='utf-8') as f:
        f.write(''.join(s + '\n' for s in b.setup))
        f.write('\n'.join(sql) + '\n')
    if expected is not None:
        with open(os.path.join(outdir, name + '.out'), 'w', encoding='utf-8') as f:
            f.write('\n'.join(l.rstrip() for l in expected).rstrip('\n') + '\n')
    if err:
        with open(os.path.join(outdir, name + '.err'), 'w', encoding='utf-8') as f:
            f.write(err.group(1) + '\n')


def main():
    if len(sys.argv) != 3 or sys.argv[1] != 'check':
        raise SystemExit('usage: examples.py check OUTDIR')
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    errors, n_run, n_cov, index = [], 0, 0, []
    for path in doc_files():
        for b in read_blocks(path):
            errors += [f'{b.where}: {e}' for e in b.errors]
            check_corpora(b, errors)
            if b.kind == 'run':
                n_run += 1
                name = f'{n_run:03d}'
                write_run(b, name, outdir, errors)
                index.append(f'{name}\t{b.where}\t{b.database}')
                continue
            n_cov += 1
            check_covered(b, errors)
            print(f'{b.kind} {b.where} ({b.reason}) run by {", ".join(b.files)}')
    with open(os.path.join(outdir, 'index'), 'w') as f:
        f.write('\n'.join(index) + ('\n' if index else ''))
    for e in errors:
        print('FAIL: ' + e, file=sys.stderr)
    print(f'docs examples: {n_run} to run, {n_cov} fragments run by named tests, {len(errors)} marker failures')
    sys.exit(1 if errors else 0)


if __name__ == '__main__':
    main()
