// Single-source shortest paths, two ways (distances are 64-bit: no overflow for 32-bit weights).
//
// l-sssp (LonestarGPU): the bfs worklist skeleton with atomicMin relaxation (data-driven
// Bellman-Ford). A vertex whose distance dropped is pushed once per round (a round stamp
// dedups), in slices of at most kSliceArcs arcs (common.hpp). Two barriers per round; worklist
// selector, round and frontier size transmitted.
//
// p-sssp (Pannotia): Bellman-Ford as repeated min-plus SpMV over the transposed graph (pull):
// assign next = dist, relax next[v] = min over in-arcs (u,v,w) of dist[u] + w, diff
// (dist = next, raise the flag on change). Three barriers per iteration.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "coop/apps/common.hpp"

namespace coop::apps {

struct LSssp {
  struct Params {
    GraphView g;
    std::uint64_t* dist;
    std::uint32_t* stamp;     ///< round + 1 at which the vertex was last pushed
    std::uint32_t* queue[2];  ///< worklists, worklist_capacity entries each
    std::uint32_t* size;      ///< size[2]
  };
  struct State {
    std::uint32_t in = 0;
    std::uint32_t round = 0;
    std::uint32_t frontier = 0;
  };
  static constexpr std::uint32_t kPhases = 2;

  /// Phase 0 relaxes the worklist's arcs; phase 1 has no items, only its once-per-phase action.
  COOP_HD static std::uint64_t items(std::uint32_t k, const Params&, const State& s) {
    return k == 0 ? s.frontier : 0;
  }
  COOP_HD static void once(std::uint32_t k, const Params& p, const State& s) {
    if (k == 1) p.size[s.in] = 0;  // nobody reads the old worklist's length any more
  }
  COOP_HD static void visit(std::uint32_t k, const Params& p, const State& s, std::uint64_t first,
                            std::uint64_t end, std::uint64_t stride) {
    if (k != 0) return;
    const std::uint32_t out = 1 - s.in;
    for (std::uint64_t i = first; i < end; i += stride) {
      const ArcSlice a = worklist_entry(p.g, p.queue[s.in], i);
      const std::uint64_t dv = atomic_ref<std::uint64_t>(p.dist[a.v]).load(memory_order::relaxed);
      relax_slice(
          p.g, a, p.queue[out], p.size[out],
          [&](std::uint32_t e, std::uint32_t u) {
            return atomic_ref<std::uint64_t>(p.dist[u]).load(memory_order::relaxed) >
                   dv + p.g.weight[e];
          },
          [&](std::uint32_t e, std::uint32_t u) {
            const std::uint64_t nd = dv + p.g.weight[e];
            // Pushed when the distance dropped and u is not yet in the next worklist.
            return atomic_ref<std::uint64_t>(p.dist[u]).fetch_min(nd, memory_order::relaxed) > nd &&
                   atomic_ref<std::uint32_t>(p.stamp[u])
                           .exchange(s.round + 1, memory_order::relaxed) != s.round + 1;
          });
    }
  }
  COOP_HD static bool advance(const Params& p, State& s) {
    s.in = 1 - s.in;
    ++s.round;
    s.frontier = atomic_ref<std::uint32_t>(p.size[s.in]).load(memory_order::relaxed);
    return s.frontier > 0;
  }
};

struct LSsspRun {
  LSsspRun(const GraphBuffers& g, std::uint32_t source)
      : dist(g.view().n, kUnreachable),
        stamp(g.view().n),
        q0(worklist_capacity(g, "l-sssp")),
        q1(q0.size()),
        size(2) {
    dist[source] = 0;
    size[0] = entries = seed_worklist(g, q0.data(), source);
    for (auto* a : {&stamp, &q0, &q1, &size}) a->to_device();
    dist.to_device();
    params = {g.view(), dist.data(), stamp.data(), {q0.data(), q1.data()}, size.data()};
  }
  LSssp::State initial() const { return {0, 0, entries}; }
  /// What a run writes that the next one reads before writing (RunConfig::runs_per_kernel).
  void save(RunSnapshot& s) {
    s.add(dist);
    s.add(stamp);
    s.add(q0, entries);
    s.add(size);
  }
  ManagedArray<std::uint64_t> dist;
  ManagedArray<std::uint32_t> stamp, q0, q1, size;
  LSssp::Params params;
  std::uint32_t entries = 0;  ///< the first worklist's (the source's slices)
};

struct PSssp {
  struct Params {
    GraphView in;  ///< the transposed graph: in-arcs of each vertex
    std::uint64_t* dist;
    std::uint64_t* next;
    std::uint32_t* flags;  ///< 3 rotating "changed" flags
  };
  struct State {
    std::uint32_t round = 0;
  };
  static constexpr std::uint32_t kPhases = 3;

  /// Every phase visits every vertex.
  COOP_HD static std::uint64_t items(std::uint32_t, const Params& p, const State&) {
    return p.in.n;
  }
  COOP_HD static void once(std::uint32_t k, const Params& p, const State& s) {
    if (k == 2) clear_next_flag(p.flags, s.round, 0);
  }
  COOP_HD static void visit(std::uint32_t k, const Params& p, const State& s, std::uint64_t first,
                            std::uint64_t end, std::uint64_t stride) {
    if (k == 0) {  // assign
      for (std::uint64_t v = first; v < end; v += stride) p.next[v] = p.dist[v];
    } else if (k == 1) {  // relax (min-plus SpMV, pull)
      for (std::uint64_t v = first; v < end; v += stride) {
        std::uint64_t best = p.next[v];
        for (std::uint32_t e = p.in.row[v]; e < p.in.row[v + 1]; ++e) {
          const std::uint64_t du = p.dist[p.in.col[e]];
          if (du != kUnreachable && du + p.in.weight[e] < best) best = du + p.in.weight[e];
        }
        p.next[v] = best;
      }
    } else {  // diff
      bool changed = false;
      for (std::uint64_t v = first; v < end; v += stride)
        if (p.next[v] != p.dist[v]) {
          p.dist[v] = p.next[v];
          changed = true;
        }
      if (changed) raise_flag(p.flags, s.round);
    }
  }
  COOP_HD static bool advance(const Params& p, State& s) { return flag_raised(p.flags, s.round++); }
};

struct PSsspRun {
  PSsspRun(const GraphBuffers& transposed, std::uint32_t source)
      : dist(transposed.view().n, kUnreachable), next(transposed.view().n), flags(3) {
    dist[source] = 0;
    dist.to_device();
    next.to_device();
    flags.to_device();
    params = {transposed.view(), dist.data(), next.data(), flags.data()};
  }
  PSssp::State initial() const { return {}; }
  /// What a run writes that the next one reads before writing (RunConfig::runs_per_kernel).
  void save(RunSnapshot& s) {
    s.add(dist);
    s.add(next);
    s.add(flags);
  }
  ManagedArray<std::uint64_t> dist, next;
  ManagedArray<std::uint32_t> flags;
  PSssp::Params params;
};

/// Reference: Dijkstra with a binary heap; distances (-1 unreachable).
inline std::vector<std::int64_t> reference_sssp(const graph::Graph& g, std::uint32_t source) {
  std::vector<std::uint64_t> d(g.n(), kUnreachable);
  using Item = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
  d[source] = 0;
  pq.push({0, source});
  while (!pq.empty()) {
    auto [dv, v] = pq.top();
    pq.pop();
    if (dv != d[v]) continue;
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) {
      std::uint64_t nd = dv + g.weight[e];
      if (nd < d[g.col[e]]) {
        d[g.col[e]] = nd;
        pq.push({nd, g.col[e]});
      }
    }
  }
  std::vector<std::int64_t> out(g.n());
  for (std::uint32_t v = 0; v < g.n(); ++v) out[v] = d[v] == kUnreachable ? -1 : std::int64_t(d[v]);
  return out;
}

}  // namespace coop::apps
