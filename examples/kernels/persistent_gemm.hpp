// A persistent tiled matrix multiply written as a cooperative kernel: C = A * B (row-major
// floats), 128 x 128 output tiles claimed one at a time from a shared cursor, optionally over
// several passes (a long-running background job). A workgroup offers to leave and new ones
// join only between tiles, so a workgroup taken away never holds a half-computed tile. On the
// GPU each tile runs on the tensor cores (WMMA, TF32 inputs, FP32 accumulation) from tiles of A
// and B staged in workgroup-shared memory; the CPU backend computes the same tiles in plain FP32.
//
// This is the case behind PyTorch's `sm_carveout` and Triton's `idle_sms`: a persistent GEMM
// occupies every SM until it ends, so a concurrent kernel waits for it, whatever its priority.
// As a cooperative kernel it gives SMs back within one tile's time.
//
// Shapes: M and N multiples of 128, K a multiple of 32 (PersistentGemmBuffers checks). With
// small-integer inputs (as the tests use) every product is exact in TF32 and FP32, so the GPU's
// result equals the CPU reference bit for bit.
#pragma once

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"

#if COOP_DEVICE_CODE
#include <mma.h>
#endif

namespace coop::examples {

struct PersistentGemm {
  static constexpr std::uint32_t kTile = 128;     ///< output tile side
  static constexpr std::uint32_t kStep = 32;      ///< K per stage in shared memory
  static constexpr std::uint32_t kThreads = 256;  ///< the GPU path's warps: 8 of 64 x 32 each
  static constexpr std::uint32_t kPad = 4;        ///< shared rows padded against bank conflicts

  struct Params {
    const float* a;  ///< M x K
    const float* b;  ///< K x N
    float* c;        ///< M x N
    std::uint32_t m, n, k;
    std::uint64_t tiles;  ///< tiles per pass: (M / 128) * (N / 128)
    std::uint64_t total;  ///< tiles * passes
    std::uint64_t* next;  ///< the cursor: the next unclaimed tile (over all passes)
    std::uint64_t* done;  ///< tiles finished (progress for the host)
    std::uint32_t* stop;  ///< nonzero: claim no more tiles (nullptr: run every pass)
  };
  /// Workgroup-shared memory: one K-step of A's rows and B's columns of the tile.
  struct Shared {
    alignas(32) float a[kTile][kStep + kPad];  // WMMA loads need 256-bit aligned rows
    alignas(32) float b[kStep][kTile + kPad];
  };

  /// Thread 0's claim: the next tile, or `total` when the passes are done or the job must stop.
  COOP_HD static std::uint64_t claim(const Params& p) {
    if (p.stop && atomic_ref<std::uint32_t>(*p.stop).load(memory_order::relaxed) != 0)
      return p.total;
    return atomic_ref<std::uint64_t>(*p.next).fetch_add(1);
  }

  /// Computes output tile `t` (of one pass) with `threads` threads; `sync` is a barrier of all
  /// of them. Used by the cooperative kernel and by its plain CUDA twin alike.
  template <class Sync>
  COOP_HD static void tile(const Params& p, std::uint64_t t, Shared& sh, std::uint32_t tid,
                           std::uint32_t threads, Sync&& sync) {
    const std::uint32_t tiles_n = p.n / kTile;
    const std::uint32_t row0 = std::uint32_t(t / tiles_n) * kTile;
    const std::uint32_t col0 = std::uint32_t(t % tiles_n) * kTile;
#if COOP_DEVICE_CODE
    namespace wmma = nvcuda::wmma;
    using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
    using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
    using Acc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
    const std::uint32_t warp = tid / 32;
    const std::uint32_t wr = (warp / 2) * 32, wc = (warp % 2) * 64;  // warp's 32 x 64 sub-tile
    Acc acc[2][4];
    for (auto& r : acc)
      for (auto& f : r) wmma::fill_fragment(f, 0.0f);
    for (std::uint32_t k0 = 0; k0 < p.k; k0 += kStep) {
      // Stage A[row0.., k0..] (128 x 32) and B[k0.., col0..] (32 x 128), four floats at a time.
      for (std::uint32_t i = tid; i < kTile * kStep / 4; i += threads) {
        const std::uint32_t r = i / (kStep / 4), c = (i % (kStep / 4)) * 4;
        const float4 v =
            *reinterpret_cast<const float4*>(p.a + std::uint64_t(row0 + r) * p.k + k0 + c);
        sh.a[r][c] = v.x, sh.a[r][c + 1] = v.y, sh.a[r][c + 2] = v.z, sh.a[r][c + 3] = v.w;
      }
      for (std::uint32_t i = tid; i < kStep * kTile / 4; i += threads) {
        const std::uint32_t r = i / (kTile / 4), c = (i % (kTile / 4)) * 4;
        const float4 v =
            *reinterpret_cast<const float4*>(p.b + std::uint64_t(k0 + r) * p.n + col0 + c);
        sh.b[r][c] = v.x, sh.b[r][c + 1] = v.y, sh.b[r][c + 2] = v.z, sh.b[r][c + 3] = v.w;
      }
      sync();
      if (warp < 8) {
        for (std::uint32_t kk = 0; kk < kStep; kk += 8) {
          FragA fa[2];
          FragB fb[4];
          for (int i = 0; i < 2; ++i) {
            wmma::load_matrix_sync(fa[i], &sh.a[wr + 16 * i][kk], kStep + kPad);
            for (int e = 0; e < fa[i].num_elements; ++e)
              fa[i].x[e] = wmma::__float_to_tf32(fa[i].x[e]);
          }
          for (int j = 0; j < 4; ++j) {
            wmma::load_matrix_sync(fb[j], &sh.b[kk][wc + 16 * j], kTile + kPad);
            for (int e = 0; e < fb[j].num_elements; ++e)
              fb[j].x[e] = wmma::__float_to_tf32(fb[j].x[e]);
          }
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
      }
      sync();  // every warp has read this stage before the next overwrites it
    }
    if (warp < 8)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j)
          wmma::store_matrix_sync(
              p.c + std::uint64_t(row0 + wr + 16 * i) * p.n + col0 + wc + 16 * j, acc[i][j], p.n,
              wmma::mem_row_major);
#else
    (void)sh;
    (void)sync;
    for (std::uint32_t e = tid; e < kTile * kTile; e += threads) {
      const std::uint32_t r = row0 + e / kTile, c = col0 + e % kTile;
      float sum = 0;
      for (std::uint32_t x = 0; x < p.k; ++x)
        sum += p.a[std::uint64_t(r) * p.k + x] * p.b[std::uint64_t(x) * p.n + c];
      p.c[std::uint64_t(r) * p.n + c] = sum;
    }
#endif
  }

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    auto& sh = ctx.shared();
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);    // between tiles: leaving here loses nothing
      COOP_REQUEST_FORK(ctx);  // joining workgroups start here and claim tiles too
      const std::uint64_t t = ctx.broadcast(ctx.local_id() == 0 ? claim(p) : 0);
      if (t >= p.total) break;
      tile(p, t % p.tiles, sh, ctx.local_id(), ctx.local_size(), [&] { ctx.barrier(); });
      if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(*p.done).fetch_add(1);
    }
    COOP_END(ctx);
  }
};

#if COOP_CUDA_COMPILER
/// The same tile loop as a plain CUDA kernel, without coop's primitives: what users run today (a
/// persistent grid of occupancy x SMs blocks of 256 threads, launched once per product). The
/// baseline of the co-location benchmark and of `coop demo`. (A template, so that every
/// translation unit may include it.)
template <int = 0>
__global__ void __launch_bounds__(256) persistent_gemm_plain(PersistentGemm::Params p) {
  __shared__ PersistentGemm::Shared sh;
  __shared__ std::uint64_t claimed;
  for (;;) {
    if (threadIdx.x == 0) claimed = PersistentGemm::claim(p);
    __syncthreads();
    const std::uint64_t t = claimed;
    if (t >= p.total) return;
    PersistentGemm::tile(p, t % p.tiles, sh, threadIdx.x, blockDim.x, [] { __syncthreads(); });
    if (threadIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(p.done), 1ull);
    __syncthreads();  // every thread has read `claimed` before thread 0 claims again
  }
}
#endif

/// The matrices (small integers in [-2, 2], so that every product is exact), the cursor and the
/// progress counter, in managed memory.
struct PersistentGemmBuffers {
  PersistentGemmBuffers(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t passes,
                        std::uint64_t seed = 1)
      : a(std::size_t(check(m, n, k, passes)) * k),
        b(std::size_t(k) * n),
        c(std::size_t(m) * n),
        m_(m),
        n_(n),
        k_(k),
        passes_(passes) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> d(-2, 2);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(d(rng));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(d(rng));
  }
  /// Throws std::invalid_argument unless M, N are positive multiples of 128, K of 32, and passes
  /// at least 1; returns m.
  static std::uint32_t check(std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             std::uint32_t passes) {
    const auto t = PersistentGemm::kTile, s = PersistentGemm::kStep;
    if (m == 0 || n == 0 || k == 0 || m % t || n % t || k % s)
      throw std::invalid_argument("persistent GEMM: M and N must be positive multiples of " +
                                  std::to_string(t) + " and K of " + std::to_string(s) + " (got " +
                                  std::to_string(m) + " x " + std::to_string(n) + " x " +
                                  std::to_string(k) + ")");
    if (passes == 0) throw std::invalid_argument("persistent GEMM: passes must be at least 1");
    return m;
  }
  /// Throws std::invalid_argument when a launch's workgroups are not 256 threads on the GPU
  /// (the tensor-core path's eight warps).
  static void check_threads(std::uint32_t threads, bool gpu) {
    if (gpu && threads != PersistentGemm::kThreads)
      throw std::invalid_argument("persistent GEMM runs with 256 threads per workgroup on the GPU");
    if (threads == 0) throw std::invalid_argument("persistent GEMM needs at least one thread");
  }
  std::uint64_t tiles() const {
    return std::uint64_t(m_ / PersistentGemm::kTile) * (n_ / PersistentGemm::kTile);
  }
  std::uint64_t flops_per_pass() const { return 2ull * m_ * n_ * k_; }
  PersistentGemm::Params params(std::uint32_t* stop = nullptr) {
    return {a.data(), b.data(),          c.data(),   m_,         n_,  k_,
            tiles(),  tiles() * passes_, next.get(), done.get(), stop};
  }
  /// Resets the cursor and the progress counter for another run.
  void rewind() {
    *next = 0;
    *done = 0;
  }
  /// C's rows [row0, row0 + rows) by a serial FP64 loop (exact for these inputs).
  std::vector<float> reference_rows(std::uint32_t row0, std::uint32_t rows) const {
    std::vector<float> out(std::size_t(rows) * n_);
    for (std::uint32_t r = 0; r < rows; ++r)
      for (std::uint32_t j = 0; j < n_; ++j) {
        double s = 0;
        for (std::uint32_t x = 0; x < k_; ++x)
          s += double(a[std::size_t(row0 + r) * k_ + x]) * double(b[std::size_t(x) * n_ + j]);
        out[std::size_t(r) * n_ + j] = float(s);
      }
    return out;
  }
  ManagedArray<float> a, b, c;
  Managed<std::uint64_t> next, done;
  std::uint32_t m_, n_, k_, passes_;
};

}  // namespace coop::examples
