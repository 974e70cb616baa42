#!/usr/bin/env bash
# Visit M, a diagnostic: where R-MAT's yielding gathers wait. Binaries: base (visit L's source),
# fixed1 (base with for_each's claims fixed at one item per thread and an offer after every
# chunk: the loop's smallest chunks; not a candidate). A periodic task's gathers on the R-MAT
# pairs, 40 periods a unit: the yielding form on both, the paper form (offers at barriers
# only) on base.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vM
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for b in fixed1 base; do
  timeout 80 $b/coop bench --config gather-yield-rmat-40.json --out "$w/yield-$b" --unit-timeout 40 > "$w/yield-$b.log" 2>&1
  note yield-$b $?
done
timeout 80 base/coop bench --config gather-paper-rmat-40.json --out "$w/paper-base" --unit-timeout 40 > "$w/paper-base.log" 2>&1
note paper-base $?
find "$w" -name results.json -delete
cd "$OUT" && tar czf vM.tgz vM && rm -rf vM && echo done
