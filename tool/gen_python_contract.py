#!/usr/bin/env python3
"""Generates what the Python hooks and C callers see of cuaudit's contract from the lists declared
once in common/ (python_contract.inc, run_dir_layout.inc, environment.inc):

- cuaudit_contract.py, the hooks' module: the run directory's names, each framework's hook, source
  key, file format and version, the history's action numbers and columns, the hooks-state file's
  format, the environment's defaults, and the injection's entry points with their ctypes signatures
  (bind_entry_points);
- cuaudit_pool_api.h, the public C header of those entry points (the injection defines them against
  it, so that a signature changed in the list and not in the code fails to build).

Usage: gen_python_contract.py COMMON_DIR OUT_PY OUT_HEADER (tool/CMakeLists.txt runs it at configure time)."""
import os
import re
import sys

CTYPES = {"int32_t": "ctypes.c_int32", "uint32_t": "ctypes.c_uint32", "uint64_t": "ctypes.c_uint64",
          "const char*": "ctypes.c_char_p", "void": "None"}


def rows(path, macro):
    """The argument lists of `macro(...)` lines, each a list of strings (quoted ones unquoted)."""
    out = []
    for line in open(path):
        line = line.strip()
        if not line.startswith(macro + "("):
            continue
        body = line[len(macro) + 1:line.rindex(")")]
        # Split on commas outside quotes and parentheses.
        args, depth, quoted, current = [], 0, False, ""
        for i, c in enumerate(body):
            if c == '"' and (i == 0 or body[i - 1] != "\\"):
                quoted = not quoted
            if not quoted and c == "(":
                depth += 1
            if not quoted and c == ")":
                depth -= 1
            if c == "," and not quoted and depth == 0:
                args.append(current.strip())
                current = ""
            else:
                current += c
        args.append(current.strip())
        out.append([a[1:-1].replace('\\"', '"') if a.startswith('"') else a for a in args])
    return out


def parameters(text):
    """[(C type, name)] of "(uint32_t pool, const char* name)"."""
    inner = text.strip()[1:-1].strip()
    if not inner:
        return []
    out = []
    for p in inner.split(","):
        m = re.match(r"^\s*(const char\*|\w+)\s+(\w+)\s*$", p)
        if not m or m.group(1) not in CTYPES:
            raise SystemExit("python_contract.inc: a parameter of an unknown type: %r (known: %s)" % (p, ", ".join(CTYPES)))
        out.append((m.group(1), m.group(2)))
    return out


def python_module(common):
    entries = rows(os.path.join(common, "run_dir_layout.inc"), "CUAUDIT_RUN_ENTRY")
    frameworks = rows(os.path.join(common, "python_contract.inc"), "CUAUDIT_FRAMEWORK")
    actions = rows(os.path.join(common, "python_contract.inc"), "CUAUDIT_HISTORY_ACTION")
    columns = rows(os.path.join(common, "python_contract.inc"), "CUAUDIT_HISTORY_COLUMN")
    documents = rows(os.path.join(common, "python_contract.inc"), "CUAUDIT_HOOKS_DOCUMENT")
    points = rows(os.path.join(common, "python_contract.inc"), "CUAUDIT_ENTRY_POINT")
    env = rows(os.path.join(common, "environment.inc"), "CUAUDIT_ENV")
    out = ['"""cuaudit\'s contract with its Python hooks. Generated from common/python_contract.inc,',
           'run_dir_layout.inc and environment.inc by tool/gen_python_contract.py: edit the lists, not this."""',
           "import collections", "import ctypes", "",
           "RunEntry = collections.namedtuple(\"RunEntry\", \"prefix suffix\")",
           "# The run directory's names (run_dir_layout.inc): prefix + pid + suffix for a process's file."]
    for name, prefix, suffix, _kind, _writer in entries:
        out.append("%s = RunEntry(%r, %r)" % (name, prefix, suffix))
    out += ["", "Framework = collections.namedtuple(\"Framework\", \"module hook source entry format version\")",
            "# framework module -> its hook module, memory source key, the file its hook writes (None: its",
            "# blocks reach the injection live), that file's format and newest version",
            "FRAMEWORKS = {"]
    for _enum, module, hook, source, entry, fmt, version, _named in frameworks:
        out.append("    %r: Framework(%r, %r, %r, %s, %r, %s)," % (module, module, hook, source, entry, fmt, version))
    out += ["}", "", "# The actions of a framework's file, by PyTorch's names", "HISTORY_ACTIONS = {"]
    for _enum, number, name in actions:
        out.append("    %r: %s," % (name, number))
    out += ["}"]
    for enum, number, _name in actions:
        out.append("ACTION_%s = %s" % (re.sub(r"(?<!^)(?=[A-Z])", "_", enum).upper(), number))
    out += ["", "# The columns of an \"events\" row"]
    for enum, index, meaning in columns:
        out.append("COLUMN_%s = %s  # %s" % (re.sub(r"(?<!^)(?=[A-Z])", "_", enum).upper(), index, meaning))
    out += [""]
    for enum, entry, fmt, version in documents:
        out.append("%s = (%s, %r, %s)  # (run-directory entry, format, version)" % (
            re.sub(r"(?<!^)(?=[A-Z])", "_", enum).upper(), entry, fmt, version))
    out += ["", "# Each CUAUDIT_* variable's default (environment.inc), as text", "ENV_DEFAULTS = {"]
    for _enum, name, default, _meaning in env:
        out.append("    %r: %r," % (name, default))
    out += ["}", "", "# The injection's entry points: name -> (restype, argtypes)", "ENTRY_POINTS = {"]
    for ret, name, params, _what in points:
        out.append("    %r: (%s, [%s])," % (name, CTYPES[ret], ", ".join(CTYPES[t] for t, _ in parameters(params))))
    out += ["}", "", "",
            "def bind_entry_points(lib):",
            '    """Gives each entry point of `lib` (a ctypes library) its declared signature; returns `lib`."""',
            "    for name, (restype, argtypes) in ENTRY_POINTS.items():",
            "        function = getattr(lib, name)",
            "        function.restype, function.argtypes = restype, argtypes",
            "    return lib", ""]
    return "\n".join(out)


def c_header(common):
    points = rows(os.path.join(common, "python_contract.inc"), "CUAUDIT_ENTRY_POINT")
    out = ["/* cuaudit's pool API: the C entry points of cuaudit's injection library, through which a",
           " * memory pool's hook tells cuaudit what the pool does (CuPy's hook calls them through ctypes).",
           " * Generated from common/python_contract.inc by tool/gen_python_contract.py: edit the list.",
           " * The library is loaded by the CUDA driver (CUDA_INJECTION64_PATH), not linked: find these",
           " * with dlsym(RTLD_DEFAULT, ...) once CUDA is initialized. A C or C++ program annotates a pool",
           " * of its own more simply with NVTX's memory API (docs/POOLS.md). */",
           "#ifndef CUAUDIT_POOL_API_H", "#define CUAUDIT_POOL_API_H", "", "#include <stdint.h>", "",
           "#ifndef CUAUDIT_POOL_API", "#define CUAUDIT_POOL_API __attribute__((visibility(\"default\")))", "#endif", "",
           "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    for ret, name, params, what in points:
        out.append("/* %s */" % what)
        out.append("CUAUDIT_POOL_API %s %s(%s);" % (ret, name, ", ".join("%s %s" % p for p in parameters(params))))
    out += ["", "#ifdef __cplusplus", "}", "#endif", "", "#endif", ""]
    return "\n".join(out)


def write_if_changed(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    common, out_py, out_header = sys.argv[1:]
    write_if_changed(out_py, python_module(common))
    write_if_changed(out_header, c_header(common))


if __name__ == "__main__":
    main()
