// octree (Cederman & Tsigas): octree partitioning of particles by work stealing. A task is a
// cell with a range of particles; a workgroup counts them into the 8 octants, allocates the 8
// children, scatters the particles (leaf children straight to the output array, the others to
// the buffer of the next depth) and pushes the children that hold more than max_leaf particles.
// It ends when every particle sits in a leaf. offer_kill and request_fork at the top of the
// main loop; the runs finished are transmitted (below). Leaves deeper than max_depth are not
// made: a cell at max_depth is a leaf whatever it holds.
//
// A task handles at most `slice` particles, so that a workgroup reaches its next offer within
// microseconds: a cell with more is split in slices through a split record (OctreeSplit) that
// any workgroup taking its task works on. The record's stage-and-slice word hands out slices
// (first every slice counts its particles into the record, and the last one lays out the
// children; then every slice scatters its particles, and the last one pushes the children),
// and a workgroup that claims a slice while more remain pushes the task back first, so others
// join. The leaves are the same as with whole-cell tasks.
//
// runs_per_kernel > 1 builds the tree again inside the same launch (a long job, the kernel
// Repeated<Octree>): once a run has placed every particle, the workgroups copy back what a run
// changes (the particles' first buffer, the counters, the split records, the pools with the
// root's task). `placed` counts over all runs, so a run is over when it reaches n times the
// runs so far, and at the end it proves that every run placed them all.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "coop/apps/common.hpp"
#include "coop/apps/repeated.hpp"
#include "coop/kernel.hpp"
#include "coop/work_pool.hpp"

namespace coop::apps {

struct Particle {
  float x, y, z;
  std::uint32_t id;
};

struct OctreeNode {
  float cx, cy, cz, half;
  std::uint32_t begin, end;  ///< particle range (in `out` once the node is a leaf)
  std::uint32_t child;       ///< index of the first of 8 children; 0 = leaf
  std::uint32_t depth;
};

COOP_HD inline std::uint32_t octant(const Particle& p, const OctreeNode& c) {
  return (p.x >= c.cx ? 1u : 0u) | (p.y >= c.cy ? 2u : 0u) | (p.z >= c.cz ? 4u : 0u);
}

enum OctreeError : std::uint32_t { octree_ok = 0, octree_out_of_nodes = 1, octree_pools_full = 2 };

/// A cell split in slices by many tasks.
struct OctreeSplit {
  std::uint64_t claim;        ///< stage (0 count, 1 scatter) << 32 | next unclaimed slice
  std::uint32_t node;         ///< the cell
  std::uint32_t slices;       ///< ceil(particles / slice)
  std::uint32_t count[8];     ///< particles per octant (stage 0 adds them up)
  std::uint32_t at[8];        ///< next output position per octant (stage 1)
  std::uint32_t finished[2];  ///< slices finished, per stage
  std::uint32_t first;        ///< the children's first node
  std::uint32_t leaf_mask;    ///< children that are leaves
};

struct Octree {
  struct Params {
    Particle* buf[2];  ///< by depth parity: a cell at depth d reads buf[d % 2]
    Particle* out;
    OctreeNode* nodes;
    std::uint32_t* node_count;
    std::uint32_t node_capacity;
    std::uint64_t* placed;  ///< particles in leaves so far, over every run
    std::uint32_t* error;
    std::uint32_t n;
    std::uint32_t max_leaf;
    std::uint32_t max_depth;
    WorkPool<std::uint32_t> pools;  ///< tasks: node indices, or kSliced | a split record
    OctreeSplit* splits;            ///< records of cells split in slices (zeroed)
    std::uint32_t* split_count;     ///< records in use
    std::uint32_t split_capacity;
    std::uint32_t slice;  ///< most particles one task counts or scatters
    /// Builds of the tree in this kernel (RunConfig::runs_per_kernel); before each but the
    /// first the kernel copies `restore` back.
    std::uint32_t runs_per_kernel = 1;
    RunRestore restore{};
    RunEnd run_end{};  ///< ends the launch after an earlier run when the host asks (RunStop)
  };
  struct Transmit {
    std::uint32_t runs = 0;  ///< builds finished
  };
  /// A task that names a split record rather than a cell.
  static constexpr std::uint32_t kSliced = 1u << 31;
  struct Shared {
    std::uint32_t count[8];
    std::uint32_t cursor[8];
    std::uint32_t leaf_mask;
    std::uint32_t first;
  };

  /// One build (runs_per_kernel > 1 launches Repeated<Octree>).
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit&) const {
    const auto placed_all = [&] { return run_over(p, 0); };
    COOP_WORK_STEALING(ctx, p.pools, placed_all, [&](std::uint32_t task) { work(ctx, p, task); });
  }

  /// Whether the build after `runs` finished ones is over: every particle placed (or an error).
  COOP_HD static bool run_over(const Params& p, std::uint32_t runs) {
    return atomic_ref<std::uint64_t>(*p.placed).load() >= std::uint64_t(runs + 1) * p.n ||
           atomic_ref<std::uint32_t>(*p.error).load(memory_order::relaxed) != octree_ok;
  }

  /// One task: a small cell split whole, or one slice of a big cell's split.
  template <class Ctx>
  COOP_HD static void work(Ctx& ctx, const Params& p, std::uint32_t task) {
    if (task & kSliced) {
      work_on_slice(ctx, p, task & ~kSliced);
      return;
    }
    const OctreeNode cell = p.nodes[task];
    if (cell.end - cell.begin <= p.slice) {
      split(ctx, p, task);
      return;
    }
    std::uint32_t record = 0;
    if (ctx.local_id() == 0) {
      record = atomic_ref<std::uint32_t>(*p.split_count).fetch_add(1, memory_order::relaxed);
      if (record < p.split_capacity) {
        // Fresh records are zeroed: stage 0, no slice claimed, nothing counted.
        p.splits[record].node = task;
        p.splits[record].slices = (cell.end - cell.begin + p.slice - 1) / p.slice;
      }
    }
    record = ctx.broadcast(record);
    if (record >= p.split_capacity)
      split(ctx, p, task);  // no record left: the whole cell at once (slower to leave, correct)
    else
      work_on_slice(ctx, p, record);
  }

  /// Moves particles [lo, hi) of `cell` to their octants' places (sh.cursor): leaves to p.out,
  /// the rest to the next level's buffer; fenced, so that the children can be published.
  COOP_HD static void scatter(const Params& p, Shared& sh, const OctreeNode& cell, std::uint32_t lo,
                              std::uint32_t hi, std::uint32_t lid, std::uint32_t threads) {
    const Particle* src = p.buf[cell.depth % 2];
    Particle* next = p.buf[(cell.depth + 1) % 2];
    for (std::uint32_t i = lo + lid; i < hi; i += threads) {
      const std::uint32_t k = octant(src[i], cell);
      const std::uint32_t at =
          atomic_ref<std::uint32_t>(sh.cursor[k]).fetch_add(1, memory_order::relaxed);
      ((sh.leaf_mask >> k) & 1 ? p.out : next)[at] = src[i];
    }
    thread_fence();  // the scattered particles before the children are published
  }

  /// Claims the next slice of split record `b` and counts or scatters it.
  template <class Ctx>
  COOP_HD static void work_on_slice(Ctx& ctx, const Params& p, std::uint32_t b) {
    Shared& sh = ctx.shared();
    OctreeSplit& r = p.splits[b];
    const std::uint32_t lid = ctx.local_id(), threads = ctx.local_size();
    std::uint64_t claim = 0;
    if (lid == 0) {
      // The stage and the slice in one atomic: a claim made as the stage changes is never
      // counted in the wrong stage. Acquire: the next stage's layout was published with it.
      claim = atomic_ref<std::uint64_t>(r.claim).fetch_add(1);
      if (std::uint32_t(claim) + 1 < r.slices && !p.pools.push(ctx, b | kSliced))
        atomic_ref<std::uint32_t>(*p.error).store(octree_pools_full);
    }
    claim = ctx.broadcast(claim);
    const std::uint32_t stage = std::uint32_t(claim >> 32), s = std::uint32_t(claim);
    if (s >= r.slices) return;  // every slice of this stage is taken: a spare task
    const std::uint32_t node = r.node;
    const OctreeNode cell = p.nodes[node];
    const Particle* src = p.buf[cell.depth % 2];
    const std::uint32_t lo = cell.begin + s * p.slice;
    const std::uint32_t hi = cell.end - lo < p.slice ? cell.end : lo + p.slice;
    for (std::uint32_t k = lid; k < 8; k += threads) sh.count[k] = 0;
    ctx.barrier();
    for (std::uint32_t i = lo + lid; i < hi; i += threads)
      atomic_ref<std::uint32_t>(sh.count[octant(src[i], cell)]).fetch_add(1, memory_order::relaxed);
    ctx.barrier();
    if (stage == 0) {
      if (lid != 0) return;
      for (std::uint32_t k = 0; k < 8; ++k)
        if (sh.count[k])
          atomic_ref<std::uint32_t>(r.count[k]).fetch_add(sh.count[k], memory_order::relaxed);
      // acq_rel: the last slice sees every slice's counts.
      if (atomic_ref<std::uint32_t>(r.finished[0]).fetch_add(1) + 1 != r.slices) return;
      const std::uint32_t first =
          atomic_ref<std::uint32_t>(*p.node_count).fetch_add(8, memory_order::relaxed);
      if (first + 8 > p.node_capacity) {
        atomic_ref<std::uint32_t>(*p.error).store(octree_out_of_nodes);
        return;
      }
      std::uint32_t at = cell.begin, leaf_mask = 0;
      const float h = cell.half / 2;
      for (std::uint32_t k = 0; k < 8; ++k) {
        const std::uint32_t count =
            atomic_ref<std::uint32_t>(r.count[k]).load(memory_order::relaxed);
        OctreeNode c{cell.cx + (k & 1 ? h : -h),
                     cell.cy + (k & 2 ? h : -h),
                     cell.cz + (k & 4 ? h : -h),
                     h,
                     at,
                     at + count,
                     0,
                     cell.depth + 1};
        if (count <= p.max_leaf || c.depth >= p.max_depth) leaf_mask |= 1u << k;
        p.nodes[first + k] = c;
        r.at[k] = at;
        at += count;
      }
      p.nodes[node].child = first;
      r.first = first;
      r.leaf_mask = leaf_mask;
      // The scatter stage starts: its claims see the layout (release).
      atomic_ref<std::uint64_t>(r.claim).store(std::uint64_t(1) << 32);
      if (!p.pools.push(ctx, b | kSliced))
        atomic_ref<std::uint32_t>(*p.error).store(octree_pools_full);
      return;
    }
    if (lid == 0) {
      for (std::uint32_t k = 0; k < 8; ++k)
        sh.cursor[k] = sh.count[k] ? atomic_ref<std::uint32_t>(r.at[k]).fetch_add(
                                         sh.count[k], memory_order::relaxed)
                                   : 0;
      sh.leaf_mask = r.leaf_mask;
    }
    ctx.barrier();
    scatter(p, sh, cell, lo, hi, lid, threads);
    ctx.barrier();
    if (lid != 0) return;
    // acq_rel: the last slice publishes the children after every slice's particles.
    if (atomic_ref<std::uint32_t>(r.finished[1]).fetch_add(1) + 1 != r.slices) return;
    std::uint32_t leaves = 0;
    for (std::uint32_t k = 0; k < 8; ++k) {
      const std::uint32_t count = p.nodes[r.first + k].end - p.nodes[r.first + k].begin;
      if ((r.leaf_mask >> k) & 1)
        leaves += count;
      else if (!p.pools.push(ctx, r.first + k))
        atomic_ref<std::uint32_t>(*p.error).store(octree_pools_full);
    }
    if (leaves) atomic_ref<std::uint64_t>(*p.placed).fetch_add(leaves);
  }

  template <class Ctx>
  COOP_HD static void split(Ctx& ctx, const Params& p, std::uint32_t task) {
    Shared& sh = ctx.shared();
    const OctreeNode cell = p.nodes[task];
    const Particle* src = p.buf[cell.depth % 2];
    const std::uint32_t lid = ctx.local_id(), threads = ctx.local_size();
    for (std::uint32_t k = lid; k < 8; k += threads) sh.count[k] = 0;
    ctx.barrier();
    for (std::uint32_t i = cell.begin + lid; i < cell.end; i += threads)
      atomic_ref<std::uint32_t>(sh.count[octant(src[i], cell)]).fetch_add(1, memory_order::relaxed);
    ctx.barrier();
    if (lid == 0) {
      sh.first = atomic_ref<std::uint32_t>(*p.node_count).fetch_add(8, memory_order::relaxed);
      sh.leaf_mask = 0;
      if (sh.first + 8 > p.node_capacity) {
        atomic_ref<std::uint32_t>(*p.error).store(octree_out_of_nodes);
      } else {
        std::uint32_t at = cell.begin;
        const float h = cell.half / 2;
        for (std::uint32_t k = 0; k < 8; ++k) {
          OctreeNode c{cell.cx + (k & 1 ? h : -h),
                       cell.cy + (k & 2 ? h : -h),
                       cell.cz + (k & 4 ? h : -h),
                       h,
                       at,
                       at + sh.count[k],
                       0,
                       cell.depth + 1};
          if (sh.count[k] <= p.max_leaf || c.depth >= p.max_depth) sh.leaf_mask |= 1u << k;
          p.nodes[sh.first + k] = c;
          sh.cursor[k] = at;
          at += sh.count[k];
        }
        p.nodes[task].child = sh.first;
      }
    }
    ctx.barrier();
    if (sh.first + 8 > p.node_capacity) return;
    scatter(p, sh, cell, cell.begin, cell.end, lid, threads);
    ctx.barrier();
    if (lid == 0) {
      std::uint32_t leaves = 0;
      for (std::uint32_t k = 0; k < 8; ++k) {
        if ((sh.leaf_mask >> k) & 1)
          leaves += sh.count[k];
        else if (!p.pools.push(ctx, sh.first + k))
          atomic_ref<std::uint32_t>(*p.error).store(octree_pools_full);
      }
      if (leaves) atomic_ref<std::uint64_t>(*p.placed).fetch_add(leaves);
    }
  }
};

/// Seeded particles in the unit cube, clustered (16 Gaussian clumps over a uniform background):
/// uneven cell sizes, so work stealing matters.
inline std::vector<Particle> make_particles(std::uint32_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<std::array<float, 4>> clumps(16);
  for (auto& c : clumps) c = {uni(rng), uni(rng), uni(rng), 0.01f + 0.05f * uni(rng)};
  std::vector<Particle> ps(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    float x, y, z;
    if (i % 5 == 0) {
      x = uni(rng), y = uni(rng), z = uni(rng);
    } else {
      auto& c = clumps[rng() % clumps.size()];
      std::normal_distribution<float> g(0.0f, c[3]);
      x = c[0] + g(rng), y = c[1] + g(rng), z = c[2] + g(rng);
    }
    auto clamp = [](float v) { return std::min(std::max(v, 0.0f), std::nextafter(1.0f, 0.0f)); };
    ps[i] = {clamp(x), clamp(y), clamp(z), i};
  }
  return ps;
}

/// Buffers of one octree run; the root cell is the unit cube.
struct OctreeRun {
  /// Internal cells the tree can have at most: those at one depth are disjoint and each holds
  /// more than max_leaf particles. Reached only by inputs that nest clumps down to max_depth;
  /// at 8 M particles it is 5 M cells (1.3 GB of nodes), where real inputs need a few percent.
  static std::uint64_t internal_cells_bound(std::uint64_t n, std::uint32_t max_leaf,
                                            std::uint32_t max_depth) {
    return std::min<std::uint64_t>(
        std::uint64_t(max_depth) * (n / (std::uint64_t(max_leaf) + 1) + 1), 1ull << 27);
  }
  /// A first guess that fits the inputs a user has (every internal cell holds more than
  /// max_leaf particles, so twice n / (max_leaf + 1) allows the same particles to be counted
  /// at two depths, plus a chain of max_depth); a run that needs more fails with
  /// octree_out_of_nodes and is run again with the bound.
  static std::uint64_t internal_cells_guess(std::uint64_t n, std::uint32_t max_leaf,
                                            std::uint32_t max_depth) {
    return std::min(internal_cells_bound(n, max_leaf, max_depth),
                    2 * (n / (std::uint64_t(max_leaf) + 1)) + max_depth + 1);
  }

  /// `slice`: the most particles one task counts or scatters (bigger cells are split in
  /// slices by many tasks); `internal_cells`: room for this many split cells; `runs`: builds of
  /// the tree in one launch (RunConfig::runs_per_kernel).
  OctreeRun(const std::vector<Particle>& particles, std::uint32_t pools, std::uint32_t max_leaf,
            std::uint32_t max_depth, std::uint32_t slice, std::uint64_t internal_cells,
            std::uint32_t runs = 1)
      : b0(particles),
        b1(particles.size()),
        out(particles.size()),
        nodes(1 + 8 * internal_cells),
        steal(pools, WorkPoolBuffers<std::uint32_t>::capacity_for(pools, nodes.size() / 8 + 1)),
        // Cells with more than `slice` particles are disjoint at one depth.
        splits(1 + std::uint64_t(max_depth) * (particles.size() / (std::max(slice, 1u) + 1))) {
    const std::uint32_t n = std::uint32_t(particles.size());
    nodes[0] = {0.5f, 0.5f, 0.5f, 0.5f, 0, n, 0, 0};
    *node_count = 1;
    if (n <= max_leaf || max_depth == 0) {
      for (std::uint32_t i = 0; i < n; ++i) out[i] = particles[i];
      *placed = std::uint64_t(n) * runs;  // the root is a leaf: every run is over at once
    } else {
      steal.push(0, 0);  // the root cell's task
    }
    if (runs > 1) {
      // What a build changes before it reads it: the particles' first buffer (the scatters
      // reuse it from depth 2), the counters and split records, and the pools (the root's task
      // in pool 0). The cells are written whole before they are read (the root's children
      // link too), and b1 and out before they are read.
      saved.add(b0);
      saved.add(node_count);
      saved.add(split_count);
      saved.add(splits);
      saved.add(steal.counts());
      saved.add(steal.slots(), 1);
    }
    steal.to_device();
    for (auto* a : {&b0, &b1, &out}) a->to_device();
    nodes.to_device();
    splits.to_device();
    params = {{b0.data(), b1.data()},
              out.data(),
              nodes.data(),
              node_count.get(),
              std::uint32_t(nodes.size()),
              placed.get(),
              error.get(),
              n,
              max_leaf,
              max_depth,
              steal.view(),
              splits.data(),
              split_count.get(),
              std::uint32_t(splits.size()),
              std::max(slice, 1u),
              std::max(runs, 1u),
              saved.view()};
  }
  ManagedArray<Particle> b0, b1, out;
  ManagedArray<OctreeNode> nodes;
  Managed<std::uint32_t> node_count, error, split_count;
  Managed<std::uint64_t> placed;
  WorkPoolBuffers<std::uint32_t> steal;
  ManagedArray<OctreeSplit> splits;
  RunSnapshot saved;
  Octree::Params params;
};

/// Checks an octree against the rules it was built by; returns "" or the first violation.
/// Every particle appears once in `out`; each internal node's 8 children partition its range
/// in octant order and each particle of a child lies in that child's octant of the parent;
/// leaves hold at most max_leaf particles unless at max_depth.
inline std::string check_octree(const std::vector<Particle>& in, const std::vector<Particle>& out,
                                const std::vector<OctreeNode>& nodes, std::uint32_t max_leaf,
                                std::uint32_t max_depth) {
  std::vector<std::uint8_t> seen(in.size(), 0);
  for (auto& q : out) {
    if (q.id >= in.size() || seen[q.id]) return "particle ids in the output are not a permutation";
    seen[q.id] = 1;
    const Particle& o = in[q.id];
    if (o.x != q.x || o.y != q.y || o.z != q.z)
      return "particle " + std::to_string(q.id) + " changed position";
  }
  // Walk from the root; every particle in a leaf checks its octant at each ancestor.
  std::vector<std::uint32_t> stack{0}, path_of(nodes.size(), 0xffffffffu);
  std::vector<std::uint32_t> leaf_of(in.size(), 0xffffffffu);
  std::uint64_t leaf_particles = 0;
  while (!stack.empty()) {
    std::uint32_t v = stack.back();
    stack.pop_back();
    const OctreeNode& c = nodes[v];
    if (c.child == 0) {
      if (c.end - c.begin > max_leaf && c.depth < max_depth)
        return "leaf " + std::to_string(v) + " holds " + std::to_string(c.end - c.begin) +
               " particles above depth " + std::to_string(max_depth);
      leaf_particles += c.end - c.begin;
      for (std::uint32_t i = c.begin; i < c.end; ++i) leaf_of[i] = v;
      continue;
    }
    if (c.child + 8 > nodes.size()) return "node " + std::to_string(v) + " has no children";
    std::uint32_t at = c.begin;
    for (std::uint32_t k = 0; k < 8; ++k) {
      const OctreeNode& ch = nodes[c.child + k];
      if (ch.begin != at || ch.depth != c.depth + 1)
        return "children of node " + std::to_string(v) + " do not partition its range";
      at = ch.end;
      path_of[c.child + k] = v;
      stack.push_back(c.child + k);
    }
    if (at != c.end) return "children of node " + std::to_string(v) + " do not cover its range";
  }
  if (leaf_particles != in.size()) return "leaves do not hold every particle exactly once";
  for (std::uint32_t i = 0; i < out.size(); ++i) {
    for (std::uint32_t v = leaf_of[i]; v != 0; v = path_of[v]) {
      const std::uint32_t parent = path_of[v];
      if (octant(out[i], nodes[parent]) != v - nodes[parent].child)
        return "particle " + std::to_string(out[i].id) + " is outside its cell";
    }
  }
  return "";
}

/// Reference: the same rules applied sequentially. Returns the non-empty leaves as
/// (depth, centre, count), sorted, for comparison with a parallel build.
using LeafKey = std::tuple<std::uint32_t, float, float, float, std::uint32_t>;
inline std::vector<LeafKey> reference_octree_leaves(std::vector<Particle> ps,
                                                    std::uint32_t max_leaf,
                                                    std::uint32_t max_depth) {
  std::vector<LeafKey> leaves;
  std::vector<OctreeNode> stack{{0.5f, 0.5f, 0.5f, 0.5f, 0, std::uint32_t(ps.size()), 0, 0}};
  while (!stack.empty()) {
    OctreeNode c = stack.back();
    stack.pop_back();
    if (c.end - c.begin <= max_leaf || c.depth >= max_depth) {
      if (c.end > c.begin) leaves.emplace_back(c.depth, c.cx, c.cy, c.cz, c.end - c.begin);
      continue;
    }
    auto first = ps.begin() + c.begin, last = ps.begin() + c.end;
    std::stable_sort(first, last, [&](const Particle& a, const Particle& b) {
      return octant(a, c) < octant(b, c);
    });
    const float h = c.half / 2;
    std::uint32_t at = c.begin;
    for (std::uint32_t k = 0; k < 8; ++k) {
      std::uint32_t end = at;
      while (end < c.end && octant(ps[end], c) == k) ++end;
      stack.push_back({c.cx + (k & 1 ? h : -h), c.cy + (k & 2 ? h : -h), c.cz + (k & 4 ? h : -h), h,
                       at, end, 0, c.depth + 1});
      at = end;
    }
  }
  std::sort(leaves.begin(), leaves.end());
  return leaves;
}

/// The non-empty leaves of a built octree, in the reference's form.
inline std::vector<LeafKey> octree_leaves(const std::vector<OctreeNode>& nodes,
                                          std::uint32_t count) {
  std::vector<LeafKey> leaves;
  for (std::uint32_t v = 0; v < count; ++v)
    if (nodes[v].child == 0 && nodes[v].end > nodes[v].begin)
      leaves.emplace_back(nodes[v].depth, nodes[v].cx, nodes[v].cy, nodes[v].cz,
                          nodes[v].end - nodes[v].begin);
  std::sort(leaves.begin(), leaves.end());
  return leaves;
}

}  // namespace coop::apps
