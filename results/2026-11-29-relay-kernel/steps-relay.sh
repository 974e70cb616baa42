#!/bin/bash
# The relay kernel against the stream write, a job of 4 and of 6 blocks per SM, requests 5 ms
# apart (the host thread asleep between), and 4 per SM at 1 ms.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
./probe_relay_kernel 4 5
./probe_relay_kernel 6 5
./probe_relay_kernel 4 1
