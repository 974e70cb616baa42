#!/usr/bin/env bash
# Visit 6: bfs on R-MAT 24 as a yielding cooperative background beside requests at 30 % load
# (colocate-rmat-yield.json), "head" (f923623's CLI: 2 yielding workgroups per SM) and "new"
# (the out-of-line protocol: 4 per SM) alternating, while the visit's time lasts.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v6
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
for r in 1 2; do
  for b in head new; do
    d=.; [ $b = head ] && d=head
    [ $SECONDS -lt 200 ] || break
    timeout 70 $d/coop bench --config "$here/colocate-rmat-yield.json" --out "$w/rmat-$b-$r" --unit-timeout 60 > "$w/rmat-$b-$r.log" 2>&1
    echo "rmat-$b-$r rc $? at $SECONDS s" >> "$w/rc.txt"
  done
done
cd "$OUT" && tar czf v6.tgz v6 && rm -rf v6 && echo done
