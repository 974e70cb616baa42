#!/usr/bin/env bash
# Visit L3 (final tree): the resizing barrier deciding on its last barrier's request when that
# began ~2 us ago at most, against the previous tree (interleaved), the idle offer, the GPU
# suites, Table 2's overhead, and the GEMM co-location for docs/colocation.md.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
L=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
for r in 1 2 3; do
  s barrier-new-$r 60 ./coop_bench_gpu --only barrier --reps 10 --json $L/barrier-new-$r.json
  s barrier-base-$r 60 ./base_coop_bench_gpu --only barrier --reps 10 --json $L/barrier-base-$r.json
done
s offer-new 60 ./coop_bench_gpu --only offer --reps 10 --json $L/offer-new.json
for t in test_semantics_gpu test_cuda_runtime test_device_protocol test_apps_gpu test_for_each_gpu test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
  s $t 120 ./$t
done
s fuzz 60 ./coop fuzz-schedule --backend cuda --seeds 1000 --rotate
s ov 150 ./coop bench --config paper --only overhead --out $L/ov
s colocate 300 ./coop_bench_colocate --seconds 2 --json $L/colocate.json
s processes 120 ./coop_bench_colocate --only processes --seconds 2 --json $L/processes.json
