#!/usr/bin/env bash
# Visit W7, run from the unpacked kit (cd801ce): octree 8 M and game depth 10 beside requests at
# 30 % load, the task launched after the gather (coop-whole) and at the request (coop-at-request).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/w7
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 500 ./coop bench --config "$here/colocate-at-request.json" --out "$w/colocate" --unit-timeout 90 > "$w/colocate.log" 2>&1
note colocate $?
cd "$OUT" && tar czf w7.tgz w7 && rm -rf w7 && echo done
