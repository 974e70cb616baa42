// With the relay kernel (one warp) resident, can a cooperative kernel still launch its full
// grid, occupancy x SMs blocks that all wait for each other at grid.sync? If the driver does not
// count the relay, one block may not find room and every grid.sync waits for it forever (the
// design notes' residency trap). Each row: the relay running or not, the grid at full occupancy
// or one block less; the launch's error, and whether 1,000 grid.syncs finished within 2 s.
// The kernel's occupancy is 8 blocks of 256 threads per SM (2,048 threads: no warp left).
// A row that hangs ends the process (the device keeps the kernel); the rows run from the
// least to the most likely to hang. Build:
//   nvcc -O2 -arch=sm_90 -std=c++20 probe_relay_residency.cu -o probe_relay_residency
// Run: ./probe_relay_residency ROW   (0: no relay, full; 1: relay, one less; 2: relay, full)
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace cg = cooperative_groups;

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__global__ void relay(volatile unsigned* stop, unsigned* smid) {
  if (threadIdx.x != 0) return;
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  *smid = s;
  while (*stop == 0) __nanosleep(1000);
}

__global__ void __launch_bounds__(256, 8) syncs(unsigned rounds, unsigned* done) {
  cg::grid_group g = cg::this_grid();
  for (unsigned r = 0; r < rounds; ++r) g.sync();
  if (g.thread_rank() == 0) *done = 1;
}

int main(int argc, char** argv) {
  const int row = argc > 1 ? std::atoi(argv[1]) : 0;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, syncs, 256, 0));
  unsigned *stop = nullptr, *smid = nullptr, *done = nullptr;
  CK(cudaMallocManaged(&stop, 4));
  CK(cudaMallocManaged(&smid, 4));
  CK(cudaMallocManaged(&done, 4));
  *stop = 0;
  *smid = ~0u;
  *done = 0;
  cudaStream_t rs, js;
  CK(cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&js, cudaStreamNonBlocking));
  const bool with_relay = row >= 1;
  const unsigned blocks = prop.multiProcessorCount * unsigned(occ) - (row == 1 ? 1 : 0);
  if (with_relay) {
    relay<<<1, 32, 0, rs>>>(stop, smid);
    CK(cudaGetLastError());
    while (*reinterpret_cast<volatile unsigned*>(smid) == ~0u) std::this_thread::yield();
  }
  std::printf("row %d: relay %s (SM %d), cooperative grid of %u blocks (occupancy %d x %d SMs)\n",
              row, with_relay ? "running" : "off", with_relay ? int(*smid) : -1, blocks, occ,
              prop.multiProcessorCount);
  std::fflush(stdout);
  unsigned rounds = 1000;
  void* args[] = {&rounds, &done};
  const cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<void*>(syncs), dim3(blocks),
                                                    dim3(256), args, 0, js);
  std::printf("  launch: %s\n", cudaGetErrorString(e));
  std::fflush(stdout);
  if (e == cudaSuccess) {
    const auto t0 = std::chrono::steady_clock::now();
    while (*reinterpret_cast<volatile unsigned*>(done) == 0 &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool finished = *reinterpret_cast<volatile unsigned*>(done) != 0;
    std::printf("  1,000 grid.syncs: %s\n",
                finished ? "finished" : "NOT finished after 2 s (hang)");
    std::fflush(stdout);
    if (!finished) std::_Exit(2);
  }
  *stop = 1;
  CK(cudaDeviceSynchronize());
  return 0;
}
