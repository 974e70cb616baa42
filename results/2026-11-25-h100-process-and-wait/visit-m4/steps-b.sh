#!/usr/bin/env bash
# Visit M4, second command: coop bench's colocate units on bfs/road-24m at 30 % (every mechanism
# but the half-device, yield, suspend and small green ones) and octree/8m at 60 %.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
timeout 380 ./coop bench --config colocate --out $OUT/bench --unit-timeout 150 --filter bfs/road-24m --filter load=0.3 \
  --exclude half --exclude yield --exclude suspend --exclude green-16 --exclude green-32 > $OUT/bench-bfs.log 2>&1
echo "bfs rc $? at $SECONDS s" >> $OUT/rc.txt
timeout 180 ./coop bench --config colocate --out $OUT/bench --unit-timeout 100 --max-minutes 2 --filter octree/8m --filter load=0.6 \
  --exclude half --exclude yield --exclude suspend --exclude green --exclude stream --exclude time-slicing --exclude mps > $OUT/bench-octree.log 2>&1
echo "octree rc $? at $SECONDS s" >> $OUT/rc.txt
