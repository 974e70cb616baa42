#!/usr/bin/env bash
# Visit W3, run from the unpacked kit (kit/ = the tree with the windowed steal scan,
# kit-prev/ = e7bff75, the scan over every pool): the GPU suites and schedule fuzzing, then the
# periodic task's gather on octree and game (gather-steal.json), prev and new alternating, then
# Table 2 (new).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export COOP_TEST_DATA_DIR=$here/data
w=$OUT/w3
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
pick() { if [ $1 = new ]; then d=$here; lib=$here/lib; else d=$here/../kit-prev; lib=$here/../kit-prev/lib:$here/lib; fi; }
export LD_LIBRARY_PATH=$here/lib
for t in test_apps_gpu test_examples_gpu test_recipes_gpu test_semantics_gpu test_cuda_runtime; do
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note "$t" $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" >> "$w/rc.txt"
done
timeout 120 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 20001 --keep-going > "$w/fuzz-all.log" 2>&1
note fuzz-all $?
tail -n 1 "$w/fuzz-all.log" >> "$w/rc.txt"
for which in prev new; do
  pick $which
  LD_LIBRARY_PATH=$lib timeout 200 $d/coop bench --config "$here/gather-steal.json" --out "$w/gather-$which" --unit-timeout 60 > "$w/gather-$which.log" 2>&1
  note "gather-$which" $?
done
timeout 110 ./coop bench --config paper --only overhead --out "$w/ov" > "$w/ov.log" 2>&1
note ov $?
tail -n 2 "$w/ov.log" | head -n 1 >> "$w/rc.txt"
cd "$OUT" && tar czf w3.tgz w3 && rm -rf w3 && echo done
