#!/usr/bin/env bash
# Visit P1: workgroup 0 paused during whole-device requests (PreemptionPolicy::pause_kept).
# 1. The GPU suites that run tasks beside jobs (semantics incl. the pause tests, shutdown,
#    CUDA runtime, interruptible, recipes).
# 2. coop_bench_colocate at 30 % load, the committed GEMM ("pause": coop-whole pauses,
#    coop-whole-no-pause does not, same run) and the pipelined GEMM of
#    tried-gemm-pipeline.patch on this tree ("pipe"), interleaved pause, pipe, pause, pipe.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$(mktemp -d)
nvidia-smi -L > $w/device.txt
nvidia-smi --query-gpu=driver_version --format=csv,noheader >> $w/device.txt
date -u > $w/date.txt
for t in test_semantics_gpu test_shutdown_gpu test_cuda_runtime test_interruptible_gpu test_recipes_gpu; do
  timeout 240 ./$t > $w/$t.log 2>&1
  echo "$t rc $? at $SECONDS s" >> $w/rc.txt
  grep -E "^\[  (PASSED|FAILED)|tests ran" $w/$t.log | tail -3 >> $w/rc.txt
done
for r in 1 2; do
  for v in pause pipe; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv -lms 200 > $w/clocks-$v-$r.csv 2>&1 &
    smi=$!
    timeout 170 ./colocate-$v --seconds 2 --loads 0.3 --only colocate --json $w/colocate-$v-$r.json > $w/colocate-$v-$r.log 2>&1
    echo "colocate-$v-$r rc $? at $SECONDS s" >> $w/rc.txt
    kill $smi
  done
done
cd $w && gzip -9 *.json *.csv && tar czf $OUT/p1.tgz *
cat $w/rc.txt
