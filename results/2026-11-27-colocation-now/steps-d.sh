#!/usr/bin/env bash
# Visit C, second command: l-sssp on the 24 M-vertex road graph beside requests at 30 % load
# (colocate-lsssp.json), new binaries, until the command's limit (resumable: units.jsonl).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/d
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
timeout $((570 - SECONDS)) ./coop bench --config "$here/colocate-lsssp.json" --out "$w/lsssp" --unit-timeout 120 > "$w/lsssp.log" 2>&1
echo "lsssp rc $? at $SECONDS s" >> "$w/rc.txt"
cd "$OUT" && tar czf d.tgz d && rm -rf d && echo done
