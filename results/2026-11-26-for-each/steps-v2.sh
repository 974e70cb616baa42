#!/usr/bin/env bash
# Visit V2, run from build/kit: Table 2 (the paper's overhead units) and the barrier and offer
# micro-benchmarks of this tree against 3f96761 (pre_pause_*: the tree before workgroup 0's
# pause), interleaved: is the pause what raised Table 2 on this device? Then the for_each GPU
# tests and Table 2 with the yielding form, for_each claiming from 16 parts.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/v2
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for round in 1 2; do
  for tree in new pre_pause; do
    bin=./coop; micro=./coop_bench_gpu
    [ $tree = pre_pause ] && bin=./pre_pause_coop && micro=./pre_pause_coop_bench_gpu
    for part in barrier offer; do
      timeout 60 $micro --only $part --reps 10 --json "$w/micro-$part-$tree-$round.json" \
        > "$w/micro-$part-$tree-$round.log" 2>&1
      note "micro-$part-$tree-$round" $?
    done
    timeout 110 $bin bench --config paper --only overhead --out "$w/ov-$tree-$round" \
      > "$w/ov-$tree-$round.log" 2>&1
    note "ov-$tree-$round" $?
    tail -n 2 "$w/ov-$tree-$round.log" | head -n 1 >> "$w/rc.txt"
  done
done
timeout 60 ./test_for_each_gpu > "$w/test_for_each_gpu.log" 2>&1
note test_for_each_gpu $?
./coop bench --config paper --print-config > paper.json
python3 -c "import json; c=json.load(open('paper.json')); c['overhead']['yield_in_phases']=True; json.dump(c, open('yield.json','w'))"
timeout 170 ./coop bench --config yield.json --only overhead --out "$w/ov-yield-parts" > "$w/ov-yield-parts.log" 2>&1
note ov-yield-parts $?
tail -n 3 "$w/ov-yield-parts.log" | head -n 2 >> "$w/rc.txt"
cd "$OUT" && tar czf v2.tgz v2 && rm -rf v2 && echo done
