#!/usr/bin/env bash
# One visit, run from the unpacked kit (this tree: a job grown back in stream order behind the
# last running task, Scheduler::grow_after). COOP_CUDA_STREAM_REGROW=0 turns that off in the same
# binaries: the host grows the job once it has seen the task end, as before. "on" and "off"
# alternate in every comparison.
# usage: steps.sh tests|colocate|rounds|final|again
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
flag() { if [ "$1" = on ]; then echo 1; else echo 0; fi; }
case $1 in
tests)
  for t in test_cuda_runtime test_semantics_gpu test_device_protocol test_recipes_gpu test_examples_gpu test_apps_gpu test_for_each_gpu test_shutdown_gpu test_interruptible_gpu; do
    [ -x ./$t ] || continue
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  for v in COOP_CUDA_STREAM_REGROW=0 COOP_CUDA_CONTROL_COPIES=1; do
    env $v timeout 150 ./test_cuda_runtime > "$w/test_cuda_runtime-$v.log" 2>&1
    note "test_cuda_runtime $v" $?
    grep -E "^\[  (PASSED|FAILED)" "$w/test_cuda_runtime-$v.log" | tail -2 >> "$w/rc.txt"
  done
  timeout 80 ./coop fuzz-schedule --backend cuda --seeds 500 --first 90001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -n 1 "$w/fuzz.log" >> "$w/rc.txt"
  timeout 60 ./coop stress --backend cuda --cycles 5000 --tasks 1000 > "$w/stress.log" 2>&1
  note stress $?
  tail -n 2 "$w/stress.log" >> "$w/rc.txt"
  for round in 1 2; do
    for m in on off; do
      COOP_CUDA_STREAM_REGROW=$(flag $m) timeout 60 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-$m-$round.json" > "$w/stages-$m-$round.log" 2>&1
      note "stages-$m-$round" $?
    done
  done
  ;;
colocate)
  for m in on off; do
    COOP_CUDA_STREAM_REGROW=$(flag $m) timeout 150 ./coop_bench_colocate --only colocate --loads 0.1,0.3 --seconds 2 --json "$w/colocate-$m.json" > "$w/colocate-$m.log" 2>&1
    note "colocate-$m" $?
  done
  for m in on off; do
    COOP_CUDA_STREAM_REGROW=$(flag $m) timeout 100 ./coop bench --config gather-steal-whole.json --out "$w/whole-$m" --unit-timeout 60 > "$w/whole-$m.log" 2>&1
    note "whole-$m" $?
  done
  ;;
rounds)
  # Three more rounds of the periodic whole-device task, and the co-location benchmark at 30 %,
  # on and off alternating.
  for r in 1 2 3; do
    for m in on off; do
      COOP_CUDA_STREAM_REGROW=$(flag $m) timeout 100 ./coop bench --config gather-steal-whole.json --out "$w/whole-$m-$r" --unit-timeout 60 > "$w/whole-$m-$r.log" 2>&1
      note "whole-$m-$r" $?
    done
  done
  for r in 1 2; do
    for m in on off; do
      COOP_CUDA_STREAM_REGROW=$(flag $m) timeout 100 ./coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json "$w/colocate-$m-$r.json" > "$w/colocate-$m-$r.log" 2>&1
      note "colocate-$m-$r" $?
    done
  done
  ;;
final)
  # Visit 4, the committed code (0b43587, 2cc9bec): the runtime's GPU tests (the racing test at
  # 150 tasks per thread) three ways, the semantics and shutdown suites, the Python package's GPU
  # tests (extension relinked here), the stages once, then the co-location benchmark in one
  # process and between processes, and coop demo.
  for v in COOP_CUDA_STREAM_REGROW=1 COOP_CUDA_STREAM_REGROW=0 COOP_CUDA_CONTROL_COPIES=1; do
    env $v timeout 150 ./test_cuda_runtime > "$w/test_cuda_runtime-$v.log" 2>&1
    note "test_cuda_runtime $v" $?
    grep -E "^\[  (PASSED|FAILED)" "$w/test_cuda_runtime-$v.log" | tail -2 >> "$w/rc.txt"
  done
  for t in test_semantics_gpu test_shutdown_gpu; do
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  repo=$(cd "$here/../../.." && pwd)
  (cd "$repo" && bash scripts/python_module_relink.sh "$here/python/objects" /tmp/coop-py > "$w/python-relink.log" 2>&1 &&
   cp python/coop/*.py /tmp/coop-py/coop/ &&
   PYTHONPATH=/tmp/coop-py timeout 200 python3 -m pytest -q -p no:cacheprovider python/tests -m gpu > "$w/python-gpu.log" 2>&1)
  note python-gpu $?
  tail -n 2 "$w/python-gpu.log" >> "$w/rc.txt"
  timeout 60 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages.json" > "$w/stages.log" 2>&1
  note stages $?
  timeout 300 ./coop_bench_colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
  note colocate $?
  timeout 150 ./coop_bench_colocate --only processes --seconds 2 --json "$w/processes.json" > "$w/processes.log" 2>&1
  note processes $?
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  tail -n 6 "$w/demo.log" >> "$w/rc.txt"
  ;;
again)
  # Visit 6: the co-location benchmark twice more on the committed code, on another machine
  # (visit 4's run had a 65 ms tail at the end of one row, and an 11 ms one in its
  # requests-only floor).
  for r in 1 2; do
    timeout 280 ./coop_bench_colocate --seconds 2 --json "$w/colocate-$r.json" > "$w/colocate-$r.log" 2>&1
    note "colocate-$r" $?
  done
  ;;
esac
find "$w" -name results.json -delete
cd "$OUT" && tar czf $1.tgz $1 && rm -rf $1 && echo done
