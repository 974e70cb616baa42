#!/usr/bin/env bash
# Visit N3: the GEMM alone and beside the requests at 30 % load for four builds of
# coop_bench_colocate: old (the committed tree), new (pipelined copies, grouped tile order, the
# next slice copied in across offers), split (new with the fork check half-way between offers),
# rowmajor (new with tiles in row-major order). Everything goes back in one tarball.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
w=$(mktemp -d)
nvidia-smi -L > $w/device.txt
date -u > $w/date.txt
for v in old new split rowmajor; do
  timeout 60 ./colocate-$v --only gemm --json $w/gemm-$v.json > $w/gemm-$v.log 2>&1
  echo "gemm-$v rc $? at $SECONDS s" >> $w/rc.txt
done
for v in split rowmajor old; do
  timeout 150 ./colocate-$v --seconds 2 --loads 0.3 --only colocate --json $w/colocate-$v.json > $w/colocate-$v.log 2>&1
  echo "colocate-$v rc $? at $SECONDS s" >> $w/rc.txt
done
cd $w && tar czf $OUT/n3.tgz *
cat $w/rc.txt; grep -h "persistent GEMM" $w/gemm-*.log
