// color (Pannotia): Jones-Plassmann-style max colouring on the symmetrised graph. Each round,
// every uncoloured vertex compares its rank with its uncoloured neighbours'; the local maxima
// take the round's colour. Phase 0 decides (reads colours), phase 1 commits and raises the
// flag if some vertex is still uncoloured. Two barriers per round; the round is transmitted.
// The result depends only on the ranks, so the reference reproduces it exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "coop/apps/common.hpp"

namespace coop::apps {

struct Color {
  struct Params {
    GraphView g;          ///< symmetric, no self loops
    std::int32_t* color;  ///< -1 = uncoloured
    std::uint8_t* wins;   ///< set in phase 0, consumed in phase 1
    std::uint32_t* flags;
    Priority priority;
    std::uint32_t seed;
  };
  struct State {
    std::uint32_t round = 0;
  };
  static constexpr std::uint32_t kPhases = 2;
  /// Every phase sweeps all vertices, a few per thread, each a short test of its neighbours
  /// on the meshes the app is run on: the yielding form claims them in shares (share_grain).
  static constexpr bool kEvenItems = true;

  /// Both phases visit every vertex.
  COOP_HD static std::uint64_t items(std::uint32_t, const Params& p, const State&) { return p.g.n; }
  COOP_HD static void once(std::uint32_t k, const Params& p, const State& s) {
    if (k == 1) clear_next_flag(p.flags, s.round, 0);
  }
  COOP_HD static void visit(std::uint32_t k, const Params& p, const State& s, std::uint64_t first,
                            std::uint64_t end, std::uint64_t stride) {
    if (k == 0) {
      for (std::uint64_t v = first; v < end; v += stride) {
        if (p.color[v] >= 0) continue;
        const std::uint64_t mine = vertex_rank(std::uint32_t(v), p.priority, p.seed);
        bool local_max = true;
        for (std::uint32_t e = p.g.row[v]; e < p.g.row[v + 1] && local_max; ++e) {
          const std::uint32_t u = p.g.col[e];
          if (p.color[u] < 0 && vertex_rank(u, p.priority, p.seed) > mine) local_max = false;
        }
        p.wins[v] = local_max ? 1 : 0;
      }
      return;
    }
    bool left = false;
    for (std::uint64_t v = first; v < end; v += stride) {
      if (p.color[v] >= 0) continue;
      if (p.wins[v])
        p.color[v] = std::int32_t(s.round);
      else
        left = true;
    }
    if (left) raise_flag(p.flags, s.round);
  }
  COOP_HD static bool advance(const Params& p, State& s) { return flag_raised(p.flags, s.round++); }
};

struct ColorRun {
  ColorRun(const GraphBuffers& sym, Priority priority, std::uint32_t seed)
      : color(sym.view().n, -1), wins(sym.view().n), flags(3) {
    color.to_device();
    wins.to_device();
    flags.to_device();
    params = {sym.view(), color.data(), wins.data(), flags.data(), priority, seed};
  }
  Color::State initial() const { return {}; }
  /// What a run writes that the next one reads before writing (RunConfig::runs_per_kernel; `wins`
  /// is written before it is read in every round).
  void save(RunSnapshot& s) {
    s.add(color);
    s.add(flags);
  }
  ManagedArray<std::int32_t> color;
  ManagedArray<std::uint8_t> wins;
  ManagedArray<std::uint32_t> flags;
  Color::Params params;
};

/// Reference: a vertex is coloured in the round after all its higher-ranked neighbours, so
/// colour(v) = 1 + max colour of higher-ranked neighbours (0 if none), in decreasing rank order.
inline std::vector<std::int64_t> reference_color(const graph::Graph& sym, Priority priority,
                                                 std::uint32_t seed) {
  const std::uint32_t n = sym.n();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return vertex_rank(a, priority, seed) > vertex_rank(b, priority, seed);
  });
  std::vector<std::int64_t> color(n, -1);
  for (std::uint32_t v : order) {
    std::int64_t c = 0;
    const std::uint64_t mine = vertex_rank(v, priority, seed);
    for (std::uint32_t e = sym.row[v]; e < sym.row[v + 1]; ++e)
      if (vertex_rank(sym.col[e], priority, seed) > mine) c = std::max(c, color[sym.col[e]] + 1);
    color[v] = c;
  }
  return color;
}

}  // namespace coop::apps
