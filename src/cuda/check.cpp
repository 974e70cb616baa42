#include "coop/cuda/check.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace coop::cuda {

namespace {
std::string describe(int rc) {
  return std::string(cudaGetErrorName(cudaError_t(rc))) + " (" +
         cudaGetErrorString(cudaError_t(rc)) + ")";
}
}  // namespace

void check(int rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error while ") + what + ": " + describe(rc));
}

void check_call(int rc, const char* call, const char* file, int line) {
  if (rc == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error: ") + call + " at " + file + ":" +
                           std::to_string(line) + " returned " + describe(rc));
}

}  // namespace coop::cuda
