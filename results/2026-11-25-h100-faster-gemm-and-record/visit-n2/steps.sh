#!/usr/bin/env bash
# Visit N2: the GEMM before (the committed tree, e8bc0e9) and after (pipelined copies, grouped
# tile order, the next slice copied in across offers) beside the requests at 30 % load,
# interleaved: old, new, old, new; and each GEMM alone.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
nvidia-smi -L > $OUT/device.txt
date -u > $OUT/date.txt
for v in old new; do
  timeout 60 ./colocate-$v --only gemm --json $OUT/gemm-$v.json > $OUT/gemm-$v.log 2>&1
  echo "gemm-$v rc $? at $SECONDS s" >> $OUT/rc.txt
done
for r in 1 2; do
  for v in old new; do
    timeout 150 ./colocate-$v --seconds 2 --loads 0.3 --only colocate --json $OUT/colocate-$v-$r.json > $OUT/colocate-$v-$r.log 2>&1
    echo "colocate-$v-$r rc $? at $SECONDS s" >> $OUT/rc.txt
  done
done
cd $OUT && tar czf n2.tgz *.json *.log *.txt
