// Recipe (docs/guide.md, "A reduction and a termination test across resizing barriers"): a
// Jacobi heat stencil on an n x n plate with fixed edges, iterated until no cell changes by more
// than a tolerance. Every iteration is one interval between resizing barriers: the workgroups
// share the interior cells by a grid-stride loop, reduce the largest change with an atomic
// maximum, and after the barrier all of them read the same maximum and so agree on stopping.
//
// Temperatures are fixed-point integers (1/1000 degree): the reduction uses integer atomics and
// the result is bit-exact against the sequential reference, whatever the schedule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"

namespace coop::examples {

struct Jacobi {
  struct Params {
    std::uint32_t* grid[2];     ///< two n x n buffers; iteration i reads grid[i % 2]
    std::uint32_t n;            ///< plate side, >= 3 (the edges stay as they were)
    std::uint32_t tolerance;    ///< stop once no cell changes by more than this
    std::uint32_t max_iters;    ///< ... or after this many iterations
    std::uint32_t* change;      ///< [3]: iteration i's largest change goes to change[i % 3]
    std::uint32_t* iterations;  ///< out: iterations run
  };
  /// What a workgroup that joins at a resizing barrier needs: where the iteration stands. Locals
  /// would be undefined in a joining workgroup.
  struct Transmit {
    std::uint32_t iter = 0;
    std::uint32_t last_change = ~0u;  ///< largest change of the previous iteration
  };

  /// The new value of interior cell (r, c): the mean of its four neighbours.
  COOP_HD static std::uint32_t relax(const std::uint32_t* in, std::uint32_t n, std::uint32_t r,
                                     std::uint32_t c) {
    const std::uint64_t sum = std::uint64_t(in[(r - 1) * n + c]) + in[(r + 1) * n + c] +
                              in[r * n + c - 1] + in[r * n + c + 1];
    return std::uint32_t(sum / 4);
  }

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    while (t.iter < p.max_iters && t.last_change > p.tolerance) {
      {  // locals live in their own block: the resume point below may not jump over them
        const std::uint32_t* in = p.grid[t.iter % 2];
        std::uint32_t* out = p.grid[1 - t.iter % 2];
        const std::uint32_t side = p.n - 2;
        const std::uint64_t cells = std::uint64_t(side) * side;
        const std::uint64_t stride = ctx.global_size();  // M is stable until the next barrier
        std::uint32_t largest = 0;
        for (std::uint64_t i = ctx.global_id(); i < cells; i += stride) {
          const std::uint32_t r = std::uint32_t(i / side) + 1, c = std::uint32_t(i % side) + 1;
          const std::uint32_t v = relax(in, p.n, r, c), old = in[r * p.n + c];
          out[r * p.n + c] = v;
          const std::uint32_t d = v > old ? v - old : old - v;
          if (d > largest) largest = d;
        }
        // Many threads, one maximum: relaxed is enough, the barrier below publishes it.
        if (largest)
          atomic_ref<std::uint32_t>(p.change[t.iter % 3]).fetch_max(largest, memory_order::relaxed);
        // The slot the next iteration reduces into was last read after the previous barrier,
        // which every workgroup has passed: clearing it now races with nobody.
        if (ctx.global_id() == 0)
          atomic_ref<std::uint32_t>(p.change[(t.iter + 1) % 3]).store(0, memory_order::relaxed);
      }
      COOP_RESIZING_BARRIER(ctx);  // every write of this iteration is visible after it
      // Every workgroup reads the same complete maximum, so all leave the loop together (one
      // leaving alone would leave the others waiting at the next barrier).
      t.last_change = atomic_ref<std::uint32_t>(p.change[t.iter % 3]).load();
      ++t.iter;
    }
    if (ctx.global_id() == 0) *p.iterations = t.iter;
    COOP_END(ctx);
  }
};

/// A plate with hot and cold edges and a cold interior, its buffers in managed memory.
struct JacobiBuffers {
  JacobiBuffers(std::uint32_t n, std::uint32_t tolerance, std::uint32_t max_iters)
      : a(initial(n)),
        b(initial(n)),
        change(3, 0),
        n_(n),
        tolerance_(tolerance),
        max_iters_(max_iters) {}

  /// Edges: top 100 degrees, left 50, bottom and right 0; interior 0 (fixed point, 1/1000).
  static std::vector<std::uint32_t> initial(std::uint32_t n) {
    std::vector<std::uint32_t> g(std::size_t(n) * n, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      g[i] = 100'000;                  // top row
      g[std::size_t(i) * n] = 50'000;  // left column
    }
    return g;
  }
  Jacobi::Params params() {
    return {{a.data(), b.data()}, n_, tolerance_, max_iters_, change.data(), iterations.get()};
  }
  /// The plate after the run: the buffer the last iteration wrote.
  std::vector<std::uint32_t> result() const { return (*iterations % 2 == 0 ? a : b).to_vector(); }

  /// The same iteration, sequentially: the plate and the number of iterations.
  static std::pair<std::vector<std::uint32_t>, std::uint32_t> reference(std::uint32_t n,
                                                                        std::uint32_t tolerance,
                                                                        std::uint32_t max_iters) {
    std::vector<std::uint32_t> in = initial(n), out = in;
    std::uint32_t iter = 0, last_change = ~0u;
    while (iter < max_iters && last_change > tolerance) {
      last_change = 0;
      for (std::uint32_t r = 1; r + 1 < n; ++r)
        for (std::uint32_t c = 1; c + 1 < n; ++c) {
          const std::uint32_t v = Jacobi::relax(in.data(), n, r, c), old = in[r * n + c];
          out[r * n + c] = v;
          last_change = std::max(last_change, v > old ? v - old : old - v);
        }
      std::swap(in, out);
      ++iter;
    }
    return {in, iter};
  }

  ManagedArray<std::uint32_t> a, b, change;
  Managed<std::uint32_t> iterations;
  std::uint32_t n_, tolerance_, max_iters_;
};

}  // namespace coop::examples
