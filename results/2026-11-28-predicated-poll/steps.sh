#!/usr/bin/env bash
# One visit, run from the unpacked kit: ./ = this tree (thread 0's poll of the membership and
# request words after a vote as two predicated loads, no branch), prev/ = ee44ca4's binaries.
# The GPU suites and schedule fuzzing on new; then alternating: the idle offer, the barrier, the
# persistent GEMM alone; Table 2 in two alternating pairs; the SASS of both offer loops.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
dir() { if [ "$1" = new ]; then echo "$here"; else echo "$here/prev"; fi; }
for t in test_cuda_runtime test_device_protocol test_recipes_gpu test_examples_gpu test_semantics_gpu test_apps_gpu test_for_each_gpu; do
  [ -x ./$t ] || continue
  timeout 150 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 100 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 60001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 1 "$w/fuzz.log" >> "$w/rc.txt"
co=$(python3 - <<'PY' 2>/dev/null
import os, site
for d in site.getsitepackages():
    for root, _, files in os.walk(d):
        if "cuobjdump" in files:
            print(os.path.join(root, "cuobjdump")); raise SystemExit
PY
)
if [ -n "$co" ]; then
  for b in prev new; do
    "$co" -sass "$(dir $b)/coop_bench_gpu" 2>&1 | xz > "$w/sass-gpu-$b.xz"
  done
fi
for r in 1 2 3; do
  for b in prev new; do
    timeout 60 "$(dir $b)/coop_bench_gpu" --only offer --reps 10 --json "$w/offer-$b-$r.json" > "$w/offer-$b-$r.log" 2>&1
    note offer-$b-$r $?
    grep "offer_kill (idle)" "$w/offer-$b-$r.log" >> "$w/rc.txt"
  done
done
for r in 1 2; do
  for b in prev new; do
    timeout 60 "$(dir $b)/coop_bench_gpu" --only barrier --reps 10 --json "$w/barrier-$b-$r.json" > "$w/barrier-$b-$r.log" 2>&1
    note barrier-$b-$r $?
    timeout 60 "$(dir $b)/coop_bench_colocate" --only gemm --seconds 2 --json "$w/gemm-$b-$r.json" > "$w/gemm-$b-$r.log" 2>&1
    note gemm-$b-$r $?
  done
done
for b in prev new new prev; do
  n=$(ls -d "$w"/ov-$b-* 2>/dev/null | wc -l)
  timeout 120 "$(dir $b)/coop" bench --config paper --only overhead --out "$w/ov-$b-$n" > "$w/ov-$b-$n.log" 2>&1
  note "ov-$b-$n" $?
  tail -n 2 "$w/ov-$b-$n.log" | head -n 1 >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf v1.tgz v1 && rm -rf v1 && echo done
