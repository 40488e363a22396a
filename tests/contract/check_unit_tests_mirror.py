#!/usr/bin/env python3
"""The unit tests mirror the stage folders, as LLVM's test/lsan/ mirrors lib/lsan/: tests/unit/<folder>/
tests common/, injection/, reports/ or tool/<folder>/, and each test file there includes a header of the
folder it stands for, so a unit's tests are found beside the stage they test.

Which units no unit test reaches is a ratchet, not a wish: tests/contract/untested_units.txt lists them
(each with the layer that covers it instead); a new unit without a test fails, and so does a listed one
that gained a test (strike it from the list)."""
import argparse
import os
import re
import sys

TOP_LEVEL = ("common", "injection", "reports", "tool")  # tests/unit/tool/: the stages' root (analysis)
SHARED = {"main.cpp", "synthetic_trace.cpp", "synthetic_trace.h", "hand_made_trace.h", "temp_dir.h"}  # the harness tests share
INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"', re.M)


def stage_folder(source, name):
    """The source folder that tests/unit/<name>/ stands for, or None."""
    folder = name if name in TOP_LEVEL else os.path.join("tool", name)
    return folder if os.path.isdir(os.path.join(source, folder)) else None


def headers_of(source, folder):
    """The header names of one folder (not its subfolders: each tool/ stage is a folder of its own)."""
    path = os.path.join(source, folder)
    return {n for n in os.listdir(path) if n.endswith((".h", ".inc"))}


def units(source):
    """(folder, stem) of every .cpp in a product folder that has a header of the same name."""
    found = []
    for top in ("common", "injection", "reports", "tool"):
        for root, _, names in os.walk(os.path.join(source, top)):
            for name in sorted(names):
                stem = name[:-4]
                if name.endswith(".cpp") and f"{stem}.h" in names:
                    found.append((os.path.relpath(root, source), stem))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    unit_dir = os.path.join(a.source, "tests", "unit")
    problems, included, tests = [], set(), 0
    for name in sorted(os.listdir(unit_dir)):
        path = os.path.join(unit_dir, name)
        if not os.path.isdir(path):
            if name not in SHARED:
                problems.append(f"tests/unit/{name}: a test belongs in the folder of the stage it tests "
                                "(tests/unit/<folder>/, as tool/<folder>/)")
            continue
        folder = stage_folder(a.source, name)
        if folder is None:
            problems.append(f"tests/unit/{name}/: no stage folder of that name (common, injection, reports, tool, tool/*)")
            continue
        own = headers_of(a.source, folder)
        for test in sorted(os.listdir(path)):
            if not test.endswith(".cpp"):
                continue
            tests += 1
            names = {os.path.basename(h) for h in INCLUDE.findall(open(os.path.join(path, test)).read())}
            included |= names
            if not names & own:
                problems.append(f"tests/unit/{name}/{test}: includes no header of {folder}/; move it beside "
                                "the stage it tests")
    listed = {}
    list_path = os.path.join(a.source, "tests", "contract", "untested_units.txt")
    for line in open(list_path):
        if line.strip() and not line.startswith("#"):
            unit, _, why = line.partition(" ")
            listed[unit] = why.strip()
    seen = set()
    for folder, stem in units(a.source):
        unit = f"{folder}/{stem}"
        seen.add(unit)
        tested = f"{stem}.h" in included
        if tested and unit in listed:
            problems.append(f"{unit}: a unit test reaches it now; strike it from tests/contract/untested_units.txt")
        if not tested and unit not in listed:
            test_folder = folder if folder in TOP_LEVEL else os.path.basename(folder)
            problems.append(f"{unit}: no unit test includes {stem}.h; write one in tests/unit/{test_folder}/ "
                            "(or list it, with the layer that tests it, in tests/contract/untested_units.txt)")
    for unit in sorted(set(listed) - seen):
        problems.append(f"{unit}: listed in tests/contract/untested_units.txt but no such unit")
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: {tests} unit test files beside their stages; {len(seen) - len(listed)} of {len(seen)} units "
              f"reached by a unit test, {len(listed)} listed with the layer that tests them")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
