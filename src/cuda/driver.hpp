// The CUDA driver's functions that coop calls (green contexts, stream memory operations),
// looked up through the runtime: coop does not link the driver library.
#pragma once

#include <cuda_runtime_api.h>

namespace coop::cuda {

/// The driver's function `name` with the ABI of CUDA `version`, or nullptr when this driver has
/// none (the runtime's error state is left clean).
inline void* driver_entry_point(const char* name, int version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

}  // namespace coop::cuda
