#!/usr/bin/env bash
# Visit H: bfs's and l-sssp's worklist slices of at most 8, 16 and 32 arcs (s8, s16, s32; the
# tree of visit G's "untimed" otherwise). Part 1: a periodic task's gathers in the yielding form
# and Table 2's worklist pairs, each binary. Part 2: R-MAT 24's yielding bfs beside requests at
# 30 % load, s8 then s16 (s32: visit G).
set -u
part=$1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vH$part
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
if [ "$part" = 1 ]; then
  for b in s8 s16 s32; do
    timeout 60 $b/coop bench --config gather-yield-worklists.json --out "$w/gather-$b" --unit-timeout 40 > "$w/gather-$b.log" 2>&1
    note gather-$b $?
  done
  for b in s8 s16 s32; do
    timeout 60 $b/coop bench --config overhead-yield-worklists.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
    note overhead-$b $?
    tail -n 2 "$w/overhead-$b.log" | head -n 1 >> "$w/rc.txt"
  done
else
  for b in s8 s16; do
    timeout 170 $b/coop bench --config colocate-rmat-yield.json --out "$w/rmat-$b" --unit-timeout 165 > "$w/rmat-$b.log" 2>&1
    note rmat-$b $?
    tail -n 2 "$w/rmat-$b.log" | head -n 1 >> "$w/rc.txt"
  done
fi
find "$w" -name results.json -delete
cd "$OUT" && tar czf vH$part.tgz vH$part && rm -rf vH$part && echo done
