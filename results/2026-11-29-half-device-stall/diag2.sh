#!/usr/bin/env bash
# diag2.json's two half-device units. usage: bash diag2.sh sched|fixed
#   sched (visit 3): with COOP_DIAG_SCHED=1, the binary built with sched-log.diff logging every
#                    target the scheduler sets; fixed (visit 4): the fixed scheduler.
set -u
name=$1
kit=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=/tmp/diag-work; rm -rf "$work"; mkdir -p "$work"; cd "$work"
{ nvidia-smi -L; date -u; } > device.txt 2>&1
s=$(date +%s)
diag=""; [ "$name" = sched ] && diag="COOP_DIAG_SCHED=1"
env $diag timeout 300 "$kit/coop" bench --config "$kit/diag2.json" --out "$name" --unit-timeout 120 > "$name.log" 2> "$name.err"
echo "rc $? $(( $(date +%s) - s )) s" >> rc.txt
gzip "$name.err"
tar czf "$OUT/diag2.tgz" .
cat rc.txt; grep -A3 "^co-location" "$name.log" | cut -c1-160; zcat "$name.err.gz" | tail -3
