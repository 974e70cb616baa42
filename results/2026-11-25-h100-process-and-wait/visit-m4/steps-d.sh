#!/usr/bin/env bash
# Visit M4, fourth command: bfs/rmat24 at 30 % beside the static and process alternatives.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
common="--config colocate --out $OUT/bench --unit-timeout 120"
timeout 300 ./coop bench $common --filter bfs/rmat24 --filter load=0.3 \
  --exclude suspend --exclude green-16 --exclude green-32 --exclude yield --exclude at-request > $OUT/bench-rmat.log 2>&1
echo "rmat rc $? at $SECONDS s" >> $OUT/rc.txt
