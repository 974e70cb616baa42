#!/usr/bin/env bash
# Visit N1, first command: the GEMM alone (pipelined copies, grouped tile order) against cuBLAS at
# three shapes; the GPU suites the changes touch; the GEMM co-location at 10/30/60 %.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
nvidia-smi -L > $OUT/device.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/device.txt
date -u > $OUT/date.txt
for shape in 8192x8192x2048 4096x4096x4096 16384x16384x1024; do
  timeout 60 ./coop_bench_colocate --only gemm --gemm $shape --json $OUT/gemm-$shape.json > $OUT/gemm-$shape.log 2>&1
  echo "gemm $shape rc $? at $SECONDS s" >> $OUT/rc.txt
done
for t in test_recipes_gpu test_cuda_runtime test_shutdown_gpu; do
  timeout 120 ./$t > $OUT/$t.log 2>&1; echo "$t rc $? at $SECONDS s" >> $OUT/rc.txt
done
timeout 260 ./coop_bench_colocate --seconds 2 --json $OUT/colocate.json > $OUT/colocate.log 2>&1
echo "colocate rc $? at $SECONDS s" >> $OUT/rc.txt
