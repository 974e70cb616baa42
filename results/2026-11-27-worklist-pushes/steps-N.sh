#!/usr/bin/env bash
# Visit N, a diagnostic: do R-MAT's gathers wait on a saturated memory system? Binaries: base
# (visit M's), hold (base where a workgroup that stays at an offer while others are wanted
# holds back — polls coop::query every ~2 us, at most 100 times — before it claims more; not a
# candidate). A periodic task's gathers on the R-MAT pairs, yielding form, 40 periods a unit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vN
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
for b in hold base; do
  timeout 85 $b/coop bench --config gather-yield-rmat-40.json --out "$w/yield-$b" --unit-timeout 40 > "$w/yield-$b.log" 2>&1
  echo "yield-$b rc $? at $SECONDS s" >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vN.tgz vN && rm -rf vN && echo done
