#!/usr/bin/env bash
# Visit K: the landed form with relax_slice (batches of 8 arcs) and the bench's per-task
# request_into_run_ms. GPU suites (apps, examples); a periodic task's gathers on the R-MAT
# pairs in the yielding form, 80 periods a unit, placed in the app's run; Table 2 with the
# yielding forms (11 pairs); R-MAT 24's bfs beside requests at 30 % load, both forms.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vK
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_apps_gpu test_examples_gpu; do
  timeout 120 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 90 ./coop bench --config gather-yield-rmat.json --out "$w/gather-rmat" --unit-timeout 60 > "$w/gather-rmat.log" 2>&1
note gather-rmat $?
timeout 120 ./coop bench --config overhead-yield.json --out "$w/overhead" > "$w/overhead.log" 2>&1
note overhead $?
tail -n 2 "$w/overhead.log" >> "$w/rc.txt"
if [ $SECONDS -lt 330 ]; then
  timeout 220 ./coop bench --config colocate-rmat-both.json --out "$w/rmat" --unit-timeout 165 > "$w/rmat.log" 2>&1
  note rmat $?
  tail -n 3 "$w/rmat.log" | head -n 2 >> "$w/rc.txt"
fi
find "$w" -name results.json -delete
cd "$OUT" && tar czf vK.tgz vK && rm -rf vK && echo done
