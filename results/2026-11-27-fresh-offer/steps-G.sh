#!/usr/bin/env bash
# Visit G: colour and mis (even items, shares) gathers in the yielding form, the final build
# (final/) and the landed one (base/) alternating three times each; then the R-MAT gathers.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vG
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"; date -u >> "$w/device.txt"
for i in 1 2 3; do
  for b in base final; do
    timeout 60 $b/coop bench --config gather-yield-colour-40.json --out "$w/colour-$b-$i" --unit-timeout 30 > "$w/colour-$b-$i.log" 2>&1
    echo "colour-$b-$i rc $? at $SECONDS s" >> "$w/rc.txt"
  done
done
for b in base final; do
  timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/rmat-$b" --unit-timeout 45 > "$w/rmat-$b.log" 2>&1
  echo "rmat-$b rc $? at $SECONDS s" >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vG.tgz vG && rm -rf vG && echo done
