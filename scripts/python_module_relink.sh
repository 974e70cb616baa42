#!/usr/bin/env bash
# Rebuilds the Python extension (_coop) for the interpreter at hand from a CUDA build's objects:
# only python/src/module.cpp (the pybind11 bindings) is compiled, with this interpreter's headers
# and its pip-installed pybind11; the library, the apps and the GEMM launcher (nvcc) are linked
# as built elsewhere. For a GPU machine whose Python differs from the build machine's (the
# extension's ABI is per Python version), where compiling the whole CUDA build would take long.
# A machine that can build the project builds the extension with CMake (docs/python.md).
#
# usage: scripts/python_module_relink.sh OBJECTS_DIR OUT_DIR
#   OBJECTS_DIR: what scripts/device_kit.sh packs under build/kit/python/objects
#   OUT_DIR:     where the package folder coop/ is written (then PYTHONPATH=OUT_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
objects=$1
out=$2
py=${PYTHON:-python3}
cuda=${CUDA_HOME:-/usr/local/cuda}
suffix=$("$py" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
pyinc=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
pybind=$("$py" -c "import pybind11; print(pybind11.get_include())")
version=$(sed -n 's/^project(coop VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
mkdir -p "$out/coop"
g++ -std=c++20 -O2 -fPIC -fvisibility=hidden -DNDEBUG -DCOOP_HAVE_CUDA=1 \
  -DCOOP_PYTHON_VERSION="\"$version\"" -Iinclude -Iapps/include -Igraph/include -Iexamples \
  -isystem "$pyinc" -isystem "$pybind" -isystem "$cuda/include" \
  -c python/src/module.cpp -o "$out/module.o"
g++ -shared -o "$out/coop/_coop$suffix" "$out/module.o" "$objects"/jobs.o \
  "$objects"/example_jobs.o "$objects"/libcoop.a "$objects"/libcoop_apps.a \
  "$objects"/libcoop_graph.a "$objects"/libcoop.a "$objects"/libboost_context.so.* \
  -L"$cuda/lib64" -lcudart_static -lrt -lpthread -ldl -Wl,-rpath,"$(cd "$objects" && pwd)"
cp python/coop/__init__.py "$out/coop/"
echo "built $out/coop/_coop$suffix for $("$py" --version 2>&1)"
