#!/usr/bin/env bash
# Installs what coop needs to build and test from Debian's packages (run as root).
set -euo pipefail
pkgs=(cmake ninja-build g++ libgtest-dev libcli11-dev nlohmann-json3-dev libboost-graph-dev
      libboost-context-dev  # Boost.Context: the CPU backend's fiber switch
      clang libclang-rt-14-dev  # clang + compiler-rt: libFuzzer, ASan, UBSan (scripts/fuzz.sh)
      python3-matplotlib        # scripts/bench_report.py (plots of coop bench results)
      pybind11-dev python3-dev python3-numpy python3-pytest  # the Python package and its tests
      doxygen)                  # the API reference (the docs target)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
