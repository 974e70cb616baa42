#!/usr/bin/env bash
# Visit K7: the final tree (ids by SM opt-in: LaunchConfig::ids_by_sm; the GEMM co-location
# benchmark's job asks for it). Suites, fuzz, Table 2 (default: launch order), the GEMM beside
# requests at 30 % load, the demo.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
export COOP_TEST_DATA_DIR=$PWD/data
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
s test_cuda_runtime 90 ./test_cuda_runtime
for t in test_semantics_gpu test_shutdown_gpu test_apps_gpu test_for_each_gpu test_recipes_gpu test_examples_gpu test_device_protocol; do s $t 60 ./$t; done
s fuzz 60 ./coop fuzz-schedule --backend cuda --seeds 1000 --rotate --keep-going
s ov 100 ./coop bench --config paper --only overhead --out $L/ov
s colocate 150 ./coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json $L/colocate.json
s demo 40 ./coop demo --json
s test_interruptible_gpu 150 ./test_interruptible_gpu
