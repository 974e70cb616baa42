#!/bin/bash
# A never-taken branch, and thread 0's branch, in a plain grid.sync loop.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
./probe_branch_after_sync 6
./probe_branch_after_sync 1
./probe_branch_after_sync 6
/usr/local/cuda/bin/cuobjdump -sass probe_branch_after_sync > $OUT/probe_branch_after_sync.sass
