#!/usr/bin/env bash
# Visit G (421b9b2's binaries, the library as 127abb5): a periodic 0.38 ms task's gather on the
# paper's graph pairs (gather-graph.json), k = 1, N/4, N/2, N - 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/g
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
timeout 330 ./coop bench --config "$here/gather-graph.json" --out "$w/gather" --unit-timeout 60 > "$w/gather.log" 2>&1
echo "gather rc $? at $SECONDS s" >> "$w/rc.txt"
cd "$OUT" && tar czf g.tgz g && rm -rf g && echo done
