#!/usr/bin/env bash
# Visit M1: the GEMM co-location with host steps and the request's GPU span; coop bench's
# process mechanisms (time slicing, MPS) on bfs/road-24m at 30 %.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
nvidia-smi -L > $OUT/device.txt
date -u > $OUT/date.txt
timeout 230 ./coop_bench_colocate --seconds 2 --loads 0.3,0.6 --json $OUT/colocate.json > $OUT/colocate.log 2>&1
echo "colocate rc $?" >> $OUT/rc.txt
timeout 330 ./coop bench --config colocate --out $OUT/bench --unit-timeout 150 --filter bfs/road-24m --filter load=0.3 \
  --exclude green --exclude half --exclude yield --exclude suspend --exclude at-request > $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/rc.txt
ls /tmp/coop-* 2>/dev/null >> $OUT/rc.txt
