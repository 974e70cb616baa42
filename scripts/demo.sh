#!/usr/bin/env bash
# Sets up, builds and runs `coop demo` (on the GPU when the CUDA backend finds one, else on the
# CPU backend). Extra arguments go to `coop demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
cmake --preset cpu >/dev/null
cmake --build --preset cpu >/dev/null
exec ./build/cpu/src/cli/coop demo "$@"
