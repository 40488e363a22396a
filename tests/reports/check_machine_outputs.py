#!/usr/bin/env python3
"""--sarif and --junit on the run recorded on the H200: the SARIF validates against the official
SARIF 2.1.0 schema (with node and ajv, installed from the npm registry into the build directory),
locations are relative to --source-root, fingerprints are stable; a check that did not run is a
skipped JUnit case, not a passing one; the JUnit XML has one test case
per finding kind per process, failed exactly where findings gate, with the texts escaped."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import finish, report_golden  # noqa: E402

NPM_PACKAGES = ["ajv-draft-04@1", "ajv-formats@2", "@microsoft/jest-sarif@1.0.0-beta.0"]


def validator_dir(work):
    """node_modules with the validator, installed once per build directory."""
    target = os.path.join(work, "sarif-validator")
    if not os.path.isdir(os.path.join(target, "node_modules", "@microsoft", "jest-sarif")):
        if not shutil.which("npm"):
            raise SystemExit("FAIL npm is needed to fetch the SARIF schema validator (apt-get install npm)")
        os.makedirs(target, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-save", "--prefix", target] + NPM_PACKAGES, check=True)
    return target


def recorded_source_root(doc, checkout):
    for f in doc["findings"]:
        for frame in f["stack"]:
            path = frame.get("file") or ""
            parts = path.split("/")
            for i in range(1, len(parts)):
                if os.path.isfile(os.path.join(checkout, *parts[i:])):
                    return "/".join(parts[:i])
    return None


def parse_junit(path, schema, failures):
    """Every JUnit file must pass Jenkins' junit-10.xsd (xmllint): one that fails is not imported at all."""
    proc = subprocess.run(["xmllint", "--noout", "--schema", schema, path], capture_output=True, text=True)
    if proc.returncode != 0:
        failures.append("JUnit fails junit-10.xsd: %s" % proc.stderr.strip())
    return ET.parse(path).getroot()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--work", required=True, help="a build directory to keep the validator in")
    ap.add_argument("--source", required=True, help="this checkout: the recorded run's sources are found in it")
    ap.add_argument("--junit-schema", required=True, help="Jenkins' junit-10.xsd")
    opts = ap.parse_args()
    schema = opts.junit_schema
    if not shutil.which("xmllint"):
        raise SystemExit("FAIL xmllint is needed to validate JUnit files (apt-get install libxml2-utils)")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # The golden run was recorded from a checkout elsewhere: its root is where its frames'
        # files, minus the part this checkout also has, were.
        _, plain = report_golden(opts.cuaudit, opts.golden, tmp)
        opts.source_root = recorded_source_root(plain, opts.source)
        if not opts.source_root:
            failures.append("no frame of the golden run names a file of this checkout")
            return finish(failures)
        sarif, junit = os.path.join(tmp, "r.sarif"), os.path.join(tmp, "r.xml")
        proc, doc = report_golden(opts.cuaudit, opts.golden, tmp, "--sarif", sarif, "--junit", junit,
                                  "--source-root", opts.source_root)
        node_env = dict(os.environ, NODE_PATH=os.path.join(validator_dir(opts.work), "node_modules"))
        check = subprocess.run(["node", os.path.join(os.path.dirname(__file__), "validate_sarif.js"), sarif],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=node_env)
        print(check.stdout, end="")
        if check.returncode != 0:
            failures.append("the SARIF does not validate")
        s = json.load(open(sarif))
        results = s["runs"][0]["results"]
        if len(results) != len(doc["findings"]):
            failures.append("%d SARIF results for %d findings" % (len(results), len(doc["findings"])))
        for r in results:
            loc = r["locations"][0]["physicalLocation"]
            if loc["artifactLocation"].get("uriBaseId") != "%SRCROOT%" or loc["artifactLocation"]["uri"] != \
                    "examples/demo_leaks.cu" or "startLine" not in loc["region"]:
                failures.append("location not relative to the source root: %s" % loc)
        run0 = s["runs"][0]
        if not all(r.get("stacks") and r["stacks"][0]["frames"] for r in results):
            failures.append("a SARIF result carries no stack")
        if not all(rule.get("help", {}).get("text") for rule in run0["tool"]["driver"]["rules"]):
            failures.append("a SARIF rule has no help text")
        invocation = (run0.get("invocations") or [{}])[0]
        if invocation.get("exitCode") != 0 or "demo_leaks" not in invocation.get("commandLine", ""):
            failures.append("SARIF invocations do not give the program and its exit status: %s" % invocation)
        _, again = report_golden(opts.cuaudit, opts.golden, tmp, "--sarif", sarif + "2")
        prints = [r["partialFingerprints"] for r in results]
        if prints != [r["partialFingerprints"] for r in json.load(open(sarif + "2"))["runs"][0]["results"]]:
            failures.append("fingerprints differ between two reports of the same run")

        root = parse_junit(junit, schema, failures)
        suites = root.findall("testsuite")
        if len(suites) != len(doc["processes"]):
            failures.append("%d test suites for %d processes" % (len(suites), len(doc["processes"])))
        cases = {c.get("name"): c for c in suites[0].findall("testcase")}
        failed = sorted(name for name, c in cases.items() if c.find("failure") is not None)
        expected = ["leak cudaMalloc at process_batch (demo_leaks.cu)", "leak cudaMallocHost at upload (demo_leaks.cu)"]
        if failed != expected or int(root.get("failures")) != 2:
            failures.append("JUnit failures: %s, expected one per finding: %s" % (failed, expected))
        elif "Leak of 327680 byte(s)" not in cases[expected[0]].find("failure").text:
            failures.append("the failure does not carry the finding's text")
        if "no double_free" not in cases or suites[0].get("name") != "cuaudit: demo_leaks":
            failures.append("JUnit: no passing case per clean check, or the suite is not named after the program")
        if any(int(s.get("skipped")) != 0 for s in suites) or any(c.find("skipped") is not None for c in cases.values()):
            failures.append("JUnit: a run whose checks all ran has skipped cases")
        if not suites[0].get("time") or abs(float(suites[0].get("time")) - doc["processes"][0]["seconds"]) > 0.001:
            failures.append("JUnit: the suite's time is not the process's run time (%s, %s)" %
                            (suites[0].get("time"), doc["processes"][0].get("seconds")))

        # A check that did not run is skipped, not passed (the golden's run.json predates the
        # record-time fields, so only the report's own --leak-check no can say so here).
        proc, doc = report_golden(opts.cuaudit, opts.golden, tmp, "--junit", junit, "--leak-check", "no")
        root = parse_junit(junit, schema, failures)
        cases = {c.get("name"): c for c in root.find("testsuite").findall("testcase")}
        skipped = sorted(name for name, c in cases.items() if c.find("skipped") is not None)
        if skipped != ["no growth", "no held_by_allocator", "no leak", "no live", "no resource_leak"] or \
                int(root.find("testsuite").get("skipped")) != 5 or "--leak-check no" not in cases["no leak"].find("skipped").get("message"):
            failures.append("JUnit with --leak-check no: skipped %s (%s)" % (skipped, root.find("testsuite").get("skipped")))
        if [u["kind"] for u in doc["unchecked"]] != ["leak", "held_by_allocator", "growth", "live", "resource_leak"]:
            failures.append("JSON unchecked: %s" % doc["unchecked"])

        # What the injection was told to record goes into run.json, and makes the same judgement
        # there (a program that makes no CUDA call runs here, without a GPU: 122, nothing tracked).
        run_dir = os.path.join(tmp, "recorded")
        subprocess.run([opts.cuaudit, "--save", run_dir, "--check-launch-params", "no", "--junit", junit, "--", "true"],
                       stderr=subprocess.DEVNULL)
        recorded = json.load(open(os.path.join(run_dir, "run.json"))).get("recorded")
        root = parse_junit(junit, schema, failures)
        skipped = {c.get("name"): c.find("skipped").get("message") for c in root.iter("testcase") if c.find("skipped") is not None}
        if recorded != {"launch_params": False, "resources": False} or \
                skipped.get("no misaligned_param") != "not checked: recorded with --check-launch-params no" or \
                skipped.get("no resource_leak") != "not checked: recorded without --track-resources" or "no leak" in skipped:
            failures.append("record-time choices: run.json %s, skipped %s" % (recorded, skipped))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
