#!/usr/bin/env bash
# One visit, run from the unpacked kit (this tree: a restartable kernel suspended whole at an
# offer for a whole-device task, KernelTraits::restartable). prev/ holds the binaries of the
# commit before (4b10fb9), run on the same machine in the same visit.
# usage: steps.sh first|second|third|diag|final
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
gtest() {  # name [env...]
  local t=$1; shift
  env "$@" timeout 150 ./$t > "$w/$t$*.log" 2>&1
  note "$t $*" $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t$*.log" | tail -2 >> "$w/rc.txt"
}
case $1 in
first)
  for t in test_semantics_gpu test_recipes_gpu; do gtest $t; done
  timeout 150 ./coop_bench_colocate --only colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
  note colocate $?
  timeout 150 prev/coop_bench_colocate --only colocate --seconds 2 --json "$w/colocate-prev.json" > "$w/colocate-prev.log" 2>&1
  note colocate-prev $?
  for b in . prev; do
    timeout 60 $b/coop demo > "$w/demo-$b.log" 2>&1
    note "demo $b" $?
  done
  for t in test_cuda_runtime test_shutdown_gpu test_examples_gpu; do gtest $t; done
  ;;
second)
  # The restart behind the task off (COOP_CUDA_STREAM_REGROW=0: the host restarts the job once
  # it has seen the request end), then on again, then the commit before, at 30 and 60 %.
  for v in 0 1; do
    COOP_CUDA_STREAM_REGROW=$v timeout 150 ./coop_bench_colocate --only colocate --loads 0.3,0.6 --seconds 2 --json "$w/colocate-regrow$v.json" > "$w/colocate-regrow$v.log" 2>&1
    note "colocate regrow $v" $?
  done
  timeout 150 prev/coop_bench_colocate --only colocate --loads 0.3,0.6 --seconds 2 --json "$w/colocate-prev.json" > "$w/colocate-prev.log" 2>&1
  note colocate-prev $?
  ;;
third)
  # The committed form: restarts behind a task only while requests leave tasks' ends quiet
  # (PreemptionPolicy::restart_quiet_ms, 0.5 ms).
  for t in test_semantics_gpu test_recipes_gpu test_cuda_runtime; do gtest $t; done
  timeout 170 ./coop_bench_colocate --only colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
  note colocate $?
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  timeout 170 prev/coop_bench_colocate --only colocate --seconds 2 --json "$w/colocate-prev.json" > "$w/colocate-prev.log" 2>&1
  note colocate-prev $?
  timeout 60 prev/coop demo > "$w/demo-prev.log" 2>&1
  note demo-prev $?
  ;;
diag)
  # Visit 3's co-location run stopped at coop-whole, 10 %: the semantics test with the offer's
  # wait fixed, then 10 % with the restart behind the task off and on.
  timeout 100 ./test_semantics_gpu --gtest_filter='*Restartable*:*Pause*' --gtest_repeat=3 > "$w/semantics.log" 2>&1
  note semantics $?
  grep -E "^\[  (PASSED|FAILED)|Failure" "$w/semantics.log" | head -8 >> "$w/rc.txt"
  for v in 0 1; do
    COOP_CUDA_STREAM_REGROW=$v timeout 80 ./coop_bench_colocate --only colocate --loads 0.1 --seconds 2 --json "$w/colocate-regrow$v.json" > "$w/colocate-regrow$v.log" 2>&1
    note "colocate regrow $v" $?
  done
  COOP_CUDA_STREAM_REGROW=1 timeout 80 ./coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json "$w/colocate-30.json" > "$w/colocate-30.log" 2>&1
  note "colocate 30" $?
  ;;
final)
  # The committed code: the restart from the host only.
  timeout 60 ./test_semantics_gpu --gtest_filter='*Restartable*:*Pause*:*KillRequested*' > "$w/semantics.log" 2>&1
  note semantics $?
  grep -E "^\[  (PASSED|FAILED)|Failure" "$w/semantics.log" | head -8 >> "$w/rc.txt"
  timeout 60 ./test_recipes_gpu --gtest_filter='PersistentGemm*' > "$w/recipes.log" 2>&1
  note recipes $?
  grep -E "^\[  (PASSED|FAILED)|Failure" "$w/recipes.log" | head -8 >> "$w/rc.txt"
  timeout 110 ./coop_bench_colocate --only colocate --seconds 1 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
  note colocate $?
  ;;
esac
gzip -f "$w"/*.json 2>/dev/null
# From visit 4 on, one tarball: a visit brings back only a few files.
if [ "$1" = diag ] || [ "$1" = final ]; then tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && rm -rf "${w:?}"; fi
exit 0
