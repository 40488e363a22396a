#!/usr/bin/env bash
# One chunk of a fuzzing campaign that spans working days: runs one libFuzzer harness for at most
# SECONDS (default 2400, at most 2700: no command here may need more than 45 minutes) from the
# corpus the last chunk left in the repository, then keeps the corpus that chunk grew (minimized by
# libFuzzer's -merge=1) in tests/fuzz/corpus/HARNESS.tar.xz and a row in tests/fuzz/campaign.tsv
# (date, harness, commit, inputs, seconds, findings, corpus units), and rewrites the campaign table
# in docs/TESTING.md from it. Commit what it changed. A failing input stays in
# build-san/artifacts/HARNESS/ (never in the checkout), is counted in the row, and fails the chunk.
# Usage: scripts/fuzz-chunk.sh HARNESS [SECONDS]   (trace_reader report_json suppressions baseline run_dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-limits.sh
harness=${1:?usage: scripts/fuzz-chunk.sh HARNESS [SECONDS]}
seconds=${2:-2400}
case "$harness" in trace_reader | report_json | suppressions | baseline | run_dir) ;;
*) echo "fuzz-chunk: no harness '$harness' (trace_reader report_json suppressions baseline run_dir)" >&2; exit 2 ;;
esac
if ((seconds < 1 || seconds > 2700)); then
  echo "fuzz-chunk: SECONDS must be 1 to 2700 (a chunk may take 45 minutes at most)" >&2
  exit 2
fi
saved=tests/fuzz/corpus/$harness.tar.xz
work=build-san/chunk/$harness
rm -rf "$work" && mkdir -p "$work/corpus" "$work/merged"
[[ -f $saved ]] && tar -xJf "$saved" -C "$work/corpus"
before=$(ls "$work/corpus" | wc -l)
# The row names the commit the harness was built from: HEAD now, not at the chunk's end (commits made
# while a chunk runs are not in its binary). A binary older than HEAD's commit was built from an
# earlier one: said, so that the row can be corrected.
commit=$(git rev-parse --short HEAD)
binary=build-san/bin/fuzz_$harness
if [[ ${FUZZ_PREBUILT:-} == 1 && -f $binary ]] && (($(stat -c %Y "$binary") < $(git log -1 --format=%ct HEAD))); then
  echo "fuzz-chunk: $binary is older than commit $commit; its row names $commit (rebuild build-san first)" >&2
fi
mkdir -p build-san/artifacts/"$harness"  # a fresh build-san has none yet (ls failing would end the chunk here)
failed_before=$(ls build-san/artifacts/"$harness" | wc -l)
# The seeds and the run itself are fuzz.sh's (its corpus directory is this chunk's).
status=0
FUZZ_SECONDS=$seconds FUZZ_CORPUS=$work/corpus scripts/fuzz.sh 100000000 "$harness" | tee "$work/chunk.log" ||
  status=$?
inputs=$( (grep -o 'stat::number_of_executed_units: [0-9]*' build-san/fuzz_"$harness".*.log || true) |
  awk '{ s += $2 } END { print s + 0 }')
took=$(grep -o '([0-9]* s,' "$work/chunk.log" | tr -dc 0-9 || true)  # none when it failed
findings=$(($(ls build-san/artifacts/"$harness" 2>/dev/null | wc -l) - failed_before))
# Only the inputs that add coverage are kept: the corpus stays small enough for the repository.
build-san/bin/fuzz_"$harness" -merge=1 -rss_limit_mb=2048 -timeout=10 -max_len="$(fuzz_max_len "$harness")" "$work/merged" "$work/corpus" \
  >"$work/merge.log" 2>&1
units=$(ls "$work/merged" | wc -l)
mkdir -p tests/fuzz/corpus
# Reproducible archives: names sorted, no owners or times.
(cd "$work/merged" && find . -type f -printf '%P\n' | LC_ALL=C sort |
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -cJf - -T -) >"$saved"
log=tests/fuzz/campaign.tsv
[[ -f $log ]] || printf 'date\tharness\tcommit\tinputs\tseconds\tfindings\tcorpus_units\n' >"$log"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%F)" "$harness" "$commit" "$inputs" \
  "${took:-$seconds}" "$findings" "$units" >>"$log"
python3 tests/fuzz/campaign_table.py "$log" docs/TESTING.md
echo "fuzz-chunk $harness: $inputs inputs, $findings finding(s); corpus $before -> $units units ($(du -h "$saved" | cut -f1))"
exit $status
