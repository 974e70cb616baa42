#!/usr/bin/env bash
# The control relay's A/B without the stream-ordered regrow (COOP_CUDA_STREAM_REGROW=0: the
# host regrows the job at each task's end, through the relay when it is on), which avoids the
# race the second visit found: stages and gather, relay off and on, alternating.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_CUDA_STREAM_REGROW=0
w=$OUT/v3
mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$w/device.txt" 2>&1
for round in 1 2; do
  for relay in 0 1; do
    for part in stages gather; do
      t0=$SECONDS
      COOP_CUDA_CONTROL_RELAY=$relay timeout 45 ./coop_bench_gpu --only $part --reps 40 \
        --json "$w/$part-relay$relay-$round.json" > "$w/$part-relay$relay-$round.log" 2>&1
      echo "$part relay=$relay round $round rc=$? $((SECONDS - t0))s" >> "$w/rc.txt"
    done
  done
done
tar czf "$OUT/v3.tgz" -C "$OUT" v3
