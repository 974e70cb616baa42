#!/usr/bin/env bash
# Where the at-request request's extra microseconds to the device go: the stages benchmark with
# the release arming on (as landed) and off (COOP_EXP_NO_ARM=1: the host releases each task;
# the control batch is the request word alone), alternating, three rounds.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$OUT/arm
mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$w/device.txt" 2>&1
for round in 1 2 3; do
  for noarm in 0 1; do
    t0=$SECONDS
    if [ $noarm = 1 ]; then export COOP_EXP_NO_ARM=1; else unset COOP_EXP_NO_ARM; fi
    timeout 40 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-noarm$noarm-$round.json" > "$w/stages-noarm$noarm-$round.log" 2>&1
    echo "noarm=$noarm round $round rc=$? $((SECONDS - t0))s" >> "$w/rc.txt"
  done
done
tar czf "$OUT/arm.tgz" -C "$OUT" arm
