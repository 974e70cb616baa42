#!/usr/bin/env bash
# Visit P, diagnostics on the landed tree built with COOP_DIAG_STAMPS (binary: diag).
# A. The request's way to the device (visit O: the host's request -> the first workgroup that
#    sees it is most of R-MAT's gathers): R-MAT gathers, stage by stage, with the scheduler's
#    writes as they are, with no memory barrier before them (COOP_DIAG_NOBAR), and as copies
#    (COOP_CUDA_CONTROL_COPIES=1).
# B. The phases' first claim at a share of the range (half an even share, between 1 and 4 items a
#    thread; interval_ns's top bit in the diag build, phased apps only): colour and mis, Table 2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vP
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
date -u >> "$w/device.txt"
gather() {  # name, env...
  local n=$1; shift
  mkdir -p "$w/stamps-$n"
  env COOP_DIAG_DIR=$w/stamps-$n "$@" timeout 100 diag/coop bench --config gather-yield-rmat-40.json --out "$w/$n" --unit-timeout 45 > "$w/$n.log" 2>&1
  echo "$n rc $? at $SECONDS s" >> "$w/rc.txt"
}
gather rmat-base
gather rmat-nobar COOP_DIAG_NOBAR=1
gather rmat-copies COOP_CUDA_CONTROL_COPIES=1
G=$((0x80000000 + 4000))
for v in "1 4000" "4 4000" "1 $G"; do
  set -- $v
  COOP_DIAG_GRAIN_MUL=$1 COOP_DIAG_INTERVAL_NS=$2 timeout 60 diag/coop bench --config overhead-yield-sweeps.json --out "$w/sweep-g$1-i$2" --unit-timeout 30 > "$w/sweep-g$1-i$2.log" 2>&1
  echo "sweep $v rc $? at $SECONDS s" >> "$w/rc.txt"
done
COOP_DIAG_INTERVAL_NS=$G timeout 150 diag/coop bench --config overhead-yield.json --out "$w/overhead-guided" --unit-timeout 60 > "$w/overhead-guided.log" 2>&1
echo "overhead-guided rc $? at $SECONDS s" >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf vP.tgz vP && rm -rf vP && echo done
