#!/usr/bin/env bash
# Visit L1: workgroup 0 deciding a resizing barrier on its last barrier's view when that began
# ~2 us ago at most (barrier A/B against the previous tree's binary, interleaved), the idle
# offer and its parts (with the SASS of the offer loop), the GPU suites, Table 2's overhead;
# then (part 2) the GEMM co-location in one process and between processes for docs/colocation.md.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:$LD_LIBRARY_PATH
L=$1
PART=$2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/gpu.txt
s() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout -k 5 $lim stdbuf -oL -eL "$@" > $L/$n.log 2>&1; echo "$n rc=$? $((SECONDS-t0))s" >> $L/summary.txt; }
if [ "$PART" = 1 ]; then
  for r in 1 2; do
    s barrier-new-$r 60 ./coop_bench_gpu --only barrier --reps 10 --json $L/barrier-new-$r.json
    s barrier-base-$r 60 ./base_coop_bench_gpu --only barrier --reps 10 --json $L/barrier-base-$r.json
  done
  s offer-new 60 ./coop_bench_gpu --only offer --reps 10 --json $L/offer-new.json
  s offer-base 60 ./base_coop_bench_gpu --only offer --reps 10 --json $L/offer-base.json
  # The SASS of the offer loop's kernels (cuobjdump from Triton's wheel when there is one).
  cob=$(find / -xdev -name cuobjdump -type f -perm -u+x 2>/dev/null | head -1)
  echo "cuobjdump: $cob" > $L/sass-tool.txt
  if [ -n "$cob" ]; then
    timeout 60 $cob -sass ./coop_bench_gpu > /tmp/all.sass 2>&1
    awk '/Function :/{keep = ($0 ~ /OfferLoop/)} keep' /tmp/all.sass > $L/offer_loop.sass
    ls -la /tmp/all.sass >> $L/sass-tool.txt
  fi
  for t in test_semantics_gpu test_cuda_runtime test_device_protocol test_apps_gpu test_for_each_gpu test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
    s $t 120 ./$t
  done
  s fuzz 60 ./coop fuzz-schedule --backend cuda --seeds 1000 --rotate
  s ov 150 ./coop bench --config paper --only overhead --out $L/ov
else
  s colocate 300 ./coop_bench_colocate --seconds 2 --json $L/colocate.json
  s processes 120 ./coop_bench_colocate --only processes --seconds 2 --json $L/processes.json
fi
