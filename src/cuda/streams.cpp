#include "coop/cuda/streams.hpp"

#include <cuda_runtime_api.h>

#include <atomic>

#include "coop/cuda/check.hpp"
#include "coop/cuda/green.hpp"

namespace coop::cuda {

namespace {
std::atomic<int> g_live_streams{0};
}

CUstream_st* create_stream(bool high, const char* what, CUgreenCtx_st* green) {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "reading stream priorities");
  cudaStream_t s = nullptr;
  if (green)
    s = green_stream(green, high ? greatest : least, what);
  else
    check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high ? greatest : least), what);
  g_live_streams.fetch_add(1);
  return s;
}

void destroy_stream(CUstream_st* s) {
  if (!s) return;
  cudaStreamDestroy(s);
  g_live_streams.fetch_sub(1);
}

int live_streams() { return g_live_streams.load(); }

}  // namespace coop::cuda
