#!/usr/bin/env bash
# Everything that needs a GPU, in one go: the CUDA test programs with their expected findings,
# a recorded demo run (kept as the golden trace), a PyTorch smoke test, coexistence with
# compute-sanitizer, and the benchmark. Runs from the repository root on the GPU machine.
# Usage: [BENCH_REPS=N] [GPU_TESTS_PART=1|2] scripts/run-gpu-tests.sh BIN_DIR OUT_DIR
#   (BENCH_REPS=0: no benchmarks; GPU_TESTS_PART: one half, for a device whose commands are limited
#   to 10 minutes: 1 is everything before the real-framework runs, 2 those and the rest)
set -uo pipefail
bin=${1:?usage: scripts/run-gpu-tests.sh BIN_DIR OUT_DIR}
out=${2:?usage: scripts/run-gpu-tests.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
log="$out/gpu.log"
: >"$log"
failed=0
passed=0
skipped=0
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
say() { echo "$@" | tee -a "$log"; }
# Runs a check script (its output into the log); counts it passed when it prints a PASS line.
check() {
  PYTHONUNBUFFERED=1 timeout 300 "$@" >"$log.check" 2>&1
  cat "$log.check" >>"$log"
  grep -E '^(PASS|FAIL|SKIP|  )' "$log.check"  # the verdict on stdout too
  if grep -q '^PASS' "$log.check"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
}

say "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$log"

# Is this half of the tests to run (GPU_TESTS_PART unset: both)?
in_part() { [[ -z ${GPU_TESTS_PART:-} || ${GPU_TESTS_PART} == "$1" ]]; }

if in_part 1; then
say "== CUDA test programs"
for program in "$bin"/gpu_*; do
  name=$(basename "$program")
  src="tests/gpu/$(sed -E 's/^gpu_//; s/_O[02]$//' <<<"$name").cu"
  [[ -f $src ]] || src="examples/${src#tests/gpu/}"  # an example that is a test too (fragmenting_pool)
  python3 tests/gpu/check_findings.py --cuaudit "$bin/cuaudit" --program "$program" --source "$src" \
    --log "$log" >"$log.tmp" 2>&1
  case $? in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;  # needs more GPUs than this machine has: said, never a pass
    *) failed=$((failed + 1)) ;;
  esac
  grep -E '^(PASS|FAIL|SKIP|  )' "$log.tmp" | sed "s/^PASS [^:]*:/PASS $name:/; s/^FAIL [^:]*:/FAIL $name:/; s/^SKIP [^:]*:/SKIP $name:/" | tee -a "$log"
  rm -f "$log.tmp"
done

say "== PyTorch training under cuaudit: tracked, no unchecked_error, passes the gate"
check python3 tests/gpu/check_torch.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_training.py --log "$log" \
  --keep-json "$out/torch-report.json"

say "== PyTorch CUDA graphs (torch.cuda.graph, make_graphed_callables): no false findings"
check python3 tests/gpu/check_torch.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_cuda_graphs.py --log "$log" \
  --keep-json "$out/torch-graphs-report.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); p=r['processes'][0]; print('torch graphs: allocations', p['allocations'], 'releases', p['releases'], 'kinds', sorted({f['kind'] for f in r['findings']}), 'notes', p.get('notes'))" \
  "$out/torch-graphs-report.json" 2>&1 | tee -a "$log"
say "== the same with --track-resources: what PyTorch itself keeps (informational)"
"$bin/cuaudit" --track-resources --leak-check summary --json "$out/torch-graphs-resources.json" -- python3 tests/gpu/torch_cuda_graphs.py \
  > /dev/null 2>&1
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); [print(' ', f['kind'], f['severity'], f['api'], f['count'], (f['stack'][0].get('module') or '').split('/')[-1] if f['stack'] else '', (f['stack'][0].get('function') or '')[:60] if f['stack'] else '') for f in r['findings'] if f['kind'] in ('resource_leak','held_by_allocator')]" \
  "$out/torch-graphs-resources.json" 2>&1 | head -30 | tee -a "$log"

say "== a stack overflow under faulthandler: the program's alternate-stack handler still runs"
check python3 tests/gpu/check_faulthandler.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_stack_overflow.py --log "$log"

say "== PyTorch growth: activations kept in a list, attributed to the Python line; without the list the gate passes"
check python3 tests/gpu/check_torch_growth.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_growth.py --log "$log" \
  --keep-dir "$out"

say "== PyTorch's blocks while the job runs (cuaudit snapshot PID) and after SIGKILL"
check python3 tests/gpu/check_torch_live.py --cuaudit "$bin/cuaudit" --keep "$out/torch-live"

say "== A CI timeout's SIGTERM: the CUDA service and the PyTorch job still get their reports"
check python3 tests/gpu/check_stop_by_timeout.py --cuaudit "$bin/cuaudit" --service "$bin/service_requests" \
  --keep "$out/stop-by-timeout"

say "== PyTorch defaults: a model moved to the GPU, trained and deleted: no false findings"
check python3 tests/gpu/check_torch.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_model_deleted.py --log "$log" \
  --keep-json "$out/torch-model-deleted.json"

say "== CuPy's memory pool: a correct loop, a growing one, a raw malloc never freed"
if python3 -c "import cupy" 2>/dev/null; then
  check python3 tests/gpu/check_cupy.py --cuaudit "$bin/cuaudit" --script tests/gpu/cupy_pool.py --log "$log"
else
  say "SKIP cupy_pool: CuPy is not installed"; skipped=$((skipped + 1))
fi

say "== pools cut into holes: CuPy's with mixed sizes (a fragmentation warning), PyTorch's cache out of memory (verdict), PyTorch's cap"
mkdir -p "$out/fragmentation"
if python3 -c "import cupy" 2>/dev/null; then
  check python3 tests/gpu/check_fragmentation.py --cuaudit "$bin/cuaudit" --cupy-script tests/gpu/cupy_fragmentation.py \
    --torch-script tests/gpu/torch_fragmentation.py --cap-script tests/gpu/torch_memory_fraction.py --log "$log" \
    --keep "$out/fragmentation"
else
  check python3 tests/gpu/check_fragmentation.py --cuaudit "$bin/cuaudit" --torch-script tests/gpu/torch_fragmentation.py \
    --cap-script tests/gpu/torch_memory_fraction.py --log "$log" --keep "$out/fragmentation"
fi
say "== PyTorch out of memory: the program's tensors filled the device; another process held it"
check python3 tests/gpu/check_torch_oom.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_oom_verdicts.py --log "$log" \
  --keep "$out/torch-oom"

rm -rf "$out/fragmenting-pool-run"
"$bin/cuaudit" --save "$out/fragmenting-pool-run" --html "$out/fragmentation/fragmenting_pool.html" \
  --json "$out/fragmentation/fragmenting_pool.json" "$bin/gpu_fragmenting_pool" 2>&1 | tee -a "$log" | tail -n 25

fi  # part 1

if in_part 2; then
say "== real framework code nobody here wrote, natively and under cuaudit: ResNet-50, GPT-2 (transformers), Lightning, torch.compile, CuPy, JAX, numba-cuda's own tests; each model again with a planted leak"
check python3 tests/gpu/check_real_frameworks.py --cuaudit "$bin/cuaudit" --keep "$out/real-frameworks" --jobs 8

say "== JAX: XLA's out-of-memory error with its own figures; preallocation off"
if python3 -c "import jax" 2>/dev/null; then
  check python3 tests/gpu/check_jax.py --cuaudit "$bin/cuaudit" --oom-script tests/gpu/jax_oom.py \
    --workload tests/gpu/real/jax_workload.py --log "$log" --keep "$out/jax"
else
  say "SKIP check_jax: JAX is not installed"; skipped=$((skipped + 1))
fi

say "== JAX with XLA's preallocation: no false findings"
if python3 -c "import jax" 2>/dev/null; then
  check python3 tests/gpu/check_torch.py --cuaudit "$bin/cuaudit" --script tests/gpu/jax_preallocate.py --log "$log" \
    --keep-json "$out/jax-report.json"
else
  say "SKIP jax_preallocate: JAX is not installed"; skipped=$((skipped + 1))
fi

say "== several GPUs: per-device leaks and timelines, MPI one rank per GPU, torchrun DDP"
if [[ $gpus -ge 2 ]]; then
  "$bin/probe_peer_access" 2>&1 | tee -a "$log"
  "$bin/cuaudit" --json "$out/multi-device.json" "$bin/gpu_multi_device_leak" 2>&1 | grep -E 'devices:|Leak of|on device|Memory on' | tee -a "$log"
  rm -rf /tmp/cuaudit-mpi2 && mkdir -p /tmp/cuaudit-mpi2
  if command -v mpirun >/dev/null 2>&1; then
    mpirun --allow-run-as-root -n 2 "$bin/cuaudit" --output "/tmp/cuaudit-mpi2/run-%q{OMPI_COMM_WORLD_RANK}" \
      "$bin/gpu_mpi_rank_device" 2>&1 | grep -E '^rank|Leak of|on device|devices:' | tee -a "$log"
    "$bin/cuaudit" merge /tmp/cuaudit-mpi2/run-0 /tmp/cuaudit-mpi2/run-1 --json "$out/mpi-merged.json" 2>&1 | tee -a "$log"
    python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print('merged per-rank devices:', [(p.get('rank'), [d['ordinal'] for d in p['devices']]) for p in m['processes']], 'leak devices by finding:', [(f['ranks'], f['device'], f['bytes']) for f in m['findings']])" "$out/mpi-merged.json" 2>&1 | tee -a "$log"
  fi
  check python3 tests/gpu/check_torch_ddp.py --cuaudit "$bin/cuaudit" --script tests/gpu/torch_ddp.py --log "$log" \
    --keep-dir "$out"
else
  say "SKIP: this machine has $gpus GPU(s); the multi-GPU checks need 2"
  skipped=$((skipped + 1))
fi

say "== out of memory and allocation churn: what the findings say"
for name in oom_leak_handled oom_leak_ignored churn_hot_loop churn_async; do
  say "-- $name"
  start=$(date +%s.%N)
  "$bin/cuaudit" --json "$out/$name.json" --html "$out/$name.html" "$bin/gpu_$name" >/dev/null 2>&1
  say "   (cuaudit run of $(awk "BEGIN {print $(date +%s.%N) - $start}") s)"
  python3 tests/gpu/show_oom_churn.py "$out/$name.json" 2>&1 | tee -a "$log"
done

say "== the CI gate live: suppressions and a baseline"
check python3 tests/gpu/check_gate.py --cuaudit "$bin/cuaudit" --program "$bin/gpu_gate_program" \
  --source tests/gpu/gate_program.cu --log "$log"

say "== CTest: a small CUDA project's tests under cuaudit (CMAKE_TEST_LAUNCHER)"
check python3 tests/gpu/check_ctest_launcher.py --cuaudit "$bin/cuaudit" --project examples/ctest_launcher \
  --build /tmp/cuaudit-ctest-launcher

say "== pytest: a CuPy and a PyTorch test session under cuaudit, findings named by test (python/pytest_cuaudit.py)"
check python3 tests/python/check_pytest_plugin.py --cuaudit "$bin/cuaudit" --suite cupy
check python3 tests/python/check_pytest_plugin.py --cuaudit "$bin/cuaudit" --suite torch

say "== memory timeline: three phases, kept as a golden trace with its HTML report"
rm -rf "$out/timeline-run"
check python3 tests/gpu/check_timeline.py --cuaudit "$bin/cuaudit" --program "$bin/gpu_timeline_phases" \
  --source tests/gpu/timeline_phases.cu --keep-run "$out/timeline-run" --html "$out/timeline.html"

say "== --metrics on the service: its growing line rises from scrape to scrape"
check python3 tests/gpu/check_metrics_gpu.py --cuaudit "$bin/cuaudit" --source tests/gpu/service_requests.cu \
  --marker grows --keep "$out/metrics" -- "$bin/service_requests" 16

say "== a long-running service: --snapshot-interval 10s, cuaudit snapshot PID, one growth finding (a minute)"
check python3 tests/gpu/check_service.py --cuaudit "$bin/cuaudit" --program "$bin/service_requests" \
  --source tests/gpu/service_requests.cu --keep "$out/service" --log "$log"
rm -rf "$out/service/run"  # the reports stay; the trace is large

say "== scale: 1,000,000 cudaMalloc/cudaFree pairs recorded, then reported (trace size, report time, peak memory)"
rm -rf /tmp/cuaudit-pairs
"$bin/cuaudit" --save /tmp/cuaudit-pairs --leak-check summary "$bin/bench_alloc_pairs" 1000000 nokernel >/dev/null 2>&1
trace_bytes=$(stat -c %s /tmp/cuaudit-pairs/trace-*.cutrace | head -1)
"$bin/cuaudit" report /tmp/cuaudit-pairs --json /tmp/cuaudit-pairs.json --log-file /dev/null >/dev/null 2>&1
events=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['processes'][0]; print(p['allocations'] + p['releases'])" /tmp/cuaudit-pairs.json)
say "trace: $trace_bytes bytes for $events allocation and release events ($(awk "BEGIN {printf \"%.1f\", $trace_bytes / $events}") bytes per event)"
for rep in 1 2 3; do
  "$bin/bench_peak_rss" "$bin/cuaudit" report /tmp/cuaudit-pairs --log-file /dev/null 2>&1 >/dev/null | grep '^peak_rss' |
    sed "s/^/report run $rep: /" | tee -a "$log"
done
rm -rf /tmp/cuaudit-pairs /tmp/cuaudit-pairs.json

say "== demo run, kept as the golden trace"
rm -rf "$out/demo-run"
"$bin/cuaudit" --save "$out/demo-run" --json "$out/demo-report.json" "$bin/demo_leaks" 2>&1 | tee -a "$log"
say "exit status: ${PIPESTATUS[0]}"

say "== a run with launch findings of two kernels, kept as a golden trace (kernel filters)"
rm -rf "$out/launch-run"
"$bin/cuaudit" --save "$out/launch-run" "$bin/gpu_launch_misaligned_double2" 2>&1 | tail -n 3 | tee -a "$log"

say "== what kernels' code requires: a run kept as a golden trace; the analysis timed, then from its cache"
rm -rf "$out/kernel-access-run"
"$bin/cuaudit" --save "$out/kernel-access-run" --leak-check summary "$bin/gpu_kernel_access" 2>&1 | tail -n 4 | tee -a "$log"
rm -f "$out/kernel-access-run/kernel-access.json"
for pass in "nvdisasm" "cache"; do
  start=$(date +%s.%N)
  "$bin/cuaudit" report "$out/kernel-access-run" --json /tmp/ka.json --log-file /dev/null >/dev/null 2>&1
  end=$(date +%s.%N)
  say "report ($pass): $(awk "BEGIN {printf \"%.3f\", $end - $start}") s, $(python3 -c "import json; print(len(json.load(open('$out/kernel-access-run/kernel-access.json'))['kernels']))") kernels analyzed, $(ls "$out/kernel-access-run/kernel-code" | wc -l) cubins ($(du -sk "$out/kernel-access-run/kernel-code" | cut -f1) KiB)"
done
say "== alignment the program's debug information declares: a run kept as a golden trace"
rm -rf "$out/declared-run"
"$bin/cuaudit" --save "$out/declared-run" --leak-check summary "$bin/gpu_declared_alignment" 2>&1 | tail -n 6 | tee -a "$log"
start=$(date +%s.%N)
"$bin/cuaudit" report "$out/declared-run" --json /tmp/declared.json --log-file /dev/null >/dev/null 2>&1
end=$(date +%s.%N)
say "report from the cache: $(awk "BEGIN {printf \"%.3f\", $end - $start}") s"

say "== PyTorch training: the code kept, the words recorded, the report's kernel analysis"
rm -rf /tmp/torch-ka
CUAUDIT_STATS=1 "$bin/cuaudit" --save /tmp/torch-ka --leak-check summary -- python3 tests/gpu/torch_training.py \
  >/dev/null 2>"$out/torch-ka-stats.log"
say "torch launch checks: $(grep -h 'launch checks:' "$out/torch-ka-stats.log" /tmp/torch-ka/*.log 2>/dev/null | head -n 2)"
rm -f /tmp/torch-ka/kernel-access.json  # the run's own report filled it: time the analysis itself
start=$(date +%s.%N)
"$bin/cuaudit" report /tmp/torch-ka --json /tmp/torch-ka.json --log-file /dev/null >/dev/null 2>&1
end=$(date +%s.%N)
say "torch: $(ls /tmp/torch-ka/kernel-code | wc -l) cubins, $(du -sk /tmp/torch-ka/kernel-code | cut -f1) KiB kept; report $(awk "BEGIN {printf \"%.3f\", $end - $start}") s; kernels analyzed: $(python3 -c "import json; print(len(json.load(open('/tmp/torch-ka/kernel-access.json'))['kernels']))" 2>&1); misaligned findings: $(python3 -c "import json; print([f['headline'][:200] for f in json.load(open('/tmp/torch-ka.json'))['findings'] if f['kind']=='misaligned_param'])"); launch finding kinds: $(python3 -c "import json; print(sorted({f['kind'] for f in json.load(open('/tmp/torch-ka.json'))['findings'] if 'param' in f['kind']}))"); modules: $(ls /tmp/torch-ka/kernel-code | sed 's/.*\.//' | sort | uniq -c | tr '\n' ' '); notes: $(python3 -c "import json; r=json.load(open('/tmp/torch-ka.json')); print([n for n in r.get('notes', []) if 'machine code' in n or 'nvdisasm' in n])")"
cp /tmp/torch-ka/kernel-access.json "$out/torch-kernel-access.json" 2>/dev/null

say "== cuaudit report on the recorded run"
"$bin/cuaudit" report "$out/demo-run" --leak-check summary 2>&1 | tee -a "$log"

say "== without the launcher: CUDA_INJECTION64_PATH alone; the process reports at its end"
if python3 tests/gpu/check_findings.py --standalone --cuaudit "$bin/cuaudit" --program "$bin/gpu_leak_loop" \
     --source tests/gpu/leak_loop.cu --log "$log" >"$log.tmp" 2>&1; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi
grep -E '^(PASS|FAIL|  )' "$log.tmp" | sed 's/^PASS [^:]*:/PASS standalone leak_loop:/; s/^FAIL [^:]*:/FAIL standalone leak_loop:/' | tee -a "$log"
rm -f "$log.tmp"

say "== MPI: two ranks, per-rank --output, cuaudit merge"
if command -v mpirun >/dev/null 2>&1; then
  rm -rf /tmp/cuaudit-mpi && mkdir -p /tmp/cuaudit-mpi
  mpirun --allow-run-as-root -n 2 "$bin/cuaudit" --output "/tmp/cuaudit-mpi/run-%q{OMPI_COMM_WORLD_RANK}" \
    "$bin/gpu_leak_loop" 2>&1 | tail -n 4 | tee -a "$log"
  "$bin/cuaudit" merge /tmp/cuaudit-mpi/run-0 /tmp/cuaudit-mpi/run-1 --sarif "$out/merged.sarif" \
    --junit "$out/merged.xml" --html "$out/merged.html" 2>&1 | tee -a "$log"
  say "merged outputs: $(grep -c '"ruleId"' "$out/merged.sarif") SARIF results, $(grep -c '<testsuite ' "$out/merged.xml") JUnit suites, HTML $(wc -c <"$out/merged.html") bytes"
else
  say "no MPI launcher (mpirun) on this machine: not run"
fi

say "== under compute-sanitizer (one CUPTI subscriber only)"
timeout 300 compute-sanitizer --print-limit 3 "$bin/cuaudit" "$bin/gpu_leak_exitcode" 2>&1 | tail -n 12 | tee -a "$log"

if [[ ${BENCH_REPS:-5} != 0 ]]; then
  say "== benchmarks (medians of ${BENCH_REPS:-5} alternating runs)"
  PATH="$PATH:/usr/local/cuda/bin" bench/run_bench.sh "$(dirname "$bin")" "${BENCH_REPS:-5}" 2>&1 | tee -a "$log"
fi

say "== --check-api-results: discarded results of successful calls, recorded in the target"
"$bin/cuaudit" --check-api-results "$bin/gpu_handled_errors_O2" 2>&1 | tail -n 30 | tee -a "$log"

fi  # part 2

# Recorded runs travel back as one file each (the device returns a limited number of files, each
# of limited size: the small kernel-code runs apart from the others).
(cd "$out" && [[ -d kernel-access-run ]] && tar -czf kernel-code-runs.tar.gz kernel-access-run declared-run &&
  rm -rf kernel-access-run declared-run)
(cd "$out" && [[ -d demo-run ]] && tar -czf recorded-runs.tar.gz timeline-run demo-run launch-run growth-*-run \
  fragmenting-pool-run && rm -rf timeline-run demo-run launch-run growth-*-run fragmenting-pool-run)
(cd "$out" && [[ -d fragmentation ]] && tar -czf fragmentation.tar.gz fragmentation && rm -rf fragmentation)
(cd "$out" && [[ -d torch-oom ]] && tar -czf torch-oom.tar.gz torch-oom && rm -rf torch-oom)

say "== GPU tests: $passed passed, $failed failed, $skipped skipped"
exit $((failed > 0))
