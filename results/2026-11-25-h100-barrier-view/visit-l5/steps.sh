#!/usr/bin/env bash
# Visit L5: octree on 8 M particles as the background at 60 % request load, the built-in
# colocate configuration's mechanisms without the green splits (final tree).
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
s bench 330 ./coop bench --config colocate --out $L/bench --unit-timeout 120 --max-minutes 5 --filter octree/8m --filter load=0.6 --exclude green --exclude suspend --exclude coop-at-request
