#!/usr/bin/env bash
# Visit U: test_cuda_runtime with IdsBySmFillWholeSmsFromTheTop loading its task's kernel before
# the job, under lazy module loading (as ctest's gpu.CudaRuntime.LazyModuleLoading runs it) and
# as it is.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vU
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
CUDA_MODULE_LOADING=LAZY timeout 100 new/test_cuda_runtime > "$w/test_cuda_runtime-lazy.log" 2>&1
note test_cuda_runtime-lazy $?
grep -E "^\[  (PASSED|FAILED)" "$w/test_cuda_runtime-lazy.log" | tail -2 >> "$w/rc.txt"
timeout 100 new/test_cuda_runtime > "$w/test_cuda_runtime.log" 2>&1
note test_cuda_runtime $?
grep -E "^\[  (PASSED|FAILED)" "$w/test_cuda_runtime.log" | tail -2 >> "$w/rc.txt"
cd "$OUT" && tar czf vU.tgz vU && rm -rf vU && echo done
