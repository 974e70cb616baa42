#!/usr/bin/env bash
# Visit K9: the apps with --ids-by-sm under an adversarial schedule, validated against the CPU
# reference (--validate), and the same with ids in launch order.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
export COOP_TEST_DATA_DIR=$PWD/data
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
for a in color mis p-sssp bfs l-sssp; do
  s run-$a 60 ./coop run $a --gen usa-ny --ids-by-sm --policy adversarial:7 --validate
  s run-$a-yield 60 ./coop run $a --gen usa-ny --ids-by-sm --yield-in-phases --policy adversarial:7 --validate
done
s run-bc 60 ./coop run bc --gen usa-ny --bc-sources 16 --ids-by-sm --policy adversarial:7 --validate
s run-octree 60 ./coop run octree --ids-by-sm --policy adversarial:7 --validate
s run-game 60 ./coop run game --ids-by-sm --policy adversarial:7 --validate
s run-bfs-generous 60 ./coop run bfs --gen usa-ny --ids-by-sm --validate
