#!/usr/bin/env python3
"""Generates cuda_result_names.inc from the CUDA toolkit's headers: the name of every cudaError_t
(driver_types.h) and CUresult (cuda.h) value, with the first sentence of the doc comment above it
as the text a report shows. Run by CMake at configure time; the output matches the toolkit exactly.
Usage: gen_result_names.py CUDA_INCLUDE_DIR OUTPUT"""
import re
import sys


def entries(path, name_pattern):
    text = open(path, encoding="utf-8", errors="replace").read()
    pattern = re.compile(r"/\*\*(?P<doc>(?:(?!\*/).)*?)\*/\s*(?P<name>" + name_pattern + r")\s*=\s*(?P<value>\d+)", re.S)
    seen = set()
    for m in pattern.finditer(text):
        value = int(m.group("value"))
        if value in seen:
            continue
        seen.add(value)
        doc = " ".join(line.strip().lstrip("*").strip() for line in m.group("doc").splitlines())
        doc = re.sub(r"\\ref\s+|\\p\s+|\\e\s+|::", "", doc).strip()
        sentence = re.split(r"(?<=\.)\s", doc, maxsplit=1)[0] if doc else ""
        yield value, m.group("name"), sentence.replace("\\", "\\\\").replace('"', '\\"')


def main():
    include, output = sys.argv[1], sys.argv[2]
    lines = ["// Generated from driver_types.h and cuda.h by tool/symbols/gen_result_names.py; do not edit."]
    for value, name, text in entries(include + "/driver_types.h", r"cuda(?:Success|Error\w+)"):
        lines.append('CUAUDIT_RUNTIME_RESULT(%d, "%s", "%s")' % (value, name, text))
    for value, name, text in entries(include + "/cuda.h", r"CUDA_(?:SUCCESS|ERROR_\w+)"):
        lines.append('CUAUDIT_DRIVER_RESULT(%d, "%s", "%s")' % (value, name, text))
    content = "\n".join(lines) + "\n"
    try:
        if open(output).read() == content:
            return
    except OSError:
        pass
    open(output, "w").write(content)


if __name__ == "__main__":
    main()
