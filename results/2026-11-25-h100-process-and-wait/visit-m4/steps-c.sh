#!/usr/bin/env bash
# Visit M4, third command: l-sssp/road-24m and bfs/rmat24 at 30 % beside the static and
# process alternatives (the committed tree).
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
common="--config colocate --out $OUT/bench --unit-timeout 120"
timeout 250 ./coop bench $common --filter l-sssp/road-24m --filter load=0.3 \
  --exclude coop-whole --exclude stream --exclude suspend --exclude time-slicing --exclude mps \
  --exclude green-16 --exclude green-32 --exclude at-request --exclude half-sm > $OUT/bench-lsssp.log 2>&1
echo "lsssp rc $? at $SECONDS s" >> $OUT/rc.txt
timeout 150 ./coop bench $common --filter l-sssp/road-24m --filter load=0.3 --filter coop-whole-yield \
  --exclude -sm >> $OUT/bench-lsssp.log 2>&1
echo "lsssp yield rc $? at $SECONDS s" >> $OUT/rc.txt
