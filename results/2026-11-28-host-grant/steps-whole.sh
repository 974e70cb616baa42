#!/usr/bin/env bash
# A second visit: the periodic task asking for the whole device (k = N, gather-steal-whole.json)
# beside octree and game, prev (8e4da87) and new (88c178a: the grant without the lock and the
# predicated poll) alternating, three rounds.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/whole
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for r in 1 2 3; do
  for which in prev new; do
    b=./coop; [ "$which" = prev ] && b=./prev/coop
    timeout 90 "$b" bench --config gather-steal-whole.json --out "$w/whole-$which-$r" --unit-timeout 60 > "$w/whole-$which-$r.log" 2>&1
    note "whole-$which-$r" $?
  done
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf whole.tgz whole && rm -rf whole && echo done
