#!/usr/bin/env bash
# Visit N4: is it the shared memory? old (committed kernel, 35.4 KB of shared memory per
# workgroup), oldpad (the same with 2.1 KB more: the new kernel's 37.5 KB), small (the new kernel
# with A's rows unpadded: 33.4 KB). The GEMM alone, then beside the requests at 30 %.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$(mktemp -d)
nvidia-smi -L > $w/device.txt
date -u > $w/date.txt
for v in oldpad small; do
  timeout 60 ./colocate-$v --only gemm --json $w/gemm-$v.json > $w/gemm-$v.log 2>&1
  echo "gemm-$v rc $? at $SECONDS s" >> $w/rc.txt
done
for v in oldpad small old; do
  timeout 150 ./colocate-$v --seconds 2 --loads 0.3 --only colocate --json $w/colocate-$v.json > $w/colocate-$v.log 2>&1
  echo "colocate-$v rc $? at $SECONDS s" >> $w/rc.txt
done
cd $w && tar czf $OUT/n4.tgz *
cat $w/rc.txt; grep -h "persistent GEMM" $w/gemm-*.log
