#!/usr/bin/env bash
# Visit 4: the apps as long backgrounds on today's CLI (the kit's coop: the out-of-line
# protocol, after 624d5c1): bfs on the 24 M-vertex road graph and on R-MAT scale 24 beside
# requests at 30 % load (colocate-graph.json), docs/colocation.md's apps part.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v4
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
timeout $((580 - SECONDS)) ./coop bench --config "$here/colocate-graph.json" --out "$w/graph" --unit-timeout 90 > "$w/graph.log" 2>&1
echo "graph rc $? at $SECONDS s" >> "$w/rc.txt"
cd "$OUT" && tar czf v4.tgz v4 && rm -rf v4 && echo done
