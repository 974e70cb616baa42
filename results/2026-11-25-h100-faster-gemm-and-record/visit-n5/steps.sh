#!/usr/bin/env bash
# Visit N5, first command: the final tree (the committed GEMM; a task handle told its record
# before the jobs regrow; the scheduler's lock taken spinning on the request's path) in full at
# 10/30/60 % (for docs/colocation.md), and the committed tree (e8bc0e9) at 30/60 % in the same
# visit.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$(mktemp -d)
nvidia-smi -L > $w/device.txt
date -u > $w/date.txt
timeout 260 ./colocate-final --seconds 2 --json $w/colocate.json > $w/colocate.log 2>&1
echo "colocate-final rc $? at $SECONDS s" >> $w/rc.txt
timeout 200 ./colocate-old --seconds 2 --loads 0.3,0.6 --only colocate --json $w/colocate-old.json > $w/colocate-old.log 2>&1
echo "colocate-old rc $? at $SECONDS s" >> $w/rc.txt
cd $w && tar czf $OUT/n5.tgz *
cat $w/rc.txt
