#!/usr/bin/env bash
# Visit N6: the pipelined GEMM alone (no other change: tried-gemm-pipeline.patch on e8bc0e9,
# "gemm") against the committed tree ("old") beside the requests at 30 % load, interleaved
# old, gemm, old, gemm; the SM clock, power and throttle reasons sampled every 100 ms meanwhile.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$(mktemp -d)
nvidia-smi -L > $w/device.txt
date -u > $w/date.txt
for r in 1 2; do
  for v in old gemm; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $w/clocks-$v-$r.csv 2>&1 &
    smi=$!
    timeout 150 ./colocate-$v --seconds 2 --loads 0.3 --only colocate --json $w/colocate-$v-$r.json > $w/colocate-$v-$r.log 2>&1
    echo "colocate-$v-$r rc $? at $SECONDS s" >> $w/rc.txt
    kill $smi
  done
done
cd $w && tar czf $OUT/n6.tgz *
cat $w/rc.txt
