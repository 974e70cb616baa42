// Can the host's request reach a running persistent kernel without a driver call on its path?
// (Issue 19: the request's way to the device.) The harness is ../2026-11-27-request-path/'s
// probe_request_path.cu, kept whole so that each folder's probe builds alone; the relay modes are
// new. A persistent kernel fills the device (every SM, 4 blocks of 256 threads); one thread of
// block 0 polls a word in device memory, the others spin or load the memory system (random atomic
// adds over 1 GiB, as a large R-MAT level does). The host changes the word 150 or 300 times, the
// writing thread asleep 5 ms between writes where the row says "sleep" (as a periodic task's thread
// is). Modes:
//   memop   a stream memory write on a high-priority stream (coop's path today);
//   relayw  the GPU's front end relays: a wait on a doorbell in pinned host memory
//           (cuStreamWaitValue32, GEQ), pre-enqueued one write ahead, then a stream write of a
//           value known when it was enqueued; the host's write is two plain stores;
//   relayc  the same wait, then a 4-byte copy from pinned memory (it reads the value when it
//           runs: what a request whose value is not known ahead needs);
//   relay3  the same with two more copies before it (a release slot region and its mask, so
//           that they land before the request, as the scheduler's arming must);
//   mapped  the kernel polls the word in mapped host memory itself.
// Per write: the host call's time, and the moment the polling thread saw the value (device
// clock, put on the host's by the least difference over the run). The rows in main() are the
// H200 run's; the H100 run (h100-probe.txt) had memop, relayw and relayc idle and loaded, with and
// without sleep, and mapped. Build: nvcc -O2 -arch=sm_90 -std=c++20 probe_request_relay.cu -lcuda
// -o probe_request_relay
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct Shared {                     // pinned, mapped
  unsigned mirror;                  // the mapped mode's word
  unsigned seq;                     // the relay modes' doorbell, waited on by the front end
  unsigned long long seen_ns[512];  // device time when write i was seen
};

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// `stop` is in device memory (the host sets it by a copy at the end): polled by every thread, it
// must not cost the PCIe link anything.
__global__ void background(unsigned* word, Shared* host, const unsigned* stop, bool mapped,
                           bool load, unsigned* big, unsigned long long big_words) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned last = 0;
    for (;;) {
      unsigned v = mapped ? *reinterpret_cast<volatile unsigned*>(&host->mirror)
                          : *reinterpret_cast<volatile unsigned*>(word);
      if (v != last) {
        last = v;
        if (v < 512) host->seen_ns[v] = now_ns();
        __threadfence_system();
      }
      if (*reinterpret_cast<const volatile unsigned*>(stop)) return;
    }
  }
  // The other threads: idle spin, or random atomics over `big`.
  unsigned long long x = (blockIdx.x * 1024ull + threadIdx.x) * 0x9e3779b97f4a7c15ull + 1;
  for (unsigned i = 0;; ++i) {
    if (load) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      atomicAdd(&big[x % big_words], 1u);
    } else {
      __nanosleep(200);
    }
    if ((i & 255) == 0 && *reinterpret_cast<const volatile unsigned*>(stop)) return;
  }
}

using clk = std::chrono::steady_clock;
static std::uint64_t host_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now().time_since_epoch())
      .count();
}

static double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(p / 100 * v.size()))];
}

int main() {
  CK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  Shared* host = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(Shared), cudaHostAllocMapped));
  Shared* host_dev = nullptr;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_dev), host, 0));
  unsigned* word = nullptr;
  CK(cudaMalloc(&word, 4));
  unsigned* stop = nullptr;
  CK(cudaMalloc(&stop, 4));
  unsigned* staged = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&staged), 4, cudaHostAllocDefault));
  const unsigned long long big_words = (1ull << 30) / 4;
  unsigned* big = nullptr;
  CK(cudaMalloc(&big, big_words * 4));
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t job, ctl;
  CK(cudaStreamCreateWithPriority(&job, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&ctl, cudaStreamNonBlocking, hi));
  const int blocks = prop.multiProcessorCount * 4;
  unsigned* pad = nullptr;
  CK(cudaMalloc(&pad, 128));
  unsigned* staged_pad = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&staged_pad), 128, cudaHostAllocDefault));
  const char* modes[] = {"memop", "copy", "mapped", "relayw", "relayc", "relay3"};
  unsigned* seq_dev = &host_dev->seq;
  // The rows: each mode idle and loaded, then the memop under load three more ways: the
  // background started by a cooperative launch (as coop starts a job), the writing thread asleep
  // 5 ms between writes (as a periodic task's thread is), another thread polling the job's
  // stream with cudaStreamQuery all the while.
  struct Row {
    int mode, load;
    const char* extra;
  };
  const Row rows[] = {{0, 1, "sleep"}, {3, 1, "sleep"}, {4, 1, "sleep"}, {5, 1, "sleep"},
                      {0, 1, "sleep"}, {3, 1, "sleep"}, {4, 1, "sleep"}, {5, 1, "sleep"},
                      {0, 0, "sleep"}, {4, 0, "sleep"}, {5, 0, "sleep"}, {2, 1, "sleep"}};
  // The relay modes: the front end of the GPU waits (cuStreamWaitValue32, pre-enqueued on the
  // control stream one write ahead) for a doorbell in pinned host memory, then writes the device
  // word: a stream write of the value known at enqueue time (relayw) or a 4-byte copy from pinned
  // memory, which reads the value when it runs (relayc). The host's write is two plain stores.
  auto arm = [&](int mode, unsigned i) {
    CUstreamBatchMemOpParams ops[2]{};
    ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[0].waitValue.address = reinterpret_cast<CUdeviceptr>(seq_dev);
    ops[0].waitValue.value = i;
    ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    if (mode == 3) {
      ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
      ops[1].writeValue.address = reinterpret_cast<CUdeviceptr>(word);
      ops[1].writeValue.value = i;
      ops[1].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      if (cuStreamBatchMemOp(ctl, 2, ops, 0) != CUDA_SUCCESS) {
        std::printf("relay memops refused\n");
        std::exit(1);
      }
    } else {
      if (cuStreamBatchMemOp(ctl, 1, ops, 0) != CUDA_SUCCESS) {
        std::printf("relay wait refused\n");
        std::exit(1);
      }
      if (mode == 5) {  // relay3: two copies of other words first (release slots, their mask)
        CK(cudaMemcpyAsync(pad, staged_pad, 64, cudaMemcpyHostToDevice, ctl));
        CK(cudaMemcpyAsync(pad + 16, staged_pad + 16, 4, cudaMemcpyHostToDevice, ctl));
      }
      CK(cudaMemcpyAsync(word, staged, 4, cudaMemcpyHostToDevice, ctl));
    }
  };
  for (const Row& row : rows) {
    const int mode = row.mode, load = row.load;
    const std::string extra = row.extra;
    {
      std::memset(host, 0, sizeof(Shared));
      CK(cudaMemset(word, 0, 4));
      CK(cudaMemset(stop, 0, 4));
      CK(cudaDeviceSynchronize());
      bool mapped = mode == 2, loaded = load == 1;
      if (extra == "coop") {
        void* args[] = {&word,
                        &host_dev,
                        &stop,
                        &mapped,
                        &loaded,
                        &big,
                        const_cast<unsigned long long*>(&big_words)};
        CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(background), blocks, 256, args, 0,
                                       job));
      } else {
        background<<<blocks, 256, 0, job>>>(word, host_dev, stop, mapped, loaded, big, big_words);
      }
      CK(cudaGetLastError());
      std::atomic<bool> querying{extra == "query"};
      std::thread poller([&] {
        while (querying.load()) (void)cudaStreamQuery(job);
      });
      {
        auto until = clk::now() + std::chrono::milliseconds(20);
        while (clk::now() < until) {
        }
      }
      const int n = extra == "sleep" ? 150 : 300;
      if (mode >= 3) arm(mode, 1);
      std::vector<std::uint64_t> t0(n + 1), t1(n + 1), t2(n + 1);
      for (int i = 1; i <= n; ++i) {
        t0[i] = host_ns();
        if (mode == 0) {
          CUstreamBatchMemOpParams op{};
          op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
          op.writeValue.address = reinterpret_cast<CUdeviceptr>(word);
          op.writeValue.value = unsigned(i);
          op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
          if (cuStreamBatchMemOp(ctl, 1, &op, 0) != CUDA_SUCCESS) {
            std::printf("memop refused\n");
            std::exit(1);
          }
        } else if (mode == 1) {
          *staged = unsigned(i);
          CK(cudaMemcpyAsync(word, staged, 4, cudaMemcpyHostToDevice, ctl));
        } else if (mode == 2) {
          std::atomic_ref<unsigned>(host->mirror).store(unsigned(i), std::memory_order_release);
        } else {
          std::atomic_ref<unsigned>(*staged).store(unsigned(i), std::memory_order_relaxed);
          std::atomic_ref<unsigned>(host->seq).store(unsigned(i), std::memory_order_release);
        }
        t1[i] = host_ns();
        const auto deadline = clk::now() + std::chrono::milliseconds(200);
        while (std::atomic_ref<unsigned long long>(host->seen_ns[i]).load() == 0 &&
               clk::now() < deadline) {
        }
        t2[i] = host_ns();
        if (mode == 1) CK(cudaStreamSynchronize(ctl));  // the staging word is reused
        if (mode >= 3 && i < n) arm(mode, unsigned(i + 1));  // off the critical path
        if (extra == "sleep") {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        } else {
          auto until = clk::now() + std::chrono::microseconds(200);
          while (clk::now() < until) {
          }
        }
      }
      querying.store(false);
      poller.join();
      CK(cudaStreamSynchronize(ctl));
      host->seq = 0;
      *staged = 1;
      CK(cudaMemcpyAsync(stop, staged, 4, cudaMemcpyHostToDevice, ctl));
      CK(cudaStreamSynchronize(job));
      // The device's clock on the host's: the host saw each stamp after the device wrote it, so
      // the least (host saw - device stamp) over the run is the offset plus the least latency
      // of that read (under a microsecond): the times below read early by at most that.
      std::vector<double> call, visible;
      long long off = LLONG_MAX;
      int missed = 0;
      for (int i = 1; i <= n; ++i)
        if (host->seen_ns[i]) off = std::min(off, (long long)t2[i] - (long long)host->seen_ns[i]);
      for (int i = 1; i <= n; ++i) {
        call.push_back((t1[i] - t0[i]) / 1e3);
        if (!host->seen_ns[i]) {
          ++missed;
          continue;
        }
        visible.push_back(((long long)host->seen_ns[i] + off - (long long)t0[i]) / 1e3);
      }
      std::printf(
          "%-6s %-5s %-5s call p50 %6.1f p99 %6.1f us | seen on the device after the call's start "
          "p50 %6.1f p90 %6.1f p99 %6.1f max %7.1f us | missed %d\n",
          modes[mode], load ? "load" : "idle", extra.c_str(), pct(call, 50), pct(call, 99),
          pct(visible, 50), pct(visible, 90), pct(visible, 99),
          *std::max_element(visible.begin(), visible.end()), missed);
    }
  }
  return 0;
}
