#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole CPU test suite; also builds the CUDA
# targets when nvcc is present. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
cmake --preset cpu >/dev/null
cmake --build --preset cpu
ctest --preset cpu
# the API reference (Doxygen; an undocumented public name fails): build/cpu/docs/api/html
cmake --build --preset cpu --target docs
# install + find_package(coop) from a separate project
rm -rf build/install build/consumer
cmake --install build/cpu --prefix build/install >/dev/null
cmake -S examples/consumer -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/consumer
./build/consumer/consumer
# headers compile on their own (the CUDA backend's host headers need no CUDA toolkit)
for root in include graph/include apps/include bench/include; do
  for h in $(cd $root && find coop -name '*.hpp'); do
    echo "#include <$h>" | g++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -Iinclude \
      -Igraph/include -Iapps/include -Ibench/include -Iexamples -x c++ - \
      || { echo "header $root/$h does not compile on its own"; exit 1; }
  done
done
bash scripts/fuzz.sh --smoke  # the graph readers under libFuzzer, 15 s each (docs/reliability.md)
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  for h in $(cd include && find coop -name '*.cuh'); do
    echo "#include <$h>" | nvcc -std=c++20 -arch=sm_90 -Werror=all-warnings -Iinclude -x cu \
      -c - -o /dev/null || { echo "header $h does not compile on its own"; exit 1; }
  done
  cmake --preset cuda >/dev/null
  cmake --build --preset cuda
  # the installed CUDA build from a separate project whose .cu file launches its own kernel
  # (examples/cuda_consumer; on the CPU backend here, on the GPU where there is one)
  rm -rf build/install-cuda build/cuda_consumer
  cmake --install build/cuda --prefix build/install-cuda >/dev/null
  cmake -S examples/cuda_consumer -B build/cuda_consumer -G Ninja \
    -DCMAKE_PREFIX_PATH="$PWD/build/install-cuda" >/dev/null
  cmake --build build/cuda_consumer
  ./build/cuda_consumer/cuda_consumer
  # Without a GPU the gpu-labelled tests report "Skipped"; the CPU suite runs again in this
  # build (the CUDA backend compiled in must not change it).
  ctest --preset cuda
  echo "CUDA targets built (sm_90); GPU tests run only on a machine with a GPU"
fi
