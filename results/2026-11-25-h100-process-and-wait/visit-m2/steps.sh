#!/usr/bin/env bash
# Visit M2: the caller's wait spinning before it sleeps, A/B in one visit (GEMM co-location at
# 30 %: before, after, before, after); coop bench's process mechanisms on l-sssp/road-24m.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
nvidia-smi -L > $OUT/device.txt
date -u > $OUT/date.txt
for v in before after before after; do
  b=./coop_bench_colocate; [ $v = before ] && b=./coop_bench_colocate.before
  timeout 120 $b --seconds 2 --loads 0.3 --only colocate --json $OUT/colocate-$v-$SECONDS.json > $OUT/colocate-$v-$SECONDS.log 2>&1
  echo "$v rc $?" >> $OUT/rc.txt
done
echo "ab done at $SECONDS s" >> $OUT/rc.txt
