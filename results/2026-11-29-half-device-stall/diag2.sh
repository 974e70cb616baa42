#!/usr/bin/env bash
set -u
kit=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=/tmp/diag-work; rm -rf "$work"; mkdir -p "$work"; cd "$work"
{ nvidia-smi -L; date -u; } > device.txt 2>&1
s=$(date +%s)
timeout 300 "$kit/coop" bench --config "$kit/diag2.json" --out fixed --unit-timeout 120 > fixed.log 2> fixed.err
echo "rc $? $(( $(date +%s) - s )) s" >> rc.txt
gzip fixed.err
tar czf "$OUT/diag2.tgz" .
cat rc.txt; grep -A3 "^co-location" fixed.log | cut -c1-160; zcat fixed.err.gz | tail -3
