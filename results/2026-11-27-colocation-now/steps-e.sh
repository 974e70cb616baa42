#!/usr/bin/env bash
# Visit E, run from the unpacked kits: "new" (kit: an idle task thread spins before it sleeps)
# and "prev" (kit-prev: 4abae0f). The suites that submit tasks, the task path's stages
# alternating new/prev, and coop_bench_colocate at 30 % load alternating new/prev.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export COOP_TEST_DATA_DIR=$here/data
w=$OUT/e
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
export LD_LIBRARY_PATH=$here/lib
for t in test_cuda_runtime test_shutdown_gpu test_recipes_gpu test_examples_gpu test_semantics_gpu; do
  [ -x ./$t ] || continue
  timeout 150 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 60 ./coop demo > "$w/demo.log" 2>&1
note demo $?
for round in 1 2 3; do
  for which in new prev; do
    if [ $which = new ]; then d=$here; else d=$here/../kit-prev; fi
    LD_LIBRARY_PATH=$d/lib timeout 60 $d/coop_bench_gpu --only stages --reps 60 --json "$w/$which-stages-$round.json" > "$w/$which-stages-$round.log" 2>&1
    note "$which-stages-$round" $?
  done
done
for which in new prev new prev; do
  if [ $which = new ]; then d=$here; else d=$here/../kit-prev; fi
  LD_LIBRARY_PATH=$d/lib timeout 100 $d/coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json "$w/$which-colocate-$SECONDS.json" > "$w/$which-colocate-$SECONDS.log" 2>&1
  note "$which-colocate" $?
done
cd "$OUT" && tar czf e.tgz e && rm -rf e && echo done
