#!/usr/bin/env python3
"""Rewrites the fuzzing campaign's table in docs/TESTING.md (between its campaign markers) from
tests/fuzz/campaign.tsv, the row each chunk of scripts/fuzz-chunk.sh adds: per harness, the chunks
run, the inputs so far against the million each harness is to run, the findings, and the commit and
corpus of the last chunk.

  campaign_table.py CAMPAIGN_TSV TESTING_MD"""
import csv
import sys

BEGIN, END = "<!-- fuzz-campaign:begin -->", "<!-- fuzz-campaign:end -->"
HARNESSES = ["trace_reader", "report_json", "suppressions", "baseline", "run_dir"]
GOAL = 1_000_000


def table(rows):
    lines = ["| harness | chunks | inputs so far | of 1,000,000 | findings | seconds | last chunk (commit) | corpus units |",
             "|---|---|---|---|---|---|---|---|"]
    for h in HARNESSES:
        mine = [r for r in rows if r["harness"] == h]
        inputs = sum(int(r["inputs"]) for r in mine)
        last = mine[-1] if mine else None
        lines.append("| `fuzz_%s` | %d | {:,} | %d%% | %d | {:,} | %s | %s |".format(
            inputs, sum(int(r["seconds"]) for r in mine)) % (
            h, len(mine), min(100, inputs * 100 // GOAL), sum(int(r["findings"]) for r in mine),
            "%s (%s)" % (last["date"], last["commit"]) if last else "-", last["corpus_units"] if last else "-"))
    return "\n".join(lines)


def main():
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    doc = open(sys.argv[2]).read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit("%s has no campaign markers (%s ... %s)" % (sys.argv[2], BEGIN, END))
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    open(sys.argv[2], "w").write(head + BEGIN + "\n" + table(rows) + "\n" + END + tail)


if __name__ == "__main__":
    main()
