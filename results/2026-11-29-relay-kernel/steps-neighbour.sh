#!/bin/bash
# Does the relay warp slow a barrier-bound cooperative job that leaves it room?
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
./probe_relay_neighbour 200
./probe_relay_neighbour 0
