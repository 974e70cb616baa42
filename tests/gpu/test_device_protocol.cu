// The shared protocol (the very code the CPU backend runs) executed by thread 0 of every block
// of a co-resident grid on the GPU: its global barrier must order memory for all blocks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "coop/detail/protocol.hpp"

namespace coop_test {

struct DeviceEnv {
  __device__ void relax(coop::detail::WaitKind, int) { __nanosleep(32); }
  __device__ void spawn(std::uint32_t, std::uint32_t, int) { __trap(); }  // no growth here
  __device__ void suspend(int) { __trap(); }
  __device__ std::uint64_t random() { return coop::detail::mix64(state++); }
  __device__ void on_membership(std::uint32_t, std::uint32_t) {}
  __device__ void barrier_unreachable(int, std::uint32_t, std::uint32_t, std::uint32_t) {
    __trap();
  }
  __device__ void invariant_failed(const char*) { __trap(); }
  __device__ void abort() { __trap(); }
  std::uint64_t state;
};

// Before barrier r every block adds b+1 to `sum`; after it every block must read the full
// (r+1) * B(B+1)/2.
__global__ void barrier_rounds(coop::detail::Channel* ch, unsigned rounds, unsigned long long* sum,
                               unsigned* errors) {
  DeviceEnv env{blockIdx.x};
  coop::detail::Protocol<DeviceEnv> protocol(*ch, env);
  const unsigned long long b = gridDim.x;
  for (unsigned r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) atomicAdd(sum, blockIdx.x + 1ull);
    __syncthreads();
    if (threadIdx.x == 0) protocol.barrier(blockIdx.x, true, __LINE__);
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(sum, 0ull) != (r + 1) * b * (b + 1) / 2)
      atomicAdd(errors, 1u);
    __syncthreads();
    if (threadIdx.x == 0) protocol.barrier(blockIdx.x, false, __LINE__);
    __syncthreads();
  }
}

}  // namespace coop_test

using coop_test::barrier_rounds;
#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

TEST(DeviceProtocol, GlobalBarrierOrdersMemoryAcrossTheGrid) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  const int threads = 256;
  int per_sm = 0;
  CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, barrier_rounds, threads, 0));
  for (unsigned blocks :
       {unsigned(prop.multiProcessorCount), unsigned(prop.multiProcessorCount * per_sm)}) {
    coop::detail::Channel host;
    host.max_groups = blocks;
    host.membership = coop::detail::with_active(0, blocks);
    host.request = coop::detail::request_word(blocks, false);
    coop::detail::Channel* ch = nullptr;
    unsigned long long* sum = nullptr;
    unsigned* errors = nullptr;
    CUDA_OK(cudaMalloc(&ch, sizeof host));
    CUDA_OK(cudaMalloc(&sum, sizeof *sum));
    CUDA_OK(cudaMalloc(&errors, sizeof *errors));
    CUDA_OK(cudaMemcpy(ch, &host, sizeof host, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(sum, 0, sizeof *sum));
    CUDA_OK(cudaMemset(errors, 0, sizeof *errors));
    unsigned rounds = std::getenv("COOP_SANITIZER") ? 100 : 2000;  // racecheck is slow
    void* args[] = {&ch, &rounds, &sum, &errors};
    cudaEvent_t t0, t1;
    CUDA_OK(cudaEventCreate(&t0));
    CUDA_OK(cudaEventCreate(&t1));
    CUDA_OK(cudaEventRecord(t0));
    // A cooperative launch refuses a grid that cannot be co-resident: a safe start.
    CUDA_OK(cudaLaunchCooperativeKernel((void*)barrier_rounds, blocks, threads, args, 0, 0));
    CUDA_OK(cudaEventRecord(t1));
    CUDA_OK(cudaDeviceSynchronize());
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
    unsigned errs = 0;
    unsigned long long total = 0;
    CUDA_OK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&total, sum, sizeof total, cudaMemcpyDeviceToHost));
    EXPECT_EQ(errs, 0u) << blocks << " blocks";
    EXPECT_EQ(total, 1ull * rounds * blocks * (blocks + 1) / 2);
    std::printf("[ info ] %s: %u blocks x %d threads, %.2f us per protocol barrier\n", prop.name,
                blocks, threads, 1000.0 * ms / (2 * rounds));
    cudaFree(ch);
    cudaFree(sum);
    cudaFree(errors);
  }
}
