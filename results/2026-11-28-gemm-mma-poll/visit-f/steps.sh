#!/usr/bin/env bash
# Visit F: the poll interval's trade on the final code (2542bef's GEMM): the co-location
# benchmark with polls every 2 and every 8 K-steps (visit e ran the default, 4).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/f
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for s in 2 8; do
  timeout 280 ./coop_bench_colocate --seconds 2 --offer-steps $s --json "$w/colocate-$s.json" > "$w/colocate-$s.log" 2>&1
  note colocate-$s $?
done
cd "$OUT" && tar czf f.tgz f && rm -rf f && echo done
