#include "coop/cuda/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <stdexcept>

#include "coop/cuda/loading.hpp"

namespace coop::cuda {

DeviceInfo describe(int device) {
  cudaDeviceProp p{};
  cudaError_t rc = cudaGetDeviceProperties(&p, device);
  if (rc != cudaSuccess)
    throw std::runtime_error("reading the properties of CUDA device " + std::to_string(device) +
                             ": " + cudaGetErrorString(rc));
  DeviceInfo d;
  d.index = device;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.multiprocessors = p.multiProcessorCount;
  d.memory_bytes = p.totalGlobalMem;
  int timeout = 0;
  cudaDeviceGetAttribute(&timeout, cudaDevAttrKernelExecTimeout, device);
  d.exec_timeout = timeout != 0;
  d.max_threads_per_mp = p.maxThreadsPerMultiProcessor;
  return d;
}

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
    try {
      out.push_back(describe(i));
    } catch (const std::runtime_error&) {
      // a device that cannot be read is not offered
    }
  }
  return out;
}

void prefer_eager_module_loading() { ::setenv("CUDA_MODULE_LOADING", "EAGER", 0); }

}  // namespace coop::cuda
