#!/usr/bin/env bash
# Visit V, second command on the same machine: Table 2 with the yielding forms (new, then base)
# and the task's stages (reps 60), from the unpacked kit of steps-V.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vV2
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
for b in new base; do
  timeout 140 $b/coop bench --config overhead-yield.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
  echo "overhead-$b rc $? at $SECONDS s" >> "$w/rc.txt"
  tail -n 2 "$w/overhead-$b.log" | head -1 >> "$w/rc.txt"
done
for b in new base; do
  timeout 60 $b/coop_bench_gpu --only stages --reps 60 --json "$w/stages-$b.json" > "$w/stages-$b.log" 2>&1
  echo "stages-$b rc $?" >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vV2.tgz vV2 && rm -rf vV2
