#!/usr/bin/env bash
# Visit K10: the apps as backgrounds with requests for half of the device (and the whole), with
# the job's ids in launch order and by SM ("ids_by_sm"), 30 % load.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
cp colocate-ids.json $L/
s bench 520 ./coop bench --config colocate-ids.json --out $L/bench --unit-timeout 120
