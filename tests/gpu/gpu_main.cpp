// main() of the GPU test binaries: without a CUDA device every test is skipped (exit code 77,
// which ctest reports as "Skipped"); listing tests works anywhere.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "coop/cuda/loading.hpp"

int main(int argc, char** argv) {
  coop::cuda::prefer_eager_module_loading();  // before the first CUDA call below
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strstr(argv[i], "gtest_list_tests");
  int devices = 0;
  if (!listing && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    std::printf("no CUDA device: GPU tests skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
