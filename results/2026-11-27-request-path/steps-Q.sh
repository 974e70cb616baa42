#!/usr/bin/env bash
# Visit Q: the landed build with for_each's first claim at a share of the range (new), against
# the build before it (base: visit N's). GPU suites (apps, examples) and fuzzing on new; the
# R-MAT pairs' gathers in the yielding form, 40 periods a unit, base then new; Table 2 with the
# yielding forms on new; the request-path probe (probe_request_path.cu).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vQ
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_apps_gpu test_examples_gpu; do
  timeout 120 new/$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 120 new/coop fuzz-schedule --backend cuda --seeds 400 --first 121001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
timeout 60 ./probe_request_path > "$w/probe.log" 2>&1
note probe $?
for b in base new; do
  timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/gather-$b" --unit-timeout 45 > "$w/gather-$b.log" 2>&1
  note gather-$b $?
done
timeout 150 new/coop bench --config overhead-yield.json --out "$w/overhead" --unit-timeout 60 > "$w/overhead.log" 2>&1
note overhead $?
tail -n 2 "$w/overhead.log" >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf vQ.tgz vQ && rm -rf vQ && echo done
