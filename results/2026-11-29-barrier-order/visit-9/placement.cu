// Built on the development machine: nvcc -O2 -arch=sm_90 -o placement placement.cu
// probe: where do 792 blocks of a cooperative launch land, and what does grid.sync cost then
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
namespace cg = cooperative_groups;
__device__ unsigned long long now_ns() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void loop(unsigned rounds, unsigned long long* ns, unsigned* smids) {
  extern __shared__ char dyn[];
  cg::grid_group g = cg::this_grid();
  if (threadIdx.x == 0) { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); smids[blockIdx.x] = s;  }
  g.sync();
  if (g.thread_rank() == 0) ns[0] = now_ns();
  for (unsigned r = 0; r < rounds; ++r) g.sync();
  if (g.thread_rank() == 0) ns[1] = now_ns();
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* ns; unsigned* smids; cudaMallocManaged(&ns, 16); cudaMallocManaged(&smids, 4096 * 4);
  cudaFuncSetAttribute(loop, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  cudaFuncSetAttribute(loop, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  for (int per_sm : {6, 8}) for (int cap : {0, 6}) {
    if (cap && cap < per_sm) continue;
    size_t dyn = cap ? (227 * 1024) / cap - 1024 : 0;
    int occ = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, loop, 256, dyn);
    unsigned blocks = sms * per_sm; unsigned rounds = 2000;
    if ((int)blocks > occ * sms) { printf("per_sm %d cap %d: occupancy %d too low\n", per_sm, cap, occ); continue; }
    std::vector<double> t;
    for (int rep = 0; rep < 5; ++rep) {
      void* args[] = {&rounds, &ns, &smids};
      if (cudaLaunchCooperativeKernel((void*)loop, blocks, 256, args, dyn, 0) != cudaSuccess) { printf("launch failed %s\n", cudaGetErrorString(cudaGetLastError())); return 1; }
      cudaDeviceSynchronize();
      t.push_back(double(ns[1] - ns[0]) / rounds / 1e3);
    }
    std::sort(t.begin(), t.end());
    std::vector<int> per(sms, 0); for (unsigned b = 0; b < blocks; ++b) per[smids[b]]++;
    int hist[33] = {0}; for (int c : per) hist[std::min(c, 32)]++;
    printf("blocks %u (%d/SM), occupancy %d (dyn %zu): grid.sync %.2f us; SMs holding k blocks:", blocks, per_sm, occ, dyn, t[2]);
    for (int k = 0; k <= 32; ++k) if (hist[k]) printf(" %d:%d", k, hist[k]);
    printf("\n");
  }
}
