#!/usr/bin/env python3
"""The house in figures, for before/after notes on a restructuring.

Usage: test/scripts/house_figures.py [REPO]

README lines; lines of SQL text in C (runs of string-literal lines that
hold an SQL keyword) and how many such statements span 6+ lines;
functions of more than 100 lines (PostgreSQL layout: '{' and '}' in
column 0); SPI_connect calls and owner switches.  A heuristic count, the
same one every time: compare figures, not absolute truths.
"""
import re, sys, os, glob
root = sys.argv[1] if len(sys.argv) > 1 else '.'
cfiles = sorted(glob.glob(os.path.join(root, 'src/**/*.c'), recursive=True))
sqlkw = re.compile(r'\b(SELECT|INSERT|UPDATE|DELETE|WITH|FROM|WHERE|RETURNING)\b')
sql_lines = 0; stmts6 = 0; funcs100 = []; spi = 0; owner_sw = 0
for f in cfiles:
    src = open(f, encoding='utf-8', errors='replace').read()
    lines = src.split('\n')
    # runs of lines consisting of a string literal (SQL text in C)
    run = 0; runsql = False
    for ln in lines + ['']:
        s = ln.strip()
        if re.match(r'^(\w+\s*\(|[=,(]\s*)?"', s) and s.count('"') >= 2 and not s.startswith('#'):
            lit = ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', s))
            run += 1; runsql = runsql or bool(sqlkw.search(lit))
        else:
            if run and runsql:
                sql_lines += run
                if run >= 6: stmts6 += 1
            run = 0; runsql = False
    spi += len(re.findall(r'\bSPI_connect\s*\(', src))
    owner_sw += len(re.findall(r'\badk_become_owner\s*\(', src))
    # functions: a line starting with an identifier + '(' after a type line, body from '{' at col 0 to '}' at col 0
    i = 0
    while i < len(lines):
        if lines[i] == '{' and i > 0 and ')' in lines[i - 1] and not lines[i - 1].rstrip().endswith('='):
            j = i + 1
            while j < len(lines) and not lines[j].startswith('}'):
                j += 1
            n = j - i + 1
            k = i - 1
            while k > 0 and not re.match(r'^\**[A-Za-z_]\w*\s*\(', lines[k]):
                k -= 1
            m = re.match(r'^\**([A-Za-z_]\w*)\s*\(', lines[k])
            name = m.group(1) if m else '?'
            if n > 100:
                funcs100.append((n, os.path.relpath(f, root), name))
            i = j
        i += 1
readme = len(open(os.path.join(root, 'README.md')).read().split('\n')) - 1
print(f"README lines: {readme}")
print(f"SQL lines in C: {sql_lines} ({stmts6} statements of 6+ lines)")
print(f"functions over 100 lines: {len(funcs100)}")
for n, f, name in sorted(funcs100, reverse=True):
    print(f"   {n:5d} {f}:{name}")
print(f"SPI_connect calls: {spi}; adk_become_owner calls: {owner_sw}")
