#!/usr/bin/env bash
# Visit N1, second command: time slicing and MPS beside the GEMM (two processes); the demo; the
# semantics suite.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
timeout 150 ./coop_bench_colocate --seconds 2 --only processes --json $OUT/processes.json > $OUT/processes.log 2>&1
echo "processes rc $? at $SECONDS s" >> $OUT/rc.txt
timeout 60 ./coop demo --json > $OUT/demo.json 2> $OUT/demo.log
echo "demo rc $? at $SECONDS s" >> $OUT/rc.txt
timeout 120 ./test_semantics_gpu > $OUT/test_semantics_gpu.log 2>&1; echo "test_semantics_gpu rc $? at $SECONDS s" >> $OUT/rc.txt
