#!/usr/bin/env bash
# One visit, run from the unpacked kit (binaries built with tried-standby-joiners.patch applied:
# the regrowth's joiners stand by behind the task's work and start on the device when the fork
# comes). COOP_CUDA_STANDBY=0, a switch of the patch, turns that off in the same binaries: the
# host launches the joiners when it reads the fork, as in the tree. "on" and "off" alternate in
# every comparison. Sections: tests, then colocate, in one device call; final: the tree's
# binaries, no patch.
# usage: steps.sh tests|colocate|final
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
flag() { if [ "$1" = on ]; then echo 1; else echo 0; fi; }
gtest() {  # name, log, command...
  local name=$1 log=$2
  shift 2
  timeout 150 "$@" > "$w/$log.log" 2>&1
  note "$name" $?
  grep -E "^\[  (PASSED|FAILED)|standby blocks" "$w/$log.log" | tail -4 >> "$w/rc.txt"
}
case $1 in
tests)
  gtest test_cuda_runtime test_cuda_runtime ./test_cuda_runtime
  gtest "test_cuda_runtime COOP_CUDA_STANDBY=0" test_cuda_runtime-nostandby env COOP_CUDA_STANDBY=0 ./test_cuda_runtime
  gtest "test_cuda_runtime COOP_CUDA_STREAM_REGROW=0" test_cuda_runtime-hostregrow env COOP_CUDA_STREAM_REGROW=0 ./test_cuda_runtime
  gtest "test_cuda_runtime COOP_CUDA_CONTROL_COPIES=1" test_cuda_runtime-copies env COOP_CUDA_CONTROL_COPIES=1 ./test_cuda_runtime
  gtest "test_cuda_runtime LAZY" test_cuda_runtime-lazy env CUDA_MODULE_LOADING=LAZY ./test_cuda_runtime
  for t in test_semantics_gpu test_device_protocol test_recipes_gpu test_examples_gpu test_apps_gpu test_for_each_gpu test_shutdown_gpu; do
    [ -x ./$t ] && gtest $t $t ./$t
  done
  timeout 80 ./coop fuzz-schedule --backend cuda --seeds 500 --first 91001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -n 1 "$w/fuzz.log" >> "$w/rc.txt"
  timeout 60 ./coop stress --backend cuda --cycles 5000 --tasks 1000 > "$w/stress.log" 2>&1
  note stress $?
  tail -n 2 "$w/stress.log" >> "$w/rc.txt"
  for round in 1 2; do
    for m in on off; do
      COOP_CUDA_STANDBY=$(flag $m) timeout 60 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-$m-$round.json" > "$w/stages-$m-$round.log" 2>&1
      note "stages-$m-$round" $?
    done
  done
  ;;
colocate)
  # The persistent GEMM beside requests, the forms that regrow behind a task, on and off in turn.
  for r in 1 2; do
    for m in on off; do
      COOP_CUDA_STANDBY=$(flag $m) timeout 120 ./coop_bench_colocate --only colocate --forms coop-whole,coop-whole-at-request,coop-whole-queued-at-request,requests-only --loads 0.1,0.3,0.6 --seconds 2 --json "$w/colocate-$m-$r.json" > "$w/colocate-$m-$r.log" 2>&1
      note "colocate-$m-$r" $?
    done
  done
  for m in on off; do
    COOP_CUDA_STANDBY=$(flag $m) timeout 100 ./coop bench --config gather-steal-whole.json --out "$w/whole-$m" --unit-timeout 60 > "$w/whole-$m.log" 2>&1
    note "whole-$m" $?
  done
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  tail -n 6 "$w/demo.log" >> "$w/rc.txt"
  ;;
final)
  # The tree's binaries (without the patch): the runtime's tests both ways of regrowing, with
  # the new test of the regrowth's joiners, the stages twice (the regrowth's breakdown), demo.
  gtest test_cuda_runtime test_cuda_runtime ./test_cuda_runtime
  gtest "test_cuda_runtime COOP_CUDA_STREAM_REGROW=0" test_cuda_runtime-hostregrow env COOP_CUDA_STREAM_REGROW=0 ./test_cuda_runtime
  for round in 1 2; do
    timeout 60 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-$round.json" > "$w/stages-$round.log" 2>&1
    note "stages-$round" $?
  done
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  tail -n 6 "$w/demo.log" >> "$w/rc.txt"
  ;;
esac
find "$w" -name results.json -delete
cd "$OUT" && tar czf $1.tgz $1 && rm -rf $1 && echo done
