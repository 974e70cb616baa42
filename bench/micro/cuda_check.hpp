// The GPU benchmarks' CUDA error check: print the call, file and line, exit 2.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t rc_ = (x);                                                                     \
    if (rc_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(rc_)); \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)
