#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang into build-san and runs each for RUNS
# inputs (default 2000: the CI smoke run; the campaign in docs/TESTING.md used 1000000), from seed
# corpora made of the golden runs. Any crash, hang (-timeout) or sanitizer report fails.
# Usage: scripts/fuzz.sh [RUNS] [HARNESS...]   (harnesses: trace_reader report_json suppressions
# baseline run_dir; default all, one after another)
# FUZZ_JOBS=N runs N processes of each harness at once on one shared corpus, RUNS/N inputs each (the
# campaign on a many-core machine); FUZZ_PREBUILT=1 uses build-san/bin as it is (a machine without
# clang, given the harnesses built elsewhere); FUZZ_SECONDS=S stops each process after S seconds
# even short of its inputs (a time-boxed machine); FUZZ_FLAGS adds libFuzzer flags after the defaults
# (the last of a repeated flag wins: FUZZ_FLAGS='-max_len=32768 -entropic=0'); FUZZ_CORPUS=DIR grows
# that corpus instead of build-san/corpus/HARNESS (scripts/fuzz-chunk.sh's, kept in the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-limits.sh
runs=${1:-2000}
shift $(($# > 0 ? 1 : 0))
harnesses=("$@")
[[ ${#harnesses[@]} -eq 0 ]] && harnesses=(trace_reader report_json suppressions baseline run_dir)
jobs=${FUZZ_JOBS:-1}
[[ ${FUZZ_PREBUILT:-0} == 1 ]] || {
scripts/configure-sanitized.sh
cmake --build build-san --target fuzz_trace_reader fuzz_report_json fuzz_suppressions fuzz_baseline fuzz_run_dir >/dev/null
}
seeds=build-san/seeds
rm -rf "$seeds" && mkdir -p "$seeds"/{trace_reader,report_json,suppressions,baseline,run_dir}
cp tests/golden/*/trace-*.cutrace tests/golden/*/*/trace-*.cutrace "$seeds/trace_reader/" 2>/dev/null || true
for f in tests/fuzz/seeds/*.json tests/fixtures/*.json; do
  [ -f "$f" ] && cp "$f" "$seeds/report_json/" && cp "$f" "$seeds/baseline/"
done
cp tool/checks/builtin_allocators.supp tests/fuzz/seeds/*.supp "$seeds/suppressions/"
cp tests/fuzz/seeds/run-dir-*.bin "$seeds/run_dir/" 2>/dev/null || true  # inputs a campaign found
printf 'leak:^step(int)$\nmismatched_free:*\nheld_by_allocator:Pool:pool_\n' >"$seeds/suppressions/user.supp"
# Whole run directories, as fuzz_run_dir.cpp reads them, within its longest input (a long run's
# traces cut, and sampled: tests/fuzz/run_dir_seeds.py).
python3 tests/fuzz/run_dir_seeds.py "$seeds/run_dir" tests/golden "$(fuzz_max_len run_dir)"
status=0
for harness in "${harnesses[@]}"; do
  corpus=${FUZZ_CORPUS:-build-san/corpus/$harness}
  # What a failing input leaves (crash-, oom-, timeout-, slow-unit-<sha1>): under build-san, never in
  # the checkout, where it would be committed by mistake.
  artifacts=build-san/artifacts/$harness/
  mkdir -p "$corpus" "$artifacts"
  rm -f build-san/fuzz_$harness.*.log
  start=$(date +%s)
  pids=()
  # fuzz_run_dir's inputs are slow (a whole analysis each): libFuzzer's entropic scheduler took half
  # of its time (UpdateFeatureFrequency over a corpus of large inputs), 80 -> 135 inputs a second off.
  harness_flags=()
  [[ $harness == run_dir ]] && harness_flags=(-entropic=0)
  for ((job = 0; job < jobs; job++)); do
    build-san/bin/fuzz_$harness "${harness_flags[@]}" -runs=$((runs / jobs)) -max_total_time=${FUZZ_SECONDS:-0} -timeout=10 -rss_limit_mb=2048 -max_len="$(fuzz_max_len "$harness")" \
      ${FUZZ_FLAGS:-} -artifact_prefix="$artifacts" -print_final_stats=1 "$corpus" "$seeds/$harness" \
      >"build-san/fuzz_$harness.$job.log" 2>&1 &
    pids+=($!)
  done
  failed=()
  for ((job = 0; job < jobs; job++)); do
    wait "${pids[$job]}" || failed+=("build-san/fuzz_$harness.$job.log")
  done
  executed=$(cat build-san/fuzz_$harness.*.log | grep -o 'stat::number_of_executed_units: [0-9]*' |
    awk '{ sum += $2 } END { print sum + 0 }')
  if [[ ${#failed[@]} -eq 0 ]]; then
    echo "fuzz_$harness: $executed inputs in $jobs process(es), no crash ($(($(date +%s) - start)) s, $(ls "$corpus" | wc -l) in the corpus)"
  else
    echo "fuzz_$harness: FAILED after $executed inputs (${failed[*]}; the input in $artifacts):"
    tail -n 30 "${failed[0]}"
    status=1
  fi
done
exit $status
