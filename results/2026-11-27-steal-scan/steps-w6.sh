#!/usr/bin/env bash
# Visit W6, run from the unpacked kit (cd801ce): coop demo (the README's main job) and its work
# queue form, which steals through coop::WorkPool, then Table 2 again.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/w6
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 120 ./coop demo > "$w/demo.log" 2>&1
note demo $?
tail -n 4 "$w/demo.log" >> "$w/rc.txt"
timeout 120 ./coop demo --kernel queue > "$w/demo-queue.log" 2>&1
note demo-queue $?
tail -n 4 "$w/demo-queue.log" >> "$w/rc.txt"
timeout 110 ./coop bench --config paper --only overhead --out "$w/ov" > "$w/ov.log" 2>&1
note ov $?
tail -n 2 "$w/ov.log" | head -n 1 >> "$w/rc.txt"
cd "$OUT" && tar czf w6.tgz w6 && rm -rf w6 && echo done
