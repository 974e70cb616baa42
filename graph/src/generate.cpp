#include "coop/graph/generate.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>

namespace coop::graph {

namespace {

void both_ways(std::vector<Arc>& arcs, std::uint32_t u, std::uint32_t v, std::uint32_t w) {
  arcs.push_back({u, v, w});
  arcs.push_back({v, u, w});
}

// Each generator's parameter checks, also made when a spec is only described (so that a bad
// spec is refused as the command line is read, not once generation starts).
void check_grid(std::uint32_t rows, std::uint32_t cols) {
  if (rows == 0 || cols == 0 || std::uint64_t(rows) * cols > 0xfffffffeull)
    throw std::invalid_argument("grid must have 1 to 2^32-2 vertices");
}
void check_rmat(std::uint32_t scale, const RmatParams& p) {
  if (scale == 0 || scale > 31) throw std::invalid_argument("R-MAT scale must be in [1, 31]");
  if (p.a < 0 || p.b < 0 || p.c < 0 || p.a + p.b + p.c > 1)
    throw std::invalid_argument("R-MAT probabilities must be >= 0 and a + b + c <= 1");
  if ((std::uint64_t(1) << scale) * p.edge_factor > 0xffffffffull)
    throw std::invalid_argument("R-MAT graph has more than 2^32-1 arcs");
}
void check_uniform(std::uint32_t n, std::uint64_t m) {
  if (n == 0 || m > 0xffffffffull) throw std::invalid_argument("uniform graph: n >= 1, m < 2^32");
}

}  // namespace

Graph grid2d(std::uint32_t rows, std::uint32_t cols) {
  check_grid(rows, cols);
  std::vector<Arc> arcs;
  arcs.reserve(std::size_t(rows) * cols * 4);
  // Each vertex's arcs in the order up, left, right, down: the CSR rows come out sorted.
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < cols; ++c) {
      std::uint32_t v = r * cols + c;
      if (r > 0) arcs.push_back({v, v - cols, 1});
      if (c > 0) arcs.push_back({v, v - 1, 1});
      if (c + 1 < cols) arcs.push_back({v, v + 1, 1});
      if (r + 1 < rows) arcs.push_back({v, v + cols, 1});
    }
  return Graph::from_arcs(rows * cols, arcs);
}

Graph rmat(std::uint32_t scale, std::uint64_t seed, const RmatParams& p) {
  check_rmat(scale, p);
  const std::uint32_t n = 1u << scale;
  const std::uint64_t m = std::uint64_t(n) * p.edge_factor;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<std::uint32_t> weight(0, p.max_weight);
  std::vector<Arc> arcs;
  arcs.reserve(m);
  while (arcs.size() < m) {
    std::uint32_t u = 0, v = 0;
    for (std::uint32_t bit = 0; bit < scale; ++bit) {
      double x = unit(rng);
      u = u << 1 | (x >= p.a + p.b);
      v = v << 1 | ((x >= p.a && x < p.a + p.b) || x >= p.a + p.b + p.c);
    }
    if (u != v) arcs.push_back({u, v, weight(rng)});
  }
  return Graph::from_arcs(n, arcs);
}

Graph uniform(std::uint32_t n, std::uint64_t m, std::uint64_t seed, std::uint32_t max_weight) {
  check_uniform(n, m);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> vertex(0, n - 1), weight(0, max_weight);
  std::vector<Arc> arcs;
  arcs.reserve(m);
  for (std::uint64_t i = 0; i < m; ++i) {
    std::uint32_t u = vertex(rng);
    arcs.push_back({u, vertex(rng), weight(rng)});
  }
  return Graph::from_arcs(n, arcs);
}

Graph road_like(std::uint32_t n, std::uint64_t seed) {
  if (n == 0) throw std::invalid_argument("road graph needs at least one vertex");
  const std::uint32_t cols = std::uint32_t(std::ceil(std::sqrt(double(n))));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> metres(1, 1000);
  std::bernoulli_distribution street(0.4);  // extra vertical streets: out-degree ~2 + 2 * 0.4
  std::vector<Arc> arcs;
  arcs.reserve(std::size_t(n) * 3);
  for (std::uint32_t v = 0; v < n; ++v) {
    std::uint32_t c = v % cols;
    if (c + 1 < cols && v + 1 < n) both_ways(arcs, v, v + 1, metres(rng));
    if (v + cols < n && (c == 0 || street(rng))) both_ways(arcs, v, v + cols, metres(rng));
  }
  return Graph::from_arcs(n, arcs);
}

Graph circuit_like(std::uint32_t n, std::uint64_t seed) {
  if (n == 0) throw std::invalid_argument("circuit graph needs at least one vertex");
  const std::uint32_t cols = std::uint32_t(std::ceil(std::sqrt(double(n))));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(0.955), extra(0.005);
  std::uniform_int_distribution<std::uint32_t> vertex(0, n - 1), weight(1, 100);
  std::vector<Arc> arcs;
  arcs.reserve(std::size_t(n) * 4);
  for (std::uint32_t v = 0; v < n; ++v) {
    std::uint32_t c = v % cols;
    // Column 0 and the first row always stay, so the grid stays connected.
    if (c + 1 < cols && v + 1 < n && (v < cols || keep(rng)))
      both_ways(arcs, v, v + 1, weight(rng));
    if (v + cols < n && (c == 0 || keep(rng))) both_ways(arcs, v, v + cols, weight(rng));
    if (extra(rng)) {
      std::uint32_t u = vertex(rng);
      if (u != v) both_ways(arcs, v, u, weight(rng));
    }
  }
  return Graph::from_arcs(n, arcs);
}

std::vector<std::string> preset_names() {
  return {"ecology", "g3_circuit", "usa-ny",  "usa-nw", "usa-w",
          "rmat20",  "rmat22",     "1k-128k", "2k-1m"};
}

namespace {

std::uint64_t number(const std::string& spec, std::string_view tok, const char* what) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || end != tok.data() + tok.size() || v == 0)
    throw std::invalid_argument("graph spec '" + spec + "': " + what + " '" + std::string(tok) +
                                "' is not a positive integer");
  return v;
}

std::uint32_t u32(const std::string& spec, std::string_view tok, const char* what) {
  std::uint64_t v = number(spec, tok, what);
  if (v > 0xfffffffeull)
    throw std::invalid_argument("graph spec '" + spec + "': " + what + " is too large");
  return std::uint32_t(v);
}

}  // namespace

namespace {

// What a spec makes: the generator call (not yet run) and its labels.
struct Plan {
  std::function<Graph()> make;
  std::string description;
  std::string stand_in_for;
};

Plan plan(const std::string& spec, std::uint64_t seed) {
  // Presets: the paper's inputs at their sizes.
  if (spec == "ecology")
    return {[] { return grid2d(1000, 1000); },
            "1000 x 1000 5-point grid: SuiteSparse ecology1's structure (without its diagonal), "
            "stand-in for SuiteSparse ecology1",
            "SuiteSparse ecology1"};
  if (spec == "g3_circuit")
    return {[seed] { return circuit_like(1585478, seed); },
            "circuit-like grid with random extras, 1,585,478 vertices: stand-in for SuiteSparse "
            "G3_circuit",
            "SuiteSparse G3_circuit"};
  if (spec == "usa-ny")
    return {[seed] { return road_like(264346, seed); },
            "road-like graph, 264,346 vertices: stand-in for DIMACS USA-road-d.NY",
            "DIMACS USA-road-d.NY"};
  if (spec == "usa-nw")
    return {[seed] { return road_like(1207945, seed); },
            "road-like graph, 1,207,945 vertices: stand-in for DIMACS USA-road-d.NW",
            "DIMACS USA-road-d.NW"};
  if (spec == "usa-w")
    return {[seed] { return road_like(6262104, seed); },
            "road-like graph, 6,262,104 vertices: stand-in for DIMACS USA-road-d.W",
            "DIMACS USA-road-d.W"};
  if (spec == "rmat20")
    return {[seed] { return rmat(20, seed); },
            "R-MAT 2^20 vertices (.45/.15/.15/.25, 8 arcs per vertex)", ""};
  if (spec == "rmat22")
    return {[seed] { return rmat(22, seed); },
            "R-MAT 2^22 vertices (.45/.15/.15/.25, 8 arcs per vertex)", ""};
  if (spec == "1k-128k")
    return {[seed] { return uniform(1024, 131072, seed); },
            "uniform random, n=1024 m=131072 (GTgraph-like)", ""};
  if (spec == "2k-1m")
    return {[seed] { return uniform(2048, 1048576, seed); },
            "uniform random, n=2048 m=1048576 (GTgraph-like)", ""};
  // Specs.
  std::vector<std::string_view> parts;
  std::string_view rest(spec);
  for (std::size_t at; (at = rest.find(':')) != std::string_view::npos; rest.remove_prefix(at + 1))
    parts.push_back(rest.substr(0, at));
  parts.push_back(rest);
  const std::string_view kind = parts[0];
  auto arity = [&](std::size_t lo, std::size_t hi, const char* form) {
    if (parts.size() < lo || parts.size() > hi)
      throw std::invalid_argument("graph spec '" + spec + "': expected " + form);
  };
  if (kind == "grid") {
    arity(2, 2, "grid:ROWSxCOLS");
    std::string_view dims = parts[1];
    std::size_t x = dims.find('x');
    if (x == std::string_view::npos)
      throw std::invalid_argument("graph spec '" + spec + "': expected grid:ROWSxCOLS");
    const std::uint32_t rows = u32(spec, dims.substr(0, x), "rows");
    const std::uint32_t cols = u32(spec, dims.substr(x + 1), "columns");
    check_grid(rows, cols);
    return {[rows, cols] { return grid2d(rows, cols); }, "5-point grid", ""};
  }
  if (kind == "rmat") {
    arity(2, 3, "rmat:SCALE[:EDGEFACTOR]");
    RmatParams p;
    if (parts.size() == 3) p.edge_factor = u32(spec, parts[2], "edge factor");
    const std::uint32_t scale = u32(spec, parts[1], "scale");
    check_rmat(scale, p);
    return {[scale, seed, p] { return rmat(scale, seed, p); }, "R-MAT (.45/.15/.15/.25)", ""};
  }
  if (kind == "uniform") {
    arity(3, 3, "uniform:N:M");
    const std::uint32_t n = u32(spec, parts[1], "vertex count");
    const std::uint64_t m = number(spec, parts[2], "arc count");
    check_uniform(n, m);
    return {[n, m, seed] { return uniform(n, m, seed); }, "uniform random (GTgraph-like)", ""};
  }
  if (kind == "road") {
    arity(2, 2, "road:N");
    const std::uint32_t n = u32(spec, parts[1], "vertex count");
    return {[n, seed] { return road_like(n, seed); }, "road-like graph", ""};
  }
  if (kind == "circuit") {
    arity(2, 2, "circuit:N");
    const std::uint32_t n = u32(spec, parts[1], "vertex count");
    return {[n, seed] { return circuit_like(n, seed); }, "circuit-like graph", ""};
  }
  throw std::invalid_argument("unknown graph spec '" + spec +
                              "' (a preset, grid:RxC, rmat:SCALE[:EF], uniform:N:M, road:N or "
                              "circuit:N)");
}

// f(), with every std::invalid_argument's message naming the spec.
template <class F>
auto naming_spec(const std::string& spec, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.find("'" + spec + "'") != std::string::npos) throw;
    throw std::invalid_argument("graph spec '" + spec + "': " + what);
  }
}

Plan checked_plan(const std::string& spec, std::uint64_t seed) {
  return naming_spec(spec, [&] { return plan(spec, seed); });
}

}  // namespace

Generated generate(const std::string& spec, std::uint64_t seed) {
  Plan p = checked_plan(spec, seed);
  return {naming_spec(spec, p.make), spec, std::move(p.description), std::move(p.stand_in_for)};
}

Generated describe(const std::string& spec) {
  Plan p = checked_plan(spec, 1);
  return {Graph{}, spec, std::move(p.description), std::move(p.stand_in_for)};
}

}  // namespace coop::graph
