#!/usr/bin/env python3
"""Prints what a run's out_of_memory and allocation_churn findings say (verdict, device state, the
sites that held memory, churn figures) and whether its timeline carries pool samples: the GPU log
quotes these. Exit status 1 when the report has neither kind of finding."""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    shown = 0
    for f in report["findings"]:
        if f["kind"] == "out_of_memory":
            shown += 1
            o = f["out_of_memory"]
            print("out_of_memory (%s) %s x%d at %.3f s: %s" % (f["severity"], f["api"], f["count"], f["at"], o["verdict"]))
            print("  requested %d, device total %s free %s, program held %d, pool %s/%s, other processes %s"
                  % (o["requested"], o["device_total"], o["device_free"], o["program_held"], o["pool_reserved"],
                     o["pool_used"], o["other_processes"]))
            for note in f["notes"]:
                print("  note: " + note)
            for r in f["related"]:
                top = r["stack"][0] if r["stack"] else {}
                print("  %s %s:%s" % (r["title"], (top.get("file") or "?").split("/")[-1], top.get("line")))
        elif f["kind"] == "allocation_churn":
            shown += 1
            c = f["churn"]
            print("allocation_churn (%s): %s" % (f["severity"], f["headline"]))
            print("  pairs %d, median lifetime %d ns, %d ns in the calls, %.1f%% of the run"
                  % (c["pairs"], c["median_lifetime_ns"], c["call_ns"], 100 * c["run_share"]))
    pools = [s for s in report["timeline"]["samples"] if s.get("pool_reserved") is not None]
    if pools:
        top = max(pools, key=lambda s: s["pool_reserved"])
        print("timeline: %d of %d samples carry the pool; most reserved %d (used %d) at %.3f s"
              % (len(pools), len(report["timeline"]["samples"]), top["pool_reserved"], top["pool_used"], top["t"]))
    return 0 if shown else 1


if __name__ == "__main__":
    sys.exit(main())
