// mis (Pannotia): Luby-style maximal independent set with fixed vertex ranks on the
// symmetrised graph. Phase 0: undecided local minima among undecided neighbours become
// candidates; phase 1: candidates join the set and remove their neighbours; phase 2: raise the
// flag if any vertex is still undecided. Three barriers per round. With fixed ranks the result
// is the lexicographically-first MIS in rank order, which the reference computes greedily.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "coop/apps/common.hpp"

namespace coop::apps {

struct Mis {
  struct Params {
    GraphView g;          ///< symmetric, no self loops
    std::int32_t* state;  ///< -1 undecided, 1 in the set, 0 out
    std::uint8_t* candidate;
    std::uint32_t* flags;
    Priority priority;
    std::uint32_t seed;
  };
  struct State {
    std::uint32_t round = 0;
  };
  static constexpr std::uint32_t kPhases = 3;
  /// Every phase sweeps all vertices, a few per thread, each a short test of its neighbours
  /// on the meshes the app is run on: the yielding form claims them in shares (share_grain).
  static constexpr bool kEvenItems = true;

  /// Every phase visits every vertex.
  COOP_HD static std::uint64_t items(std::uint32_t, const Params& p, const State&) { return p.g.n; }
  COOP_HD static void once(std::uint32_t k, const Params& p, const State& s) {
    if (k == 2) clear_next_flag(p.flags, s.round, 0);
  }
  COOP_HD static void visit(std::uint32_t k, const Params& p, const State& s, std::uint64_t first,
                            std::uint64_t end, std::uint64_t stride) {
    if (k == 0) {
      for (std::uint64_t v = first; v < end; v += stride) {
        if (p.state[v] >= 0) continue;
        const std::uint64_t mine = vertex_rank(std::uint32_t(v), p.priority, p.seed);
        bool local_min = true;
        for (std::uint32_t e = p.g.row[v]; e < p.g.row[v + 1] && local_min; ++e) {
          const std::uint32_t u = p.g.col[e];
          if (p.state[u] < 0 && vertex_rank(u, p.priority, p.seed) < mine) local_min = false;
        }
        p.candidate[v] = local_min ? 1 : 0;
      }
    } else if (k == 1) {
      // Candidates are never adjacent (strict local minima), so the removals never conflict
      // with a join; two candidates may remove the same neighbour (same value).
      for (std::uint64_t v = first; v < end; v += stride) {
        if (!p.candidate[v]) continue;
        p.candidate[v] = 0;
        atomic_ref<std::int32_t>(p.state[v]).store(1, memory_order::relaxed);
        for (std::uint32_t e = p.g.row[v]; e < p.g.row[v + 1]; ++e)
          atomic_ref<std::int32_t>(p.state[p.g.col[e]]).store(0, memory_order::relaxed);
      }
    } else {
      bool left = false;
      for (std::uint64_t v = first; v < end && !left; v += stride) left = p.state[v] < 0;
      if (left) raise_flag(p.flags, s.round);
    }
  }
  COOP_HD static bool advance(const Params& p, State& s) { return flag_raised(p.flags, s.round++); }
};

struct MisRun {
  MisRun(const GraphBuffers& sym, Priority priority, std::uint32_t seed)
      : state(sym.view().n, -1), candidate(sym.view().n), flags(3) {
    state.to_device();
    candidate.to_device();
    flags.to_device();
    params = {sym.view(), state.data(), candidate.data(), flags.data(), priority, seed};
  }
  Mis::State initial() const { return {}; }
  /// What a run writes that the next one reads before writing (RunConfig::runs_per_kernel; each
  /// `candidate` set in a round is cleared in it).
  void save(RunSnapshot& s) {
    s.add(state);
    s.add(flags);
  }
  ManagedArray<std::int32_t> state;
  ManagedArray<std::uint8_t> candidate;
  ManagedArray<std::uint32_t> flags;
  Mis::Params params;
};

/// Reference: greedy in increasing rank order (1 = in the set).
inline std::vector<std::int64_t> reference_mis(const graph::Graph& sym, Priority priority,
                                               std::uint32_t seed) {
  const std::uint32_t n = sym.n();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return vertex_rank(a, priority, seed) < vertex_rank(b, priority, seed);
  });
  std::vector<std::int64_t> in(n, -1);
  for (std::uint32_t v : order) {
    if (in[v] >= 0) continue;
    in[v] = 1;
    for (std::uint32_t e = sym.row[v]; e < sym.row[v + 1]; ++e)
      if (sym.col[e] != v) in[sym.col[e]] = 0;
  }
  return in;
}

}  // namespace coop::apps
