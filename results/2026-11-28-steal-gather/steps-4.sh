#!/usr/bin/env bash
# Visit 3, run from the unpacked kit (./ = the tree with the fresh vote after a long
# work-stealing task, prev/ = the landed build, visit 1's ./coop): the GPU suites and schedule
# fuzzing on new; then the periodic task's gathers on octree and game (gather-steal.json), prev
# and new alternating; then Table 2, prev and new. usage: steps-4.sh tests|gathers|table2
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v3-$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
bin() { if [ "$1" = new ]; then echo "$here/coop"; else echo "$here/prev/coop"; fi; }
case $1 in
tests)
  for t in test_apps_gpu test_examples_gpu test_recipes_gpu test_semantics_gpu; do
    timeout 100 ./$t > "$w/$t.log" 2>&1
    note "$t" $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" >> "$w/rc.txt"
  done
  timeout 150 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 30001 --keep-going > "$w/fuzz-all.log" 2>&1
  note fuzz-all $?
  tail -n 1 "$w/fuzz-all.log" >> "$w/rc.txt"
  timeout 100 ./coop fuzz-schedule --backend cuda --apps octree,game --seeds 2000 --first 40001 --keep-going > "$w/fuzz-steal.log" 2>&1
  note fuzz-steal $?
  tail -n 1 "$w/fuzz-steal.log" >> "$w/rc.txt"
  ;;
gathers)
  for which in prev new prev new; do
    n=$(ls -d "$w"/gather-$which-* 2>/dev/null | wc -l)
    timeout 200 "$(bin $which)" bench --config gather-steal.json --out "$w/gather-$which-$n" --unit-timeout 60 > "$w/gather-$which-$n.log" 2>&1
    note "gather-$which-$n" $?
  done
  ;;
table2)
  for which in prev new; do
    timeout 140 "$(bin $which)" bench --config paper --only overhead --out "$w/ov-$which" > "$w/ov-$which.log" 2>&1
    note "ov-$which" $?
    tail -n 2 "$w/ov-$which.log" | head -n 1 >> "$w/rc.txt"
  done
  ;;
esac
find "$w" -name results.json -delete
cd "$OUT" && tar czf v3-$1.tgz v3-$1 && rm -rf v3-$1 && echo done
