#!/bin/bash
# Can a full cooperative grid launch beside the resident relay warp?
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for row in 0 1 2; do timeout 30 ./probe_relay_residency $row; echo "rc=$?"; done
