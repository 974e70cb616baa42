#include <cuda_runtime_api.h>

#include "coop/cuda/device.hpp"

namespace coop::cuda {

std::vector<DeviceInfo> devices(std::string* error) {
  std::vector<DeviceInfo> out;
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    if (error) *error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky error state
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    d.memory_bytes = p.totalGlobalMem;
    int timeout = 0;
    cudaDeviceGetAttribute(&timeout, cudaDevAttrKernelExecTimeout, i);
    d.exec_timeout = timeout != 0;
    d.max_threads_per_mp = p.maxThreadsPerMultiProcessor;
    out.push_back(d);
  }
  return out;
}

}  // namespace coop::cuda
