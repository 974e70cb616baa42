#!/usr/bin/env bash
# Visit 4: the GPU demo (the README's main job) on the tree of visit 3's new build, and the
# periodic task asking for the whole device (k = N, gather-steal-whole.json) beside octree and
# game, prev and new. usage: steps-5.sh KIT (visit 3's unpacked kit)
set -u
here=$(cd "$(dirname "$0")" && pwd)
kit=$1
export LD_LIBRARY_PATH=$kit/lib
w=$OUT/v4
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 120 "$kit/coop" demo > "$w/demo.log" 2>&1
note demo $?
for which in prev new; do
  b=$kit/coop; [ "$which" = prev ] && b=$kit/prev/coop
  timeout 200 "$b" bench --config "$here/gather-steal-whole.json" --out "$w/whole-$which" --unit-timeout 60 > "$w/whole-$which.log" 2>&1
  note "whole-$which" $?
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf v4.tgz v4 && rm -rf v4 && echo done
