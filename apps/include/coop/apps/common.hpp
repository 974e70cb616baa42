// What the applications share: a graph in memory every backend can read, vertex priorities,
// and the rotating termination flags of the level-synchronous apps.
#pragma once

#include <cstdint>
#include <limits>

#include "coop/atomic.hpp"
#include "coop/config.hpp"
#include "coop/graph/graph.hpp"
#include "coop/memory.hpp"

namespace coop::apps {

/// CSR arrays as kernels see them.
struct GraphView {
  const std::uint32_t* row;
  const std::uint32_t* col;
  const std::uint32_t* weight;
  std::uint32_t n;
};

/// A graph copied into host- and device-visible memory (and moved to the GPU when one is
/// present, so that timings exclude page migration).
struct GraphBuffers {
  explicit GraphBuffers(const graph::Graph& g) : row(g.row), col(g.col), weight(g.weight) {
    row.to_device();
    col.to_device();
    weight.to_device();
  }
  GraphView view() const {
    return {row.data(), col.data(), weight.data(), std::uint32_t(row.size() - 1)};
  }
  ManagedArray<std::uint32_t> row, col, weight;
};

/// How colour and mis rank vertices: by id (the paper's deterministic values i/(n+1), which on
/// a grid make the rounds a slow diagonal wavefront) or by a seeded hash (fast, still exactly
/// reproducible).
enum class Priority : std::uint32_t { id = 0, hashed = 1 };

/// A vertex's rank: a total order (ties impossible: the id breaks them).
COOP_HD inline std::uint64_t vertex_rank(std::uint32_t v, Priority how, std::uint32_t seed) {
  if (how == Priority::id) return v;
  std::uint64_t x = (std::uint64_t(v) + 1) * 0x9e3779b97f4a7c15ull ^ (std::uint64_t(seed) << 32);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (x & 0xffffffff00000000ull) | v;  // high bits random, low bits the id
}

/// Termination flags rotated over three rounds: round r's work raises flags[r % 3], the
/// round's advance reads it after the last barrier, and round r clears flags[(r + 1) % 3],
/// whose last reader (advance of round r - 2) finished before round r - 1 ended. Apps with a
/// phase after the writing phase may clear in that phase instead; the three slots work for any
/// number of phases.
COOP_HD inline void raise_flag(std::uint32_t* flags, std::uint64_t round) {
  atomic_ref<std::uint32_t>(flags[round % 3]).store(1, memory_order::relaxed);
}
COOP_HD inline void clear_next_flag(std::uint32_t* flags, std::uint64_t round, std::uint64_t gid) {
  if (gid == 0) atomic_ref<std::uint32_t>(flags[(round + 1) % 3]).store(0, memory_order::relaxed);
}
COOP_HD inline bool flag_raised(std::uint32_t* flags, std::uint64_t round) {
  return atomic_ref<std::uint32_t>(flags[round % 3]).load(memory_order::relaxed) != 0;
}

inline constexpr std::uint64_t kUnreachable = std::numeric_limits<std::uint64_t>::max();

}  // namespace coop::apps
