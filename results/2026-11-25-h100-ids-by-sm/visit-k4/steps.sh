#!/usr/bin/env bash
# Visit K4: ids by SM. Suites and fuzz on this tree; stages and gather with ids by SM (on) and
# in launch order (off, COOP_CUDA_IDS_BY_SM=0), interleaved.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
export COOP_TEST_DATA_DIR=$PWD/data
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
s test_cuda_runtime 90 ./test_cuda_runtime
for t in test_semantics_gpu test_shutdown_gpu test_apps_gpu test_for_each_gpu test_recipes_gpu test_examples_gpu test_device_protocol; do s $t 60 ./$t; done
for r in 1 2; do
  s stages-off-$r 60 env COOP_CUDA_IDS_BY_SM=0 ./coop_bench_gpu --only stages --reps 60 --json $L/stages-off-$r.json
  s stages-on-$r 60 ./coop_bench_gpu --only stages --reps 60 --json $L/stages-on-$r.json
  s gather-off-$r 60 env COOP_CUDA_IDS_BY_SM=0 ./coop_bench_gpu --only gather --reps 60 --json $L/gather-off-$r.json
  s gather-on-$r 60 ./coop_bench_gpu --only gather --reps 60 --json $L/gather-on-$r.json
done
s fuzz 90 ./coop fuzz-schedule --backend cuda --seeds 1000 --rotate --keep-going
s demo 40 ./coop demo --json
