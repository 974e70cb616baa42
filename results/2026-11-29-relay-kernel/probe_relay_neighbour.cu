// Does the relay warp slow the job's blocks on its SM, and so every barrier of the job? A
// cooperative kernel of occupancy x SMs - 1 blocks of 256 threads (room for the relay, see
// probe_relay_residency.cu) runs `rounds` grid.syncs with `work` FMAs per thread between them,
// with the relay (one warp polling pinned host memory every `poll_ns`) running or not.
// Rows alternate off / on, three times each. Build:
//   nvcc -O2 -arch=sm_90 -std=c++20 probe_relay_neighbour.cu -o probe_relay_neighbour
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void relay(const unsigned* host_word, volatile unsigned* stop, unsigned* dev_word,
                      unsigned poll_ns) {
  if (threadIdx.x != 0) return;
  unsigned last = 0;
  while (*stop == 0) {
    unsigned v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(host_word) : "memory");
    if (v != last) {
      last = v;
      *dev_word = v;
    }
    if (poll_ns) __nanosleep(poll_ns);
  }
}

__global__ void __launch_bounds__(256)
    job(unsigned rounds, unsigned work, unsigned long long* ns, float* sink) {
  cg::grid_group g = cg::this_grid();
  float x = float(threadIdx.x);
  if (g.thread_rank() == 0) ns[0] = now_ns();
  for (unsigned r = 0; r < rounds; ++r) {
    for (unsigned i = 0; i < work; ++i) x = fmaf(x, 0.999f, 0.5f);
    g.sync();
  }
  if (g.thread_rank() == 0) ns[1] = now_ns();
  if (x == 12345.f) sink[0] = x;
}

int main(int argc, char** argv) {
  const unsigned poll_ns = argc > 1 ? unsigned(std::atoi(argv[1])) : 200;
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, job, 256, 0));
  const unsigned blocks = prop.multiProcessorCount * unsigned(occ) - 1;
  unsigned* host_word = nullptr;
  CK(cudaHostAlloc(&host_word, 4, cudaHostAllocMapped));
  *host_word = 0;
  unsigned* host_word_dev = nullptr;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_word_dev), host_word, 0));
  unsigned *stop = nullptr, *dev_word = nullptr;
  unsigned long long* ns = nullptr;
  float* sink = nullptr;
  CK(cudaMallocManaged(&stop, 4));
  CK(cudaMalloc(&dev_word, 4));
  CK(cudaMallocManaged(&ns, 16));
  CK(cudaMalloc(&sink, 4));
  cudaStream_t rs, js;
  CK(cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&js, cudaStreamNonBlocking));
  std::printf(
      "%s: a cooperative grid of %u blocks of 256 (occupancy %d x %d SMs - 1); relay "
      "polls every %u ns\n",
      prop.name, blocks, occ, prop.multiProcessorCount, poll_ns);
  std::printf("%-6s %6s %12s %12s\n", "relay", "work", "us/round", "on/off");
  for (unsigned work : {0u, 200u, 2000u}) {
    const unsigned rounds = work == 0 ? 20000 : work == 200 ? 10000 : 2000;
    std::vector<double> off, on;
    for (int rep = 0; rep < 6; ++rep) {
      const bool with_relay = rep % 2 == 1;
      *stop = 0;
      if (with_relay) {
        relay<<<1, 32, 0, rs>>>(host_word_dev, stop, dev_word, poll_ns);
        CK(cudaGetLastError());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      unsigned r = rounds, w = work;
      void* args[] = {&r, &w, &ns, &sink};
      CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(job), dim3(blocks), dim3(256), args, 0,
                                     js));
      CK(cudaStreamSynchronize(js));
      *stop = 1;
      CK(cudaDeviceSynchronize());
      const double us = double(ns[1] - ns[0]) / rounds / 1e3;
      (with_relay ? on : off).push_back(us);
      std::printf("%-6s %6u %12.3f\n", with_relay ? "on" : "off", work, us);
    }
    std::sort(off.begin(), off.end());
    std::sort(on.begin(), on.end());
    std::printf("median %6u %12.3f off, %.3f on: %.3f\n", work, off[1], on[1], on[1] / off[1]);
    std::fflush(stdout);
  }
  return 0;
}
