#!/usr/bin/env bash
# Sets up, builds and runs `coop demo`: on the GPU when nvcc is here to build the CUDA backend
# and a device is present, else on the CPU backend. Extra arguments go to `coop demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
preset=cpu
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  preset=cuda
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target coop_cli >/dev/null
exec "./build/$preset/coop" demo "$@"
