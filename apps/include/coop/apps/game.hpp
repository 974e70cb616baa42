// game: Connect-Four minimax (negamax) to a fixed look-ahead by work stealing. A task is a
// board in the game tree; a workgroup generates its children, scores the children at the
// look-ahead depth in parallel (one thread per child x 4-cell window), folds them into the
// board's value and pushes the others. A finished board passes its value to its parent with an
// atomic max and a pending-children count; the root's completion ends the kernel. offer_kill
// and request_fork at the top of the main loop; the searches finished are transmitted. A task's
// work is bounded (at most 7 children, 7 x 69 window scores, a walk up of at most `depth`
// parents), so a workgroup reaches its next offer within microseconds without splitting tasks.
//
// runs_per_kernel > 1 searches again inside the same launch (a long job, the kernel
// Repeated<Game>): once the root has its value, the workgroups copy back the root, the node
// count and the pools with the root's task (the other boards are written whole before they are
// read). `done` counts the searches finished, so that the last one proves them all.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "coop/apps/common.hpp"
#include "coop/apps/repeated.hpp"
#include "coop/kernel.hpp"
#include "coop/work_pool.hpp"

namespace coop::apps {

/// Bitboards (7 columns of 6 cells, one spare bit per column): `mine` are the stones of the
/// player to move, `mask` all stones.
struct Board {
  std::uint64_t mine = 0, mask = 0;
};

namespace connect4 {
inline constexpr int kWidth = 7, kHeight = 6, kWindows = 69;
inline constexpr std::int32_t kWin = 1000000;

COOP_HD inline std::uint64_t bottom(int c) { return 1ull << (c * (kHeight + 1)); }
COOP_HD inline std::uint64_t top(int c) { return 1ull << (kHeight - 1 + c * (kHeight + 1)); }
COOP_HD inline bool can_play(const Board& b, int c) { return (b.mask & top(c)) == 0; }
/// The position after the player to move drops a stone in column c (the other player to move).
COOP_HD inline Board play(Board b, int c) {
  b.mine ^= b.mask;
  b.mask |= b.mask + bottom(c);
  return b;
}
COOP_HD inline bool four(std::uint64_t s) {
  const int shifts[4] = {1, kHeight, kHeight + 1, kHeight + 2};
  for (int d : shifts) {
    std::uint64_t m = s & (s >> d);
    if (m & (m >> (2 * d))) return true;
  }
  return false;
}
/// Did the player who just moved (not the one to move) connect four?
COOP_HD inline bool just_won(const Board& b) { return four(b.mine ^ b.mask); }
COOP_HD inline bool full(const Board& b) {
  for (int c = 0; c < kWidth; ++c)
    if (can_play(b, c)) return false;
  return true;
}
/// The i-th of the 69 lines of four cells.
COOP_HD inline std::uint64_t window(int i) {
  int c, r, dc, dr;
  if (i < 24) {  // horizontal: 6 rows x 4 starts
    r = i / 4, c = i % 4, dc = 1, dr = 0;
  } else if (i < 45) {  // vertical: 7 columns x 3 starts
    i -= 24, c = i / 3, r = i % 3, dc = 0, dr = 1;
  } else if (i < 57) {  // diagonal up-right: 4 x 3
    i -= 45, c = i / 3, r = i % 3, dc = 1, dr = 1;
  } else {  // diagonal down-right: 4 x 3
    i -= 57, c = i / 3, r = 3 + i % 3, dc = 1, dr = -1;
  }
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) m |= 1ull << ((c + k * dc) * (kHeight + 1) + (r + k * dr));
  return m;
}
COOP_HD inline int popcount(std::uint64_t x) {
  int n = 0;
  for (; x; x &= x - 1) ++n;
  return n;
}
/// One window's contribution to the score of the player to move.
COOP_HD inline std::int32_t window_score(const Board& b, int i) {
  const std::int32_t weight[4] = {0, 1, 4, 16};
  const std::uint64_t w = window(i);
  const int me = popcount(w & b.mine), them = popcount(w & (b.mine ^ b.mask));
  if (them == 0) return weight[me < 4 ? me : 3];
  if (me == 0) return -weight[them < 4 ? them : 3];
  return 0;
}
COOP_HD inline std::int32_t score(const Board& b) {
  std::int32_t s = 0;
  for (int i = 0; i < kWindows; ++i) s += window_score(b, i);
  return s;
}
/// Board from a move list ("3,3,4" = columns 0-6); throws on an illegal or finished game.
Board parse_moves(const std::string& moves);
}  // namespace connect4

struct GameNode {
  Board board;
  std::uint32_t parent;
  std::int32_t value;  ///< negamax value for the player to move, folded in by an atomic max
  std::uint32_t pending;
  std::uint32_t depth;
};

enum GameError : std::uint32_t { game_ok = 0, game_out_of_nodes = 1, game_pools_full = 2 };

struct Game {
  struct Params {
    GameNode* nodes;
    std::uint32_t* node_count;
    std::uint32_t node_capacity;
    std::uint32_t* done;  ///< searches whose root has its value
    std::int32_t* root_value;
    std::uint32_t* error;
    std::uint32_t depth;            ///< look-ahead in plies
    WorkPool<std::uint32_t> pools;  ///< tasks: node indices
    /// Searches in this kernel (RunConfig::runs_per_kernel); before each but the first the
    /// kernel copies `restore` back.
    std::uint32_t runs_per_kernel = 1;
    RunRestore restore{};
    RunEnd run_end{};  ///< ends the launch after an earlier run when the host asks (RunStop)
  };
  struct Transmit {
    std::uint32_t runs = 0;  ///< searches finished
  };
  /// 32 registers a thread (2,048 threads per SM), as the search takes without coop's
  /// primitives: the out-of-line protocol call would take it to 40 (6 instead of 8 workgroups of
  /// 256 threads per SM).
  static constexpr KernelTraits traits{.max_threads = 1024, .min_groups_per_sm = 2};
  enum Kind : std::uint32_t { inner = 0, scored = 1, terminal = 2 };
  struct Shared {
    Board child[connect4::kWidth];
    std::int32_t value[connect4::kWidth];
    std::uint32_t kind[connect4::kWidth];
    std::uint32_t scored_index[connect4::kWidth];  ///< the children to score, in order
    std::uint32_t children, scored, first;
  };

  /// One search (runs_per_kernel > 1 launches Repeated<Game>).
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit&) const {
    const auto all_done = [&] { return run_over(p, 0); };
    COOP_WORK_STEALING(ctx, p.pools, all_done, [&](std::uint32_t task) { work(ctx, p, task); });
  }

  /// Whether the search after `runs` finished ones is over: the root has its value (or an
  /// error).
  COOP_HD static bool run_over(const Params& p, std::uint32_t runs) {
    return atomic_ref<std::uint32_t>(*p.done).load() > runs ||
           atomic_ref<std::uint32_t>(*p.error).load(memory_order::relaxed) != game_ok;
  }

  /// One task: expands a board.
  template <class Ctx>
  COOP_HD static void work(Ctx& ctx, const Params& p, std::uint32_t task) {
    using namespace connect4;
    Shared& sh = ctx.shared();
    const std::uint32_t lid = ctx.local_id();
    if (lid == 0) {
      const GameNode node = p.nodes[task];
      std::uint32_t inner_count = 0;
      sh.children = sh.scored = 0;
      for (int c = 0; c < kWidth; ++c) {
        if (!can_play(node.board, c)) continue;
        const std::uint32_t i = sh.children++;
        sh.child[i] = play(node.board, c);
        sh.value[i] = 0;
        if (just_won(sh.child[i])) {
          sh.kind[i] = terminal;
          sh.value[i] = -kWin;  // the player to move there has lost
        } else if (full(sh.child[i])) {
          sh.kind[i] = terminal;  // a draw
        } else if (node.depth + 1 >= p.depth) {
          sh.kind[i] = scored;
          sh.scored_index[sh.scored++] = i;
        } else {
          sh.kind[i] = inner;
          ++inner_count;
        }
      }
      sh.first = inner_count ? atomic_ref<std::uint32_t>(*p.node_count)
                                   .fetch_add(inner_count, memory_order::relaxed)
                             : 0;
      if (inner_count && sh.first + inner_count > p.node_capacity) {
        atomic_ref<std::uint32_t>(*p.error).store(game_out_of_nodes);
        sh.children = 0;
      }
      // Counted before any child exists: +1 for this expansion itself.
      atomic_ref<std::uint32_t>(p.nodes[task].pending)
          .store(inner_count + 1, memory_order::relaxed);
    }
    ctx.barrier();
    // Score the look-ahead children: one (child, window) pair per thread.
    for (std::uint32_t j = lid; j < sh.scored * kWindows; j += ctx.local_size()) {
      const std::uint32_t i = sh.scored_index[j / kWindows];
      atomic_ref<std::int32_t>(sh.value[i])
          .fetch_add(window_score(sh.child[i], int(j % kWindows)), memory_order::relaxed);
    }
    ctx.barrier();
    if (lid != 0 || sh.children == 0) return;
    std::int32_t best = -kWin - 1;
    std::uint32_t next = sh.first;
    for (std::uint32_t i = 0; i < sh.children; ++i) {
      if (sh.kind[i] != inner) {
        best = std::max(best, -sh.value[i]);
        continue;
      }
      p.nodes[next] = {sh.child[i], task, -kWin - 1, 0, p.nodes[task].depth + 1};
      thread_fence();  // the node before its task
      if (!p.pools.push(ctx, next)) atomic_ref<std::uint32_t>(*p.error).store(game_pools_full);
      ++next;
    }
    if (best > -kWin - 1)
      atomic_ref<std::int32_t>(p.nodes[task].value).fetch_max(best, memory_order::relaxed);
    finish(p, task);
  }

  /// One of `v`'s pending parts is done; the last one passes the value up (and so on).
  COOP_HD static void finish(const Params& p, std::uint32_t v) {
    for (;;) {
      if (atomic_ref<std::uint32_t>(p.nodes[v].pending).fetch_sub(1) != 1) return;
      const std::int32_t value = atomic_ref<std::int32_t>(p.nodes[v].value).load();
      if (v == 0) {
        *p.root_value = value;
        atomic_ref<std::uint32_t>(*p.done).fetch_add(1);  // after the value (release)
        return;
      }
      const std::uint32_t parent = p.nodes[v].parent;
      atomic_ref<std::int32_t>(p.nodes[parent].value).fetch_max(-value);
      v = parent;
    }
  }
};

/// Internal boards of a full tree to `depth` plies: 1 + 7 + ... + 7^(depth-1).
inline std::uint64_t game_tree_nodes(std::uint32_t depth) {
  std::uint64_t total = 0, level = 1;
  for (std::uint32_t d = 0; d < depth; ++d, level *= 7) total += level;
  return total;
}

struct GameRun {
  /// `runs`: searches in one launch (RunConfig::runs_per_kernel).
  GameRun(const Board& root, std::uint32_t depth, std::uint32_t pools, std::uint32_t runs = 1)
      : nodes(game_tree_nodes(depth)),
        steal(pools, WorkPoolBuffers<std::uint32_t>::capacity_for(pools, nodes.size())) {
    if (depth < 1 || depth > 10)
      throw std::invalid_argument("game: the look-ahead must be 1 to 10 plies, not " +
                                  std::to_string(depth));
    nodes[0] = {root, 0, -connect4::kWin - 1, 0, 0};
    *node_count = 1;
    steal.push(0, 0);  // the root's task
    if (runs > 1) {
      saved.add(nodes, 1);
      saved.add(node_count);
      saved.add(steal.counts());
      saved.add(steal.slots(), 1);
    }
    nodes.to_device();
    steal.to_device();
    params = {nodes.data(), node_count.get(), std::uint32_t(nodes.size()),
              done.get(),   root_value.get(), error.get(),
              depth,        steal.view(),     std::max(runs, 1u),
              saved.view()};
  }
  ManagedArray<GameNode> nodes;
  Managed<std::uint32_t> node_count, done;
  Managed<std::int32_t> root_value;
  Managed<std::uint32_t> error;
  WorkPoolBuffers<std::uint32_t> steal;
  RunSnapshot saved;
  Game::Params params;
};

/// Reference: sequential negamax with alpha-beta pruning (same rules, same value).
std::int32_t reference_game(const Board& b, std::uint32_t depth);

}  // namespace coop::apps
