#!/usr/bin/env bash
# Visit 1: "new" (this kit: offer_kill's and request_fork's protocol called out of line, the game
# search's launch bounds) against "head" (head/: f923623's binaries), alternating in one visit:
# the persistent GEMM alone (plain, cooperative, between tiles only), the idle offer, the
# barrier and the task path's stages, the GEMM beside requests at 30 % load; the SASS of both.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v1
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
# Triton ships cuobjdump: the GEMM kernels' local-memory traffic (STL/LDL) per build.
co=$(python3 - <<'PY' 2>/dev/null
import os, site
for d in site.getsitepackages():
    for root, _, files in os.walk(d):
        if "cuobjdump" in files:
            print(os.path.join(root, "cuobjdump")); raise SystemExit
PY
)
echo "cuobjdump: $co" >> "$w/rc.txt"
if [ -n "$co" ]; then
  for b in head new; do
    d=.; [ $b = head ] && d=head
    "$co" -sass "$d/coop_bench_colocate" 2>&1 | xz > "$w/sass-colocate-$b.xz"
    "$co" -sass "$d/coop_bench_gpu" 2>&1 | xz > "$w/sass-gpu-$b.xz"
  done
fi
for r in 1 2; do
  for b in head new; do
    d=.; [ $b = head ] && d=head
    timeout 60 $d/coop_bench_colocate --only gemm --seconds 2 --json "$w/gemm-$b-$r.json" > "$w/gemm-$b-$r.log" 2>&1
    note gemm-$b-$r $?
  done
done
for b in head new; do
  d=.; [ $b = head ] && d=head
  timeout 60 $d/coop_bench_gpu --only offer --json "$w/offer-$b.json" > "$w/offer-$b.log" 2>&1
  note offer-$b $?
  timeout 60 $d/coop_bench_gpu --only barrier --reps 10 --json "$w/barrier-$b.json" > "$w/barrier-$b.log" 2>&1
  note barrier-$b $?
  timeout 60 $d/coop_bench_gpu --only stages --reps 60 --json "$w/stages-$b.json" > "$w/stages-$b.log" 2>&1
  note stages-$b $?
done
for b in new head; do
  d=.; [ $b = head ] && d=head
  timeout 100 $d/coop_bench_colocate --only colocate --loads 0.3 --seconds 2 --json "$w/colocate-$b.json" > "$w/colocate-$b.log" 2>&1
  note colocate-$b $?
done
cd "$OUT" && tar czf v1.tgz v1 && rm -rf v1 && echo done
