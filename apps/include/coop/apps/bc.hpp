// bc (Pannotia, the paper's appendix): Brandes betweenness centrality over the directed arcs,
// accumulated over a list of sources. Per source: one phase initialises, one phase per BFS
// level counts shortest paths (sigma), one phase per level walks back accumulating dependencies
// (delta) into bc. One global barrier per phase; the stage, depth and source index are the
// transmitted State. Each vertex's sums run in arc order in one thread, so results are
// bit-identical across forms and schedules.
#pragma once

#include <cstdint>
#include <queue>
#include <stack>
#include <vector>

#include "coop/apps/common.hpp"

namespace coop::apps {

struct Bc {
  struct Params {
    GraphView g;
    const std::uint32_t* sources;
    std::uint32_t source_count;
    std::int32_t* dist;
    double* sigma;
    double* delta;
    double* bc;
    std::uint32_t* flags;
  };
  enum Stage : std::uint32_t { init = 0, forward = 1, backward = 2 };
  struct State {
    std::uint32_t source = 0;  ///< index into sources
    std::uint32_t stage = init;
    std::int32_t depth = 0;
    std::uint32_t round = 0;  ///< phases so far (selects the flag)
  };
  static constexpr std::uint32_t kPhases = 1;

  /// Every stage visits every vertex.
  COOP_HD static std::uint64_t items(std::uint32_t, const Params& p, const State&) { return p.g.n; }
  COOP_HD static void once(std::uint32_t, const Params& p, const State& s) {
    clear_next_flag(p.flags, s.round, 0);
  }
  COOP_HD static void visit(std::uint32_t, const Params& p, const State& s, std::uint64_t first,
                            std::uint64_t end, std::uint64_t stride) {
    if (s.stage == init) {
      const std::uint32_t src = p.sources[s.source];
      for (std::uint64_t v = first; v < end; v += stride) {
        p.dist[v] = v == src ? 0 : -1;
        p.sigma[v] = v == src ? 1.0 : 0.0;
        p.delta[v] = 0.0;
      }
    } else if (s.stage == forward) {
      bool grew = false;
      for (std::uint64_t v = first; v < end; v += stride) {
        if (atomic_ref<std::int32_t>(p.dist[v]).load(memory_order::relaxed) != s.depth) continue;
        for (std::uint32_t e = p.g.row[v]; e < p.g.row[v + 1]; ++e) {
          const std::uint32_t w = p.g.col[e];
          std::int32_t d = -1;
          if (atomic_ref<std::int32_t>(p.dist[w]).cas(d, s.depth + 1, memory_order::relaxed)) {
            d = s.depth + 1;
            grew = true;
          }
          if (d == s.depth + 1)
            atomic_ref<double>(p.sigma[w]).fetch_add(p.sigma[v], memory_order::relaxed);
        }
      }
      if (grew) raise_flag(p.flags, s.round);
    } else {
      const std::uint32_t src = p.sources[s.source];
      for (std::uint64_t v = first; v < end; v += stride) {
        if (p.dist[v] != s.depth) continue;
        double sum = 0;
        for (std::uint32_t e = p.g.row[v]; e < p.g.row[v + 1]; ++e) {
          const std::uint32_t w = p.g.col[e];
          if (p.dist[w] == s.depth + 1) sum += p.sigma[v] / p.sigma[w] * (1.0 + p.delta[w]);
        }
        p.delta[v] = sum;
        if (v != src) p.bc[v] += sum;
      }
    }
  }
  COOP_HD static bool advance(const Params& p, State& s) {
    const bool grew = flag_raised(p.flags, s.round++);
    if (s.stage == init) {
      s.stage = forward;
      s.depth = 0;
      return true;
    }
    if (s.stage == forward) {
      if (grew) {
        ++s.depth;
        return true;
      }
      // s.depth is the deepest level; its vertices have no dependencies. Walk back from the
      // level above it down to 1 (the source's own dependency is not counted).
      if (s.depth >= 2) {
        s.stage = backward;
        --s.depth;
        return true;
      }
    } else if (--s.depth >= 1) {
      return true;
    }
    s.stage = init;
    return ++s.source < p.source_count;
  }
};

struct BcRun {
  BcRun(const GraphBuffers& g, const std::vector<std::uint32_t>& source_list)
      : sources(source_list),
        dist(g.view().n),
        sigma(g.view().n),
        delta(g.view().n),
        bc(g.view().n),
        flags(3) {
    sources.to_device();
    dist.to_device();
    sigma.to_device();
    delta.to_device();
    bc.to_device();
    flags.to_device();
    params = {g.view(),    sources.data(), std::uint32_t(sources.size()),
              dist.data(), sigma.data(),   delta.data(),
              bc.data(),   flags.data()};
  }
  Bc::State initial() const { return {}; }
  /// What a run writes that the next one reads before writing (RunConfig::runs_per_kernel).
  void save(RunSnapshot& s) {
    s.add(dist);
    s.add(sigma);
    s.add(delta);
    s.add(bc);
    s.add(flags);
  }
  ManagedArray<std::uint32_t> sources;
  ManagedArray<std::int32_t> dist;
  ManagedArray<double> sigma, delta, bc;
  ManagedArray<std::uint32_t> flags;
  Bc::Params params;
};

/// Reference: Brandes' algorithm (queue BFS, stack walk back), summed over `sources`.
inline std::vector<double> reference_bc(const graph::Graph& g,
                                        const std::vector<std::uint32_t>& sources) {
  const std::uint32_t n = g.n();
  std::vector<double> bc(n, 0.0), sigma(n), delta(n);
  std::vector<std::int64_t> dist(n);
  for (std::uint32_t s : sources) {
    std::fill(dist.begin(), dist.end(), -1);
    std::fill(sigma.begin(), sigma.end(), 0.0);
    std::fill(delta.begin(), delta.end(), 0.0);
    std::vector<std::uint32_t> order;
    std::queue<std::uint32_t> q;
    dist[s] = 0;
    sigma[s] = 1;
    q.push(s);
    while (!q.empty()) {
      std::uint32_t v = q.front();
      q.pop();
      order.push_back(v);
      for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) {
        std::uint32_t w = g.col[e];
        if (dist[w] < 0) {
          dist[w] = dist[v] + 1;
          q.push(w);
        }
        if (dist[w] == dist[v] + 1) sigma[w] += sigma[v];
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      std::uint32_t v = *it;
      for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) {
        std::uint32_t w = g.col[e];
        if (dist[w] == dist[v] + 1) delta[v] += sigma[v] / sigma[w] * (1.0 + delta[w]);
      }
      if (v != s) bc[v] += delta[v];
    }
  }
  return bc;
}

}  // namespace coop::apps
