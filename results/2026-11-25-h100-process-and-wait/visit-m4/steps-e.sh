#!/usr/bin/env bash
# Visit M4, fifth command (same machine as d): bfs/rmat24 at 30 %, what d did not reach (mps-50)
# and coop-whole-yield; coop-whole again (the exclude meant for it did not match).
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
timeout 400 ./coop bench --config colocate --out $OUT/bench --unit-timeout 120 --filter bfs/rmat24 --filter load=0.3 --exclude -sm --exclude suspend --exclude at-request --exclude requests-only --exclude stream --exclude green --exclude time-slicing --exclude coop-whole/ --exclude coop-half > $OUT/bench-rmat2.log 2>&1
