"""pytest plugin: run a test session under cuaudit and say which test each finding comes from.

    pytest -p pytest_cuaudit --cuaudit tests/            # or installed: pip install ./python

With --cuaudit, pytest runs the same session again as `cuaudit --json REPORT -- python -m pytest ...`
(the memory must be recorded from the first CUDA call), then reads the report and attributes each
finding to the test whose function is on the finding's Python stack (the allocation's stack for a
leak): `tests/test_model.py::test_forward`. Findings made outside any test (fixtures, conftest,
import time) are listed as such. The exit status is cuaudit's: the tests' status when nothing is
found, --error-exitcode N (default 1 here) when something is.

Options: --cuaudit-path (default: cuaudit on PATH, or $CUAUDIT), --cuaudit-args "..." (more options
for cuaudit, e.g. "--suppressions ci.supp --html report.html"), --cuaudit-json FILE (keep the report).
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

CHILD = "CUAUDIT_PYTEST_CHILD"            # set in the session that runs under cuaudit
TESTS_FILE = "CUAUDIT_PYTEST_TESTS_FILE"  # where that session writes its tests' locations


def pytest_addoption(parser):
    group = parser.getgroup("cuaudit", "CUDA memory leak and misuse checking with cuaudit")
    group.addoption("--cuaudit", action="store_true", help="run this session under cuaudit and attribute its findings to tests")
    group.addoption("--cuaudit-path", default=os.environ.get("CUAUDIT", "cuaudit"), help="the cuaudit executable")
    group.addoption("--cuaudit-args", default="--error-exitcode 1", help="options for cuaudit (default: --error-exitcode 1)")
    group.addoption("--cuaudit-json", default=None, help="keep cuaudit's JSON report in this file")


def _child_argv(argv):
    """This session's arguments without the plugin's own options (the child must not re-run itself)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--cuaudit":
            continue
        if a in ("--cuaudit-path", "--cuaudit-args", "--cuaudit-json"):
            skip = True
            continue
        if a.split("=", 1)[0] in ("--cuaudit-path", "--cuaudit-args", "--cuaudit-json"):
            continue
        out.append(a)
    return out


def pytest_cmdline_main(config):
    if not config.getoption("cuaudit") or os.environ.get(CHILD):
        return None
    with tempfile.TemporaryDirectory(prefix="pytest-cuaudit-") as tmp:
        report_file = config.getoption("cuaudit_json") or os.path.join(tmp, "report.json")
        tests_file = os.path.join(tmp, "tests.json")
        # Installed, the plugin loads itself in the child (entry point "cuaudit"); else -p loads it.
        load = [] if config.pluginmanager.get_plugin("cuaudit") is not None else ["-p", "pytest_cuaudit"]
        child_args = _child_argv(sys.argv[1:])
        if load and "pytest_cuaudit" in child_args:
            load = []  # already asked for with -p on this command line
        argv = ([config.getoption("cuaudit_path"), "--json", report_file] + shlex.split(config.getoption("cuaudit_args")) +
                ["--", sys.executable, "-m", "pytest"] + load + child_args)
        env = dict(os.environ, **{CHILD: "1", TESTS_FILE: tests_file})
        # The plugin must be importable in the child as it is here.
        here = os.path.dirname(os.path.abspath(__file__))
        env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            status = subprocess.call(argv, env=env)
        except FileNotFoundError:
            sys.stderr.write("pytest-cuaudit: %s not found: give --cuaudit-path or put cuaudit on PATH\n" % argv[0])
            return 4
        tests = json.load(open(tests_file)) if os.path.exists(tests_file) else []
        if os.path.exists(report_file):
            print_attribution(json.load(open(report_file)), tests, sys.stdout)
        else:
            sys.stderr.write("pytest-cuaudit: cuaudit wrote no report (exit %d)\n" % status)
    return status


def pytest_collection_finish(session):
    """In the session under cuaudit: where each test's function is, for the attribution."""
    path = os.environ.get(TESTS_FILE)
    if not path or not os.environ.get(CHILD):
        return
    tests = []
    for item in session.items:
        function = getattr(item, "function", None)
        if function is None:
            continue
        code = getattr(function, "__code__", None)
        tests.append({"nodeid": item.nodeid,
                      "file": os.path.realpath(code.co_filename if code else str(item.path)),
                      "function": function.__qualname__,
                      "name": function.__name__})
    with open(path, "w") as f:
        json.dump(tests, f)


def attribute(finding, tests):
    """(nodeid, frame): the test whose function is on the finding's Python stacks (innermost first)
    and that frame, or (None, None)."""
    by_location = {}
    for t in tests:
        by_location.setdefault((t["file"], t["function"]), t["nodeid"])
        by_location.setdefault((t["file"], t["name"]), t["nodeid"])
    stacks = [r["stack"] for r in finding.get("related", []) if r.get("role") == "python"] + [finding.get("stack", [])]
    for stack in stacks:
        for frame in stack:
            if frame.get("module") != "python" or not frame.get("file"):
                continue
            key = (os.path.realpath(frame["file"]), frame.get("function") or "")
            if key in by_location:
                return by_location[key], frame
    return None, None


def _shown_path(path):
    """Relative to the working directory when under it (as pytest shows test files)."""
    cwd = os.getcwd() + os.sep
    return path[len(cwd):] if path.startswith(cwd) else path


def print_attribution(report, tests, out):
    findings = [f for f in report.get("findings", []) if not f.get("suppressed") and f.get("severity") != "info"]
    if not findings:
        out.write("cuaudit: no findings in this test session\n")
        return
    by_test = {}
    for f in findings:
        nodeid, frame = attribute(f, tests)
        by_test.setdefault(nodeid, []).append((f, frame))
    out.write("cuaudit: %d finding(s) by test\n" % len(findings))
    for nodeid in sorted(by_test, key=lambda n: (n is None, n or "")):
        out.write("%s\n" % (nodeid or "outside any test (fixtures, conftest, import time, exit)"))
        for f, frame in by_test[nodeid]:
            # Where in the test, else the finding's own first frame with a file.
            site = frame or next((fr for fr in f.get("stack", []) if fr.get("file")), None)
            where = " at %s:%s" % (_shown_path(site["file"]), site.get("line")) if site else ""
            out.write("    %s %s: %s%s\n" % (f["kind"], f.get("api", ""), f.get("message", ""), where))
