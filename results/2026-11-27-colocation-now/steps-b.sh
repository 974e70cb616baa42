#!/usr/bin/env bash
# Visit A, second command on the same machine: the two-process mechanisms of
# coop_bench_colocate (time slicing, MPS), then the graph apps beside requests at 30 % load
# (colocate-graph.json) until the command's limit (the bench is resumable: units.jsonl).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/b
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 150 ./coop_bench_colocate --seconds 2 --only processes --json "$w/processes.json" > "$w/processes.log" 2>&1
note processes $?
timeout $((560 - SECONDS)) ./coop bench --config "$here/colocate-graph.json" --out "$w/graph" --unit-timeout 90 > "$w/graph.log" 2>&1
note graph $?
cd "$OUT" && tar czf b.tgz b && rm -rf b && echo done
