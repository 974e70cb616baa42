#!/usr/bin/env bash
# Visit R: the landed build with coop::share_grain for the phased apps whose items are even
# (colour, mis: kEvenItems) and for_each's claims as before otherwise (new), against the build
# before the session (base: visit N's). GPU suites (apps, examples) and fuzzing on new; the
# request-path probe with its added rows; colour and mis (base, new); the R-MAT pairs' gathers in
# the yielding form, 40 periods a unit (base, new); Table 2 with the yielding forms on new.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vR
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_apps_gpu test_examples_gpu; do
  timeout 120 new/$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 120 new/coop fuzz-schedule --backend cuda --seeds 400 --first 131001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
timeout 90 ./probe_request_path > "$w/probe.log" 2>&1
note probe $?
for b in base new; do
  timeout 60 $b/coop bench --config overhead-yield-sweeps.json --out "$w/sweeps-$b" --unit-timeout 30 > "$w/sweeps-$b.log" 2>&1
  note sweeps-$b $?
done
for b in base new; do
  timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/gather-$b" --unit-timeout 45 > "$w/gather-$b.log" 2>&1
  note gather-$b $?
done
timeout 150 new/coop bench --config overhead-yield.json --out "$w/overhead" --unit-timeout 60 > "$w/overhead.log" 2>&1
note overhead $?
tail -n 2 "$w/overhead.log" >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf vR.tgz vR && rm -rf vR && echo done
