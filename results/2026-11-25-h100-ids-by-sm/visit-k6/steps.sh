#!/usr/bin/env bash
# Visit K6: the persistent GEMM beside Poisson requests at 30 % load, in one process, with ids
# in launch order (off) and by SM (on); the interruptible suite, the demo, a short stress run.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
export COOP_TEST_DATA_DIR=$PWD/data
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
s colocate-on 260 ./coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json $L/colocate-on.json
s colocate-off 260 env COOP_CUDA_IDS_BY_SM=0 ./coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json $L/colocate-off.json
s test_interruptible_gpu 150 ./test_interruptible_gpu
s demo 40 ./coop demo --json
s stress 40 ./coop stress --backend cuda --cycles 5000 --tasks 1000 --json-file $L/stress.json
