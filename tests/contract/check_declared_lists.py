#!/usr/bin/env python3
"""The lists declared once in the code and the tables in the docs name the same things.

common/environment.inc <-> docs/INJECTION.md's environment table; common/trace_records.inc <->
docs/ARCHITECTURE.md's record table; common/memory_sources.inc <->
docs/POOLS.md's memory sources table; common/run_dir_layout.inc <-> docs/ARCHITECTURE.md's run
directory table; reports/finding_kinds.inc <-> docs/JSON.md's kinds table. A name added to one and
not the other fails here. And the built-in held_by_allocator rules name a framework's pool as
common/memory_sources.inc does (the memory model and the rules give one name).
"""
import argparse
import re
import sys


def declared(path, macro, skip=0):
    """The first quoted argument of each `macro(...)` line, after `skip` unquoted ones."""
    text = "\n".join(line for line in open(path) if not line.lstrip().startswith("//"))
    return set(re.findall(macro + r'\(\s*\w+\s*,' + r'\s*\w+\s*,' * skip + r'\s*"([^"]+)"', text))


def documented(path, heading):
    """The backquoted first cells of the table under `heading`."""
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    names = set()
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        m = re.match(r"\|\s*`([^`]+)`", line)
        if m:
            names.add(m.group(1))
    return names


def compare(what, code, docs, code_file, docs_file):
    ok = True
    for name in sorted(code - docs):
        print(f"FAIL: {what} {name} is declared in {code_file} but missing from {docs_file}")
        ok = False
    for name in sorted(docs - code):
        print(f"FAIL: {what} {name} is documented in {docs_file} but not declared in {code_file}")
        ok = False
    if ok:
        print(f"ok: {len(code)} {what}s, declared and documented alike")
    return ok


def rules_name_sources_alike(source):
    """Each built-in held_by_allocator rule for a framework's pool names it as memory_sources.inc does."""
    text = "\n".join(line for line in open(f"{source}/common/memory_sources.inc") if not line.lstrip().startswith("//"))
    frameworks = re.findall(r'CUAUDIT_SOURCE\(\s*\w+\s*,\s*\d+\s*,\s*"[^"]+"\s*,\s*FrameworkPool\s*,\s*\w+\s*,\s*"([^"]+)"', text)
    rules = re.findall(r"^held_by_allocator:([^:]+):", open(f"{source}/tool/checks/builtin_allocators.supp").read(), re.M)
    ok = True
    for name in frameworks:
        if name not in rules:
            print(f"FAIL: no built-in held_by_allocator rule names the framework pool {name!r} as "
                  "common/memory_sources.inc does (tool/checks/builtin_allocators.supp)")
            ok = False
    if ok:
        print(f"ok: {len(frameworks)} framework pools, named alike by the memory model and the built-in rules")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    env = declared(f"{a.source}/common/environment.inc", "CUAUDIT_ENV")
    env_docs = documented(f"{a.source}/docs/INJECTION.md", "## Environment") - {"CUDA_INJECTION64_PATH",
                                                                                  "NVTX_INJECTION64_PATH"}
    ok = compare("environment variable", env, env_docs, "common/environment.inc", "docs/INJECTION.md")
    sources = declared(f"{a.source}/common/memory_sources.inc", "CUAUDIT_SOURCE", skip=1)
    source_docs = documented(f"{a.source}/docs/POOLS.md", "## Memory sources")
    ok = compare("memory source", sources, source_docs, "common/memory_sources.inc", "docs/POOLS.md") and ok
    entries = declared(f"{a.source}/common/run_dir_layout.inc", "CUAUDIT_RUN_ENTRY")
    entry_docs = documented(f"{a.source}/docs/ARCHITECTURE.md", "## The run directory")
    ok = compare("run directory name", entries, entry_docs, "common/run_dir_layout.inc", "docs/ARCHITECTURE.md") and ok
    records = set(re.findall(r"^CUAUDIT_RECORD\(\s*(\w+)\s*,", open(f"{a.source}/common/trace_records.inc").read(), re.M))
    record_docs = documented(f"{a.source}/docs/ARCHITECTURE.md", "## The trace file")
    ok = compare("trace record", records, record_docs, "common/trace_records.inc", "docs/ARCHITECTURE.md") and ok
    kinds = declared(f"{a.source}/reports/finding_kinds.inc", "CUAUDIT_FINDING")
    kind_docs = documented(f"{a.source}/docs/JSON.md", "## Finding kinds")
    ok = compare("finding kind", kinds, kind_docs, "reports/finding_kinds.inc", "docs/JSON.md") and ok
    ok = rules_name_sources_alike(a.source) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
