#!/usr/bin/python3
"""check_arch.py - keep the architecture honest: which part of src/ may include which, and
how long a file or a function may grow.

The allowed arrows are read from ONE place, the table between the `arrows:` markers in
docs/internals/architecture.md (a part may always include its own headers). For every
`#include "part/x.h"` in src/ the including file's part must list that part; a file at the
top of src/ (main.c) is the part "main". The same pass fails a hand-written .c/.h over
MAX_FILE_LINES lines (generated tables exempt, by name) and a function over MAX_FUNC_LINES
lines, counted from the line that names it to its closing brace.

  scripts/check_arch.py                 # check ./src against the architecture page
  scripts/check_arch.py --src DIR --doc FILE
Exit status 0 when everything holds, 1 with one line per violation (file:line: what).
Standard library only: runs with /usr/bin/python3 and nothing installed."""
import argparse
import os
import re
import sys

MAX_FILE_LINES = 1500
MAX_FUNC_LINES = 150

# Generated tables: data, not code someone reads top to bottom (their generators say so).
GENERATED = {
    "api/kinds_schema.c",
    "api/protobuf_schema.c",
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
BEGIN, END = "<!-- arrows: begin -->", "<!-- arrows: end -->"


def read_arrows(doc):
    """{part: set(parts it may include)} from the table between the markers in doc."""
    text = open(doc, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{doc}: no table between {BEGIN} and {END}")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    arrows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.lstrip().startswith("|"):
            continue
        m = re.fullmatch(r"`([a-z][a-z0-9_]*)`", cells[0])
        if not m:
            continue  # the header row and its rule
        part = m.group(1)
        may = re.findall(r"`([a-z][a-z0-9_]*)`", cells[-1])
        arrows[part] = set(may) | {part}
    if not arrows:
        sys.exit(f"{doc}: the arrows table is empty")
    for part, may in arrows.items():
        for m in may:
            if m not in arrows:
                sys.exit(f"{doc}: part {part} may include {m}, which the table does not list")
    return arrows


def part_of(rel):
    """The part a path relative to src/ belongs to."""
    return rel.split("/", 1)[0] if "/" in rel else os.path.splitext(rel)[0]


def functions(lines):
    """(name, first line, last line) for every function definition, 1-based. The house
    style puts a definition's opening and closing braces alone in column 0, and
    continuation lines of a signature indented, which is all this needs."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip() == "{" and i > 0:
            start = i - 1
            while start > 0 and lines[start][:1] in (" ", "\t"):
                start -= 1
            m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", lines[start])
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            out.append((m.group(1) if m else "?", start + 1, end + 1))
            i = end
        i += 1
    return out


def check(src, arrows):
    problems = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for fn in sorted(filenames):
            if not fn.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            shown = "src/" + rel
            part = part_of(rel)
            lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            may = arrows.get(part)
            if may is None:
                problems.append(f"{shown}:1: part {part} is not in the architecture's arrows table")
                may = {part}
            for n, line in enumerate(lines, 1):
                m = INCLUDE_RE.match(line)
                if not m or "/" not in m.group(1):
                    continue  # "x.h" beside the file: its own part
                to = m.group(1).split("/", 1)[0]
                if to not in may:
                    problems.append(f"{shown}:{n}: {part} -> {to} is not allowed ({m.group(1)}; "
                                    f"{part} may include: {', '.join(sorted(may - {part})) or 'nothing of ours'})")
            if rel in GENERATED:
                continue
            if len(lines) > MAX_FILE_LINES:
                problems.append(f"{shown}:{len(lines)}: {len(lines)} lines, over the limit of {MAX_FILE_LINES}")
            for name, first, last in functions(lines):
                n = last - first + 1
                if n <= MAX_FUNC_LINES:
                    continue
                problems.append(f"{shown}:{first}: function {name} is {n} lines, over the limit of {MAX_FUNC_LINES}")
    return problems


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(here, "src"))
    ap.add_argument("--doc", default=os.path.join(here, "docs/internals/architecture.md"))
    args = ap.parse_args()
    arrows = read_arrows(args.doc)
    problems = check(args.src, arrows)
    for p in problems:
        print(p)
    if problems:
        print(f"check_arch: {len(problems)} problem(s); the arrows are in {args.doc}")
        return 1
    print(f"check_arch: {len(arrows)} parts, every include allowed, files and functions within the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
