#!/bin/bash
# The committed coop_bench_gpu: the barrier (with each barrier alone in its kernel) and the
# idle offer, alternating with 6d2ef6d's.
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
R=$OUT/visit-13; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > $R/device.txt
for i in 1 2; do
  for b in base new; do
    ./bench_$b --only barrier --reps 10 --json $R/barrier-$b-$i.json > $R/barrier-$b-$i.log 2>&1
    ./bench_$b --only offer --reps 10 --json $R/offer-$b-$i.json > $R/offer-$b-$i.log 2>&1
  done
done
grep -h "barrier \|alone\|offer_kill (idle)" $R/*.log
tar czf $OUT/visit-13.tgz -C $OUT visit-13 && rm -rf $R
