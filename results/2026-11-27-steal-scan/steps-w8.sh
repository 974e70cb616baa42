#!/usr/bin/env bash
# Visit W8, run from the unpacked kit (cd801ce): octree 8 M and game depth 10 beside requests at
# 30 % load, the static splits (green contexts of 16, 32 and 64 SMs for the requests).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/w8
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 500 ./coop bench --config "$here/colocate-green.json" --out "$w/colocate" --unit-timeout 90 > "$w/colocate.log" 2>&1
note colocate $?
cd "$OUT" && tar czf w8.tgz w8 && rm -rf w8 && echo done
