// The host side of the apps: each app's input checks, validation against its CPU reference,
// summary line and output file (the functions its row in app_table.cpp names), and the game's
// rules and reference search.
#include "coop/apps/apps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "coop/apps/bc.hpp"
#include "coop/apps/bfs.hpp"
#include "coop/apps/color.hpp"
#include "coop/apps/mis.hpp"
#include "coop/apps/sssp.hpp"
#include "entry_points.hpp"

namespace coop::apps {

namespace entry {

std::vector<std::uint32_t> bc_sources(const Input& in) {
  const std::uint32_t n = in.graph->n();
  std::vector<std::uint32_t> sources(in.bc_sources ? std::min(in.bc_sources, n) : n);
  for (std::uint32_t i = 0; i < sources.size(); ++i) sources[i] = i;
  return sources;
}

// ------------------------------------------------------------------ input checks

void check_octree(const Input& in) {
  if (in.particles == 0) throw std::invalid_argument("octree: needs at least one particle");
  if (in.max_leaf == 0) throw std::invalid_argument("octree: the leaf size must be at least 1");
  if (in.max_depth > 30) throw std::invalid_argument("octree: depth at most 30");
}

void check_game(const Input& in) {
  connect4::parse_moves(in.moves);
  if (in.depth < 1 || in.depth > 10)
    throw std::invalid_argument("game: the look-ahead must be 1 to 10 plies");
}

// ------------------------------------------------------------------ validation

namespace {

std::string first_difference(const std::vector<std::int64_t>& got,
                             const std::vector<std::int64_t>& want, const char* what) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " values for " + std::to_string(want.size()) + " vertices";
  for (std::size_t v = 0; v < got.size(); ++v)
    if (got[v] != want[v])
      return std::string(what) + " of vertex " + std::to_string(v) + " is " +
             std::to_string(got[v]) + ", the reference says " + std::to_string(want[v]);
  return "";
}

Validation compare(const std::vector<std::int64_t>& got, const std::vector<std::int64_t>& want,
                   const char* what, const std::string& reference) {
  std::string diff = first_difference(got, want, what);
  if (!diff.empty()) return {false, diff};
  return {true, "equal to " + reference + " on all " + std::to_string(got.size()) + " vertices"};
}

/// The first broken property of a per-vertex decision (colour, set membership), in vertex
/// order: a vertex left undecided, or what `vertex_violation(v)` says about vertex v ("" when
/// none). Checked before the exact comparison, independently of the reference.
template <class VertexViolation>
std::string first_violation(const graph::Graph& g, const std::vector<std::int64_t>& values,
                            VertexViolation vertex_violation) {
  if (values.size() != g.n()) return "wrong number of values";
  for (std::uint32_t v = 0; v < g.n(); ++v) {
    if (values[v] < 0) return "vertex " + std::to_string(v) + " was left undecided";
    std::string why = vertex_violation(v);
    if (!why.empty()) return why;
  }
  return "";
}

/// Fails with `violation` when there is one; otherwise the comparison with the reference,
/// prefixed with the property shown.
template <class CompareWithReference>
Validation property_then_reference(const std::string& violation, const std::string& property,
                                   CompareWithReference compare_with_reference) {
  if (!violation.empty()) return {false, violation};
  Validation c = compare_with_reference();
  if (c.ok) c.detail = property + ", " + c.detail;
  return c;
}

std::string adjacent(std::uint32_t v, std::uint32_t u) {
  return "adjacent vertices " + std::to_string(v) + " and " + std::to_string(u);
}

}  // namespace

Validation validate_bfs(const Input& in, const Result& r) {
  return compare(r.values, reference_bfs(*in.graph, in.source), "level", "a sequential BFS");
}

Validation validate_sssp(const Input& in, const Result& r) {
  return compare(r.values, reference_sssp(*in.graph, in.source), "distance", "Dijkstra");
}

Validation validate_color(const Input& in, const Result& r) {
  const graph::Graph& g = in.kernel_graph();
  const std::string why = first_violation(g, r.values, [&](std::uint32_t v) -> std::string {
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e)
      if (r.values[g.col[e]] == r.values[v])
        return adjacent(v, g.col[e]) + " share colour " + std::to_string(r.values[v]);
    return "";
  });
  return property_then_reference(why, "a proper colouring", [&] {
    return compare(r.values, reference_color(g, in.priority, in.seed), "colour",
                   "the sequential Jones-Plassmann colouring");
  });
}

Validation validate_mis(const Input& in, const Result& r) {
  const graph::Graph& g = in.kernel_graph();
  const std::string why = first_violation(g, r.values, [&](std::uint32_t v) -> std::string {
    bool blocked = false;
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) {
      const std::uint32_t u = g.col[e];
      if (r.values[v] == 1 && r.values[u] == 1) return adjacent(v, u) + " are both in the set";
      blocked = blocked || r.values[u] == 1;
    }
    if (r.values[v] == 0 && !blocked)
      return "vertex " + std::to_string(v) + " could join the set (not maximal)";
    return "";
  });
  return property_then_reference(why, "independent and maximal", [&] {
    return compare(r.values, reference_mis(g, in.priority, in.seed), "membership",
                   "the greedy MIS in rank order");
  });
}

Validation validate_bc(const Input& in, const Result& r) {
  const std::uint32_t n = in.graph->n();
  const std::vector<std::uint32_t> sources = bc_sources(in);
  std::vector<double> want = reference_bc(*in.graph, sources);
  if (r.centrality.size() != want.size()) return {false, "wrong number of values"};
  for (std::uint32_t v = 0; v < n; ++v)
    if (std::abs(r.centrality[v] - want[v]) > 1e-9 * std::max(1.0, std::abs(want[v])))
      return {false, "bc of vertex " + std::to_string(v) + " is " +
                         std::to_string(r.centrality[v]) + ", Brandes says " +
                         std::to_string(want[v])};
  return {true, "equal to Brandes' algorithm (relative 1e-9) on all " + std::to_string(n) +
                    " vertices over " + std::to_string(sources.size()) + " sources"};
}

Validation validate_octree(const Input& in, const Result& r) {
  std::string why =
      apps::check_octree(in.particle_set, r.particles, r.nodes, in.max_leaf, in.max_depth);
  if (!why.empty()) return {false, why};
  auto want = reference_octree_leaves(in.particle_set, in.max_leaf, in.max_depth);
  auto got = octree_leaves(r.nodes, std::uint32_t(r.nodes.size()));
  if (got != want)
    return {false, "the leaves differ from the sequential build (" + std::to_string(got.size()) +
                       " vs " + std::to_string(want.size()) + " non-empty leaves)"};
  return {true, "a valid octree; its " + std::to_string(got.size()) +
                    " non-empty leaves equal the sequential build's"};
}

Validation validate_game(const Input& in, const Result& r) {
  const std::int32_t want = reference_game(connect4::parse_moves(in.moves), in.depth);
  if (r.game_value != want)
    return {false, "value " + std::to_string(r.game_value) + ", alpha-beta search says " +
                       std::to_string(want)};
  return {true, "value equals a sequential alpha-beta search"};
}

// ------------------------------------------------------------------ summaries

namespace {
void summarize_reach(std::ostream& os, const Result& r, const char* farthest) {
  std::size_t reached = 0;
  std::int64_t far = 0;
  for (auto v : r.values)
    if (v >= 0) ++reached, far = std::max(far, v);
  os << "reached " << reached << " of " << r.values.size() << " vertices, " << farthest << far;
}
}  // namespace

void summarize_levels(std::ostream& os, const Input&, const Result& r) {
  summarize_reach(os, r, "deepest level ");
}

void summarize_distances(std::ostream& os, const Input&, const Result& r) {
  summarize_reach(os, r, "largest distance ");
}

void summarize_color(std::ostream& os, const Input&, const Result& r) {
  std::int64_t colours = 0;
  for (auto v : r.values) colours = std::max(colours, v + 1);
  os << colours << " colours on " << r.values.size() << " vertices";
}

void summarize_mis(std::ostream& os, const Input&, const Result& r) {
  os << std::count(r.values.begin(), r.values.end(), 1) << " of " << r.values.size()
     << " vertices in the set";
}

void summarize_bc(std::ostream& os, const Input&, const Result& r) {
  auto it = std::max_element(r.centrality.begin(), r.centrality.end());
  os << "largest bc " << (it == r.centrality.end() ? 0.0 : *it) << " at vertex "
     << (it - r.centrality.begin());
}

void summarize_octree(std::ostream& os, const Input&, const Result& r) {
  std::size_t leaves = 0;
  std::uint32_t deepest = 0;
  for (auto& c : r.nodes)
    if (c.child == 0) ++leaves, deepest = std::max(deepest, c.depth);
  os << r.particles.size() << " particles in " << leaves << " leaves, " << r.nodes.size()
     << " cells, depth " << deepest;
}

void summarize_game(std::ostream& os, const Input& in, const Result& r) {
  os << "value " << r.game_value << " after searching " << r.rounds << " boards to depth "
     << in.depth;
}

// ------------------------------------------------------------------ output files

void write_values(std::ostream& os, const Input&, const Result& r) {
  for (auto v : r.values) os << v << '\n';
}

void write_bc(std::ostream& os, const Input&, const Result& r) {
  os.precision(17);
  for (double v : r.centrality) os << v << '\n';
}

void write_octree(std::ostream& os, const Input&, const Result& r) {
  os.precision(9);
  for (auto& c : r.nodes)
    if (c.child == 0 && c.end > c.begin)
      os << c.depth << ' ' << c.cx << ' ' << c.cy << ' ' << c.cz << ' ' << c.end - c.begin << '\n';
}

void write_game(std::ostream& os, const Input&, const Result& r) { os << r.game_value << '\n'; }

}  // namespace entry

// ------------------------------------------------------------------ Connect Four

Board connect4::parse_moves(const std::string& moves) {
  Board b;
  std::stringstream ss(moves);
  std::string item;
  int ply = 0;
  while (std::getline(ss, item, ',')) {
    ++ply;
    if (item.size() != 1 || item[0] < '0' || item[0] > '6')
      throw std::invalid_argument("game: move " + std::to_string(ply) + " '" + item +
                                  "' is not a column 0-6");
    const int c = item[0] - '0';
    if (!can_play(b, c))
      throw std::invalid_argument("game: move " + std::to_string(ply) + ": column " +
                                  std::to_string(c) + " is full");
    b = play(b, c);
    if (just_won(b))
      throw std::invalid_argument("game: the opening moves already end the game (move " +
                                  std::to_string(ply) + ")");
  }
  if (full(b)) throw std::invalid_argument("game: the board is full");
  return b;
}

namespace {
std::int32_t negamax(const Board& b, std::uint32_t ply, std::uint32_t depth, std::int32_t alpha,
                     std::int32_t beta) {
  using namespace connect4;
  std::int32_t best = -kWin - 1;
  for (int c = 0; c < kWidth; ++c) {
    if (!can_play(b, c)) continue;
    const Board child = play(b, c);
    std::int32_t v;
    if (just_won(child))
      v = kWin;
    else if (full(child))
      v = 0;
    else if (ply + 1 >= depth)
      v = -score(child);
    else
      v = -negamax(child, ply + 1, depth, -beta, -alpha);
    best = std::max(best, v);
    alpha = std::max(alpha, v);
    if (alpha >= beta) break;
  }
  return best;
}
}  // namespace

std::int32_t reference_game(const Board& b, std::uint32_t depth) {
  return negamax(b, 0, depth, std::numeric_limits<std::int32_t>::min() + 1,
                 std::numeric_limits<std::int32_t>::max());
}

RunStop::RunStop() : words_(2) { reset(); }

void RunStop::request() { atomic_ref<std::uint32_t>(words_[0]).store(1); }

bool RunStop::requested() const { return atomic_ref<std::uint32_t>(words_[0]).load() != 0; }

void RunStop::reset() {
  atomic_ref<std::uint32_t>(words_[0]).store(0);
  words_[1] = RunEnd::kEvery;
}

RunEnd RunStop::arm() {
  // Asked already: the kernel ends after its first run (it would see the request only at its
  // first restart, and end after the second).
  words_[1] = requested() ? 1 : RunEnd::kEvery;
  return {&words_[0], &words_[1]};
}

std::uint32_t RunStop::runs_done(std::uint32_t runs_per_kernel) const {
  return std::min(words_[1], runs_per_kernel);
}

}  // namespace coop::apps
