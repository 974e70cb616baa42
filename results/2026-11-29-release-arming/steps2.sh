#!/usr/bin/env bash
# The release arming beside the persistent GEMM: coop_bench_colocate's at-request forms at 30 %
# load with the arming as landed and without (COOP_EXP_NO_ARM=1: the host releases each request
# at its grant), alternating, two rounds; then two more rounds of the stages benchmark.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$OUT/arm2
mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$w/device.txt" 2>&1
for round in 1 2; do
  for noarm in 0 1; do
    if [ $noarm = 1 ]; then export COOP_EXP_NO_ARM=1; else unset COOP_EXP_NO_ARM; fi
    t0=$SECONDS
    timeout 60 ./coop_bench_colocate --forms coop-whole,coop-whole-at-request,coop-whole-queued-at-request \
      --loads 0.3 --seconds 2 --json "$w/colocate-noarm$noarm-$round.json" > "$w/colocate-noarm$noarm-$round.log" 2>&1
    echo "colocate noarm=$noarm round $round rc=$? $((SECONDS - t0))s" >> "$w/rc.txt"
  done
done
for round in 4 5; do
  for noarm in 0 1; do
    if [ $noarm = 1 ]; then export COOP_EXP_NO_ARM=1; else unset COOP_EXP_NO_ARM; fi
    t0=$SECONDS
    timeout 40 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-noarm$noarm-$round.json" > "$w/stages-noarm$noarm-$round.log" 2>&1
    echo "stages noarm=$noarm round $round rc=$? $((SECONDS - t0))s" >> "$w/rc.txt"
  done
done
tar czf "$OUT/arm2.tgz" -C "$OUT" arm2
