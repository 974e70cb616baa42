#!/usr/bin/env bash
# One visit of the built-in colocate configuration at 30 % load (resumes build/colo-prev when
# carried). usage: bash build/kitC/steps.sh MAX_MINUTES
set -u
kit=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=/tmp/colo-work; rm -rf "$work"; mkdir -p "$work"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; date -u; } > "$work/device.txt" 2>&1
[ -d build/colo-prev/bench ] && cp -r build/colo-prev/bench "$work/bench"
cd "$work"
start=$(date +%s)
timeout 580 "$kit/coop" bench --config colocate --filter load=0.3 --max-minutes "$1" --out bench > bench.log 2>&1
echo $? > rc.txt
echo "$(( $(date +%s) - start )) s" >> rc.txt
sed -i "s#$work/##g; s#/tmp/colo-work#\$OUT#g" bench.log
tar czf "$OUT/colo.tgz" -C "$work" .
tail -25 bench.log | cut -c1-200
