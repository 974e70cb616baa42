// The persistent GEMM (examples/kernels/persistent_gemm.hpp) as a long-running background on a
// GPU, shared by coop_bench_colocate and `coop demo`: its matrices in device memory (small
// integers: the product is exact and checked against a serial one), its progress read beside the
// running kernel, and the plain kernel relaunched once per product as users run it without coop.
// CUDA only (include from a file nvcc compiles).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "coop/cuda/check.hpp"
#include "kernels/persistent_gemm.hpp"

namespace coop::bench {

using examples::PersistentGemm;

/// C = A B (M x K by K x N) in device memory, with the cursor, the progress counter, the stop
/// flag and the parking slots of a persistent run. `offer_steps`: K-steps between the
/// cooperative kernel's offers inside a tile (0: only between tiles).
struct DeviceGemm {
  std::uint32_t m, n, k;
  std::uint32_t offer_steps = examples::PersistentGemmBuffers::kDefaultOfferSteps;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  std::uint64_t* counters = nullptr;  // next, done, resumed, parked (the low 32 bits)
  std::uint32_t* stop = nullptr;
  PersistentGemm::Slot* slots = nullptr;
  float* partial = nullptr;
  std::uint32_t slot_count = 0;     // four per SM: twice the most workgroups the GEMM fits
  cudaStream_t io = nullptr;        // reads and writes beside the running kernel
  std::uint64_t* staged = nullptr;  // pinned: copies of pageable memory may wait for kernels
  std::vector<float> ha, hb;

  DeviceGemm(std::uint32_t m_, std::uint32_t n_, std::uint32_t k_) : m(m_), n(n_), k(k_) {
    examples::PersistentGemmBuffers::check(m, n, k, 1);
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<int> d(-2, 2);
    ha.resize(std::size_t(m) * k);
    hb.resize(std::size_t(k) * n);
    for (auto& x : ha) x = float(d(rng));
    for (auto& x : hb) x = float(d(rng));
    COOP_CUDA_CHECK(cudaMalloc(&a, ha.size() * 4));
    COOP_CUDA_CHECK(cudaMalloc(&b, hb.size() * 4));
    COOP_CUDA_CHECK(cudaMalloc(&c, std::size_t(m) * n * 4));
    COOP_CUDA_CHECK(cudaMalloc(&counters, 4 * sizeof(std::uint64_t)));
    int device = 0, sms = 0;
    COOP_CUDA_CHECK(cudaGetDevice(&device));
    COOP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    slot_count = 4 * std::uint32_t(sms);
    COOP_CUDA_CHECK(cudaMalloc(&slots, slot_count * sizeof(PersistentGemm::Slot)));
    COOP_CUDA_CHECK(cudaMalloc(&partial, std::size_t(slot_count) * PersistentGemm::kTile *
                                             PersistentGemm::kTile * sizeof(float)));
    COOP_CUDA_CHECK(cudaMalloc(&stop, sizeof(std::uint32_t)));
    COOP_CUDA_CHECK(cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
    COOP_CUDA_CHECK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    COOP_CUDA_CHECK(cudaStreamCreateWithFlags(&io, cudaStreamNonBlocking));
    COOP_CUDA_CHECK(cudaMallocHost(&staged, 2 * sizeof(std::uint64_t)));
  }
  ~DeviceGemm() {
    cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(counters), cudaFree(stop);
    cudaFree(slots), cudaFree(partial);
    cudaFreeHost(staged);
    cudaStreamDestroy(io);
  }
  std::uint64_t tiles() const { return std::uint64_t(m / 128) * (n / 128); }
  double tile_flops() const { return 2.0 * 128 * 128 * k; }
  /// Fresh cursor, counters, stop flag and slots; `passes` passes (a large number: until
  /// stopped).
  PersistentGemm::Params arm(std::uint64_t passes) {
    COOP_CUDA_CHECK(cudaMemsetAsync(counters, 0, 4 * sizeof(std::uint64_t), io));
    COOP_CUDA_CHECK(cudaMemsetAsync(slots, 0, slot_count * sizeof(PersistentGemm::Slot), io));
    COOP_CUDA_CHECK(cudaMemsetAsync(stop, 0, sizeof(std::uint32_t), io));
    COOP_CUDA_CHECK(cudaMemsetAsync(c, 0, std::size_t(m) * n * 4, io));
    COOP_CUDA_CHECK(cudaStreamSynchronize(io));
    return {.a = a,
            .b = b,
            .c = c,
            .m = m,
            .n = n,
            .k = k,
            .tiles = tiles(),
            .total = tiles() * passes,
            .next = counters,
            .done = counters + 1,
            .stop = stop,
            .slots = slots,
            .partial = partial,
            .parked = reinterpret_cast<std::uint32_t*>(counters + 3),
            .slot_count = slot_count,
            .offer_steps = offer_steps,
            .resumed = counters + 2};
  }
  std::uint64_t done() { return counter(1); }
  /// Tiles a workgroup parked mid-tile and another finished.
  std::uint64_t resumed() { return counter(2); }
  std::uint64_t counter(int i) {
    COOP_CUDA_CHECK(
        cudaMemcpyAsync(staged, counters + i, sizeof(std::uint64_t), cudaMemcpyDeviceToHost, io));
    COOP_CUDA_CHECK(cudaStreamSynchronize(io));
    return staged[0];
  }
  void request_stop() {
    staged[1] = 1;
    COOP_CUDA_CHECK(
        cudaMemcpyAsync(stop, &staged[1], sizeof(std::uint32_t), cudaMemcpyHostToDevice, io));
    COOP_CUDA_CHECK(cudaStreamSynchronize(io));
  }
  /// Two rows of C against a serial product (exact: small integers). Needs every tile done once.
  bool check() {
    for (std::uint32_t r : {0u, m - 1}) {
      std::vector<float> row(n);
      COOP_CUDA_CHECK(
          cudaMemcpy(row.data(), c + std::size_t(r) * n, n * 4, cudaMemcpyDeviceToHost));
      for (std::uint32_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::uint32_t x = 0; x < k; ++x)
          s += double(ha[std::size_t(r) * k + x]) * double(hb[std::size_t(x) * n + j]);
        if (float(s) != row[j]) return false;
      }
    }
    return true;
  }
};

/// The plain GEMM as users run it in the background: one persistent launch per product, launched
/// again as soon as the last one ends, on `stream`, until stopped. A higher-priority kernel can
/// start only when a launch's blocks drain (it cannot displace them).
class PlainBackground {
 public:
  PlainBackground(DeviceGemm& g, cudaStream_t s, int grid) : g_(g), s_(s) {
    PersistentGemm::Params p = g.arm(1);
    thread_ = std::thread([this, p, grid] {
      while (!stop_.load()) {
        if (cudaMemsetAsync(p.next, 0, sizeof(std::uint64_t), s_) != cudaSuccess) break;
        examples::persistent_gemm_plain<><<<grid, 256, 0, s_>>>(p);
        if (cudaStreamSynchronize(s_) != cudaSuccess) break;
        ++launches_;
      }
    });
  }
  /// Stops after the launch in flight; checks the product.
  std::uint64_t finish() {
    stop_.store(true);
    thread_.join();
    COOP_CUDA_CHECK(cudaStreamSynchronize(s_));
    if (!g_.check()) throw std::runtime_error("the background GEMM's product is wrong");
    return launches_;
  }
  ~PlainBackground() {
    if (thread_.joinable()) {
      stop_.store(true);
      thread_.join();
    }
  }

 private:
  DeviceGemm& g_;
  cudaStream_t s_;
  std::atomic<bool> stop_{false};
  std::uint64_t launches_ = 0;
  std::thread thread_;
};

/// The GEMM as an interruptible kernel (checkpoint, exit, relaunch), what a user builds by hand
/// without coop: for each request the host raises the stop flag, every block parks its tile at
/// its next checkpoint (every `offer_steps` K-steps) or ends between tiles, the request runs on
/// the idle device, and the kernel is launched again, resuming the parked tiles first.
class InterruptibleBackground {
 public:
  InterruptibleBackground(DeviceGemm& g, cudaStream_t s, int grid, std::uint64_t passes)
      : g_(g), s_(s), grid_(grid), p_(g.arm(passes)) {
    p_.park_on_stop = true;
    launch();
  }
  /// Stops the kernel and returns once it has left the device.
  void interrupt() {
    g_.request_stop();
    COOP_CUDA_CHECK(cudaStreamSynchronize(s_));
  }
  /// Launches it again (asynchronously).
  void resume() {
    COOP_CUDA_CHECK(cudaMemsetAsync(g_.stop, 0, sizeof(std::uint32_t), s_));
    launch();
  }
  /// Stops it for good and checks the product.
  void finish() {
    interrupt();
    if (!g_.check()) throw std::runtime_error("the interruptible GEMM's product is wrong");
  }
  std::uint64_t launches() const { return launches_; }

 private:
  void launch() {
    examples::persistent_gemm_plain<><<<grid_, 256, 0, s_>>>(p_);
    COOP_CUDA_CHECK(cudaGetLastError());
    ++launches_;
  }
  DeviceGemm& g_;
  cudaStream_t s_;
  int grid_;
  PersistentGemm::Params p_;
  std::uint64_t launches_ = 0;
};

inline int plain_grid(int sms) {
  int occ = 0;
  COOP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &occ, examples::persistent_gemm_plain<>, 256, 0));
  return occ * sms;
}

}  // namespace coop::bench
