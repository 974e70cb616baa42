#!/usr/bin/env bash
# Visit F (127abb5): the persistent GEMM beside requests at 30 % load with offers every 2 and
# every 1 K-step inside a tile (default 4), and the default again, in one visit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/f
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
for s in 2 1 4; do
  timeout 100 ./coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --offer-steps $s --json "$w/steps-$s.json" > "$w/steps-$s.log" 2>&1
  echo "offer-steps $s rc $? at $SECONDS s" >> "$w/rc.txt"
done
cd "$OUT" && tar czf f.tgz f && rm -rf f && echo done
