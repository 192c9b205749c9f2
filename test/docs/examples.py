#!/usr/bin/env python3
"""The SQL examples of README.md and docs/*.md (test/integration/docs_examples.sh).

Every ```sql block is one of two kinds:

* run (no marker): test/integration/docs_examples.sh runs it with psql
  (ON_ERROR_STOP) in its own copy of the fixture database, test/docs/fixture.sql.
  A block that shows psql output (a header line, a dashed rule, rows) after its
  statements must print exactly that output.
* covered: the nearest non-blank line before the fence is
  `<!-- tested by FILE[, FILE...] -->`, for a block that cannot run on one
  server with the fixture (several servers, Citus, a long training run, a
  pipeline stage's SQL with placeholders).  Each FILE must exist, at least one
  must be a test CI runs (sql/*.sql, test/**), and every key name of the block
  must appear in one of them: each corpq function or view it names
  (`corpq.x`) and each table it creates (a table p_x also matches as _x:
  pipelines prefix their tables).  This is weaker than running the block:
  it catches a renamed or removed function, view or table, not a changed
  argument.

A run block may instead be preceded by `<!-- run after: SQL -->`: SQL (an
object the example assumes, beyond the fixture) runs first, in the same
session.

`examples.py check OUTDIR` checks the markers (exit 1 on a failure) and writes
each block to run as OUTDIR/NNN.sql (and its expected output as NNN.out),
with OUTDIR/index listing "NNN<TAB>file:line".
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
MARKER = re.compile(r'^<!--\s*tested by\s+(.+?)\s*-->\s*$')
SETUP = re.compile(r'^<!--\s*run after:\s+(.+?)\s*-->\s*$')
RULE = re.compile(r'^-+(\+-+)*$')


def doc_files():
    files = ['README.md']
    d = os.path.join(ROOT, 'docs')
    files += sorted('docs/' + f for f in os.listdir(d) if f.endswith('.md'))
    return files


def blocks(path):
    """(line of the fence, tested-by marker, run-after SQL, body lines) of every ```sql block."""
    lines = open(os.path.join(ROOT, path), encoding='utf-8').read().split('\n')
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == '```sql':
            start = i
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            m = MARKER.match(lines[j].strip()) if j >= 0 else None
            su = SETUP.match(lines[j].strip()) if j >= 0 else None
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith('```'):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit(f'{path}:{start + 1}: unterminated ```sql block')
            out.append((start + 1, m.group(1) if m else None, su.group(1) if su else None, body))
        i += 1
    return out


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


def is_ci_test(f):
    return f.startswith(('sql/', 'test/')) and not f.startswith('test/bench/')


def main():
    if len(sys.argv) != 3 or sys.argv[1] != 'check':
        raise SystemExit('usage: examples.py check OUTDIR')
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    errors, n_run, n_cov, index = [], 0, 0, []
    for path in doc_files():
        for line, marker, setup, body in blocks(path):
            where = f'{path}:{line}'
            if marker is None:
                n_run += 1
                sql, expected = split_output(body)
                name = f'{n_run:03d}'
                with open(os.path.join(outdir, name + '.sql'), 'w', encoding='utf-8') as f:
                    if setup:
                        f.write(setup + '\n')
                    f.write('\n'.join(sql) + '\n')
                if expected is not None:
                    with open(os.path.join(outdir, name + '.out'), 'w', encoding='utf-8') as f:
                        f.write('\n'.join(l.rstrip() for l in expected).rstrip('\n') + '\n')
                index.append(f'{name}\t{where}')
                continue
            n_cov += 1
            files = [f.strip() for f in marker.split(',') if f.strip()]
            text = ''
            for f in files:
                p = os.path.join(ROOT, f)
                if not os.path.isfile(p):
                    errors.append(f'{where}: "tested by" names {f}, which does not exist')
                    continue
                text += open(p, encoding='utf-8', errors='replace').read() + '\n'
            if not any(is_ci_test(f) for f in files):
                errors.append(f'{where}: "tested by" names no test that CI runs (sql/, test/ but not test/bench/)')
            low = text.lower()
            for k in sorted(key_names(body)):
                # a pipeline's tables are named prefix_x: another prefix will do
                alt = k[k.index('_'):] if '_' in k and not k.startswith('corpq.') else k
                if k.lower() not in low and alt.lower() not in low:
                    errors.append(f'{where}: {k} appears in none of {", ".join(files)}')
            print(f'covered {where} by {", ".join(files)}')
    with open(os.path.join(outdir, 'index'), 'w') as f:
        f.write('\n'.join(index) + ('\n' if index else ''))
    for e in errors:
        print('FAIL: ' + e, file=sys.stderr)
    print(f'docs examples: {n_run} to run, {n_cov} covered by named tests, {len(errors)} marker failures')
    sys.exit(1 if errors else 0)


if __name__ == '__main__':
    main()
