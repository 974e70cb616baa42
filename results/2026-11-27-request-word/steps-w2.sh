#!/usr/bin/env bash
# Visit W2, run from the unpacked kit (same binaries as W1): the stages, barrier and Table 2
# again, new and base (cdd9cb9) alternating, to see what of W1's differences is noise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export COOP_TEST_DATA_DIR=$here/data
w=$OUT/w2
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
pick() { if [ $1 = new ]; then d=$here; lib=$here/lib; else d=$here/../kit-base; lib=$here/../kit-base/lib:$here/lib; fi; }
for round in 1 2 3 4; do
  for which in new base; do
    pick $which
    LD_LIBRARY_PATH=$lib timeout 60 $d/coop_bench_gpu --only stages --reps 60 --json "$w/$which-stages-$round.json" > "$w/$which-stages-$round.log" 2>&1
    note "$which-stages-$round" $?
    LD_LIBRARY_PATH=$lib timeout 60 $d/coop_bench_gpu --only barrier --reps 10 --json "$w/$which-barrier-$round.json" > "$w/$which-barrier-$round.log" 2>&1
    note "$which-barrier-$round" $?
    grep -E "^barrier  " "$w/$which-barrier-$round.log" >> "$w/rc.txt"
  done
done
for round in 1 2; do
  for which in new base; do
    pick $which
    LD_LIBRARY_PATH=$lib timeout 110 $d/coop bench --config paper --only overhead --out "$w/ov-$which-$round" > "$w/ov-$which-$round.log" 2>&1
    note "ov-$which-$round" $?
    tail -n 2 "$w/ov-$which-$round.log" | head -n 1 >> "$w/rc.txt"
  done
done
cd "$OUT" && tar czf w2.tgz w2 && rm -rf w2 && echo done
