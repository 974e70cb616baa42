// The GPU benchmarks' CUDA error check: a failed call throws std::runtime_error naming the
// call, file and line and CUDA's reason; each program's main (micro_common.hpp's run_main)
// prints it and exits 2.
#pragma once

#include <cuda_runtime.h>

#include "coop/cuda/check.hpp"

#define CK(x) COOP_CUDA_CHECK(x)
