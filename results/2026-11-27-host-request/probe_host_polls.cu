// Can every workgroup of a persistent kernel read the scheduler's request from mapped host memory
// at each of its offers? (Issue 19.) The design notes warn that blocks polling host memory in a
// tight loop made a gather take ~10 ms; coop's offers read the word once per offer, with the
// load's latency hidden behind the next chunk of work. This probe measures both.
//
// A persistent kernel fills the device (every SM, 4 blocks of 256 threads). Each block loops:
// a chunk of work (each thread `iters` random 4-byte loads over 1 GiB, summed), a block barrier,
// then thread 0 looks at the word it loaded at the previous offer and issues the next load.
// Where the word is read from (mode):
//   device  a word in device memory, written by the host with a stream memory write (coop's
//           path before this change);
//   host    a word in pinned, mapped host memory, stored by the host, read by every block;
//   relay   the host word read only by every 16th block, which raises a device word (atomicMax)
//           that every block reads.
// Per write (200, 1 ms apart): the host's round trip, from its store (or its driver call) to an
// acknowledgement that the first block to see the value stores into host memory, on the host's
// clock; the spread from the first block to see it to the last (device clock). Per run: chunks
// done per block per ms against the device mode's at the same chunk size (what the polls cost
// the work), and the offer interval. `iters` 0: no work, an offer right after the last one (the
// tight poll of the design notes). Build:
//   nvcc -O2 -arch=sm_90 -std=c++20 probe_host_polls.cu -lcuda -o probe_host_polls
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int kWrites = 200;
constexpr int kRelayEvery = 16;

struct HostWords {  // pinned, mapped
  alignas(64) unsigned request;
  alignas(64) unsigned ack;
};

struct DeviceWords {
  alignas(128) unsigned request;
  alignas(128) unsigned first_seen;  // the highest value some block has acknowledged
  alignas(128) unsigned stop;
};

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ unsigned load_sys(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ unsigned load_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// mode: 0 device, 1 host, 2 relay.
__global__ void __launch_bounds__(256)
    app(int mode, int iters, HostWords* host, DeviceWords* dev, const unsigned* big,
        unsigned long long big_mask, unsigned long long* seen, unsigned long long* chunks,
        unsigned* sink) {
  __shared__ unsigned view_s;
  const bool reads_host = mode == 1 || (mode == 2 && blockIdx.x % kRelayEvery == 0);
  unsigned view = 0, last = 0, acc = 0;
  unsigned long long done = 0;
  unsigned long long x = 0x9e3779b97f4a7c15ull * (blockIdx.x * 256 + threadIdx.x + 1);
  for (;;) {
    for (int i = 0; i < iters; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      acc += __ldcg(&big[x & big_mask]);
    }
    ++done;
    // The offer: thread 0 acts on the value it loaded last time, then loads the next.
    if (threadIdx.x == 0) {
      if (view != last) {
        last = view;
        const unsigned long long t = now_ns();
        if (view <= kWrites) seen[(view - 1) * gridDim.x + blockIdx.x] = t;
        if (mode == 2 && reads_host) atomicMax(&dev->request, view);
        if (atomicMax(&dev->first_seen, view) < view) {
          asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(&host->ack), "r"(view)
                       : "memory");
        }
      }
      view_s = load_gpu(&dev->stop);
      view = reads_host ? load_sys(&host->request) : load_gpu(&dev->request);
    }
    __syncthreads();
    const unsigned stop = view_s;
    __syncthreads();
    if (stop) break;
  }
  if (threadIdx.x == 0) chunks[blockIdx.x] = done;
  if (acc == 0x12345678u) sink[0] = acc;
}

static double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p / 100.0 * (v.size() - 1) + 0.5))];
}

int main(int argc, char** argv) {
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const unsigned blocks = prop.multiProcessorCount * 4;
  std::printf("device %s, %u blocks of 256\n", prop.name, blocks);
  const unsigned long long big_words = 1ull << 28;  // 1 GiB
  unsigned* big = nullptr;
  CK(cudaMalloc(&big, big_words * 4));
  CK(cudaMemset(big, 1, big_words * 4));
  HostWords* host = nullptr;
  CK(cudaHostAlloc(&host, sizeof(HostWords), cudaHostAllocMapped));
  HostWords* host_dev = nullptr;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_dev), host, 0));
  DeviceWords* dev = nullptr;
  CK(cudaMalloc(&dev, sizeof(DeviceWords)));
  unsigned long long *seen = nullptr, *chunks = nullptr;
  unsigned* sink = nullptr;
  CK(cudaMalloc(&seen, sizeof(unsigned long long) * kWrites * blocks));
  CK(cudaMalloc(&chunks, sizeof(unsigned long long) * blocks));
  CK(cudaMalloc(&sink, 4));
  cudaStream_t job, control;
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CK(cudaStreamCreateWithFlags(&job, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithPriority(&control, cudaStreamNonBlocking, hi));
  std::vector<int> iter_list = {0, 2, 8, 32};
  if (argc > 1) {
    iter_list.clear();
    for (int i = 1; i < argc; ++i) iter_list.push_back(std::atoi(argv[i]));
  }
  const char* names[] = {"device", "host", "relay"};
  std::printf("%-7s %5s %9s %9s %9s %9s %9s %9s %11s %9s\n", "mode", "iters", "rtt_p50", "rtt_p90",
              "rtt_p99", "rtt_max", "spread50", "spread99", "chunks/ms", "offer_us");
  for (int iters : iter_list) {
    double base_rate = 0;
    for (int mode = 0; mode < 3; ++mode) {
      CK(cudaMemsetAsync(dev, 0, sizeof(DeviceWords), control));
      CK(cudaMemsetAsync(seen, 0, sizeof(unsigned long long) * kWrites * blocks, control));
      CK(cudaStreamSynchronize(control));
      __atomic_store_n(&host->request, 0u, __ATOMIC_RELEASE);
      __atomic_store_n(&host->ack, 0u, __ATOMIC_RELEASE);
      app<<<blocks, 256, 0, job>>>(mode, iters, host_dev, dev, big, big_words - 1, seen, chunks,
                                   sink);
      CK(cudaGetLastError());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const auto t_start = std::chrono::steady_clock::now();
      std::vector<double> rtt;
      for (unsigned i = 1; i <= kWrites; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (mode == 0) {
          CUresult rc = cuStreamWriteValue32(control, reinterpret_cast<CUdeviceptr>(&dev->request),
                                             i, CU_STREAM_WRITE_VALUE_DEFAULT);
          if (rc != CUDA_SUCCESS) {
            std::fprintf(stderr, "cuStreamWriteValue32: %d\n", int(rc));
            return 1;
          }
        } else {
          __atomic_store_n(&host->request, i, __ATOMIC_RELEASE);
        }
        bool ok = true;
        while (__atomic_load_n(&host->ack, __ATOMIC_ACQUIRE) < i) {
          if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(200)) {
            ok = false;
            break;
          }
        }
        const auto t1 = std::chrono::steady_clock::now();
        rtt.push_back(ok ? std::chrono::duration<double, std::micro>(t1 - t0).count() : 2e5);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const double elapsed_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start)
              .count() +
          20.0;
      const unsigned one = 1;
      CK(cudaMemcpyAsync(&dev->stop, &one, 4, cudaMemcpyHostToDevice, control));
      CK(cudaStreamSynchronize(job));
      std::vector<unsigned long long> c(blocks), s(size_t(kWrites) * blocks);
      CK(cudaMemcpy(c.data(), chunks, 8 * blocks, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(s.data(), seen, s.size() * 8, cudaMemcpyDeviceToHost));
      double total = 0;
      for (auto v : c) total += double(v);
      const double rate = total / blocks / elapsed_ms;  // chunks per block per ms
      if (mode == 0) base_rate = rate;
      std::vector<double> spread;
      for (int w = 0; w < kWrites; ++w) {
        unsigned long long first = ~0ull, last = 0;
        unsigned n = 0;
        for (unsigned b = 0; b < blocks; ++b) {
          unsigned long long t = s[size_t(w) * blocks + b];
          if (!t) continue;
          ++n;
          first = std::min(first, t);
          last = std::max(last, t);
        }
        if (n) spread.push_back((last - first) / 1000.0);
      }
      std::printf("%-7s %5d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %11.1f %9.2f", names[mode], iters,
                  pct(rtt, 50), pct(rtt, 90), pct(rtt, 99), pct(rtt, 100), pct(spread, 50),
                  pct(spread, 99), rate, 1000.0 / rate);
      if (mode > 0 && base_rate > 0) std::printf("  work %.3f of device's", rate / base_rate);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
