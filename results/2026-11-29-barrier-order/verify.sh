#!/usr/bin/env bash
# The committed code's checks: every GPU test, schedule fuzzing, then alternating with prev/
# (6d2ef6d's coop and coop_bench_gpu): the barrier, the idle offer, Table 2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/visit-12
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
dir() { if [ "$1" = new ]; then echo "$here"; else echo "$here/prev"; fi; }
for t in ./test_*; do
  t=$(basename "$t")
  timeout 200 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 100 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 70001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 1 "$w/fuzz.log" >> "$w/rc.txt"
for r in 1 2 3; do
  for b in prev new; do
    timeout 60 "$(dir $b)/coop_bench_gpu" --only barrier --reps 10 --json "$w/barrier-$b-$r.json" > "$w/barrier-$b-$r.log" 2>&1
    note barrier-$b-$r $?
    grep "barrier " "$w/barrier-$b-$r.log" >> "$w/rc.txt"
  done
done
for r in 1 2; do
  for b in prev new; do
    timeout 60 "$(dir $b)/coop_bench_gpu" --only offer --reps 10 --json "$w/offer-$b-$r.json" > "$w/offer-$b-$r.log" 2>&1
    note offer-$b-$r $?
    grep "offer_kill (idle)" "$w/offer-$b-$r.log" >> "$w/rc.txt"
  done
done
for b in prev new new prev; do
  n=$(ls -d "$w"/ov-$b-* 2>/dev/null | wc -l)
  timeout 120 "$(dir $b)/coop" bench --config paper --only overhead --out "$w/ov-$b-$n" > "$w/ov-$b-$n.log" 2>&1
  note "ov-$b-$n" $?
  tail -n 2 "$w/ov-$b-$n.log" | head -n 1 >> "$w/rc.txt"
done
find "$w" -name results.json -delete
cat "$w/rc.txt"
cd "$OUT" && tar czf visit-12.tgz visit-12 && rm -rf visit-12 && echo done
