#!/usr/bin/env bash
# Visit K8: the final tree: the ids-by-SM placement test, the apps with --ids-by-sm under an
# adversarial schedule (results validated), fuzz with ids by SM for every job, the interruptible
# suite with room for its 140 s.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
export COOP_TEST_DATA_DIR=$PWD/data
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
s test_cuda_runtime 90 ./test_cuda_runtime
for a in color mis p-sssp bfs l-sssp bc; do
  s run-$a 60 ./coop run $a --gen usa-ny --ids-by-sm --policy adversarial:7
done
s run-bfs-yield 60 ./coop run bfs --gen usa-ny --ids-by-sm --yield-in-phases --policy adversarial:7
s run-octree 60 ./coop run octree --ids-by-sm --policy adversarial:7
s run-game 60 ./coop run game --ids-by-sm --policy adversarial:7
s fuzz-ids-by-sm 60 env COOP_CUDA_IDS_BY_SM=1 ./coop fuzz-schedule --backend cuda --seeds 1000 --rotate --keep-going
s test_interruptible_gpu 220 ./test_interruptible_gpu
