#!/usr/bin/env bash
# Visit W4, run from the unpacked kit: octree and game as long backgrounds beside Poisson
# requests at 30 and 60 % load (colocate-steal.json), prev (e7bff75) and new.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export COOP_TEST_DATA_DIR=$here/data
w=$OUT/w4
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
pick() { if [ $1 = new ]; then d=$here; lib=$here/lib; else d=$here/../kit-prev; lib=$here/../kit-prev/lib:$here/lib; fi; }
for which in new prev; do
  pick $which
  LD_LIBRARY_PATH=$lib timeout 280 $d/coop bench --config "$here/colocate-steal.json" --out "$w/colocate-$which" --unit-timeout 60 > "$w/colocate-$which.log" 2>&1
  note "colocate-$which" $?
done
cd "$OUT" && tar czf w4.tgz w4 && rm -rf w4 && echo done
