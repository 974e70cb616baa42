#!/usr/bin/env bash
# Visit T: the landed build at the session's end. The GPU suites (the interruptible kernels'
# aside: nothing they use changed), the runtime's suite with control copies and with lazy module
# loading (as ctest runs them), fuzzing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vT
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_cuda_runtime test_device_protocol test_semantics_gpu test_shutdown_gpu test_for_each_gpu test_recipes_gpu test_apps_gpu test_examples_gpu; do
  timeout 150 new/$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
COOP_CUDA_CONTROL_COPIES=1 timeout 100 new/test_cuda_runtime > "$w/test_cuda_runtime-copies.log" 2>&1
note test_cuda_runtime-copies $?
CUDA_MODULE_LOADING=LAZY timeout 100 new/test_cuda_runtime > "$w/test_cuda_runtime-lazy.log" 2>&1
note test_cuda_runtime-lazy $?
grep -E "^\[  (PASSED|FAILED)" "$w/test_cuda_runtime-lazy.log" | tail -2 >> "$w/rc.txt"
timeout 120 new/coop fuzz-schedule --backend cuda --seeds 400 --first 151001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
cd "$OUT" && tar czf vT.tgz vT && rm -rf vT && echo done
