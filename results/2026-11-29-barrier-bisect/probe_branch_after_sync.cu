// What does a branch that is never taken cost a grid barrier's loop? (Issue 19: visits 7 and 8
// found that a never-taken block in the global barrier's loop costs it 0.07-0.1 us at 6
// workgroups per SM, whatever the block holds.) Plain CUDA, no coop: a cooperative kernel of
// `per_sm` blocks of 256 threads per SM runs 20,000 rounds of cooperative groups' grid.sync,
// with, per round (form):
//   0 plain      nothing else;
//   1 after      a block of 200 FMAs behind a condition that is never true, after the sync;
//   2 before     the same block before the sync;
//   3 thread0    thread 0 alone adding to a shared counter after the sync (a divergent branch
//                that is taken every round, as coop's thread-0 protocol is).
// Forms alternate, five runs each; the median of each form's runs, and its ratio to plain.
// Build:
//   nvcc -O2 -arch=sm_90 -std=c++20 probe_branch_after_sync.cu -o probe_branch_after_sync
// Run: ./probe_branch_after_sync [per_sm]
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

__device__ __forceinline__ float blob(float v) {
#pragma unroll
  for (int i = 0; i < 200; ++i) v = fmaf(v, 1.0001f, 0.5f);
  return v;
}

template <int Form>
__global__ void __launch_bounds__(256)
    loop(unsigned rounds, float magic, unsigned long long* ns, float* sink) {
  cg::grid_group g = cg::this_grid();
  __shared__ unsigned counter;
  if (threadIdx.x == 0) counter = 0;
  float v = float(threadIdx.x);
  if (g.thread_rank() == 0) ns[0] = now_ns();
  for (unsigned r = 0; r < rounds; ++r) {
    if (Form == 2 && v == magic) v = blob(v);
    g.sync();
    if (Form == 1 && v == magic) v = blob(v);
    if (Form == 3 && threadIdx.x == 0) counter += r;
  }
  if (g.thread_rank() == 0) ns[1] = now_ns();
  if (v == 12345.f || counter == 7u) sink[0] = v;
}

template <int Form>
double run(unsigned blocks, unsigned rounds, unsigned long long* ns, float* sink) {
  float magic = -1.f;  // v is never negative: the block never runs
  void* args[] = {&rounds, &magic, &ns, &sink};
  CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(loop<Form>), dim3(blocks), dim3(256), args,
                                 0, nullptr));
  CK(cudaDeviceSynchronize());
  return double(ns[1] - ns[0]) / rounds / 1e3;
}

int main(int argc, char** argv) {
  const int per_sm = argc > 1 ? std::atoi(argv[1]) : 6;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const unsigned blocks = prop.multiProcessorCount * unsigned(per_sm);
  unsigned long long* ns = nullptr;
  float* sink = nullptr;
  CK(cudaMallocManaged(&ns, 16));
  CK(cudaMalloc(&sink, 4));
  const unsigned rounds = 20000;
  const char* names[] = {"plain", "after", "before", "thread0"};
  std::vector<double> us[4];
  for (int rep = 0; rep < 5; ++rep) {
    us[0].push_back(run<0>(blocks, rounds, ns, sink));
    us[1].push_back(run<1>(blocks, rounds, ns, sink));
    us[2].push_back(run<2>(blocks, rounds, ns, sink));
    us[3].push_back(run<3>(blocks, rounds, ns, sink));
  }
  std::printf("%s: %u blocks of 256 (%d per SM), %u grid.syncs per run, 5 runs per form\n",
              prop.name, blocks, per_sm, rounds);
  double plain = 0;
  for (int f = 0; f < 4; ++f) {
    std::sort(us[f].begin(), us[f].end());
    if (f == 0) plain = us[f][2];
    std::printf("%-8s median %.3f us (min %.3f, max %.3f)  %.3fx plain\n", names[f], us[f][2],
                us[f][0], us[f][4], us[f][2] / plain);
  }
  return 0;
}
