// Example interruptible kernels (include/coop/interruptible.hpp), each with the per-step work
// as a static function that the plain (uninterruptible) kernels of the benchmark and the CPU
// references share:
//   NestedLoops -- the original library's example: two nested loops with a checkpoint in each;
//   Collatz     -- data-dependent loop lengths (the reason kernels outlive watchdogs);
//   Relaxation  -- many Jacobi sweeps of a 1D heat equation per block in shared memory, with
//                  workgroup barriers and workgroup checkpoints; each thread keeps its cell in
//                  Locals so that shared memory can be rebuilt after a relaunch.
#pragma once

#include <cstdint>
#include <vector>

#include "coop/interruptible.hpp"

namespace coop::examples {

struct NestedLoops {
  struct Args {
    std::uint64_t* out;
    std::uint32_t outer, inner;
    std::uint64_t threads;  ///< threads that have an output (the grid may be larger)
  };
  struct Locals {
    std::uint32_t i, j;
    std::uint64_t acc;
  };

  /// The work of one (i, j) step of thread t: integer mixing, so results compare exactly.
  COOP_HD static std::uint64_t step(std::uint64_t t, std::uint32_t i, std::uint32_t j,
                                    std::uint64_t acc) {
    std::uint64_t x = (t + 1) * 0x9e3779b97f4a7c15ull ^ (std::uint64_t(i) << 32 | j);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return acc + (x ^ (x >> 32));
  }

  template <class Ic>
  COOP_HD COOP_INLINE void operator()(Ic& ic, const Args& a, Locals& l) const {
    const std::uint64_t t = ic.global_id();
    COOP_INTERRUPTIBLE_BEGIN(ic);
    if (t >= a.threads) COOP_COMPLETE(ic);
    l.acc = 0;
    for (l.i = 0; l.i < a.outer; ++l.i) {
      COOP_CHECKPOINT(ic);
      for (l.j = 0; l.j < a.inner; ++l.j) {
        COOP_CHECKPOINT(ic);
        l.acc = step(t, l.i, l.j, l.acc);
      }
    }
    a.out[t] = l.acc;
    COOP_INTERRUPTIBLE_END(ic);
  }

  static std::vector<std::uint64_t> reference(const Args& a) {
    std::vector<std::uint64_t> r(a.threads);
    for (std::uint64_t t = 0; t < a.threads; ++t) {
      std::uint64_t acc = 0;
      for (std::uint32_t i = 0; i < a.outer; ++i)
        for (std::uint32_t j = 0; j < a.inner; ++j) acc = step(t, i, j, acc);
      r[t] = acc;
    }
    return r;
  }
};

struct Collatz {
  struct Args {
    std::uint32_t* steps;  ///< per thread: steps for its start value to reach 1
    std::uint64_t first;   ///< thread t starts at first + t
    std::uint64_t threads;
    std::uint32_t check_every;  ///< a checkpoint every this many steps
  };
  struct Locals {
    std::uint64_t x;
    std::uint32_t n;
  };

  COOP_HD static std::uint64_t next(std::uint64_t x) { return (x & 1) ? 3 * x + 1 : x / 2; }

  template <class Ic>
  COOP_HD COOP_INLINE void operator()(Ic& ic, const Args& a, Locals& l) const {
    const std::uint64_t t = ic.global_id();
    COOP_INTERRUPTIBLE_BEGIN(ic);
    if (t >= a.threads) COOP_COMPLETE(ic);
    l.x = a.first + t;
    for (l.n = 0; l.x != 1; ++l.n) {
      if (l.n % a.check_every == 0) {
        COOP_CHECKPOINT(ic);
      }
      l.x = next(l.x);
    }
    a.steps[t] = l.n;
    COOP_INTERRUPTIBLE_END(ic);
  }

  static std::vector<std::uint32_t> reference(const Args& a) {
    std::vector<std::uint32_t> r(a.threads);
    for (std::uint64_t t = 0; t < a.threads; ++t) {
      std::uint64_t x = a.first + t;
      std::uint32_t n = 0;
      for (; x != 1; ++n) x = next(x);
      r[t] = n;
    }
    return r;
  }
};

struct Relaxation {
  struct Args {
    float* out;            ///< blocks x threads cells
    std::uint32_t sweeps;  ///< Jacobi sweeps per block
    std::uint32_t check_every;
  };
  struct Locals {
    float u;
    std::uint32_t sweep;
  };
  static constexpr std::uint32_t kMaxThreads = 1024;
  struct Shared {
    float u[kMaxThreads];
  };

  /// Boundary values of block b's rod: hot on the left, a block-dependent temperature right.
  COOP_HD static float left(std::uint32_t) { return 100.0f; }
  COOP_HD static float right(std::uint32_t b) { return float(b % 7) * 10.0f; }
  /// One Jacobi update: exact in float on every backend ((a + b) * 0.5 cannot be contracted).
  COOP_HD static float update(float west, float east) { return (west + east) * 0.5f; }

  template <class Ic>
  COOP_HD COOP_INLINE void operator()(Ic& ic, const Args& a, Locals& l) const {
    const std::uint32_t i = ic.local_id(), n = ic.local_size(), b = ic.group_id();
    COOP_INTERRUPTIBLE_BEGIN(ic);
    l.u = 0;
    for (l.sweep = 0; l.sweep < a.sweeps; ++l.sweep) {
      if (l.sweep % a.check_every == 0) {
        COOP_WG_CHECKPOINT(ic);  // every thread of the block is here: all stop or none
      }
      // Shared memory does not survive a relaunch: it is rebuilt from Locals every sweep.
      ic.shared().u[i] = l.u;
      ic.barrier();
      {
        const float west = i == 0 ? left(b) : ic.shared().u[i - 1];
        const float east = i + 1 == n ? right(b) : ic.shared().u[i + 1];
        ic.barrier();
        l.u = update(west, east);
      }
    }
    a.out[std::uint64_t(b) * n + i] = l.u;
    COOP_INTERRUPTIBLE_END(ic);
  }

  static std::vector<float> reference(const Args& a, std::uint32_t blocks, std::uint32_t threads) {
    std::vector<float> r(std::size_t(blocks) * threads);
    std::vector<float> u(threads), v(threads);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      std::fill(u.begin(), u.end(), 0.0f);
      for (std::uint32_t s = 0; s < a.sweeps; ++s) {
        for (std::uint32_t i = 0; i < threads; ++i)
          v[i] = update(i == 0 ? left(b) : u[i - 1], i + 1 == threads ? right(b) : u[i + 1]);
        u.swap(v);
      }
      std::copy(u.begin(), u.end(), r.begin() + std::ptrdiff_t(b) * threads);
    }
    return r;
  }
};

}  // namespace coop::examples
