#!/usr/bin/env bash
# Visit Y: colour and mis (even items, shares) gathers in the yielding form, base and new
# alternating three times each.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vY
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"; date -u >> "$w/device.txt"
for i in 1 2 3; do
  for b in base new; do
    timeout 60 $b/coop bench --config gather-yield-colour-40.json --out "$w/colour-$b-$i" --unit-timeout 30 > "$w/colour-$b-$i.log" 2>&1
    echo "colour-$b-$i rc $? at $SECONDS s" >> "$w/rc.txt"
  done
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vY.tgz vY && rm -rf vY && echo done
