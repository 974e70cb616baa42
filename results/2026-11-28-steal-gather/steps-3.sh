#!/usr/bin/env bash
# Visit 2: steps-1.sh's diagnostic run again, with a diagnostic build that writes each job's
# stamps when its last workgroup returns (visit 1's wrote them in the job's destructor, and
# none came back).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/v2
mkdir -p "$w/stamps"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; date -u; } > "$w/device.txt"
COOP_DIAG_DIR=$w/stamps timeout 200 diag/coop bench --config gather-steal.json --out "$w/diag" --unit-timeout 60 > "$w/diag.log" 2>&1
echo "diag rc $? at $SECONDS s" >> "$w/rc.txt"
ls -la "$w/stamps" >> "$w/rc.txt"
find "$w" -name results.json -delete
cd "$OUT" && tar czf v2.tgz v2 && rm -rf v2 && echo done
