// The setup the runtime micro-benchmarks (gpu_runtime.cu, preempt.cu) share: a runtime on the
// CUDA backend, the device it runs on, and the fields every results file starts with.
#pragma once

#include <cuda_runtime.h>

#include <nlohmann/json.hpp>
#include <string>

#include "coop/runtime.hpp"
#include "cuda_check.hpp"
#include "micro_common.hpp"

namespace coop::micro {

struct GpuSetup {
  GpuSetup() : rt(cuda_backend()) { CK(cudaGetDeviceProperties(&prop, 0)); }

  /// {"device", "sms", "date", "reps", "command"}
  nlohmann::json header(const Options& o) const {
    return {{"device", prop.name},
            {"sms", prop.multiProcessorCount},
            {"date", date},
            {"reps", o.reps},
            {"command", o.command}};
  }

  Runtime rt;
  cudaDeviceProp prop{};
  const std::string date = utc_date();

 private:
  static RuntimeOptions cuda_backend() {
    RuntimeOptions o;
    o.backend = RuntimeOptions::Select::cuda;
    return o;
  }
};

}  // namespace coop::micro
