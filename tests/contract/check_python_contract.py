#!/usr/bin/env python3
"""The Python hooks' contract is declared once (common/python_contract.inc): neither the hook modules
(python/cuaudit_site) nor the tool and the injection repeat what it declares as a literal of their
own. Fails on a file format name, a hook module's name, a history action's name, or a ctypes
signature written by hand, outside the list and its generator (tool/gen_python_contract.py)."""
import argparse
import os
import re
import sys

FOLDERS = ("python", "tool", "injection", "reports", "common")
SOURCES = (".py", ".cpp", ".h")
ALLOWED = {os.path.join("common", "python_contract.inc"), os.path.join("tool", "gen_python_contract.py")}


def declared(source):
    text = open(os.path.join(source, "common", "python_contract.inc")).read()
    literals = set()
    for m in re.finditer(r'^CUAUDIT_FRAMEWORK\(\s*\w+\s*,\s*"[^"]*"\s*,\s*"([^"]+)"\s*,\s*"[^"]*"\s*,\s*\w+\s*,\s*"([^"]*)"',
                         text, re.M):
        literals.update(x for x in m.groups() if x)
    literals.update(re.findall(r'^CUAUDIT_HOOKS_DOCUMENT\(\s*\w+\s*,\s*\w+\s*,\s*"([^"]+)"', text, re.M))
    # PyTorch's action names are common words ("alloc" is also an argument of its history): only a
    # table of them (a name mapped to a number) repeats the list.
    actions = re.findall(r'^CUAUDIT_HISTORY_ACTION\(\s*\w+\s*,\s*\d+\s*,\s*"([^"]+)"', text, re.M)
    return literals, actions


def without_trailing_comment(line, name):
    """The line without a comment after its code (// in C++, # in Python) outside string literals."""
    marker = "#" if name.endswith(".py") else "//"
    at = line.find(marker)
    while at >= 0:
        if line[:at].count('"') % 2 == 0 and line[:at].count("'") % 2 == 0:
            return line[:at]
        at = line.find(marker, at + 1)
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    literals, actions = declared(a.source)
    pattern = re.compile(r"""(["'])(%s)\1""" % "|".join(re.escape(x) for x in sorted(literals, key=len, reverse=True)))
    action_table = re.compile(r"""(["'])(%s)\1\s*:\s*\d""" % "|".join(re.escape(x) for x in actions))
    problems = []
    for folder in FOLDERS:
        for root, _, names in os.walk(os.path.join(a.source, folder)):
            for name in sorted(names):
                path = os.path.join(root, name)
                shown = os.path.relpath(path, a.source)
                if not name.endswith(SOURCES) or shown in ALLOWED:
                    continue
                for number, line in enumerate(open(path, errors="replace"), start=1):
                    stripped = line.strip()
                    if stripped.startswith(("#", "//")) and not stripped.startswith("#include"):
                        continue  # comments may name them
                    line = without_trailing_comment(line, name)  # nor may a comment after the code
                    m = pattern.search(line) or action_table.search(line)
                    if m:
                        problems.append(f"{shown}:{number}: {m.group(0)} repeats common/python_contract.inc; take it "
                                        "from the generated cuaudit_contract.py (Python) or python_contract.h (C++)")
                    if name.endswith(".py") and re.search(r"\.(argtypes|restype)\s*=", line) and "cuaudit_site" in shown:
                        problems.append(f"{shown}:{number}: an entry point's ctypes signature by hand; use "
                                        "cuaudit_contract.bind_entry_points")
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: the {len(literals) + len(actions)} names of common/python_contract.inc are written nowhere else")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
