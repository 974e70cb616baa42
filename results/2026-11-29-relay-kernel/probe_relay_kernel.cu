// A reader of the scheduler's request that is not a workgroup of the job (issue 19): a kernel of
// one warp, resident beside the job, polls a word in pinned host memory and copies each new
// value into the device word the job's workgroups poll at their offers. The host's request is
// then a plain store, with no driver call on its path (13-20 us from a thread that has slept,
// ../2026-11-27-request-path/), and no stream write that a memory-bound kernel holds back
// (18 / 29 us p50 / p99 there). ../2026-11-27-host-request/ found that the job's own workgroups
// cannot be that reader: every reader costs the link a read per offer, and workgroup 0 as the
// one reader waits a bus read per offer. This probe measures the separate reader.
//
// The job: a persistent kernel on every SM (`per_sm` blocks of 256 threads). Each block loops:
// a chunk of work (each thread `iters` random 4-byte loads over 1 GiB), a block barrier, then
// thread 0 acts on the device word it loaded at the previous offer and loads it again (coop's
// offer, pipelined). The first block to see a value acknowledges it in host memory.
//
// How the request reaches the device word (mode):
//   write   the host's stream memory write (coop's path), from a thread that sleeps between
//           requests;
//   relay   the host stores the word into pinned host memory; the relay kernel (one warp, on a
//           stream of its own, launched before the job) polls it every `poll_ns` (0: no sleep)
//           and stores each new value into the device word.
// Per request (200, `gap_ms` apart, the host thread asleep in between): the round trip from the
// host's call or store to the acknowledgement (host clock). Per run: chunks per block per ms
// against the write mode's (what the relay costs the job), and the offer interval. Build:
//   nvcc -O2 -arch=sm_90 -std=c++20 probe_relay_kernel.cu -lcuda -o probe_relay_kernel
// Run: ./probe_relay_kernel [per_sm [gap_ms]]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

constexpr int kRequests = 200;

struct HostWords {  // pinned, mapped
  alignas(64) unsigned request;
  alignas(64) unsigned ack;
};

struct DeviceWords {
  alignas(128) unsigned request;
  alignas(128) unsigned first_seen;
  alignas(128) unsigned stop;
  alignas(128) unsigned relay_stop;
  alignas(128) unsigned relay_polls;
};

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
__device__ void store_gpu(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// One warp; lane 0 polls.
__global__ void relay(HostWords* host, DeviceWords* dev, unsigned poll_ns) {
  if (threadIdx.x != 0) return;
  unsigned last = 0, polls = 0;
  while (load_gpu(&dev->relay_stop) == 0) {
    const unsigned v = load_sys(&host->request);
    ++polls;
    if (v != last) {
      last = v;
      store_gpu(&dev->request, v);
    }
    if (poll_ns) __nanosleep(poll_ns);
  }
  dev->relay_polls = polls;
}

__global__ void __launch_bounds__(256)
    app(int iters, HostWords* host, DeviceWords* dev, const unsigned* big,
        unsigned long long big_mask, unsigned long long* chunks, unsigned* sink) {
  __shared__ unsigned stop_s;
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
    if (threadIdx.x == 0) {
      if (view != last) {
        last = view;
        if (atomicMax(&dev->first_seen, view) < view)
          asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(&host->ack), "r"(view)
                       : "memory");
      }
      stop_s = load_gpu(&dev->stop);
      view = load_gpu(&dev->request);
    }
    __syncthreads();
    const unsigned stop = stop_s;
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
  const int per_sm = argc > 1 ? std::atoi(argv[1]) : 4;
  const int gap_ms = argc > 2 ? std::atoi(argv[2]) : 5;
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, app, 256, 0));
  const unsigned blocks = prop.multiProcessorCount * unsigned(per_sm);
  std::printf("device %s, %u blocks of 256 (%d per SM; the kernel's occupancy %d), %d ms apart\n",
              prop.name, blocks, per_sm, occ, gap_ms);
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
  unsigned long long* chunks = nullptr;
  unsigned* sink = nullptr;
  CK(cudaMalloc(&chunks, sizeof(unsigned long long) * blocks));
  CK(cudaMalloc(&sink, 4));
  cudaStream_t job, control, relay_stream;
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CK(cudaStreamCreateWithFlags(&job, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithPriority(&control, cudaStreamNonBlocking, hi));
  CK(cudaStreamCreateWithPriority(&relay_stream, cudaStreamNonBlocking, hi));
  struct Form {
    const char* name;
    bool relay;
    unsigned poll_ns;
  };
  const Form forms[] = {{"write", false, 0},        {"relay-0ns", true, 0},
                        {"relay-200ns", true, 200}, {"relay-1000ns", true, 1000},
                        {"write", false, 0},        {"relay-200ns", true, 200}};
  std::printf("%-13s %5s %8s %8s %8s %8s %11s %9s %10s\n", "form", "iters", "rtt_p50", "rtt_p90",
              "rtt_p99", "rtt_max", "chunks/ms", "offer_us", "polls/ms");
  for (int iters : {2, 8}) {
    double base_rate = 0;
    for (const Form& f : forms) {
      CK(cudaMemsetAsync(dev, 0, sizeof(DeviceWords), control));
      CK(cudaStreamSynchronize(control));
      __atomic_store_n(&host->request, 0u, __ATOMIC_RELEASE);
      __atomic_store_n(&host->ack, 0u, __ATOMIC_RELEASE);
      if (f.relay) {
        relay<<<1, 32, 0, relay_stream>>>(host_dev, dev, f.poll_ns);
        CK(cudaGetLastError());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      app<<<blocks, 256, 0, job>>>(iters, host_dev, dev, big, big_words - 1, chunks, sink);
      CK(cudaGetLastError());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const auto t_start = std::chrono::steady_clock::now();
      std::vector<double> rtt;
      for (unsigned i = 1; i <= kRequests; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (!f.relay) {
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
        std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
      }
      const double elapsed_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start)
              .count() +
          20.0;
      const unsigned one = 1;
      CK(cudaMemcpyAsync(&dev->stop, &one, 4, cudaMemcpyHostToDevice, control));
      CK(cudaStreamSynchronize(job));
      CK(cudaMemcpyAsync(&dev->relay_stop, &one, 4, cudaMemcpyHostToDevice, control));
      CK(cudaStreamSynchronize(relay_stream));
      std::vector<unsigned long long> c(blocks);
      CK(cudaMemcpy(c.data(), chunks, 8 * blocks, cudaMemcpyDeviceToHost));
      DeviceWords d{};
      CK(cudaMemcpy(&d, dev, sizeof d, cudaMemcpyDeviceToHost));
      double total = 0;
      for (auto v : c) total += double(v);
      const double rate = total / blocks / elapsed_ms;
      if (!f.relay && base_rate == 0) base_rate = rate;
      std::printf("%-13s %5d %8.1f %8.1f %8.1f %8.1f %11.1f %9.2f %10.1f", f.name, iters,
                  pct(rtt, 50), pct(rtt, 90), pct(rtt, 99), pct(rtt, 100), rate, 1000.0 / rate,
                  f.relay ? d.relay_polls / (elapsed_ms + 5) : 0.0);
      if (base_rate > 0) std::printf("  work %.3f of the first write row's", rate / base_rate);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
