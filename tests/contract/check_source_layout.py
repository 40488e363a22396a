#!/usr/bin/env python3
"""The layout docs/ARCHITECTURE.md promises, kept true: in common/, injection/, tool/ and reports/
no source file over MAX_FILE_LINES lines and no function over MAX_FUNCTION_LINES (found by counting
braces, as a reader does: a line ending in `) ... {` at the depth of a namespace or class starts one),
and every .cpp file named in docs/ARCHITECTURE.md in a row of at most MAX_ROW_CHARACTERS, so that a
newcomer finds what owns it. And no check
under tool/checks/ decides who holds memory by an allocation family or a frame string: it asks the
replay's Owner (tool/replay/ownership.h), so that a pool's segments and blocks are judged one way."""
import argparse
import os
import re
import sys

# "No source file over about 450 lines and no function over about 80": the file limit leaves a
# little room so that a small fix does not force a split on the spot.
MAX_FILE_LINES = 470
MAX_FUNCTION_LINES = 80
# A row of docs/ARCHITECTURE.md's tables says what a file owns in a line a reader takes in at once;
# the detail lives in the header's opening comment.
MAX_ROW_CHARACTERS = 250
FOLDERS = ("common", "injection", "tool", "reports")
SOURCES = (".cpp", ".h")

# Who holds a byte is the memory model's to say (ownership.h), not each check's.
OWNERSHIP_BY_HAND = re.compile(r"\bis_pool_block\(|\bis_framework_pool\(|\"CUDACachingAllocator\"")

STARTS = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, ]+)?\s*\{$")
NOT_A_FUNCTION = re.compile(r"\s*(if|for|while|switch|else|do|namespace|struct|class|enum|union)\b")


def code_only(line):
    """The line without its comment and the insides of its string and character literals."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return re.sub(r"//.*", "", line).rstrip()


def long_functions(lines):
    """(first line, length) of each function longer than MAX_FUNCTION_LINES."""
    found, depth, start, start_depth = [], 0, None, 0
    raw_string = False
    for number, line in enumerate(lines, start=1):
        if raw_string:  # the body of a raw string literal (R"(...)") holds no code
            raw_string = ')"' not in line
            continue
        if 'R"(' in line and ')"' not in line.split('R"(', 1)[1]:
            raw_string = True
        code = code_only(line)
        if start is None and STARTS.search(code) and not NOT_A_FUNCTION.match(code):
            start, start_depth = number, depth
        depth += code.count("{") - code.count("}")
        if start is not None and depth <= start_depth:
            if number - start + 1 > MAX_FUNCTION_LINES:
                found.append((start, number - start + 1))
            start = None
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    architecture = open(os.path.join(a.source, "docs", "ARCHITECTURE.md")).read()
    problems, files = [], 0
    for number, line in enumerate(architecture.split("\n"), start=1):
        if line.startswith("|") and len(line) > MAX_ROW_CHARACTERS:
            problems.append(f"docs/ARCHITECTURE.md:{number}: a row of {len(line)} characters (at most "
                            f"{MAX_ROW_CHARACTERS}): keep the detail in the header's opening comment")
    for folder in FOLDERS:
        for root, _, names in os.walk(os.path.join(a.source, folder)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                files += 1
                path = os.path.join(root, name)
                shown = os.path.relpath(path, a.source)
                lines = open(path, errors="replace").read().split("\n")
                if len(lines) - 1 > MAX_FILE_LINES:
                    problems.append(f"{shown}: {len(lines) - 1} lines (at most {MAX_FILE_LINES}): split it by what it owns")
                for start, length in long_functions(lines):
                    problems.append(f"{shown}:{start}: a function of {length} lines (at most {MAX_FUNCTION_LINES})")
                if shown.startswith(os.path.join("tool", "checks") + os.sep):
                    for number, line in enumerate(lines, start=1):
                        if OWNERSHIP_BY_HAND.search(line):
                            problems.append(f"{shown}:{number}: decides who holds memory by hand; ask the replay's "
                                            "Owner (tool/replay/ownership.h)")
                stem = name[: -len(".cpp")]
                if name.endswith(".cpp") and name not in architecture and f"{stem}.{{h,cpp}}" not in architecture:
                    problems.append(f"{shown}: not named in docs/ARCHITECTURE.md (add a row saying what it owns)")
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: {files} source files, none over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}, "
              f"every .cpp named in docs/ARCHITECTURE.md, no row over {MAX_ROW_CHARACTERS} characters")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
