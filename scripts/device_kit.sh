#!/usr/bin/env bash
# Packs what a visit to a lent GPU machine needs into build/kit (git-ignored): the stripped CUDA
# build's CLI and GPU test binaries, the small graphs, and scripts/device_steps.sh. Build first
# (`cmake --preset cuda && cmake --build --preset cuda`); carry build/kit to the machine and run
# `bash build/kit/device_steps.sh STEP...` there (it leaves one tarball in $OUT).
#
# usage: scripts/device_kit.sh [BENCH_DIR]   BENCH_DIR: a coop bench folder to continue there
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/cuda
kit=build/kit
[ -x "$build/coop" ] || { echo "no CUDA build in $build: build the cuda preset first" >&2; exit 1; }
rm -rf "$kit"
mkdir -p "$kit/data"
cp "$build/coop" "$kit/"
for b in coop_probe_residency coop_bench_gpu coop_bench_colocate; do [ -x "$build/$b" ] && cp "$build/$b" "$kit/"; done
# the installed-package CUDA consumer, when scripts/test.sh (or the same steps by hand) built it
[ -x build/cuda_consumer/cuda_consumer ] && cp build/cuda_consumer/cuda_consumer "$kit/"
for t in "$build"/tests/test_*_gpu "$build"/tests/test_cuda_runtime "$build"/tests/test_device_protocol \
         "$build"/tests/test_launch_odr; do
  [ -x "$t" ] && cp "$t" "$kit/"
done
strip "$kit"/coop "$kit"/test_* "$kit"/coop_* "$kit"/cuda_consumer 2>/dev/null || true
cp tests/data/graphs/* "$kit/data/"
cp scripts/device_steps.sh "$kit/"
# Boost.Context (the CPU backend's fibers) is a shared library the GPU machine's image lacks.
mkdir -p "$kit/lib"
cp -L /usr/lib/x86_64-linux-gnu/libboost_context.so.* "$kit/lib/"
# The Python extension's objects, to relink it there for that machine's Python
# (scripts/python_module_relink.sh), and the package as built here.
if [ -d "$build/python/coop" ]; then
  objects="$kit/python/objects"
  mkdir -p "$objects"
  cp "$build"/python/CMakeFiles/coop_python.dir/src/{jobs,example_jobs}.cpp.o "$objects/"
  for o in "$objects"/*.cpp.o; do mv "$o" "${o%.cpp.o}.o"; done
  cp "$build"/libcoop.a "$build"/apps/libcoop_apps.a "$build"/graph/libcoop_graph.a "$objects/"
  cp -L /usr/lib/x86_64-linux-gnu/libboost_context.so.* "$objects/"
  strip -g "$objects"/*.o "$objects"/*.a
fi
if [ $# -ge 1 ]; then cp -r "$1" "$kit/bench"; fi
size=$(du -sm "$kit" | cut -f1)
echo "build/kit: ${size} MiB (a visit carries at most 64 MiB)"
[ "$size" -lt 64 ] || { echo "too large to carry" >&2; exit 1; }
