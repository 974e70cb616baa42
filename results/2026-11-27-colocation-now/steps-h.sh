#!/usr/bin/env bash
# Visit H: "new" (kit: workgroup 0 waits at the barrier that took its job down to it for a task
# and the job grows back there) against "prev" (kit-prev: 127abb5's CLI). GPU suites on new, the
# periodic task's gather on the paper's graph pairs alternating, Table 2 and schedule fuzzing
# on new.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/h
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_semantics_gpu test_for_each_gpu test_cuda_runtime test_apps_gpu; do
  [ -x ./$t ] || continue
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 90 ./coop bench --config "$here/gather-graph.json" --out "$w/gather-new" --unit-timeout 40 > "$w/gather-new.log" 2>&1
note gather-new $?
timeout 90 ../kit-prev/coop bench --config "$here/gather-graph.json" --out "$w/gather-prev" --unit-timeout 40 > "$w/gather-prev.log" 2>&1
note gather-prev $?
timeout 60 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 40001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -1 "$w/fuzz.log" >> "$w/rc.txt"
timeout 100 ./coop bench --config paper --only overhead --out "$w/overhead" > "$w/overhead.log" 2>&1
note overhead $?
tail -n 2 "$w/overhead.log" | head -n 1 >> "$w/rc.txt"
cd "$OUT" && tar czf h.tgz h && rm -rf h && echo done
