// CUDA devices as the runtime sees them (compiled only with the CUDA backend).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coop::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;    ///< compute capability
  int multiprocessors = 0;     ///< the runtime's: a green context's when it runs in one
  bool green_context = false;  ///< the runtime runs on a green context's SMs only
  std::uint64_t memory_bytes = 0;
  bool exec_timeout = false;  ///< a kernel-execution watchdog is active (display GPU)
  int max_threads_per_mp = 0;
};

/// One device's description; throws std::runtime_error when it cannot be read.
DeviceInfo describe(int device);

/// Every CUDA device; empty when there is none. `error` receives why (no driver, no device).
std::vector<DeviceInfo> devices(std::string* error = nullptr);

}  // namespace coop::cuda
