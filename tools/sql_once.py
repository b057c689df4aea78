#!/usr/bin/env python3
"""SQL written once: every function, procedure and view whose definition
stands in both sql/src/ (the install script) and the upgrade parts of
sql/upgrade/<from>--<to>/ moves into one file of sql/functions/ (views:
sql/views/), named <schema.name>.sql, and both places include it with a
psql-style line `\\ir <path relative to the including file>`, which make
expands when it writes the install and upgrade scripts (docs/hacking.md,
"SQL written once").

    python3 tools/sql_once.py [--check] [--upgrade DIR] [--no-stale]

It takes the tree as it is and does nothing on a converted one (re-runnable
after merges).  Statements are compared as text once `CREATE FUNCTION` and
`CREATE OR REPLACE FUNCTION` (likewise PROCEDURE, VIEW) are made one and
trailing white space is dropped; an object whose definitions differ is left
alone and listed.  Before that, a copy in an upgrade part that a later part
of the same upgrade defines again (the same signature, as written) is
removed when nothing between the two copies names the object (such a copy
is a stale intermediate).  --no-stale skips that step; --check changes
nothing and exits 1 when there is something to do.
"""

import argparse
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

IR_RE = re.compile(r'^\\ir[ \t]+(\S+)[ \t]*$')
HEAD_RE = re.compile(
    r'CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|VIEW|TABLE|TYPE)\s+', re.I)
IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
NAME_RE = re.compile(r'(%s)(?:\s*\.\s*(%s))?' % (IDENT, IDENT))


class Stmt:
    """One top-level statement of a file: text[start:end] (end after ';')."""

    def __init__(self, path, start, end, text):
        self.path = path
        self.start = start
        self.end = end
        self.text = text[start:end]
        self.include = None     # the file a `\ir` line names (resolved)
        self.body = self.text   # the statement (for \ir: the file's text)
        self.kind = None        # FUNCTION / PROCEDURE / VIEW
        self.name = None        # schema.name, lowercase unless quoted
        self.key = None         # kind, name and argument list as written
        self.norm = None        # normalised text for comparison
        self.replace = False    # written CREATE OR REPLACE
        self.full = self.text       # what the statement says, includes expanded
        self.inc_companions = None  # for \\ir: the included file's other statements


def scan(text):
    """Split SQL text into top-level statements the way psql does: quotes,
    comments, dollar quoting, parentheses and BEGIN [ATOMIC] ... END bodies
    of CREATE FUNCTION/PROCEDURE (psqlscan.l's begin_depth) are honoured.
    A backslash command at the start of a statement ends at its line's end.
    Returns a list of (start, end)."""
    out = []
    i = 0
    n = len(text)
    start = None
    paren = 0
    begin = 0
    idents = []
    while i < n:
        c = text[i]
        if c in ' \t\r\n':
            i += 1
            continue
        if text.startswith('--', i):
            j = text.find('\n', i)
            i = n if j < 0 else j + 1
            continue
        if text.startswith('/*', i):
            depth = 0
            while i < n:
                if text.startswith('/*', i):
                    depth += 1
                    i += 2
                elif text.startswith('*/', i):
                    depth -= 1
                    i += 2
                    if depth == 0:
                        break
                else:
                    i += 1
            continue
        if start is None:
            start = i
            paren = begin = 0
            idents = []
            if c == '\\':
                j = text.find('\n', i)
                j = n if j < 0 else j
                out.append((start, j))
                start = None
                i = j
                continue
        if c == "'":
            esc = i > 0 and text[i - 1] in 'eE' and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == '_'))
            i += 1
            while i < n:
                if esc and text[i] == '\\':
                    i += 2
                    continue
                if text[i] == "'":
                    if i + 1 < n and text[i + 1] == "'":
                        i += 2
                        continue
                    break
                i += 1
            i += 1
            continue
        if c == '"':
            i += 1
            while i < n:
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        i += 2
                        continue
                    break
                i += 1
            i += 1
            continue
        if c == '$':
            m = re.compile(r'\$([A-Za-z_][A-Za-z0-9_]*)?\$').match(text, i)
            if m and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == '_')):
                tag = m.group(0)
                j = text.find(tag, m.end())
                if j < 0:
                    raise SyntaxError('unterminated dollar quote %s' % tag)
                i = j + len(tag)
                continue
            i += 1
            continue
        if c.isalpha() or c == '_':
            m = re.compile(r'[A-Za-z_][A-Za-z0-9_$]*').match(text, i)
            word = m.group(0).lower()
            idents.append(word)
            # psqlscan.l: CREATE [OR REPLACE] FUNCTION|PROCEDURE
            w = idents[:4]
            infunc = (len(w) >= 2 and w[0] == 'create' and
                      (w[1] in ('function', 'procedure') or
                       (w[1] == 'or' and len(w) >= 4 and w[2] == 'replace' and
                        w[3] in ('function', 'procedure'))))
            if infunc and paren == 0:
                if word == 'begin':
                    begin += 1
                elif word == 'case' and begin >= 1:
                    begin += 1
                elif word == 'end' and begin > 0:
                    begin -= 1
            i = m.end()
            continue
        if c == '(':
            paren += 1
        elif c == ')':
            paren = max(0, paren - 1)
        elif c == ';' and paren == 0 and begin == 0:
            out.append((start, i + 1))
            start = None
        i += 1
    if start is not None:
        out.append((start, n))
    return out


def strip_comments(s):
    """The statement without its comments (quotes kept), for name searches."""
    out = []
    i = 0
    n = len(s)
    while i < n:
        if s.startswith('--', i):
            j = s.find('\n', i)
            i = n if j < 0 else j
            continue
        if s.startswith('/*', i):
            j = s.find('*/', i + 2)
            i = n if j < 0 else j + 2
            continue
        out.append(s[i])
        i += 1
    return ''.join(out)


def normtext(s):
    return '\n'.join(l.rstrip() for l in s.strip().split('\n'))


def gapsig(gap, stmt):
    """A companion statement and the comments above it, compared as text
    (blank lines and trailing white space aside)."""
    lines = [l.rstrip() for l in gap.split('\n') if l.strip()]
    return '\n'.join(lines + [normtext(stmt)])


def companions(f, idx, name):
    """The statements right after f.stmts[idx] (comments between them
    are compared with them) that say something of the same object: its COMMENT ON (also of
    its columns), REVOKE, GRANT, ALTER, indexes, triggers and
    pg_extension_config_dump.  Returns a list of Stmt."""
    out = []
    q = re.escape(name)
    end = r'(?![A-Za-z0-9_$.])'
    k = r'(FUNCTION|PROCEDURE|VIEW|TABLE|TYPE)'
    pats = [r'COMMENT\s+ON\s+%s\s+%s%s' % (k, q, end),
            r'COMMENT\s+ON\s+COLUMN\s+%s\.' % q,
            r'ALTER\s+%s\s+(ONLY\s+)?%s%s' % (k, q, end),
            r'(GRANT|REVOKE)\s[^;]*?\sON\s+(%s\s+)?%s%s' % (k, q, end),
            r'CREATE\s+(UNIQUE\s+)?INDEX\s+\S+\s+ON\s+(ONLY\s+)?%s%s' % (q, end),
            r'CREATE\s+TRIGGER\s+\S+\s[^;]*?\sON\s+%s%s' % (q, end),
            r"SELECT\s+(pg_catalog\.)?pg_extension_config_dump\('%s'" % q,
            r'CREATE\s+POLICY\s+\S+\s+ON\s+%s%s' % (q, end),
            r'COMMENT\s+ON\s+(POLICY|TRIGGER)\s+\S+\s+ON\s+%s%s' % (q, end)]
    pat = re.compile('|'.join('(?:%s)' % p for p in pats), re.I)
    prev = f.stmts[idx]
    for st in f.stmts[idx + 1:]:
        if st.include or st.key:
            break
        if not pat.match(strip_comments(st.text).strip()):
            break
        st.sig = gapsig(f.text[prev.end:st.start], st.text)
        out.append(st)
        prev = st
    return out


def norm_ident(x):
    if x.startswith('"'):
        return x[1:-1].replace('""', '"')
    return x.lower()


def describe(st):
    body = st.body.strip()
    m = HEAD_RE.match(body)
    if not m:
        return
    st.kind = m.group(2).upper()
    st.replace = bool(m.group(1))
    nm = NAME_RE.match(body, m.end())
    if not nm:
        return
    if nm.group(2):
        st.name = norm_ident(nm.group(1)) + '.' + norm_ident(nm.group(2))
    else:
        st.name = norm_ident(nm.group(1))
    args = ''
    if st.kind in ('FUNCTION', 'PROCEDURE'):
        j = nm.end()
        while j < len(body) and body[j] in ' \t\r\n':
            j += 1
        if j < len(body) and body[j] == '(':
            depth = 0
            k = j
            while k < len(body):
                if body[k] == '(':
                    depth += 1
                elif body[k] == ')':
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            args = ' '.join(body[j:k + 1].split()).lower()
    st.key = (st.kind if st.kind != 'PROCEDURE' else 'FUNCTION', st.name, args)
    text = '\n'.join(l.rstrip() for l in body.split('\n'))
    st.norm = HEAD_RE.sub(lambda mm: 'CREATE %s ' % mm.group(2).upper(), text, count=1)


class File:
    def __init__(self, path, tree, order, readonly=False):
        self.path = path
        self.tree = tree         # 'src' or 'upgrade'
        self.order = order
        self.readonly = readonly
        with open(path) as f:
            self.text = f.read()
        self.stmts = []
        for (a, b) in scan(self.text):
            st = Stmt(path, a, b, self.text)
            m = IR_RE.match(st.text)
            if m:
                inc = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
                if not os.path.isfile(inc):
                    sys.exit('%s: \\ir names no file: %s' % (rel(path), m.group(1)))
                st.include = inc
                with open(inc) as f:
                    itext = f.read()
                spans = scan(itext)
                st.body = itext[spans[0][0]:spans[0][1]] if spans else itext
                st.inc_companions = [gapsig(itext[spans[k - 1][1]:spans[k][0]], itext[spans[k][0]:spans[k][1]])
                                     for k in range(1, len(spans))]
                st.full = itext
            describe(st)
            self.stmts.append(st)
        self.edits = []          # (start, end, replacement)


def rel(p):
    return os.path.relpath(p, ROOT)


def line_bounds_ok(text, a, b):
    """The statement stands alone on its lines: only white space before it on
    its first line, only white space or a -- comment after it on its last."""
    ls = text.rfind('\n', 0, a) + 1
    if text[ls:a].strip():
        return False
    le = text.find('\n', b)
    le = len(text) if le < 0 else le
    rest = text[b:le].strip()
    return rest == '' or rest.startswith('--')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--check', action='store_true')
    ap.add_argument('--no-stale', action='store_true')
    ap.add_argument('--upgrade', default=None,
                    help='the upgrade folder (default: the one of the current version)')
    opt = ap.parse_args()
    os.chdir(ROOT)
    # a pass works on the text as it is; what it changes can free a copy for
    # the next one (a copy that named an object now names the final one), so
    # passes run until one has nothing to do
    for n in range(20):
        todo, differs = once(opt, n)
        if opt.check or not todo:
            break
    if differs:
        print('left alone, the definitions differ (sql/src vs the last upgrade part defining it):')
        for name, a, b in sorted(set(differs)):
            print('  %s: %s vs %s' % (name, a, b))
    if opt.check and todo:
        sys.exit(1)


def once(opt, npass):
    if opt.upgrade is None:
        dirs = sorted(d for d in os.listdir('sql/upgrade') if os.path.isdir(os.path.join('sql/upgrade', d)))
        with open('pg_agents.control') as f:
            ver = re.search(r"default_version\s*=\s*'([^']*)'", f.read()).group(1)
        dirs = [d for d in dirs if d.endswith('--' + ver)]
        if len(dirs) != 1:
            sys.exit('no single upgrade folder into %s: %s' % (ver, dirs))
        opt.upgrade = os.path.join('sql/upgrade', dirs[0])
    updir = os.path.join(ROOT, opt.upgrade)

    src = [File(os.path.join(ROOT, 'sql/src', f), 'src', i)
           for i, f in enumerate(sorted(os.listdir('sql/src'))) if f.endswith('.sql')]
    srcmap = {f.path: f for f in src}
    stream = []   # the upgrade in order: (File, readonly)
    for i, f in enumerate(sorted(os.listdir(updir))):
        p = os.path.join(updir, f)
        if f.endswith('.sql'):
            stream.append(File(p, 'upgrade', i))
        elif f.endswith('.include'):
            with open(p) as fh:
                target = os.path.join(ROOT, fh.read().strip())
            stream.append(File(target, 'include', i, readonly=True))
    for t in ('980_labels.sql', '990_privileges.sql'):
        stream.append(File(os.path.join(ROOT, 'sql/src', t), 'include', 10 ** 6, readonly=True))

    changed = 0

    # 1. stale intermediate copies in upgrade parts: a copy that a later
    # copy (same kind, name and argument list as written) replaces, and that
    # nothing between the two names (but its own COMMENT/REVOKE/GRANT/ALTER
    # right after it), goes; one with such companions (a function new in
    # this version, created, then revoked and commented) becomes the later
    # definition instead, included from its one file in step 2.
    removed = []
    aliased = []
    if not opt.no_stale:
        flat = [(f, st) for f in stream for st in f.stmts]
        where = {id(st): i for i, (f, st) in enumerate(flat)}
        gone = set()
        alias = {}
        again = True
        while again:            # a removal may free an earlier copy
            again = False
            for idx, (f, st) in enumerate(flat):
                if f.readonly or st.key is None or idx in gone or idx in alias or st.inc_companions:
                    continue
                later = next((j for j in range(idx + 1, len(flat))
                              if j not in gone and flat[j][1].key == st.key), None)
                if later is None:
                    continue
                own = set(where[id(c)] for c in companions(f, f.stmts.index(st), st.name))
                short = st.name.split('.')[-1]
                pat = re.compile(r'(?<![A-Za-z0-9_$])%s(?![A-Za-z0-9_$])' % re.escape(short), re.I)
                if any(pat.search(strip_comments(flat[k][1].full))
                       for k in range(idx + 1, later) if k not in gone and k not in own):
                    continue
                if not line_bounds_ok(f.text, st.start, st.end):
                    continue
                if own:
                    alias[idx] = True
                    continue
                f.edits.append((st.start, st.end, None))
                gone.add(idx)
                removed.append((rel(f.path), st.name, rel(flat[later][0].path)))
                again = True
        for idx in alias:
            f, st = flat[idx]
            final = next(flat[j][1] for j in range(idx + 1, len(flat))
                         if j not in gone and j not in alias and flat[j][1].key == st.key)
            if st.include and st.body == final.body:
                continue        # already so
            st.alias = final
        for idx in gone:
            flat[idx][1].key = None     # neither superseding nor matched
            flat[idx][1].norm = None
        for idx in alias:
            st = flat[idx][1]
            st.key = None
            st.norm = getattr(st, 'alias', st).norm if getattr(st, 'alias', None) else st.norm

    # 2. one file per definition found in both trees
    groups = {}
    for f in src + [x for x in stream if not x.readonly]:
        for st in f.stmts:
            if st.norm is not None:
                groups.setdefault(st.norm, []).append((f, st))
    made = []
    used_names = {}
    for folder in ('sql/functions', 'sql/views', 'sql/tables', 'sql/types'):
        if os.path.isdir(folder):
            for fn in os.listdir(folder):
                used_names[os.path.join(ROOT, folder, fn)] = True
    for norm, items in groups.items():
        trees = set(f.tree for f, st in items)
        if not ({'src', 'upgrade'} <= trees):
            continue
        if all(st.include for f, st in items):
            continue
        target = next((st for f, st in items if st.include), None)
        replace = any(st.replace for f, st in items)
        kind = items[0][1].kind
        inline = [(f, st) for f, st in items if not st.include]
        follow = {id(st): companions(f, f.stmts.index(st), st.name) for f, st in inline}
        if target is None:
            # the companions every copy has, in the same words
            ncomp = min(len(follow[id(st)]) for f, st in inline)
            for k in range(ncomp):
                if len(set(follow[id(st)][k].sig for f, st in inline)) != 1:
                    ncomp = k
                    break
            folder = {'VIEW': 'sql/views', 'TABLE': 'sql/tables', 'TYPE': 'sql/types'}.get(kind, 'sql/functions')
            base = items[0][1].name
            # the text as written (trailing white space dropped), from a
            # copy that says CREATE OR REPLACE if one does
            real = [(f, st) for f, st in inline if not getattr(st, 'alias', None)]
            if not real:
                continue
            bf, best = next(((f, st) for f, st in real if st.replace), real[0])
            last = follow[id(best)][ncomp - 1].end if ncomp else best.end
            content = normtext(bf.text[best.start:last]) + '\n'
            n = 1
            while True:
                cand = os.path.join(ROOT, folder, base + ('' if n == 1 else '_%d' % n) + '.sql')
                if not os.path.exists(cand) and cand not in used_names:
                    break
                with open(cand) if os.path.exists(cand) else open(os.devnull) as fh:
                    if fh.read() == content:
                        break
                n += 1
            path = cand
            if not os.path.exists(path):
                made.append((path, content))
            used_names[path] = True
        else:
            path = target.include
            with open(path) as fh:
                t = HEAD_RE.match(fh.read().strip())
            if replace and t and not t.group(1):
                print('left alone (the file %s says CREATE, an inline copy CREATE OR REPLACE): %s'
                      % (rel(path), items[0][1].name))
                continue
            ncomp = len(target.inc_companions)
            bad = [f for f, st in inline
                   if [c.sig for c in follow[id(st)][:ncomp]] != target.inc_companions]
            if bad:
                print('left alone (its COMMENT/REVOKE/GRANT/ALTER differ from %s): %s in %s'
                      % (rel(path), items[0][1].name, ', '.join(rel(f.path) for f in bad)))
                continue
        for f, st in inline:
            end = follow[id(st)][ncomp - 1].end if ncomp else st.end
            if not line_bounds_ok(f.text, st.start, end):
                print('left alone (not on lines of its own): %s in %s' % (st.name, rel(f.path)))
                continue
            line = '\\ir ' + os.path.relpath(path, os.path.dirname(f.path))
            f.edits.append((st.start, end, line))
            if getattr(st, 'alias', None):
                aliased.append((rel(f.path), st.name, rel(st.alias.path)))

    # 3. what differs: an object of both trees whose definitions are not one
    last = {}
    for f in stream:
        for st in f.stmts:
            if st.key:
                last[st.key] = (f, st)
    differs = []
    for f in src:
        for st in f.stmts:
            if st.key and st.key in last and last[st.key][1].norm != st.norm:
                lf = last[st.key][0]
                if lf.readonly:
                    continue
                differs.append((st.name, rel(f.path), rel(lf.path)))

    todo = [f for f in src + stream if f.edits and not f.readonly]
    if opt.check:
        for p, name, by in removed:
            print('stale: %s in %s (defined again in %s)' % (name, p, by))
        for p, name, by in aliased:
            print('stale, to be the final one: %s in %s (the final: %s)' % (name, p, by))
        for t, c in made:
            print('to make: %s' % rel(t))
        for f in todo:
            print('to change: %s' % rel(f.path))
    else:
        for t, c in made:
            os.makedirs(os.path.dirname(t), exist_ok=True)
            with open(t, 'w') as fh:
                fh.write(c)
        for f in todo:
            text = f.text
            for a, b, rep in sorted(f.edits, key=lambda e: -e[0]):
                if rep is None:
                    # drop the statement and its line(s)
                    ls = text.rfind('\n', 0, a) + 1
                    le = text.find('\n', b)
                    le = len(text) if le < 0 else le + 1
                    text = text[:ls] + text[le:]
                else:
                    text = text[:a] + rep + text[b:]
            with open(f.path, 'w') as fh:
                fh.write(text)
        for p, name, by in removed:
            print('removed stale copy: %s in %s (defined again in %s)' % (name, p, by))
        for p, name, by in aliased:
            print('stale copy made the final one (it is commented or revoked right after): %s in %s (the final: %s)' % (name, p, by))
        print('pass %d: %d files made, %d files changed' % (npass + 1, len(made), len(todo)))
    return len(made) + len(todo), differs


if __name__ == '__main__':
    main()
