#!/usr/bin/env bash
# Visit P2 (fab0772 + the pipelined GEMM of tried-gemm-pipeline.patch): `steps.sh a` runs the
# GPU suites, `coop demo` and the full coop_bench_colocate (every mechanism, loads 0.1/0.3/0.6);
# `steps.sh b` the two-process mechanisms (time slicing, MPS).
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
part=${1:-a}
w=$(mktemp -d)
nvidia-smi -L > $w/device.txt
nvidia-smi --query-gpu=driver_version --format=csv,noheader >> $w/device.txt
date -u > $w/date-$part.txt
if [ "$part" = a ]; then
  for t in test_recipes_gpu test_semantics_gpu test_shutdown_gpu test_cuda_runtime test_interruptible_gpu; do
    timeout 200 ./$t > $w/$t.log 2>&1
    echo "$t rc $? at $SECONDS s" >> $w/rc-a.txt
    grep -E "^\[  (PASSED|FAILED)|tests ran" $w/$t.log | tail -3 >> $w/rc-a.txt
  done
  timeout 60 ./coop demo > $w/demo.log 2>&1
  echo "demo rc $? at $SECONDS s" >> $w/rc-a.txt
  timeout 400 ./coop_bench_colocate --seconds 2 --json $w/colocate.json > $w/colocate.log 2>&1
  echo "colocate rc $? at $SECONDS s" >> $w/rc-a.txt
  cd $w && tar czf $OUT/p2a.tgz * && cat rc-a.txt
else
  for t in test_semantics_gpu test_shutdown_gpu; do
    timeout 200 ./$t > $w/$t-b.log 2>&1
    echo "$t rc $? at $SECONDS s" >> $w/rc-b.txt
    grep -E "^\[  (PASSED|FAILED)|tests ran" $w/$t-b.log | tail -3 >> $w/rc-b.txt
  done
  timeout 300 ./coop_bench_colocate --seconds 2 --only processes --json $w/processes.json > $w/processes.log 2>&1
  echo "processes rc $? at $SECONDS s" >> $w/rc-b.txt
  timeout 60 ./coop_bench_colocate --only gemm --gemm 4096x4096x4096 --json $w/gemm-4096.json > $w/gemm-4096.log 2>&1
  echo "gemm-4096 rc $? at $SECONDS s" >> $w/rc-b.txt
  cd $w && tar czf $OUT/p2b.tgz * && cat rc-b.txt
fi
