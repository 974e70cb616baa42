#!/usr/bin/env bash
# Visit A: where the cooperative GEMM's 3-5 % goes. The plain kernel now measured before and
# after the cooperative runs (clock drift), clocks logged beside; a 4x longer tile (per-tile
# costs); offers every 1, 4 and 16 K-steps (in-tile costs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/lib
w=$OUT/a
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; date -u; } > "$w/device.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 250 > "$w/clocks.csv" 2>&1 &
smi=$!
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
run() {
  local name=$1; shift
  echo "== $name start $(date -u +%T.%N)" >> "$w/marks.txt"
  timeout 60 "$here/coop_bench_colocate" --only gemm --seconds 2 --json "$w/$name.json" "$@" > "$w/$name.log" 2>&1
  note "$name" $?
  echo "== $name end $(date -u +%T.%N)" >> "$w/marks.txt"
  grep -E "before / after|alone:" "$w/$name.log" >> "$w/rc.txt"
}
run gemm-1
run k8192 --gemm 8192x8192x8192
run steps1 --offer-steps 1
run steps16 --offer-steps 16
run gemm-2
kill $smi
cd "$OUT" && tar czf a.tgz a && rm -rf a && echo done
