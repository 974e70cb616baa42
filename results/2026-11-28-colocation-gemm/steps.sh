#!/usr/bin/env bash
# One visit, run from the unpacked kit (88c178a's binaries): coop_bench_colocate in one process
# and between processes (docs/colocation.md's GEMM part), then coop demo.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/v1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 300 ./coop_bench_colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
note colocate $?
timeout 150 ./coop_bench_colocate --only processes --seconds 2 --json "$w/processes.json" > "$w/processes.log" 2>&1
note processes $?
timeout 60 ./coop demo > "$w/demo.log" 2>&1
note demo $?
cd "$OUT" && tar czf v1.tgz v1 && rm -rf v1 && echo done
