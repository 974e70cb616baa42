// coop/cuda/check.hpp from a .cu program: the error names the call, where it is and CUDA's
// reason. Needs the CUDA toolkit, not a GPU (error strings come from the runtime library).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "coop/cuda/check.hpp"

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CudaCheck, TheMacroNamesTheCallItsPlaceAndTheError) {
  EXPECT_NO_THROW(COOP_CUDA_CHECK(cudaSuccess));
  int calls = 0;
  auto failing = [&] {
    ++calls;
    return cudaErrorInvalidValue;
  };
  std::string what;
  int line = 0;
  try {
    line = __LINE__, COOP_CUDA_CHECK(failing());
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  EXPECT_EQ(calls, 1) << "the call must be evaluated once";
  EXPECT_TRUE(contains(what, "failing()")) << what;
  EXPECT_TRUE(contains(what, "cuda_check.cu:" + std::to_string(line))) << what;
  EXPECT_TRUE(contains(what, "cudaErrorInvalidValue")) << what;
  EXPECT_TRUE(contains(what, cudaGetErrorString(cudaErrorInvalidValue))) << what;
}

TEST(CudaCheck, CheckNamesTheStep) {
  EXPECT_NO_THROW(coop::cuda::check(cudaSuccess, "doing nothing"));
  try {
    coop::cuda::check(cudaErrorMemoryAllocation, "allocating the buffer");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "CUDA error while allocating the buffer")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cudaErrorMemoryAllocation")) << e.what();
  }
}

}  // namespace
