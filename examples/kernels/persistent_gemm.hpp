// A persistent tiled matrix multiply written as a cooperative kernel: C = A * B (row-major
// floats), 128 x 128 output tiles claimed one at a time from a shared cursor, optionally over
// several passes (a long-running background job). On the GPU each tile runs on the tensor cores
// (mma.sync m16n8k8: FP32 inputs read as TF32, FP32 sums) from slices of A and B copied into
// workgroup-shared memory by asynchronous copies, two slices in flight (the next one loads while
// the tensor cores work on this one); the CPU backend computes the same tiles in plain FP32.
//
// A workgroup offers to leave between tiles and, every `offer_steps` K-steps, inside a tile: when
// the scheduler wants it back (ctx.kill_requested()), it parks the tile's partial sums in a slot
// of global memory, offers, and leaves; the next workgroup to claim work resumes the parked tile
// at the K it reached. Nothing is lost or computed twice, and the offer interval is a few K-steps
// (tens of microseconds) instead of a whole tile. If the offer declines, the workgroup takes the
// tile back, unless another workgroup already did (then that one finishes it). At the same
// points it requests forks whose workgroups start at the kernel's beginning (resume point 0), so
// the job regrows as soon as capacity comes back, not when a tile ends.
//
// This is the case behind PyTorch's `sm_carveout` and Triton's `idle_sms`: a persistent GEMM
// occupies every SM until it ends, so a concurrent kernel waits for it, whatever its priority.
// As a cooperative kernel it gives SMs back within a few K-steps.
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

namespace coop::examples {

#if COOP_DEVICE_CODE
namespace gemm_detail {
/// Copies 16 bytes from global to shared memory without holding a register (through L2 only,
/// on sm_80 and later; a plain copy before).
__device__ inline void copy16_async(void* shared, const void* global) {
#if __CUDA_ARCH__ >= 800
  const auto to = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(global) : "memory");
#else
  *static_cast<float4*>(shared) = *static_cast<const float4*>(global);
#endif
}
/// Closes the group of copies issued since the last one.
__device__ inline void commit_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` groups of this thread's copies are still in flight.
template <int Pending>
__device__ inline void wait_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}
/// The float at a shared-memory address as a TF32 tensor-core operand: its FP32 bits, of which
/// the tensor cores read sign, exponent and the top 10 mantissa bits (truncation, as fast TF32
/// GEMMs have it; rounding first, cvt.rna.tf32.f32, is several instructions per operand on
/// sm_90 and took about half the slice loop's instructions). An explicit shared-space load:
/// through a generic pointer (as WMMA's fragment loads take) each load costs a 64-bit address and
/// the generic path's latency. (Volatile: the buffer at an address changes between slices, so
/// two loads of it must not merge.)
__device__ inline std::uint32_t tf32_at(std::uint32_t shared_address) {
  std::uint32_t r;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(shared_address));
  return r;
}
/// d += a b for one 16 x 8 x 8 TF32 product on the tensor cores. Fragments as the PTX ISA lays
/// them out for mma.m16n8k8 (g = lane / 4, t = lane % 4): a = A[g][t], A[g+8][t], A[g][t+4],
/// A[g+8][t+4]; b = B[t][g], B[t+4][g]; d = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1].
__device__ inline void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
}  // namespace gemm_detail
#endif

struct PersistentGemm {
  static constexpr std::uint32_t kTile = 128;     ///< output tile side
  static constexpr std::uint32_t kStep = 32;      ///< K per step (the unit of offers and parking)
  static constexpr std::uint32_t kSlice = 16;     ///< K per slice of A and B in shared memory
  static constexpr std::uint32_t kThreads = 256;  ///< the GPU path's warps: 8 of 64 x 32 each
  /// Shared rows padded against bank conflicts: A's 16 + 4 floats put the 8 rows x 4 columns of
  /// a fragment load in 32 banks, B's 128 + 8 its 4 rows x 8 columns.
  static constexpr std::uint32_t kPadA = 4, kPadB = 8;
  static constexpr std::uint32_t kNoSlot = ~0u;
  /// Two workgroups per SM, as the plain kernel has: the GPU kernel's registers stay within 128.
  static constexpr KernelTraits traits{.max_threads = kThreads, .min_groups_per_sm = 2};

  /// A parking slot's record; its partial sums are the slot's 128 x 128 floats of `partial`.
  struct Slot {
    std::uint32_t state;  ///< slot_free, slot_held (being written or read) or slot_parked
    std::uint32_t k;      ///< K already summed
    std::uint64_t tile;   ///< the claim (over all passes)
  };
  enum SlotState : std::uint32_t { slot_free = 0, slot_held = 1, slot_parked = 2 };

  struct Params {
    const float* a;  ///< M x K
    const float* b;  ///< K x N
    float* c;        ///< M x N
    std::uint32_t m, n, k;
    std::uint64_t tiles;              ///< tiles per pass: (M / 128) * (N / 128)
    std::uint64_t total;              ///< tiles * passes
    std::uint64_t* next;              ///< the cursor: the next unclaimed tile (over all passes)
    std::uint64_t* done;              ///< tiles finished (progress for the host)
    std::uint32_t* stop;              ///< nonzero: claim no more tiles (nullptr: run every pass)
    Slot* slots = nullptr;            ///< parking slots (nullptr: offers only between tiles)
    float* partial = nullptr;         ///< slot_count x 128 x 128 partial sums
    std::uint32_t* parked = nullptr;  ///< slots parked now
    std::uint32_t slot_count = 0;
    std::uint32_t offer_steps = 0;     ///< K-steps between offers inside a tile (0: none)
    std::uint64_t* resumed = nullptr;  ///< counts parked tiles resumed (optional)
    /// persistent_gemm_plain only: the stop flag also ends tiles in progress (parked at the next
    /// offer point, resumed by the next launch); otherwise it stops only the claims.
    bool park_on_stop = false;
  };
  /// What a workgroup holds: a tile, the K already summed, the slot it resumes from (kNoSlot:
  /// a fresh tile).
  struct Work {
    std::uint64_t tile;
    std::uint32_t k;
    std::uint32_t slot;
  };
  /// Workgroup-shared memory: two slices of K (one being computed, the next being copied in) of
  /// A's rows and B's columns of the tile, and the work thread 0 claimed for the workgroup. Two,
  /// not more: a kernel's static shared memory stops at 48 KiB (this is 37 KiB).
  struct Shared {
    alignas(128) float a[2][kTile][kSlice + kPadA];  // rows of 16-byte copies: 16-byte aligned
    alignas(128) float b[2][kSlice][kTile + kPadB];
    Work work;
  };

  /// A tile's running sums, held by the threads that compute it: on the GPU each warp's 32 x 64
  /// sub-tile as 2 x 8 tensor-core accumulators of 16 x 8 (mma_tf32's layout); on the CPU backend
  /// the thread's elements (tid, tid + threads, ...) of the row-major tile.
  struct Sums {
#if COOP_DEVICE_CODE
    float v[2][8][4];
    /// Calls f(i, j, e, offset): accumulator v[i][j][e], e even, and its pair e + 1 sit at
    /// offset (row * ld + column) of the tile (the warp's rows wr.., columns wc..).
    template <class F>
    __device__ static void each_pair(std::uint32_t tid, std::uint32_t ld, F&& f) {
      const std::uint32_t warp = tid / 32, lane = tid % 32;
      const std::uint32_t row = (warp / 2) * 32 + lane / 4, col = (warp % 2) * 64 + 2 * (lane % 4);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 8; ++j)
          for (int e = 0; e < 4; e += 2)
            f(i, j, e, std::uint64_t(row + 16 * i + 8 * (e / 2)) * ld + col + 8 * j);
    }
#else
    std::vector<float> v;
#endif
    /// Zero (`src` null) or loaded from a row-major tile at `src` with leading dimension `ld`.
    COOP_HD void load(const float* src, std::uint32_t ld, std::uint32_t tid,
                      std::uint32_t threads) {
#if COOP_DEVICE_CODE
      (void)threads;
      each_pair(tid, ld, [&](int i, int j, int e, std::uint64_t at) {
        const float2 x = src ? *reinterpret_cast<const float2*>(src + at) : float2{0.0f, 0.0f};
        v[i][j][e] = x.x;
        v[i][j][e + 1] = x.y;
      });
#else
      v.assign((kTile * kTile - tid + threads - 1) / threads, 0.0f);
      if (src)
        for (std::size_t i = 0; i < v.size(); ++i) {
          const std::uint32_t e = tid + std::uint32_t(i) * threads;
          v[i] = src[std::uint64_t(e / kTile) * ld + e % kTile];
        }
#endif
    }
    /// Writes the sums to a row-major tile at `dst` with leading dimension `ld`.
    COOP_HD void store(float* dst, std::uint32_t ld, std::uint32_t tid,
                       std::uint32_t threads) const {
#if COOP_DEVICE_CODE
      (void)threads;
      each_pair(tid, ld, [&](int i, int j, int e, std::uint64_t at) {
        *reinterpret_cast<float2*>(dst + at) = float2{v[i][j][e], v[i][j][e + 1]};
      });
#else
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::uint32_t e = tid + std::uint32_t(i) * threads;
        dst[std::uint64_t(e / kTile) * ld + e % kTile] = v[i];
      }
#endif
    }
  };

  /// Tile `t` (of a pass)'s first row and column in C. Tiles go kGroupRows rows of tiles at a
  /// time, down each column of tiles before the next: the few hundred tiles in flight at once
  /// then read a few panels of A and B, which stay in L2, instead of all of B per row of tiles.
  struct Place {
    std::uint32_t row0, col0;
  };
  static constexpr std::uint32_t kGroupRows = 16;
  COOP_HD static Place place(const Params& p, std::uint64_t t) {
    const std::uint32_t tiles_m = p.m / kTile, tiles_n = p.n / kTile;
    const std::uint64_t per_group = std::uint64_t(kGroupRows) * tiles_n;
    const auto group = std::uint32_t(t / per_group);
    const std::uint32_t rows =
        tiles_m - group * kGroupRows < kGroupRows ? tiles_m - group * kGroupRows : kGroupRows;
    const auto i = std::uint32_t(t % per_group);
    return {(group * kGroupRows + i % rows) * kTile, (i / rows) * kTile};
  }
  /// Where tile `t` (of a pass) starts in C.
  COOP_HD static std::uint64_t origin(const Params& p, std::uint64_t t) {
    const Place at = place(p, t);
    return std::uint64_t(at.row0) * p.n + at.col0;
  }
  COOP_HD static float* partial_of(const Params& p, std::uint32_t slot) {
    return p.partial + std::uint64_t(slot) * kTile * kTile;
  }

  /// Thread 0's claim: the next tile, or `total` when the passes are done or the job must stop.
  COOP_HD static std::uint64_t claim(const Params& p) {
    if (p.stop && atomic_ref<std::uint32_t>(*p.stop).load(memory_order::relaxed) != 0)
      return p.total;
    if (atomic_ref<std::uint64_t>(*p.next).load(memory_order::relaxed) >= p.total) return p.total;
    return atomic_ref<std::uint64_t>(*p.next).fetch_add(1);
  }

  /// Adds K-steps [s_begin, s_end) of tile `t` (of a pass) to `sums`, with `threads` threads;
  /// `sync` is a barrier of all of them. Used by the cooperative kernel and by its plain CUDA
  /// twin alike. After each K-step s before s_end it asks `stop_after(s)` (a workgroup-level
  /// call that is also a workgroup barrier: it stands in for the loop's own) and returns s when
  /// that says stop; otherwise it returns s_end. One loop for the whole
  /// tile: the slice after a stop is already on its way into buffer 0 (`primed` for the call
  /// that resumes there), and between checks nothing waits for it.
  template <class Sync, class Stop>
  COOP_HD static std::uint32_t multiply(const Params& p, std::uint64_t t, std::uint32_t s_begin,
                                        std::uint32_t s_end, Sums& sums, Shared& sh,
                                        std::uint32_t tid, std::uint32_t threads, Sync&& sync,
                                        Stop&& stop_after, bool primed = false) {
    const Place at = place(p, t);
    const std::uint32_t row0 = at.row0, col0 = at.col0;
#if COOP_DEVICE_CODE
    using namespace gemm_detail;
    constexpr std::uint32_t kSlicesPerStep = kStep / kSlice;
    constexpr std::uint32_t kRowA = kSlice + kPadA, kRowB = kTile + kPadB;  // floats per row
    const std::uint32_t warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
    const std::uint32_t wr = (warp / 2) * 32, wc = (warp % 2) * 64;  // warp's 32 x 64 sub-tile
    const std::uint32_t k_first = s_begin * kStep;
    const std::uint32_t slices = (s_end - s_begin) * kSlicesPerStep;
    // This thread's first operand in each buffer, as a shared-memory address; every other
    // operand it loads is a constant offset from it.
    const auto a_at = static_cast<std::uint32_t>(__cvta_generic_to_shared(&sh.a[0][wr + g][q]));
    const auto b_at = static_cast<std::uint32_t>(__cvta_generic_to_shared(&sh.b[0][q][wc + g]));
    constexpr std::uint32_t kBufA = kTile * kRowA * 4, kBufB = kSlice * kRowB * 4;  // bytes
    // Copies slice i (A[row0.., k..] 128 x 16 and B[k.., col0..] 16 x 128) into buffer i % 2,
    // 16 bytes per copy, as one group of asynchronous copies. (A K-step is an even number of
    // slices, so the slice after a stop goes to buffer 0, where the resuming call expects it.)
    auto copy_in = [&](std::uint32_t i) {
      const std::uint32_t k0 = k_first + i * kSlice, buf = i & 1;
      for (std::uint32_t x = tid; x < kTile * kSlice / 4; x += threads) {
        const std::uint32_t r = x / (kSlice / 4), c = (x % (kSlice / 4)) * 4;
        copy16_async(&sh.a[buf][r][c], p.a + std::uint64_t(row0 + r) * p.k + k0 + c);
      }
      for (std::uint32_t x = tid; x < kSlice * kTile / 4; x += threads) {
        const std::uint32_t r = x / (kTile / 4), c = (x % (kTile / 4)) * 4;
        copy16_async(&sh.b[buf][r][c], p.b + std::uint64_t(k0 + r) * p.n + col0 + c);
      }
      commit_copies();
    };
    if (!primed) copy_in(0);
    for (std::uint32_t i = 0; i < slices; ++i) {
      if (i + 1 < slices) {
        copy_in(i + 1);  // into the buffer every warp finished reading at the end of i - 1
        wait_copies<1>();
      } else {
        wait_copies<0>();
      }
      sync();  // slice i is in shared memory for every thread
      const std::uint32_t buf = i & 1;
      if (warp < 8) {
        const std::uint32_t a0 = a_at + buf * kBufA, b0 = b_at + buf * kBufB;
        for (std::uint32_t kk = 0; kk < kSlice; kk += 8) {
          std::uint32_t fa[2][4], fb[8][2];
          for (std::uint32_t f = 0; f < 2; ++f)
            for (std::uint32_t e = 0; e < 4; ++e)
              fa[f][e] = tf32_at(a0 + 4 * ((16 * f + 8 * (e % 2)) * kRowA + kk + 4 * (e / 2)));
          for (std::uint32_t j = 0; j < 8; ++j)
            for (std::uint32_t e = 0; e < 2; ++e)
              fb[j][e] = tf32_at(b0 + 4 * ((kk + 4 * e) * kRowB + 8 * j));
          for (int f = 0; f < 2; ++f)
            for (int j = 0; j < 8; ++j) mma_tf32(sums.v[f][j], fa[f], fb[j]);
        }
      }
      // Every warp has read buffer i % 2 before slice i + 2 is copied into it: a workgroup
      // barrier, at a K-step's end stop_after's (which may poll the scheduler on it).
      if ((i + 1) % kSlicesPerStep == 0 && i + 1 < slices) {
        const std::uint32_t s = s_begin + (i + 1) / kSlicesPerStep;
        if (stop_after(s)) return s;
      } else {
        sync();
      }
    }
    return s_end;
#else
    (void)sh;
    (void)sync;
    (void)primed;
    for (std::uint32_t s = s_begin; s < s_end; ++s) {
      for (std::size_t i = 0; i < sums.v.size(); ++i) {
        const std::uint32_t e = tid + std::uint32_t(i) * threads;
        const std::uint32_t r = row0 + e / kTile, c = col0 + e % kTile;
        float sum = sums.v[i];
        for (std::uint32_t x = s * kStep; x < (s + 1) * kStep; ++x)
          sum += p.a[std::uint64_t(r) * p.k + x] * p.b[std::uint64_t(x) * p.n + c];
        sums.v[i] = sum;
      }
      if (s + 1 < s_end && stop_after(s + 1)) return s + 1;
    }
    return s_end;
#endif
  }

  /// Thread 0: the next work for its workgroup in `w` — a parked tile first, else a fresh one.
  /// Returns 1 with work, 0 with none for now (a tile parked by a workgroup still running may
  /// come: only with `wait_for_parked`), 2 when this workgroup is done (stopping, the cursor spent
  /// and nothing to wait for, or every tile finished).
  /// The search starts at slot `hint` (the workgroup's id: a workgroup forked back with the id of
  /// one that left finds its tile first), as parking does, so that neither walks the slots one
  /// load at a time.
  COOP_HD static std::uint32_t take_work(const Params& p, Work& w, std::uint32_t hint,
                                         bool wait_for_parked = true) {
    if (p.slot_count && atomic_ref<std::uint32_t>(*p.parked).load(memory_order::relaxed) != 0)
      for (std::uint32_t n = 0; n < p.slot_count; ++n) {
        const std::uint32_t i = (hint + n) % p.slot_count;
        atomic_ref<std::uint32_t> state(p.slots[i].state);
        std::uint32_t expect = slot_parked;
        if (state.load(memory_order::relaxed) == slot_parked && state.cas(expect, slot_held)) {
          atomic_ref<std::uint32_t>(*p.parked).fetch_sub(1);
          if (p.resumed) atomic_ref<std::uint64_t>(*p.resumed).fetch_add(1, memory_order::relaxed);
          w = {p.slots[i].tile, p.slots[i].k, i};
          return 1;
        }
      }
    const std::uint64_t t = claim(p);
    if (t < p.total) {
      w = {t, 0, kNoSlot};
      return 1;
    }
    const bool stopping =
        p.stop && atomic_ref<std::uint32_t>(*p.stop).load(memory_order::relaxed) != 0;
    return stopping || !wait_for_parked || atomic_ref<std::uint64_t>(*p.done).load() >= p.total ? 2
                                                                                                : 0;
  }
  /// Waits for this thread's copies into shared memory still in flight (none on the CPU).
  COOP_HD static void settle_copies() {
#if COOP_DEVICE_CODE
    gemm_detail::wait_copies<0>();
#endif
  }
  /// Thread 0: a free slot for parking (kNoSlot: all in use; the workgroup then keeps its tile).
  COOP_HD static std::uint32_t hold_slot(const Params& p, std::uint32_t hint) {
    for (std::uint32_t i = 0; i < p.slot_count; ++i) {
      const std::uint32_t s = (hint + i) % p.slot_count;
      atomic_ref<std::uint32_t> state(p.slots[s].state);
      std::uint32_t expect = slot_free;
      if (state.load(memory_order::relaxed) == slot_free && state.cas(expect, slot_held)) return s;
    }
    return kNoSlot;
  }

  /// Runs the work in `sh.work` to its end and returns true, or returns false when the
  /// workgroup left mid-tile (its sums parked for another workgroup to finish).
  template <class Ctx>
  COOP_HD static bool run(Ctx& ctx, const Params& p, Shared& sh) {
    const std::uint32_t tid = ctx.local_id(), threads = ctx.local_size();
    const Work w = sh.work;
    auto sync = [&] { ctx.barrier(); };
    Sums sums;
    if (w.slot == kNoSlot) {
      sums.load(nullptr, kTile, tid, threads);
    } else {
      thread_fence();  // thread 0 acquired the slot: read what its parker wrote, not a stale copy
      sums.load(partial_of(p, w.slot), kTile, tid, threads);
      ctx.barrier();  // every thread has read the slot before it is reused
      if (tid == 0) atomic_ref<std::uint32_t>(p.slots[w.slot].state).store(slot_free);
    }
    const std::uint64_t t = w.tile % p.tiles;
    const std::uint32_t steps = p.k / kStep;
    // Polls every `every` K-steps, on the slice loop's barrier there (poll_barrier: one vote,
    // which is that barrier, for both a kill and a fork): a separate vote for each cost the tile
    // loop 2-4 % at an offer every 4 K-steps. The slice loop only polls: an answer ends it, and
    // the fork or the leave happens out here, where it does not shape the loop's code.
    const std::uint32_t every = p.offer_steps && p.slot_count ? p.offer_steps : 0;
    std::uint32_t poll_at = every ? (w.k / kStep / every + 1) * every : steps;
    Polled want;
    auto stop_after = [&](std::uint32_t s) {
      if (s != poll_at) {
        sync();
        return false;
      }
      poll_at += every;
      want = ctx.poll_barrier();
      return want.kill || want.fork;
    };
    bool primed = false;  // the next K-step's first slice is on its way to shared memory
    for (std::uint32_t s = w.k / kStep;;) {
      s = multiply(p, t, s, steps, sums, sh, tid, threads, sync, stop_after, primed);
      if (s == steps) break;
      primed = true;
      // Capacity came back: new workgroups start at the kernel's beginning (resume point 0) and
      // take parked tiles or fresh ones, without waiting for this tile to end.
      if (want.fork) ctx.request_fork(0);
      if (!want.kill) continue;
      // Wanted elsewhere: park the sums, then offer. (The slice on its way lands first: a
      // workgroup that leaves must not exit with copies into its shared memory in flight, and
      // one that stays finds it there.)
      settle_copies();
      const std::uint32_t slot = ctx.broadcast(tid == 0 ? hold_slot(p, ctx.group_id()) : 0u);
      if (slot == kNoSlot) continue;
      sums.store(partial_of(p, slot), kTile, tid, threads);
      thread_fence();
      ctx.barrier();
      if (tid == 0) {
        p.slots[slot].tile = w.tile;
        p.slots[slot].k = s * kStep;
        atomic_ref<std::uint32_t>(p.slots[slot].state).store(slot_parked);
        atomic_ref<std::uint32_t>(*p.parked).fetch_add(1);
      }
      if (ctx.offer_kill()) return false;
      // Declined: take the tile back, unless another workgroup has resumed it already.
      const bool mine = ctx.broadcast(tid == 0 ? reclaim(p, slot) : false);
      if (!mine) return true;
    }
    sums.store(p.c + origin(p, t), p.n, tid, threads);
    if (tid == 0) atomic_ref<std::uint64_t>(*p.done).fetch_add(1);
    return true;
  }
  COOP_HD static bool reclaim(const Params& p, std::uint32_t slot) {
    std::uint32_t expect = slot_parked;
    if (!atomic_ref<std::uint32_t>(p.slots[slot].state).cas(expect, slot_free)) return false;
    atomic_ref<std::uint32_t>(*p.parked).fetch_sub(1);
    return true;
  }

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    auto& sh = ctx.shared();
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);  // between tiles: leaving here loses nothing
      // Joining workgroups start at the kernel's beginning (resume point 0), as those forked
      // inside a tile do, and claim work too. With one resume point the kernel's loop has one
      // entry: a fork point here (COOP_REQUEST_FORK) made ptxas compile the loop a second time,
      // for joining grids, and schedule that copy's tensor-core code worse.
      ctx.request_fork(0);
      const std::uint32_t got =
          ctx.broadcast(ctx.local_id() == 0 ? take_work(p, sh.work, ctx.group_id()) : 0u);
      if (got == 2) break;
      if (got == 0) {  // the cursor is spent but a parked tile may still come back
        ctx.pause();
        continue;
      }
      if (!run(ctx, p, sh)) return;
    }
    COOP_END(ctx);
  }
};

/// The same kernel declared restartable (KernelTraits::restartable): its progress is the tile
/// cursor and the parked tiles, so workgroups started at resume point 0 carry on, and a
/// whole-device task takes workgroup 0's slot too (the job is suspended whole and restarted
/// after). Not the default: beside the co-location benchmark's requests it kept about as much of
/// the background as the default form, whose workgroup 0 pauses beside the task, at a slightly
/// higher request p99 (results/2026-11-28-restartable/, results/2026-11-28-colocation-stall/).
struct RestartablePersistentGemm : PersistentGemm {
  static constexpr KernelTraits traits{
      .max_threads = kThreads, .min_groups_per_sm = 2, .restartable = true};
};

#if COOP_CUDA_COMPILER
/// What PersistentGemm::run needs of a context, for plain CUDA blocks. With `park_on_stop` the
/// stop flag is a request to leave mid-tile (park the partial sums and exit), as a user would
/// write a kernel that is stopped and relaunched around urgent work; without it nothing asks a
/// block to leave, at the cost of a branch on a kernel parameter. (A run-time flag, not a
/// template parameter: one kernel, so that both uses run the same machine code. Two
/// instantiations were scheduled differently by ptxas, 10 % apart in the tensor-core loop's
/// issue cycles.)
struct PlainGemmBlock {
  const PersistentGemm::Params& p;
  std::uint64_t* scratch;  // a shared-memory word for broadcasts
  __device__ std::uint32_t local_id() const { return threadIdx.x; }
  __device__ std::uint32_t local_size() const { return blockDim.x; }
  __device__ std::uint32_t group_id() const { return blockIdx.x; }
  __device__ void barrier() const { __syncthreads(); }
  __device__ Polled poll_barrier() const {
    if (!p.park_on_stop) {
      __syncthreads();
      return {};
    }
    return {
        __syncthreads_or(threadIdx.x == 0 && p.stop &&
                         atomic_ref<std::uint32_t>(*p.stop).load(memory_order::relaxed) != 0) != 0,
        false};
  }
  __device__ bool offer_kill() const { return p.park_on_stop; }
  __device__ std::uint32_t request_fork(int) const { return 0; }
  template <class T>
  __device__ T broadcast(const T& v) const {
    __syncthreads();
    if (threadIdx.x == 0) *scratch = std::uint64_t(v);
    __syncthreads();
    return T(*scratch);
  }
};

/// The same tile loop as a plain CUDA kernel, without coop's primitives: what users run today (a
/// persistent grid of occupancy x SMs blocks of 256 threads, launched once per product). The
/// baseline of the co-location benchmark and of `coop demo`. With `p.park_on_stop` the stop
/// flag also ends tiles in progress (their partial sums parked, resumed by the next launch): the
/// checkpoint-exit-relaunch alternative to a cooperative job. (A template, so that every
/// translation unit may include it.)
template <class = void>
__global__ void __launch_bounds__(256, 2) persistent_gemm_plain(PersistentGemm::Params p) {
  __shared__ PersistentGemm::Shared sh;
  __shared__ std::uint64_t scratch;
  const PlainGemmBlock block{p, &scratch};
  for (;;) {
    const std::uint32_t got = block.broadcast(
        threadIdx.x == 0 ? PersistentGemm::take_work(p, sh.work, blockIdx.x, false) : 0u);
    if (got != 1) return;
    if (!PersistentGemm::run(block, p, sh)) return;
  }
}
#endif

/// The matrices (small integers in [-2, 2], so that every product is exact), the cursor, the
/// progress counter and the parking slots, in managed memory. `slots`: tiles that may be parked
/// at once (each 64 KiB; twice the job's workgroups is ample: with fewer, a workgroup that finds
/// none free finishes its tile before it offers); `offer_steps`: K-steps of 32 between offers
/// inside a tile (0: offers only between tiles).
struct PersistentGemmBuffers {
  PersistentGemmBuffers(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t passes,
                        std::uint64_t seed = 1, std::uint32_t slots = 16,
                        std::uint32_t offer_steps = kDefaultOfferSteps)
      : a(std::size_t(check(m, n, k, passes)) * k),
        b(std::size_t(k) * n),
        c(std::size_t(m) * n),
        slots_(slots),
        partial(std::size_t(slots) * PersistentGemm::kTile * PersistentGemm::kTile),
        offer_steps_(offer_steps),
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
  /// Claims after which every tile of C's first row of tiles has been claimed (PersistentGemm::
  /// place: the first kGroupRows rows of tiles go together).
  std::uint64_t claims_through_first_row() const {
    const std::uint32_t tiles_m = m_ / PersistentGemm::kTile;
    return std::uint64_t(tiles_m < PersistentGemm::kGroupRows ? tiles_m
                                                              : PersistentGemm::kGroupRows) *
           (n_ / PersistentGemm::kTile);
  }
  /// K-steps between offers inside a tile by default: 4 x 32 of K, a few microseconds on the GPU.
  static constexpr std::uint32_t kDefaultOfferSteps = 4;
  PersistentGemm::Params params(std::uint32_t* stop = nullptr) {
    return {.a = a.data(),
            .b = b.data(),
            .c = c.data(),
            .m = m_,
            .n = n_,
            .k = k_,
            .tiles = tiles(),
            .total = tiles() * passes_,
            .next = next.get(),
            .done = done.get(),
            .stop = stop,
            .slots = slots_.data(),
            .partial = partial.data(),
            .parked = parked.get(),
            .slot_count = std::uint32_t(slots_.size()),
            .offer_steps = offer_steps_,
            .resumed = resumed.get()};
  }
  /// Resets the cursor, the progress counter and the slots for another run.
  void rewind() {
    *next = 0;
    *done = 0;
    *parked = 0;
    *resumed = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i] = {};
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
  ManagedArray<PersistentGemm::Slot> slots_;
  ManagedArray<float> partial;
  Managed<std::uint64_t> next, done, resumed;
  Managed<std::uint32_t> parked;
  std::uint32_t offer_steps_;
  std::uint32_t m_, n_, k_, passes_;
};

}  // namespace coop::examples
