#!/usr/bin/env bash
# Visit W5, run from the unpacked kit: continues W4's colocate-steal runs (copied into the kit)
# with game/10 at 30 % load, new and prev (e7bff75).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export COOP_TEST_DATA_DIR=$here/data
w=$OUT/w5
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
pick() { if [ $1 = new ]; then d=$here; lib=$here/lib; else d=$here/../kit-prev; lib=$here/../kit-prev/lib:$here/lib; fi; }
for which in new prev; do
  pick $which
  cp -r "$here/w4/colocate-$which" "$w/colocate-$which"
  LD_LIBRARY_PATH=$lib timeout 280 $d/coop bench --config "$here/colocate-steal.json" --out "$w/colocate-$which" --filter game/10 --filter load=0.3 --unit-timeout 90 > "$w/colocate-$which.log" 2>&1
  note "colocate-$which" $?
done
cd "$OUT" && tar czf w5.tgz w5 && rm -rf w5 && echo done
