#!/usr/bin/env bash
# Visit I: the landed form (worklist pushes through coop::fetch_increment, slices of at most 16
# arcs, for_each as before): the GPU suites, fuzzed schedules (yielding forms included), and
# R-MAT 24's bfs beside requests at 30 % load in the yielding and the paper form.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vI
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_semantics_gpu test_for_each_gpu test_apps_gpu test_examples_gpu; do
  timeout 120 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 80 ./coop fuzz-schedule --backend cuda --seeds 400 --first 99001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -1 "$w/fuzz.log" >> "$w/rc.txt"
timeout 250 ./coop bench --config colocate-rmat-both.json --out "$w/rmat" --unit-timeout 165 > "$w/rmat.log" 2>&1
note rmat $?
tail -n 3 "$w/rmat.log" | head -n 2 >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf vI.tgz vI && rm -rf vI && echo done
