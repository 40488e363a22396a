#!/usr/bin/env python3
"""What the reader sees, on the golden runs: --color, --demangle simple (PyTorch's frames),
--target-processes-filter, --num-callers on related stacks too, and (on the launch run recorded on the H200) --kernel-name and
--kernel-name-exclude."""
import argparse
import os
import sys
import tempfile

from golden_run import finish, report_golden


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuaudit", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--launch-golden", required=True)
    ap.add_argument("--torch-golden", required=True)
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, _ = report_golden(opts.cuaudit, opts.golden, tmp, "--color", "always")
        if "\x1b[1;31mLeak of 327680" not in proc.stderr or "\x1b[1;31mSUMMARY: cuaudit: 2 errors" not in proc.stderr:
            failures.append("--color always does not colour the leaks and the summary")
        proc, _ = report_golden(opts.cuaudit, opts.golden, tmp)  # not a terminal: auto means none
        if "\x1b[" in proc.stderr:
            failures.append("--color auto coloured a report that does not go to a terminal")

        proc, doc = report_golden(opts.cuaudit, opts.golden, tmp, "--target-processes-filter", "no-such-program")
        if doc["findings"] or "not reported" not in " ".join(doc["notes"]):
            failures.append("--target-processes-filter with no match still reported findings: %s" % doc["notes"])
        _, doc = report_golden(opts.cuaudit, opts.golden, tmp, "--target-processes-filter", "kne=demo_leaks")
        if len(doc["findings"]) != 2:
            failures.append("--target-processes-filter kne=demo_leaks lost the program's findings")

        def launch_kernels(*args):
            _, doc = report_golden(opts.cuaudit, opts.launch_golden, tmp, *args)
            return sorted(f["parameter"]["kernel"].split("(")[0] for f in doc["findings"] if f.get("parameter"))
        everything = launch_kernels()
        if everything != ["axpy2", "scale"]:
            failures.append("the launch run's kernels: %s, expected axpy2 and scale" % everything)
        if launch_kernels("--kernel-name", "kne=scale") != ["scale"]:
            failures.append("--kernel-name kne=scale kept %s" % launch_kernels("--kernel-name", "kne=scale"))
        if launch_kernels("--kernel-name-exclude", "axpy") != ["scale"]:
            failures.append("--kernel-name-exclude axpy kept %s" % launch_kernels("--kernel-name-exclude", "axpy"))

        # PyTorch's frames, with and without their signatures.
        full, _ = report_golden(opts.cuaudit, opts.torch_golden, tmp, "--show-notes")  # the held_by_allocator lines show them
        simple, _ = report_golden(opts.cuaudit, opts.torch_golden, tmp, "--show-notes", "--demangle", "simple")
        signature = "DeviceCachingAllocator::alloc_block(c10::cuda::CUDACachingAllocator::Native::"
        if signature not in full.stderr or "DeviceCachingAllocator::alloc_block (libc10_cuda.so)" not in simple.stderr \
                or signature in simple.stderr:
            failures.append("--demangle simple does not drop the parameters of PyTorch's frames")

        # --num-callers cuts every stack a finding shows, its related ones (Python stacks) too.
        cut, doc = report_golden(opts.cuaudit, opts.torch_golden, tmp, "--num-callers", "2")
        related = [r for f in doc["findings"] for r in f["related"]]
        if not related or any(len(r["stack"]) > 2 for r in related) or not any(r["omitted_frames"] for r in related):
            failures.append("--num-callers 2 left related stacks uncut: %s" %
                            [(len(r["stack"]), r.get("omitted_frames")) for r in related])
        shown = [r for f in doc["findings"] if f["severity"] != "info" for r in f["related"] if r["omitted_frames"]]
        if shown and "Omitting %d more frame(s)" % shown[0]["omitted_frames"] not in cut.stderr:
            failures.append("the text report does not say what --num-callers cut from a related stack")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
