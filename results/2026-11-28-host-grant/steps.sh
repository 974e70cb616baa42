#!/usr/bin/env bash
# One visit, run from the unpacked kit: ./ = this tree (a task's thread waits for its grant
# without the scheduler's lock and starts its work at once; the job's timeline is written after
# the scheduler hears of a membership change), prev/ = the landed build (8e4da87).
# usage: steps.sh tests|gathers|colocate
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
dir() { if [ "$1" = new ]; then echo "$here"; else echo "$here/prev"; fi; }
case $1 in
tests)
  for t in test_cuda_runtime test_shutdown_gpu test_recipes_gpu test_examples_gpu test_semantics_gpu test_apps_gpu; do
    [ -x ./$t ] || continue
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  timeout 100 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 50001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -n 1 "$w/fuzz.log" >> "$w/rc.txt"
  timeout 60 ./coop stress --backend cuda --cycles 5000 --tasks 1000 > "$w/stress.log" 2>&1
  note stress $?
  tail -n 2 "$w/stress.log" >> "$w/rc.txt"
  for round in 1 2 3; do
    for which in new prev; do
      timeout 60 "$(dir $which)/coop_bench_gpu" --only stages --reps 60 --json "$w/$which-stages-$round.json" > "$w/$which-stages-$round.log" 2>&1
      note "$which-stages-$round" $?
    done
  done
  ;;
gathers)
  for which in prev new prev new; do
    n=$(ls -d "$w"/gather-$which-* 2>/dev/null | wc -l)
    timeout 200 "$(dir $which)/coop" bench --config gather-steal.json --out "$w/gather-$which-$n" --unit-timeout 60 > "$w/gather-$which-$n.log" 2>&1
    note "gather-$which-$n" $?
  done
  ;;
colocate)
  for which in new prev new prev; do
    timeout 120 "$(dir $which)/coop_bench_colocate" --only colocate --loads 0.3 --seconds 2 --json "$w/$which-colocate-$SECONDS.json" > "$w/$which-colocate-$SECONDS.log" 2>&1
    note "$which-colocate" $?
  done
  ;;
esac
find "$w" -name results.json -delete
cd "$OUT" && tar czf $1.tgz $1 && rm -rf $1 && echo done
