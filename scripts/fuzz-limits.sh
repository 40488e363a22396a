# Sourced by fuzz.sh and fuzz-chunk.sh: the longest input libFuzzer gives each harness. fuzz_run_dir
# analyses a whole run directory per input, in time that grows with its bytes (72 inputs a second
# at 256 KiB, 145 at 64 KiB on this machine); its small files come first in an input, so the cap
# cuts a trace's tail (docs/TESTING.md).
fuzz_max_len() {
  case "$1" in
  run_dir) echo 65536 ;;
  *) echo 262144 ;;
  esac
}
