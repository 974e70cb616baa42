#!/usr/bin/env bash
# Visit 5: visit 2's diagnostic run again, its build also logging the host's steps of each task
# (scheduler.cpp: R when the request is taken, D when dispatch makes the waiter whole, G when the
# task thread has its grant), so that coop bench's gather can be split on the host too.
# usage: steps-6.sh KIT [NAME] (a kit with lib/ and diag/coop; NAME: the output folder, v5)
set -u
here=$(cd "$(dirname "$0")" && pwd)
kit=$1
export LD_LIBRARY_PATH=$kit/lib
w=$OUT/${2:-v5}
mkdir -p "$w/stamps"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
COOP_DIAG_DIR=$w/stamps timeout 200 "$kit/diag/coop" bench --config "$here/gather-steal.json" --out "$w/diag" --unit-timeout 60 > "$w/diag.log" 2>&1
echo "diag rc $? at $SECONDS s" >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf "${2:-v5}.tgz" "${2:-v5}" && rm -rf "${2:-v5}" && echo done
