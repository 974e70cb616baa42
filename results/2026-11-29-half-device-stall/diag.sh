#!/usr/bin/env bash
# The half-device yielding form's stall: as it is, then with 32 hardware queues.
set -u
kit=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=/tmp/diag-work; rm -rf "$work"; mkdir -p "$work"; cd "$work"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv; date -u; } > device.txt 2>&1
for run in default conn32; do
  env=""; [ $run = conn32 ] && env="CUDA_DEVICE_MAX_CONNECTIONS=32"
  s=$(date +%s)
  env $env timeout 270 "$kit/coop" bench --config "$kit/diag.json" --out $run --unit-timeout 120 > $run.log 2>&1
  echo "$run rc $? $(( $(date +%s) - s )) s" >> rc.txt
  [ $(( $(date +%s) - ${start:=$s} )) -gt 420 ] && break
done
sed -i "s#$work/##g" *.log
tar czf "$OUT/diag.tgz" .
cat rc.txt; for f in *.log; do echo "== $f"; grep -A5 "^co-location" $f | cut -c1-160; done
