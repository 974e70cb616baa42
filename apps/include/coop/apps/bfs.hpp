// bfs (LonestarGPU): worklist breadth-first search. Each level expands the current worklist,
// claiming unvisited neighbours with a CAS and pushing them to the next worklist; the second
// phase empties the old worklist. Two global barriers per level; the worklist selector, the
// depth and the frontier size are the transmitted State. A worklist entry is a slice of at most
// kSliceArcs of a vertex's arcs (common.hpp), so that no item is long.
#pragma once

#include <cstdint>
#include <vector>

#include "coop/apps/common.hpp"
#include "kernels/frontier_bfs.hpp"

namespace coop::apps {

struct Bfs {
  struct Params {
    GraphView g;
    std::int32_t* level;      ///< -1 = not reached
    std::uint32_t* queue[2];  ///< worklists, worklist_capacity entries each
    std::uint32_t* size;      ///< size[2]: worklist lengths
  };
  struct State {
    std::uint32_t in = 0;  ///< which worklist is the frontier
    std::int32_t depth = 0;
    std::uint32_t frontier = 0;
  };
  static constexpr std::uint32_t kPhases = 2;

  /// Phase 0 expands the frontier; phase 1 has no items, only its once-per-phase action.
  COOP_HD static std::uint64_t items(std::uint32_t k, const Params&, const State& s) {
    return k == 0 ? s.frontier : 0;
  }
  COOP_HD static void once(std::uint32_t k, const Params& p, const State& s) {
    if (k == 1) p.size[s.in] = 0;  // nobody reads the old frontier's length any more
  }
  COOP_HD static void visit(std::uint32_t k, const Params& p, const State& s, std::uint64_t first,
                            std::uint64_t end, std::uint64_t stride) {
    if (k != 0) return;
    const std::uint32_t out = 1 - s.in;
    for (std::uint64_t i = first; i < end; i += stride) {
      relax_slice(
          p.g, worklist_entry(p.g, p.queue[s.in], i), p.queue[out], p.size[out],
          [&](std::uint32_t, std::uint32_t u) {
            return atomic_ref<std::int32_t>(p.level[u]).load(memory_order::relaxed) < 0;
          },
          [&](std::uint32_t, std::uint32_t u) {
            std::int32_t unseen = -1;
            return atomic_ref<std::int32_t>(p.level[u])
                .cas(unseen, s.depth + 1, memory_order::relaxed);
          });
    }
  }
  COOP_HD static bool advance(const Params& p, State& s) {
    s.in = 1 - s.in;
    ++s.depth;
    s.frontier = atomic_ref<std::uint32_t>(p.size[s.in]).load(memory_order::relaxed);
    return s.frontier > 0;
  }
};

/// Buffers of one bfs run.
struct BfsRun {
  BfsRun(const GraphBuffers& g, std::uint32_t source)
      : level(g.view().n, -1), q0(worklist_capacity(g, "bfs")), q1(q0.size()), size(2) {
    level[source] = 0;
    size[0] = entries = seed_worklist(g, q0.data(), source);
    level.to_device();
    q0.to_device();
    q1.to_device();
    size.to_device();
    params = {g.view(), level.data(), {q0.data(), q1.data()}, size.data()};
  }
  Bfs::State initial() const { return {0, 0, entries}; }
  /// What a run writes that the next one reads before writing (RunConfig::runs_per_kernel).
  void save(RunSnapshot& s) {
    s.add(level);
    s.add(q0, entries);
    s.add(size);
  }
  ManagedArray<std::int32_t> level;
  ManagedArray<std::uint32_t> q0, q1, size;
  Bfs::Params params;
  std::uint32_t entries = 0;  ///< the first worklist's (the source's slices)
};

/// Reference: sequential queue BFS (the example's); levels, -1 unreachable.
inline std::vector<std::int64_t> reference_bfs(const graph::Graph& g, std::uint32_t source) {
  const auto level = examples::reference_bfs(g, source);
  return std::vector<std::int64_t>(level.begin(), level.end());
}

}  // namespace coop::apps
