// The GPU benchmarks' CUDA error check: a failed call throws std::runtime_error naming the
// call, file and line and CUDA's reason; each program's main (micro_common.hpp's run_main)
// prints it and exits 2.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t rc_ = (x);                                                                         \
    if (rc_ != cudaSuccess)                                                                        \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + " " + #x + \
                               ": " + cudaGetErrorString(rc_));                                    \
  } while (0)
