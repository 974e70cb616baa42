// Probe: how fast the GPU's front end starts a kernel queued behind cuStreamWaitValue32 once a
// device thread writes the word, with the word in pinned host memory or in device memory; and
// how fast a host write reaches a spinning kernel by each path (stream memory op, batch memop
// with a barrier, 4-byte cudaMemcpyAsync, a store to mapped pinned memory one thread polls).
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#define CK(x)                                                                \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)
#define CKD(x)                                          \
  do {                                                  \
    CUresult e_ = (x);                                  \
    if (e_ != CUDA_SUCCESS) {                           \
      const char* s;                                    \
      cuGetErrorString(e_, &s);                         \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, s); \
      std::exit(1);                                     \
    }                                                   \
  } while (0)

__device__ __forceinline__ std::uint64_t gtime() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Waits `delay_ns`, stamps t0, writes `value` to `word` (release, system scope).
__global__ void releaser(std::uint32_t* word, std::uint32_t value, std::uint64_t delay_ns,
                         std::uint64_t* t0) {
  if (threadIdx.x) return;
  const std::uint64_t start = gtime();
  while (gtime() - start < delay_ns) {
  }
  const std::uint64_t t = gtime();
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(word), "r"(value) : "memory");
  *t0 = t;
}
__global__ void stamp(std::uint64_t* t1) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *t1 = gtime();
}

// Spins until *flag (device or mapped) reaches `value`, then acks into mapped host memory.
__global__ void spinner(volatile std::uint32_t* flag, std::uint32_t n,
                        volatile std::uint32_t* ack) {
  if (threadIdx.x) return;
  for (std::uint32_t i = 1; i <= n; ++i) {
    while (*flag < i) {
    }
    __threadfence_system();
    *ack = i;
  }
}

struct Dist {
  double p50, p99, max;
};
static Dist dist(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, std::size_t(q * (v.size() - 1) + 0.5))];
  };
  return {at(0.5), at(0.99), v.back()};
}
static void print(const char* name, std::vector<double> v) {
  Dist d = dist(std::move(v));
  std::printf("%-44s p50 %7.2f  p99 %7.2f  max %7.2f us\n", name, d.p50, d.p99, d.max);
  std::fflush(stdout);
}

int main() {
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  int lo, hi;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t s_job, s_task, s_ctl;
  CK(cudaStreamCreateWithPriority(&s_job, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&s_task, cudaStreamNonBlocking, hi));
  CK(cudaStreamCreateWithPriority(&s_ctl, cudaStreamNonBlocking, hi));
  std::uint32_t *hword, *hword_dev, *dword;
  CK(cudaHostAlloc(&hword, 4096, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer((void**)&hword_dev, hword, 0));
  CK(cudaMalloc(&dword, 4096));
  CK(cudaMemset(dword, 0, 4096));
  *hword = 0;
  std::uint64_t *t0, *t1;
  CK(cudaMalloc(&t0, 8));
  CK(cudaMalloc(&t1, 8));
  // warm up / load modules
  releaser<<<1, 32, 0, s_job>>>(dword + 64, 1, 1000, t0);
  stamp<<<1, 32, 0, s_task>>>(t1);
  CK(cudaDeviceSynchronize());

  const int iters = 300;
  for (int where = 0; where < 2; ++where) {
    {
      std::vector<double> lat;
      std::uint32_t* word_dev = where == 0 ? hword_dev : dword;
      CK(cudaMemset(dword, 0, 4096));
      *hword = 0;
      CK(cudaDeviceSynchronize());
      for (int i = 1; i <= iters; ++i) {
        const unsigned flags = CU_STREAM_WAIT_VALUE_GEQ;  // _FLUSH: not supported (H200, 580)
        CKD(cuStreamWaitValue32((CUstream)s_task, (CUdeviceptr)word_dev, i, flags));
        stamp<<<1, 32, 0, s_task>>>(t1);
        releaser<<<1, 32, 0, s_job>>>(word_dev, i, 30000, t0);
        CK(cudaDeviceSynchronize());
        std::uint64_t a, b;
        CK(cudaMemcpy(&a, t0, 8, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&b, t1, 8, cudaMemcpyDeviceToHost));
        if (i > 10) lat.push_back((double(b) - double(a)) / 1000.0);
      }
      char name[96];
      std::snprintf(name, sizeof name, "device write -> waiting kernel runs: %s",
                    where == 0 ? "host word" : "device word");
      print(name, lat);
    }
  }

  // host -> device write paths, round trip through a spinning 1-thread kernel and a mapped ack
  std::uint32_t *hack, *hack_dev;
  CK(cudaHostAlloc(&hack, 4096, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer((void**)&hack_dev, hack, 0));
  std::uint32_t* pinned_src;
  CK(cudaHostAlloc(&pinned_src, 4096 * 4, 0));
  const char* names[] = {"host->device: cuStreamWriteValue32",
                         "host->device: batch memop + barrier", "host->device: cudaMemcpyAsync 4 B",
                         "host->device: store to mapped pinned word"};
  for (int path = 0; path < 4; ++path) {
    const std::uint32_t n = 400;
    CK(cudaMemset(dword, 0, 4096));
    *hword = 0;
    *(volatile std::uint32_t*)hack = 0;
    CK(cudaDeviceSynchronize());
    volatile std::uint32_t* flag =
        path == 3 ? (volatile std::uint32_t*)hword_dev : (volatile std::uint32_t*)dword;
    spinner<<<1, 32, 0, s_job>>>(flag, n, (volatile std::uint32_t*)hack_dev);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<double> lat;
    for (std::uint32_t i = 1; i <= n; ++i) {
      auto a = std::chrono::steady_clock::now();
      if (path == 0) {
        CKD(cuStreamWriteValue32((CUstream)s_ctl, (CUdeviceptr)dword, i, 0));
      } else if (path == 1) {
        CUstreamBatchMemOpParams p[2] = {};
        p[0].operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        p[0].writeValue.address = (CUdeviceptr)dword;
        p[0].writeValue.value = i;
        p[1].operation = CU_STREAM_MEM_OP_BARRIER;
        p[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
        CKD(cuStreamBatchMemOp((CUstream)s_ctl, 2, p, 0));
      } else if (path == 2) {
        pinned_src[i] = i;
        CK(cudaMemcpyAsync(dword, pinned_src + i, 4, cudaMemcpyHostToDevice, s_ctl));
      } else {
        *(volatile std::uint32_t*)hword = i;
      }
      while (*(volatile std::uint32_t*)hack < i) {
      }
      auto b = std::chrono::steady_clock::now();
      if (i > 10) lat.push_back(std::chrono::duration<double, std::micro>(b - a).count());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    CK(cudaDeviceSynchronize());
    print(names[path], lat);
  }
  std::printf("(round trips: each includes the kernel's ack to mapped host memory, ~1 us)\n");
  return 0;
}
