#!/bin/bash
# The committed coop_bench_gpu (barrier loops as one template): barrier and anatomy, once each,
# alternating with 6d2ef6d's for the barrier.
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
R=$OUT/visit-15; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > $R/device.txt
for b in base new; do ./bench_$b --only barrier --reps 10 --json $R/barrier-$b.json > $R/barrier-$b.log 2>&1; done
./bench_new --only anatomy --reps 10 --json $R/anatomy-new.json > $R/anatomy-new.log 2>&1
grep -h "barrier \|alone\|anatomy " $R/*.log
tar czf $OUT/visit-15.tgz -C $OUT visit-15 && rm -rf $R
