#!/usr/bin/env bash
# Visit M2, second command: coop bench's process mechanisms (time slicing, MPS at 50 %) on
# l-sssp/road-24m at 30 %.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
timeout 560 ./coop bench --config colocate --out $OUT/bench --unit-timeout 200 --filter l-sssp/road-24m --filter load=0.3 \
  --exclude requests-only --exclude stream-priority --exclude suspend --exclude coop --exclude green > $OUT/bench.log 2>&1
echo "bench rc $?" > $OUT/rc.txt
