// What the applications share: a graph in memory every backend can read, vertex priorities,
// and the rotating termination flags of the level-synchronous apps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

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
  std::uint32_t max_degree;  ///< the most arcs of any vertex
};

/// A graph copied into host- and device-visible memory (and moved to the GPU when one is
/// present, so that timings exclude page migration).
struct GraphBuffers {
  explicit GraphBuffers(const graph::Graph& g)
      : row(g.row), col(g.col), weight(g.weight), host_row(g.row) {
    for (std::size_t v = 0; v + 1 < g.row.size(); ++v)
      max_degree = std::max(max_degree, g.row[v + 1] - g.row[v]);
    row.to_device();
    col.to_device();
    weight.to_device();
  }
  GraphView view() const {
    return {row.data(), col.data(), weight.data(), std::uint32_t(row.size() - 1), max_degree};
  }
  ManagedArray<std::uint32_t> row, col, weight;
  /// The row offsets on the host too: setting a run up reads degrees without migrating `row`
  /// back from the GPU.
  std::vector<std::uint32_t> host_row;
  std::uint32_t max_degree = 0;
};

/// The buffers one run of an app writes, as they were before its first run, kept on the device
/// so that the kernel can run the app again from the start without the host
/// (RunConfig::runs_per_kernel: one persistent kernel that runs for as long as a user's long job
/// does). A view: goes into the kernel's parameters.
struct RunRestore {
  static constexpr std::uint32_t kMaxRanges = 8;
  struct Range {
    std::uint32_t* live;
    const std::uint32_t* saved;
    std::uint64_t words;
  };
  Range range[kMaxRanges] = {};
  std::uint32_t ranges = 0;

  /// Copies every saved word back: the words first, first + stride, ... of each range (a
  /// grid-stride loop; every thread of the grid calls it with its own `first`). Out of line:
  /// inlined, its loop's registers made the work-stealing kernels' loops spill.
  COOP_HD COOP_NOINLINE void copy(std::uint64_t first, std::uint64_t stride) const {
    for (std::uint32_t r = 0; r < ranges; ++r)
      for (std::uint64_t i = first; i < range[r].words; i += stride)
        range[r].live[i] = range[r].saved[i];
  }
};

/// Ends a launch of several runs (RunConfig::runs_per_kernel) after a run when the host asks
/// (RunStop). Global id 0 reads the request at each restart, between the restart's two resizing
/// barriers, and writes the run to end after; every workgroup compares at a run's end, before
/// the next restart's first barrier. The word changes only between barriers that every
/// workgroup reaches after its comparison, so all end after the same run. A view: goes into the
/// kernel's parameters; empty, it never ends a launch early.
struct RunEnd {
  static constexpr std::uint32_t kEvery = ~0u;  ///< `last` when no end was asked for
  std::uint32_t* requested = nullptr;           ///< nonzero once the host asked (host-written)
  std::uint32_t* last = nullptr;                ///< the run the launch ends after, or kEvery

  /// Whether the launch ends with `runs` runs done (each workgroup, at a run's end). Inline:
  /// out of line, as RunRestore::copy, the call changed the register counts of unrelated
  /// kernels (the plain bfs kernel's 48 to 40, game's restart kernel spilled more).
  COOP_HD bool ends_after(std::uint32_t runs) const {
    return last && runs >= atomic_ref<std::uint32_t>(*last).load(memory_order::relaxed);
  }
  /// Global id 0, between a restart's barriers, `runs` runs done: a request ends the launch
  /// after the run that starts here.
  COOP_HD void poll(std::uint64_t global_id, std::uint32_t runs) const {
    if (global_id == 0 && requested &&
        atomic_ref<std::uint32_t>(*requested).load(memory_order::relaxed) != 0)
      atomic_ref<std::uint32_t>(*last).store(runs + 1, memory_order::relaxed);
  }
};

/// Owns the device-side copies behind a RunRestore. add() a run's buffers as they are before
/// it starts; view() goes into the kernel's parameters.
class RunSnapshot {
 public:
  /// Saves the first `elements` of `a` (all of it by default), an array of 32- or 64-bit
  /// values. (Byte arrays the apps use as scratch are rewritten before they are read in every
  /// round, and end each run as they began: they need no copy.)
  template <class T>
  void add(ManagedArray<T>& a, std::size_t elements = std::size_t(-1)) {
    add_words(a.data(), std::min(elements, a.size()) * sizeof(T));
    a.to_device();  // read here: back to the GPU before the run
  }
  /// Saves one value (a counter).
  template <class T>
  void add(Managed<T>& v) {
    add_words(v.get(), sizeof(T));
    v.to_device();
  }
  RunRestore view() const { return view_; }

 private:
  template <class T>
  void add_words(T* live, std::size_t bytes) {
    static_assert(sizeof(T) % 4 == 0, "RunSnapshot copies 32-bit words");
    if (bytes == 0) return;
    if (view_.ranges == RunRestore::kMaxRanges)
      throw std::logic_error("RunSnapshot: more buffers than RunRestore::kMaxRanges");
    ManagedArray<std::uint32_t> copy(bytes / 4);
    std::memcpy(static_cast<void*>(copy.data()), static_cast<const void*>(live), bytes);
    copy.to_device();
    view_.range[view_.ranges++] = {reinterpret_cast<std::uint32_t*>(live), copy.data(), bytes / 4};
    copies_.push_back(std::move(copy));
  }
  std::vector<ManagedArray<std::uint32_t>> copies_;
  RunRestore view_;
};

/// The worklist apps (bfs, l-sssp) queue a vertex as slices of at most kSliceArcs of its arcs,
/// one entry each. A workgroup can leave a coop::for_each loop only between chunks, after its
/// threads' items: in slices no item is long, and a hub's arcs spread over many threads. (On an
/// H200, with fetch_increment's shared adds, standalone bfs on rmat22 ran 2.3x faster; slices of 8
/// were slower than 16, 32 no faster.)
inline constexpr std::uint32_t kSliceArcs = 16;
/// An entry with this bit is slice j (the low bits) of the vertex j entries before it; without
/// it, the entry is a vertex (its slice 0). Vertex ids stay below it.
inline constexpr std::uint32_t kSliceMark = 1u << 31;

/// The entries a round of `app` can push at most (each vertex once, in slices); throws
/// std::invalid_argument when the graph has too many vertices for the entries.
inline std::size_t worklist_capacity(const GraphBuffers& g, const char* app) {
  const std::size_t n = g.host_row.size() - 1;
  if (n >= kSliceMark)
    throw std::invalid_argument(std::string(app) + ": the graph has " + std::to_string(n) +
                                " vertices; worklist entries hold vertex ids below 2^31");
  return n + g.host_row.back() / kSliceArcs + 1;
}

/// The arcs [first, end) of vertex v that a worklist entry stands for.
struct ArcSlice {
  std::uint32_t v, first, end;
};

/// Entry i of `queue` (written by push_vertex).
COOP_HD inline ArcSlice worklist_entry(const GraphView& g, const std::uint32_t* queue,
                                       std::uint64_t i) {
  const std::uint32_t e = queue[i];
  const std::uint32_t j = e & kSliceMark ? e & ~kSliceMark : 0;
  const std::uint32_t v = j ? queue[i - j] : e;
  const std::uint32_t first = g.row[v] + j * kSliceArcs, last = g.row[v + 1];
  return {v, first, last - first > kSliceArcs ? first + kSliceArcs : last};
}

/// The worklist entries of a vertex of `degree` arcs (one when it has none).
COOP_HD inline std::uint32_t worklist_slices(std::uint32_t degree) {
  return degree <= kSliceArcs ? 1 : (degree + kSliceArcs - 1) / kSliceArcs;
}

/// Appends vertex u to the worklist `queue` of length `size`: one entry per kSliceArcs of its
/// arcs (reading its degree only when the graph has a vertex of more).
COOP_HD inline void push_vertex(const GraphView& g, std::uint32_t* queue, std::uint32_t& size,
                                std::uint32_t u) {
  const std::uint32_t slices =
      g.max_degree <= kSliceArcs ? 1 : worklist_slices(g.row[u + 1] - g.row[u]);
  if (slices == 1) {
    queue[fetch_increment(size)] = u;
    return;
  }
  const std::uint32_t at = atomic_ref<std::uint32_t>(size).fetch_add(slices, memory_order::relaxed);
  queue[at] = u;
  for (std::uint32_t j = 1; j < slices; ++j) queue[at + j] = kSliceMark | j;
}

/// relax_slice expands a slice this many arcs at a time.
inline constexpr std::uint32_t kArcBatch = 8;

/// Relaxes the arcs of worklist slice `a` and pushes every vertex it improves onto `queue`
/// (push_vertex). `worth(e, u)` reads and tests (no side effects) whether arc e to u may
/// improve u; `claim(e, u)` is the atomic that decides it, true when this thread improved u and
/// must push it.
///
/// A batch of kArcBatch arcs goes stage by stage: every arc's target, then every arc's test,
/// then every claim, then the pushes. Each stage's memory accesses are independent of each
/// other, so a thread has the whole batch's round trips in flight at once instead of one arc's
/// chain after another. (On an H200 the kernels ran 8-15 % faster than arc by arc; batches of
/// 4 gained less.)
template <class Worth, class Claim>
COOP_HD inline void relax_slice(const GraphView& g, const ArcSlice& a, std::uint32_t* queue,
                                std::uint32_t& size, Worth&& worth, Claim&& claim) {
  for (std::uint32_t e0 = a.first; e0 < a.end; e0 += kArcBatch) {
    const std::uint32_t count = a.end - e0 < kArcBatch ? a.end - e0 : kArcBatch;
    std::uint32_t u[kArcBatch];
    bool go[kArcBatch];
    COOP_UNROLL
    for (std::uint32_t b = 0; b < kArcBatch; ++b) u[b] = b < count ? g.col[e0 + b] : 0;
    COOP_UNROLL
    for (std::uint32_t b = 0; b < kArcBatch; ++b) go[b] = b < count && worth(e0 + b, u[b]);
    COOP_UNROLL
    for (std::uint32_t b = 0; b < kArcBatch; ++b) go[b] = go[b] && claim(e0 + b, u[b]);
    COOP_UNROLL
    for (std::uint32_t b = 0; b < kArcBatch; ++b)
      if (go[b]) push_vertex(g, queue, size, u[b]);
  }
}

/// The host's first worklist: `source`'s entries (push_vertex's); returns how many.
inline std::uint32_t seed_worklist(const GraphBuffers& g, std::uint32_t* queue,
                                   std::uint32_t source) {
  const std::uint32_t slices = worklist_slices(g.host_row[source + 1] - g.host_row[source]);
  queue[0] = source;
  for (std::uint32_t j = 1; j < slices; ++j) queue[j] = kSliceMark | j;
  return slices;
}

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
