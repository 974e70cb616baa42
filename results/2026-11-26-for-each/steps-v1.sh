#!/usr/bin/env bash
# Visit V1, run from build/kit (scripts/device_kit.sh; base_coop beside coop is the tree before
# the for_each change, 08eb4a1, with this session's overhead option): the GPU suites, Table 2
# with the phased apps' yielding form for both trees (interleaved), Table 2 as it lands, and the
# barrier and idle-offer micro-benchmarks. Everything under $OUT/v1, one tarball.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/v1
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_for_each_gpu test_semantics_gpu test_apps_gpu test_cuda_runtime test_device_protocol \
         test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
  timeout 150 ./$t > "$w/$t.log" 2>&1
  note "$t" $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" >> "$w/rc.txt"
done
./coop bench --config paper --print-config > paper.json
python3 -c "import json; c=json.load(open('paper.json')); c['overhead']['yield_in_phases']=True; json.dump(c, open('yield.json','w'))"
timeout 170 ./coop bench --config yield.json --only overhead --out "$w/ov-yield-new" > "$w/ov-yield-new.log" 2>&1
note ov-yield-new $?
timeout 170 ./base_coop bench --config yield.json --only overhead --out "$w/ov-yield-base" > "$w/ov-yield-base.log" 2>&1
note ov-yield-base $?
timeout 110 ./coop bench --config paper --only overhead --out "$w/ov-default" > "$w/ov-default.log" 2>&1
note ov-default $?
for part in barrier offer; do
  timeout 60 ./coop_bench_gpu --only $part --reps 10 --json "$w/micro-$part.json" > "$w/micro-$part.log" 2>&1
  note "micro-$part" $?
done
cd "$OUT" && tar czf v1.tgz v1 && rm -rf v1 && echo done
