// Example cooperative kernel: level-synchronous frontier BFS (the paper's Fig. 4), with two
// resizing barriers per level and the worklist selector and depth transmitted.
#pragma once

#include <cstdint>
#include <queue>
#include <random>
#include <vector>

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"

namespace coop::examples {

struct FrontierBfs {
  struct Params {
    const std::uint32_t* row;  ///< CSR offsets, n + 1 entries
    const std::uint32_t* col;  ///< CSR targets
    std::uint32_t n;
    std::int32_t* level;      ///< -1 = not reached; level[source] = 0 on entry
    std::uint32_t* queue[2];  ///< worklists, n entries each
    std::uint32_t* size;      ///< size[2]: worklist lengths
  };
  struct Transmit {
    std::uint32_t in = 0;  ///< which worklist is the current frontier
    std::int32_t depth = 0;
  };

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    while (atomic_ref<std::uint32_t>(p.size[t.in]).load(memory_order::relaxed) > 0) {
      {
        // M is stable until the next resizing barrier, so the stride is too.
        const std::uint64_t stride = ctx.global_size();
        const std::uint32_t frontier = p.size[t.in];
        for (std::uint64_t i = ctx.global_id(); i < frontier; i += stride) {
          const std::uint32_t v = p.queue[t.in][i];
          for (std::uint32_t e = p.row[v]; e < p.row[v + 1]; ++e) {
            const std::uint32_t u = p.col[e];
            std::int32_t unseen = -1;
            if (atomic_ref<std::int32_t>(p.level[u]).cas(unseen, t.depth + 1))
              p.queue[1 - t.in][fetch_increment(p.size[1 - t.in])] = u;
          }
        }
      }
      t.in = 1 - t.in;
      COOP_RESIZING_BARRIER(ctx);
      if (ctx.global_id() == 0) p.size[1 - t.in] = 0;  // the old frontier becomes the output
      ++t.depth;
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

/// A seeded random directed graph in CSR form: a ring (so everything is reachable) plus
/// `extra` random arcs per vertex.
struct CsrGraph {
  std::vector<std::uint32_t> row, col;
  std::uint32_t n() const { return std::uint32_t(row.size() - 1); }
};

inline CsrGraph random_graph(std::uint32_t n, std::uint32_t extra, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> adj(n);
  for (std::uint32_t v = 0; v < n; ++v) {
    adj[v].push_back((v + 1) % n);
    for (std::uint32_t k = 0; k < extra; ++k) adj[v].push_back(std::uint32_t(rng() % n));
  }
  CsrGraph g;
  g.row.push_back(0);
  for (auto& a : adj) {
    g.col.insert(g.col.end(), a.begin(), a.end());
    g.row.push_back(std::uint32_t(g.col.size()));
  }
  return g;
}

/// Sequential reference BFS over any CSR graph with `row`, `col` and `n()`: levels, -1 where
/// unreachable.
template <class Graph>
std::vector<std::int32_t> reference_bfs(const Graph& g, std::uint32_t source) {
  std::vector<std::int32_t> level(g.n(), -1);
  std::queue<std::uint32_t> q;
  level[source] = 0;
  q.push(source);
  while (!q.empty()) {
    std::uint32_t v = q.front();
    q.pop();
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e)
      if (level[g.col[e]] < 0) {
        level[g.col[e]] = level[v] + 1;
        q.push(g.col[e]);
      }
  }
  return level;
}

/// Buffers for one FrontierBfs run, in memory every backend's workgroups can use.
struct BfsBuffers {
  BfsBuffers(const CsrGraph& g, std::uint32_t source)
      : row(g.row), col(g.col), level(g.n(), -1), q0(g.n()), q1(g.n()), size(2) {
    level[source] = 0;
    q0[0] = source;
    size[0] = 1;
  }
  FrontierBfs::Params params() {
    return {
        row.data(), col.data(), std::uint32_t(row.size() - 1), level.data(), {q0.data(), q1.data()},
        size.data()};
  }
  ManagedArray<std::uint32_t> row, col;
  ManagedArray<std::int32_t> level;
  ManagedArray<std::uint32_t> q0, q1, size;
};

}  // namespace coop::examples
