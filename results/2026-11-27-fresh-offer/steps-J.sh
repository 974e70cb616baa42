#!/usr/bin/env bash
# Visit J (a repeat of visit I on another machine, base first): R-MAT 24's yielding bfs as a background beside 0.4 ms cuBLAS requests at 30 % load
# (colocate-rmat-yield.json, from ../2026-11-27-worklist-pushes/), final/ against base/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vJ
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"; date -u >> "$w/device.txt"
for b in base final; do
  timeout 200 $b/coop bench --config colocate-rmat-yield.json --out "$w/rmat-$b" --unit-timeout 190 > "$w/rmat-$b.log" 2>&1
  echo "rmat-$b rc $? at $SECONDS s" >> "$w/rc.txt"
  grep -E "request p50" "$w/rmat-$b.log" >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vJ.tgz vJ && rm -rf vJ && echo done
