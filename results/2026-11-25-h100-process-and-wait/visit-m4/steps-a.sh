#!/usr/bin/env bash
# Visit M4, first command (the committed tree): GPU suites touched by the wait change; the GEMM
# co-location at 10/30/60 % and between processes, for docs/colocation.md.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
nvidia-smi -L > $OUT/device.txt
date -u > $OUT/date.txt
for t in test_cuda_runtime test_semantics_gpu test_shutdown_gpu test_recipes_gpu; do
  timeout 120 ./$t > $OUT/$t.log 2>&1; echo "$t rc $? at $SECONDS s" >> $OUT/rc.txt
done
timeout 260 ./coop_bench_colocate --seconds 2 --json $OUT/colocate.json > $OUT/colocate.log 2>&1
echo "colocate rc $? at $SECONDS s" >> $OUT/rc.txt
timeout 120 ./coop_bench_colocate --seconds 2 --only processes --json $OUT/processes.json > $OUT/processes.log 2>&1
echo "processes rc $? at $SECONDS s" >> $OUT/rc.txt
