// The shared protocol compiled for the device: a grid-wide barrier kernel over the same
// Protocol<Env> the CPU backend runs (the CUDA backend's kernels build on this).
#include <cuda_runtime.h>

#include "coop/protocol.hpp"

namespace coop::cuda::detail {

struct DeviceEnv {
  __device__ void relax(coop::detail::WaitKind, int) { __nanosleep(100); }
  __device__ void spawn(std::uint32_t, std::uint32_t, int) {}
  __device__ std::uint64_t random() { return coop::detail::mix64(state++); }
  __device__ void on_membership(std::uint32_t, std::uint32_t) {}
  __device__ void barrier_unreachable(int, std::uint32_t, std::uint32_t, std::uint32_t) {
    __trap();
  }
  __device__ void invariant_failed(const char*) { __trap(); }
  std::uint64_t state;
};

/// `rounds` global barriers of the protocol among the blocks of the grid; block b adds b+1 to
/// `sum` before each, so after round r every block must read (r+1) * B(B+1)/2.
__global__ void protocol_barrier_kernel(coop::detail::Channel* ch, unsigned rounds,
                                        unsigned long long* sum, unsigned* errors) {
  DeviceEnv env{blockIdx.x};
  coop::detail::Protocol<DeviceEnv> protocol(*ch, env);
  const unsigned long long b = gridDim.x;
  for (unsigned r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) atomicAdd(sum, blockIdx.x + 1ull);
    __syncthreads();
    if (threadIdx.x == 0) protocol.barrier(blockIdx.x, false, __LINE__);
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(sum, 0ull) < (r + 1) * b * (b + 1) / 2) atomicAdd(errors, 1u);
    __syncthreads();
    if (threadIdx.x == 0) protocol.barrier(blockIdx.x, false, __LINE__);
    __syncthreads();
  }
}

}  // namespace coop::cuda::detail
