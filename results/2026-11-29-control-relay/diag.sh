#!/usr/bin/env bash
# Between visits 1 and 2: the two suites that hung in visit 1 with every job through a relay,
# and the stages benchmark once with and once without (first relay, a warp of lanes).
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/d; mkdir -p $w
timeout 60 env COOP_CUDA_CONTROL_RELAY=1 ./test_semantics_gpu > $w/sem.log 2>&1; echo "sem rc=$?" >> $w/rc.txt
timeout 60 env COOP_CUDA_CONTROL_RELAY=1 ./test_shutdown_gpu > $w/shut.log 2>&1; echo "shut rc=$?" >> $w/rc.txt
timeout 60 env COOP_CUDA_CONTROL_RELAY=1 ./coop_bench_gpu --only stages --reps 20 > $w/stages1.log 2>&1; echo "stages1 rc=$?" >> $w/rc.txt
timeout 60 ./coop_bench_gpu --only stages --reps 20 > $w/stages0.log 2>&1; echo "stages0 rc=$?" >> $w/rc.txt
nvidia-smi > $w/smi.txt 2>&1
tar czf $OUT/d.tgz -C $OUT d
