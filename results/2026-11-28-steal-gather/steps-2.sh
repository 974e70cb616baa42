#!/usr/bin/env bash
# Visit 1, call 2: the co-location units that results/2026-11-27-colocation-loads/ did not reach
# (colocate-loads-2.json: octree/8m at 60 % with MPS and stream priority, l-sssp/road-24m at 10 %
# and 60 %), continuing that run's folder (out-2). usage: steps-2.sh [MINUTES]
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$OUT/device-2.txt"
./coop bench --config "$here/colocate-loads-2.json" --out "$here/out-2" --exclude load=0.3 \
  --max-minutes "${1:-8}" --unit-timeout 90 > "$here/run-2.log" 2>&1
echo "rc $? at $SECONDS s" >> "$here/run-2.log"
tail -30 "$here/run-2.log"
cp "$here/run-2.log" "$OUT/"
cd "$here" && tar czf "$OUT/out-2.tgz" out-2
