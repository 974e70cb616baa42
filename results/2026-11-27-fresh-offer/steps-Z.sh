#!/usr/bin/env bash
# Visit Z: the fresh vote's threshold. new: a chunk over 2 intervals (8 us); t16: over 4 (16 us);
# t32: over 8 (32 us); base: the landed build. Colour and mis gathers alternating twice, then
# the R-MAT gathers once each.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vZ
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"; date -u >> "$w/device.txt"
for i in 1 2; do
  for b in base new t16 t32; do
    timeout 60 $b/coop bench --config gather-yield-colour-40.json --out "$w/colour-$b-$i" --unit-timeout 30 > "$w/colour-$b-$i.log" 2>&1
    echo "colour-$b-$i rc $? at $SECONDS s" >> "$w/rc.txt"
  done
done
for b in t16 t32 base; do
  timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/rmat-$b" --unit-timeout 45 > "$w/rmat-$b.log" 2>&1
  echo "rmat-$b rc $? at $SECONDS s" >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vZ.tgz vZ && rm -rf vZ && echo done
