// The host side of the apps: names, input checks, validation against the CPU references,
// output files, and the game's rules and reference search.
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

namespace coop::apps {

const char* form_name(Form f) {
  switch (f) {
    case Form::cooperative:
      return "cooperative";
    case Form::standalone:
      return "standalone";
    case Form::multi_launch:
      break;
  }
  return "multi-launch";
}

Form parse_form(const std::string& s) {
  for (Form f : {Form::cooperative, Form::standalone, Form::multi_launch})
    if (s == form_name(f)) return f;
  throw std::invalid_argument("unknown form '" + s + "' (cooperative, standalone or multi-launch)");
}

const std::vector<std::string>& app_names() {
  static const std::vector<std::string> names{"color",  "mis",    "p-sssp", "bfs",
                                              "l-sssp", "octree", "game",   "bc"};
  return names;
}

bool is_graph_app(const std::string& app) { return app != "octree" && app != "game"; }
bool has_multi_launch(const std::string& app) { return is_graph_app(app); }

void check_app(const std::string& app) {
  const auto& names = app_names();
  if (std::find(names.begin(), names.end(), app) != names.end()) return;
  std::string list;
  for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown app '" + app + "' (" + list + ")");
}

void Input::check() const {
  check_app(app);
  if (is_graph_app(app)) {
    if (!graph) throw std::invalid_argument(app + " needs a graph (--graph FILE or --gen SPEC)");
    if (graph->n() == 0) throw std::invalid_argument(app + ": the graph has no vertices");
    if ((app == "bfs" || app == "l-sssp" || app == "p-sssp") && source >= graph->n())
      throw std::invalid_argument("source " + std::to_string(source) + " is not a vertex (ids 0-" +
                                  std::to_string(graph->n() - 1) + ")");
  } else if (app == "octree") {
    if (particles == 0) throw std::invalid_argument("octree: needs at least one particle");
    if (max_leaf == 0) throw std::invalid_argument("octree: the leaf size must be at least 1");
    if (max_depth > 30) throw std::invalid_argument("octree: depth at most 30");
  } else {
    connect4::parse_moves(moves);
    if (depth < 1 || depth > 10)
      throw std::invalid_argument("game: the look-ahead must be 1 to 10 plies");
  }
}

const graph::Graph& Input::kernel_graph() const {
  if (app != "color" && app != "mis") return *graph;
  if (!symmetric) symmetric = std::make_shared<graph::Graph>(graph->symmetrize());
  return *symmetric;
}

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

}  // namespace

Validation validate(const Input& in, const Result& r) {
  in.check();
  const std::string& app = in.app;
  if (app == "bfs")
    return compare(r.values, reference_bfs(*in.graph, in.source), "level", "a sequential BFS");
  if (app == "l-sssp" || app == "p-sssp")
    return compare(r.values, reference_sssp(*in.graph, in.source), "distance", "Dijkstra");
  if (app == "color" || app == "mis") {
    const graph::Graph& g = in.kernel_graph();
    if (r.values.size() != g.n()) return {false, "wrong number of values"};
    // The result's own property first (independent of the reference), then the exact match.
    for (std::uint32_t v = 0; v < g.n(); ++v) {
      if (r.values[v] < 0) return {false, "vertex " + std::to_string(v) + " was left undecided"};
      bool blocked = false;
      for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) {
        const std::uint32_t u = g.col[e];
        if (app == "color" && r.values[u] == r.values[v])
          return {false, "adjacent vertices " + std::to_string(v) + " and " + std::to_string(u) +
                             " share colour " + std::to_string(r.values[v])};
        if (app == "mis" && r.values[v] == 1 && r.values[u] == 1)
          return {false, "adjacent vertices " + std::to_string(v) + " and " + std::to_string(u) +
                             " are both in the set"};
        blocked = blocked || r.values[u] == 1;
      }
      if (app == "mis" && r.values[v] == 0 && !blocked)
        return {false, "vertex " + std::to_string(v) + " could join the set (not maximal)"};
    }
    Validation c = app == "color" ? compare(r.values, reference_color(g, in.priority, in.seed),
                                            "colour", "the sequential Jones-Plassmann colouring")
                                  : compare(r.values, reference_mis(g, in.priority, in.seed),
                                            "membership", "the greedy MIS in rank order");
    if (c.ok)
      c.detail = (app == "color" ? "a proper colouring, " : "independent and maximal, ") + c.detail;
    return c;
  }
  if (app == "bc") {
    const std::uint32_t n = in.graph->n();
    std::vector<std::uint32_t> sources(in.bc_sources ? std::min(in.bc_sources, n) : n);
    for (std::uint32_t i = 0; i < sources.size(); ++i) sources[i] = i;
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
  if (app == "octree") {
    std::string why =
        check_octree(in.particle_set, r.particles, r.nodes, in.max_leaf, in.max_depth);
    if (!why.empty()) return {false, why};
    auto want = reference_octree_leaves(in.particle_set, in.max_leaf, in.max_depth);
    auto got = octree_leaves(r.nodes, std::uint32_t(r.nodes.size()));
    if (got != want)
      return {false, "the leaves differ from the sequential build (" + std::to_string(got.size()) +
                         " vs " + std::to_string(want.size()) + " non-empty leaves)"};
    return {true, "a valid octree; its " + std::to_string(got.size()) +
                      " non-empty leaves equal the sequential build's"};
  }
  const std::int32_t want = reference_game(connect4::parse_moves(in.moves), in.depth);
  if (r.game_value != want)
    return {false, "value " + std::to_string(r.game_value) + ", alpha-beta search says " +
                       std::to_string(want)};
  return {true, "value equals a sequential alpha-beta search"};
}

std::string summarize(const Input& in, const Result& r) {
  std::ostringstream os;
  const std::string& app = in.app;
  if (app == "bfs" || app == "l-sssp" || app == "p-sssp") {
    std::size_t reached = 0;
    std::int64_t far = 0;
    for (auto v : r.values)
      if (v >= 0) ++reached, far = std::max(far, v);
    os << "reached " << reached << " of " << r.values.size() << " vertices, "
       << (app == "bfs" ? "deepest level " : "largest distance ") << far;
  } else if (app == "color") {
    std::int64_t colours = 0;
    for (auto v : r.values) colours = std::max(colours, v + 1);
    os << colours << " colours on " << r.values.size() << " vertices";
  } else if (app == "mis") {
    os << std::count(r.values.begin(), r.values.end(), 1) << " of " << r.values.size()
       << " vertices in the set";
  } else if (app == "bc") {
    auto it = std::max_element(r.centrality.begin(), r.centrality.end());
    os << "largest bc " << (it == r.centrality.end() ? 0.0 : *it) << " at vertex "
       << (it - r.centrality.begin());
  } else if (app == "octree") {
    std::size_t leaves = 0;
    std::uint32_t deepest = 0;
    for (auto& c : r.nodes)
      if (c.child == 0) ++leaves, deepest = std::max(deepest, c.depth);
    os << r.particles.size() << " particles in " << leaves << " leaves, " << r.nodes.size()
       << " cells, depth " << deepest;
  } else {
    os << "value " << r.game_value << " after searching " << r.rounds << " boards to depth "
       << in.depth;
  }
  return os.str();
}

void write_output(std::ostream& os, const Input& in, const Result& r) {
  if (in.app == "bc") {
    os.precision(17);
    for (double v : r.centrality) os << v << '\n';
  } else if (in.app == "octree") {
    os.precision(9);
    for (auto& c : r.nodes)
      if (c.child == 0 && c.end > c.begin)
        os << c.depth << ' ' << c.cx << ' ' << c.cy << ' ' << c.cz << ' ' << c.end - c.begin
           << '\n';
  } else if (in.app == "game") {
    os << r.game_value << '\n';
  } else {
    for (auto v : r.values) os << v << '\n';
  }
}

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

}  // namespace coop::apps
