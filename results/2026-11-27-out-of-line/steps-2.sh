#!/usr/bin/env bash
# Visit 2: the GPU suites and 1,000 fuzzed schedules on "new"; Table 2 with the phased apps'
# yielding forms beside them (overhead-yield.json) for "new" and "head" (f923623's CLI).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v2
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_semantics_gpu test_for_each_gpu test_apps_gpu test_cuda_runtime test_recipes_gpu test_examples_gpu; do
  [ -x ./$t ] || continue
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 60 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 50001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -1 "$w/fuzz.log" >> "$w/rc.txt"
for b in new head; do
  d=.; [ $b = head ] && d=head
  timeout 150 $d/coop bench --config "$here/overhead-yield.json" --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
  note overhead-$b $?
  tail -n 2 "$w/overhead-$b.log" | head -n 1 >> "$w/rc.txt"
done
cd "$OUT" && tar czf v2.tgz v2 && rm -rf v2 && echo done
