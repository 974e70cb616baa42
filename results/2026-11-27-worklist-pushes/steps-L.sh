#!/usr/bin/env bash
# Visit L: visit K's binary with the bench's per-task request_into_run_ms and
# task_start_into_run_ms: a periodic task's gathers on the R-MAT pairs in the yielding form,
# 80 periods a unit, placed in the app's runs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vL
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
timeout 120 ./coop bench --config gather-yield-rmat.json --out "$w/gather-rmat" --unit-timeout 60 > "$w/gather-rmat.log" 2>&1
echo "gather-rmat rc $? at $SECONDS s" >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf vL.tgz vL && rm -rf vL && echo done
