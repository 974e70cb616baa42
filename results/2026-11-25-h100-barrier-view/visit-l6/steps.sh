#!/usr/bin/env bash
# Visit L6: the GEMM co-location in one process on the committed library (the resizing-barrier
# variants of L1-L4 reverted), for docs/colocation.md.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
s colocate 240 ./coop_bench_colocate --seconds 2 --json $L/colocate.json
