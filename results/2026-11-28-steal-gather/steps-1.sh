#!/usr/bin/env bash
# Visit 1, call 1: where a work-stealing app's gather goes, stage by stage. The diagnostic build
# (diag/coop: this tree with ../2026-11-27-request-path/diag-stamps.diff and -DCOOP_DIAG_STAMPS)
# runs gather-steal.json with its stamps on; then the landed build (./coop) runs it without, so
# that the stamps' own cost shows.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/v1
mkdir -p "$w/stamps"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
COOP_DIAG_DIR=$w/stamps timeout 200 diag/coop bench --config gather-steal.json --out "$w/diag" --unit-timeout 60 > "$w/diag.log" 2>&1
note diag $?
timeout 200 ./coop bench --config gather-steal.json --out "$w/plain" --unit-timeout 60 > "$w/plain.log" 2>&1
note plain $?
find "$w" -name results.json -delete
cd "$OUT" && tar czf v1.tgz v1 && rm -rf v1 && echo done
