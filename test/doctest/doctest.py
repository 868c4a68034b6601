#!/usr/bin/env python3
"""The doc-test suite: every ```sql block of README.md and docs/*.md runs,
in order per file, and the ```output block after it (if any) is compared
with what psql prints.

    doctest.py [--update] FILE...

Each FILE runs in one psql session on a database of its own (run.sh gives
each file a fresh cluster).  Rules, also in test/README.md:

  * A ```sql block is run as it is written, through psql (aligned output,
    no pager).  A block with no output block after it must not raise an
    ERROR; one with an output block must print exactly that block.
  * An output block is the next fenced block with info string "output",
    with nothing but blank lines between it and the sql block.
  * `<!-- doctest: needs PAGE -->` anywhere in a file runs the sql blocks
    of PAGE (README, or a docs/ page's name without .md) first, in the
    same database, without comparing their output.
  * Normalised before comparing, in both texts: the local model server's
    address is written http://127.0.0.1:18000 (the runner replaces it in the
    SQL with the address of the server it started); psql's
    "psql:<stdin>:N: " before an error is dropped; trailing spaces and
    leading or trailing blank lines go.  Nothing else is normalised: shown
    output must not contain ids, timestamps or durations.

--update rewrites each output block with what psql printed (read every
line of the diff before committing it).  Prints TAP-like lines: ok N - ...
/ not ok N - ...; exits 1 on a failure.
"""
import os
import re
import subprocess
import sys

DOC_URL = "http://127.0.0.1:18000"
FENCE = re.compile(r"^```(\S*)\s*$")
NEEDS = re.compile(r"<!--\s*doctest:\s*needs\s+(\S+)\s*-->")
MARK = "@@doctest-block-"


def parse(path):
    """[(line, sql, output or None, (start, end) of the output's lines)]"""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks = []
    fences = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            fences.append((m.group(1), i, j))
            i = j + 1
        else:
            i += 1
    for k, (info, start, end) in enumerate(fences):
        if info != "sql":
            continue
        out = None
        span = None
        if k + 1 < len(fences) and fences[k + 1][0] == "output":
            _, ostart, oend = fences[k + 1]
            if all(not lines[x].strip() for x in range(end + 1, ostart)):
                out = "\n".join(lines[ostart + 1:oend])
                span = (ostart + 1, oend)
        blocks.append((start + 1, "\n".join(lines[start + 1:end]), out, span))
    return lines, blocks


def page_path(root, name):
    if name == "README":
        return os.path.join(root, "README.md")
    return os.path.join(root, "docs", name + ".md")


def normalise(text, url):
    text = text.replace(url, DOC_URL)
    out = []
    for line in text.split("\n"):
        line = re.sub(r"^psql:<stdin>:\d+: ", "", line)
        out.append(line.rstrip())
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def run_psql(script):
    p = subprocess.run(["stdbuf", "-oL", "-eL", "psql", "-X", "-P", "pager=off", "-v", "ON_ERROR_STOP=0"],
                       input=script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       encoding="utf-8", env=dict(os.environ, PGOPTIONS="-c client_min_messages=notice"))
    return p.stdout


def main():
    args = sys.argv[1:]
    update = False
    if args and args[0] == "--update":
        update = True
        args = args[1:]
    url = os.environ["ADK_TEST_MODEL_URL"]
    root = os.environ.get("ADK_DOC_ROOT", os.getcwd())
    path = args[0]
    lines, blocks = parse(path)
    needs = NEEDS.findall("\n".join(lines))
    script = []
    checked = []   # (label, expected, span) per block index
    n = 0
    for name in needs:
        _, nblocks = parse(page_path(root, name))
        for line, sql, _, _ in nblocks:
            script.append("\\echo %s%d" % (MARK, n))
            script.append(sql.replace(DOC_URL, url))
            checked.append(("%s (needed): %s.md line %d" % (path, name, line), None, None))
            n += 1
    for line, sql, out, span in blocks:
        script.append("\\echo %s%d" % (MARK, n))
        script.append(sql.replace(DOC_URL, url))
        checked.append(("%s line %d" % (path, line), out, span))
        n += 1
    script.append("\\echo %send" % MARK)
    text = run_psql("\n".join(script) + "\n")
    parts = {}
    cur = None
    for l in text.split("\n"):
        if l.startswith(MARK):
            cur = l[len(MARK):]
            parts[cur] = []
        elif cur is not None:
            parts[cur].append(l)
        elif l.strip():
            parts.setdefault("pre", []).append(l)
    failed = 0
    edits = []
    for k, (label, expected, span) in enumerate(checked):
        got = normalise("\n".join(parts.get(str(k), ["(no output: psql stopped?)"])), url)
        if expected is None:
            bad = [l for l in got.split("\n") if re.match(r"^(ERROR|FATAL|PANIC):", l)]
            ok = not bad and str(k) in parts
            detail = "\n".join(bad) or got
        else:
            ok = normalise(expected, url) == got
            detail = None
            if not ok and update and span:
                edits.append((span, got))
                ok = True
            elif not ok:
                import difflib
                detail = "\n".join(difflib.unified_diff(normalise(expected, url).split("\n"),
                                                        got.split("\n"), "shown", "psql", lineterm=""))
        if ok:
            print("ok - %s" % label)
        else:
            failed += 1
            print("not ok - %s" % label)
            for l in (detail or "").split("\n"):
                print("#   " + l)
    if edits:
        for (start, end), got in sorted(edits, reverse=True):
            lines[start:end] = got.split("\n")
        open(path, "w", encoding="utf-8").write("\n".join(lines))
        print("# %s: %d output block(s) rewritten" % (path, len(edits)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
