#!/usr/bin/env bash
set -u
kit=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=/tmp/diag-work; rm -rf "$work"; mkdir -p "$work"; cd "$work"
{ nvidia-smi -L; date -u; } > device.txt 2>&1
s=$(date +%s)
COOP_DIAG_SCHED=1 timeout 300 "$kit/coop" bench --config "$kit/diag2.json" --out sched --unit-timeout 120 > sched.log 2> sched.err
echo "rc $? $(( $(date +%s) - s )) s" >> rc.txt
gzip sched.err
tar czf "$OUT/diag2.tgz" .
cat rc.txt; grep -A3 "^co-location" sched.log | cut -c1-160; zcat sched.err.gz | tail -3
