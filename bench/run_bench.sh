#!/usr/bin/env bash
# Runs each benchmark in four configurations, alternating them REPS times (default 5) so that drift
# on the machine hits them alike, and prints the median of each, the ratios of the medians, and the
# peak resident memory of each configuration:
#   native   the program alone
#   floor    CUPTI calling exactly the callbacks cuaudit enables, with empty bodies
#            (CUAUDIT_EMPTY_CALLBACKS=1): what any CUPTI-based tool pays before doing anything
#   cuaudit  the program under cuaudit (report to /dev/null)
#   watch    cuaudit --mode watch (docs/LONG_RUNNING.md): stacks of a sample of the allocations, no
#            launch checks; its goal is 1.02 on every row
#   nocheck, nosample  cuaudit without launch checks (launches), without the timeline's samples
#            (allocations, the pool, PyTorch: the pools' series and fragmentation come from them)
#   nohooks  cuaudit without its Python hooks (torch): PyTorch's blocks not followed
#   nocode   cuaudit keeping no kernel code (torch; CUAUDIT_KERNEL_CODE_LIMIT_MB=0): the cubins'
#            cost, written beside the trace as modules load
#   sanitizer compute-sanitizer --leak-check full, one run, where installed
# Then one cuaudit run of each benchmark with CUAUDIT_STATS=1: where cuaudit's own time goes; and,
# with the PyTorch benchmarks, the time `cuaudit report` takes on a PyTorch run, first (symbols,
# call sites and kernel code resolved) and from the caches that first analysis left.
# Every run is pinned to the same CPUs (BENCH_CPUS, default 2-7 where the machine has 8 or more:
# off CPU 0, which takes the interrupts), so that the scheduler's choices do not add to the spread;
# each row prints the median with its interquartile range and every run.
# Usage: bench/run_bench.sh BUILD_DIR [REPS] [BENCHMARK...]   (benchmarks: pairs pairs_nokernel
# launch launch_struct churn pool torch resnet50 bert; default all; the last three only where
# python3 imports torch with a GPU, and torchvision or transformers for theirs). REPS defaults to 7.
set -euo pipefail
build=${1:?usage: bench/run_bench.sh BUILD_DIR [REPS] [BENCHMARK...]}
reps=${2:-7}
shift $(($# < 2 ? $# : 2))
bin="$build/bin"
here=$(cd "$(dirname "$0")" && pwd)
selected=("$@")
[[ ${#selected[@]} -eq 0 ]] && selected=(pairs pairs_nokernel launch launch_struct churn pool torch resnet50 bert)
# A Python benchmark stays only where what it imports is there.
python_has() { python3 -c "import torch, $1; assert torch.cuda.is_available()" 2>/dev/null; }
declare -A needs=([torch]=torch [resnet50]=torchvision [bert]=transformers)
for name in torch resnet50 bert; do
  if [[ " ${selected[*]} " == *" $name "* ]] && ! python_has "${needs[$name]}"; then
    echo "($name left out: python3 cannot import ${needs[$name]} with a GPU)"
    selected=("${selected[@]/$name/}")
  fi
done
pin=()
cpus=${BENCH_CPUS:-}
[[ -z $cpus && $(nproc) -ge 8 ]] && cpus=2-7
if [[ -n $cpus ]] && command -v taskset >/dev/null 2>&1; then pin=(taskset -c "$cpus"); fi

declare -A command what unit
command[pairs]="$bin/bench_alloc_pairs 100000"
what[pairs]="100,000 x (cudaMalloc 4 KiB, kernel, cudaFree)"
unit[pairs]="us per pair"
command[pairs_nokernel]="$bin/bench_alloc_pairs 100000 nokernel"
what[pairs_nokernel]="100,000 x (cudaMalloc 4 KiB, cudaFree)"
unit[pairs_nokernel]="us per pair"
command[launch]="$bin/bench_launch_rate 200000"
what[launch]="200,000 launches, 4 pointer parameters"
unit[launch]="us per launch"
command[launch_struct]="$bin/bench_launch_rate 200000 struct"
what[launch_struct]="200,000 launches, the 4 pointers in one by-value struct"
unit[launch_struct]="us per launch"
command[churn]="$bin/bench_heap_churn"
what[churn]="10,000,000 host malloc/free, pinned and managed memory live"
unit[churn]="ns per pair"
command[pool]="$bin/bench_pool_blocks 200000"
what[pool]="200,000 block pairs of mixed sizes from an NVTX-annotated first-fit pool"
unit[pool]="us per pair"
command[torch]="python3 $here/torch_step.py 300"
what[torch]="PyTorch MLP training step (3 linear layers, batch 256)"
unit[torch]="ms per step"
command[resnet50]="python3 $here/model_step.py resnet50 50"
what[resnet50]="torchvision ResNet-50 training step (weights=None, batch 32, SGD)"
unit[resnet50]="ms per step"
command[bert]="python3 $here/model_step.py bert 50"
what[bert]="transformers BERT-base training step (BertConfig(), batch 16 x 128 tokens, AdamW)"
unit[bert]="ms per step"

figure() { grep -o '[0-9.]* [num]s per \(pair\|launch\|step\)' | cut -d' ' -f1; }
rss() { grep -o 'max RSS [0-9]* KiB' | awk '{ print $3 }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# The interquartile range, "[q1, q3]" (linear between the sorted runs, as numpy's default).
quartiles() {
  tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
    function q(p,  h, l) { h = 1 + (NR - 1) * p; l = int(h); return l >= NR ? v[NR] : v[l] + (h - l) * (v[l + 1] - v[l]) }
    END { printf "[%s, %s]", q(0.25), q(0.75) }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }  # START (date +%s.%N)

run_config() {  # CONFIG BENCHMARK: prints the program's output
  local config=$1 name=$2
  # shellcheck disable=SC2086
  case $config in
    native) "${pin[@]}" ${command[$name]} ;;
    floor) CUDA_INJECTION64_PATH="$bin/libcuaudit-injection.so" CUAUDIT_EMPTY_CALLBACKS=1 "${pin[@]}" ${command[$name]} ;;
    cuaudit) "${pin[@]}" "$bin/cuaudit" --log-file /dev/null -- ${command[$name]} ;;
    watch) "${pin[@]}" "$bin/cuaudit" --mode watch --log-file /dev/null -- ${command[$name]} ;;
    nocheck) "${pin[@]}" "$bin/cuaudit" --check-launch-params no --log-file /dev/null -- ${command[$name]} ;;
    nosample) "${pin[@]}" "$bin/cuaudit" --sample-interval 0 --log-file /dev/null -- ${command[$name]} ;;
    nohooks) "${pin[@]}" "$bin/cuaudit" --python-hooks no --log-file /dev/null -- ${command[$name]} ;;
    nocode) CUAUDIT_KERNEL_CODE_LIMIT_MB=0 "${pin[@]}" "$bin/cuaudit" --log-file /dev/null -- ${command[$name]} ;;
  esac
}

# The checks whose own cost is worth a configuration: launch parameters for launches, the memory
# timeline's sampler for allocations.
configs_of() {
  case $1 in
    launch | launch_struct) echo native floor cuaudit watch nocheck ;;
    pairs | pairs_nokernel | pool) echo native floor cuaudit watch nosample ;;
    torch) echo native floor cuaudit watch nohooks nocode nosample ;;
    resnet50 | bert) echo native floor cuaudit watch nohooks ;;
    *) echo native floor cuaudit watch ;;
  esac
}

declare -A runs mem wall
for ((i = 0; i < reps; i++)); do
  for name in "${selected[@]}"; do
    [[ -z $name ]] && continue
    for config in $(configs_of "$name"); do
      start=$(date +%s.%N)
      out=$(run_config "$config" "$name" 2>/dev/null)
      # The whole run, start-up and exit included (the report, PyTorch's snapshot at exit).
      wall[$name.$config]+="$(seconds_since "$start") "
      runs[$name.$config]+="$(figure <<<"$out") "
      mem[$name.$config]+="$(rss <<<"$out") "
    done
  done
done

echo "NVIDIA GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); medians [interquartile range] of $reps alternating runs${pin[*]:+, pinned: ${pin[*]}}; commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null)"
for name in "${selected[@]}"; do
  [[ -z $name ]] && continue
  native=$(median <<<"${runs[$name.native]}")
  native_rss=$(median <<<"${mem[$name.native]}")
  echo "${what[$name]}, ${unit[$name]}:"
  for config in $(configs_of "$name"); do
    m=$(median <<<"${runs[$name.$config]}")
    r=$(median <<<"${mem[$name.$config]}")
    printf "  %-8s %10s %-22s ratio %s   max RSS %s KiB (+%s)   whole run %s s   runs: %s\n" "$config" "$m" \
      "$(quartiles <<<"${runs[$name.$config]}")" "$(ratio "$m" "$native")" "$r" "$((r - native_rss))" \
      "$(median <<<"${wall[$name.$config]}")" "${runs[$name.$config]}"
  done
  floor=$(median <<<"${runs[$name.floor]}")
  echo "  cuaudit/floor: $(ratio "$(median <<<"${runs[$name.cuaudit]}")" "$floor")"
  if command -v compute-sanitizer >/dev/null 2>&1 && [[ $name != torch && $name != churn && $name != resnet50 && $name != bert ]]; then
    # shellcheck disable=SC2086
    s=$(compute-sanitizer --leak-check full ${command[$name]} 2>/dev/null | figure)
    echo "  compute-sanitizer --leak-check full (one run): $s, ratio $(ratio "$s" "$native")"
  fi
  echo "  where cuaudit's time goes (one run, CUAUDIT_STATS=1):"
  # shellcheck disable=SC2086
  CUAUDIT_STATS=1 "$bin/cuaudit" --log-file /dev/null -- ${command[$name]} 2>&1 >/dev/null | grep -E 'stage times|calls|launch checks|readable mappings' |
    sed 's/^cuaudit: info: /    /'
done

# The report of a PyTorch run: the first analysis (symbols, call sites and kernel code resolved from
# the program's modules) and the next ones, from the caches the first left in the run directory.
if [[ " ${selected[*]} " == *" torch "* ]]; then
  work=$(mktemp -d)
  "${pin[@]}" "$bin/cuaudit" --save "$work/run" --log-file /dev/null -- ${command[torch]} >/dev/null 2>&1 || true
  first="" cached=""
  for ((i = 0; i < reps; i++)); do
    rm -f "$work/run"/{symbols.json,call_sites.json,kernel-access.json}
    start=$(date +%s.%N)
    "${pin[@]}" "$bin/cuaudit" report "$work/run" --log-file /dev/null >/dev/null 2>&1 || true
    first+="$(seconds_since "$start") "
    start=$(date +%s.%N)
    "${pin[@]}" "$bin/cuaudit" report "$work/run" --log-file /dev/null >/dev/null 2>&1 || true
    cached+="$(seconds_since "$start") "
  done
  echo "cuaudit report of the PyTorch run ($(du -sh "$work/run" | cut -f1) recorded), seconds:"
  echo "  first analysis   $(median <<<"$first") $(quartiles <<<"$first")   runs: $first"
  echo "  from its caches  $(median <<<"$cached") $(quartiles <<<"$cached")   runs: $cached"
  rm -rf "$work"
fi
