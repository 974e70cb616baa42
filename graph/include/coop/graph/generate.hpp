/// \file
/// Seeded graph generators for the applications' inputs, and named presets for the paper's
/// inputs (labelled as stand-ins where the real graph is not available here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coop/graph/graph.hpp"

namespace coop::graph {

/// A rows x cols 5-point grid, both directions, weight 1 (1000 x 1000 is SuiteSparse ecology1's
/// structure without its diagonal: 1,000,000 vertices, 3,996,000 arcs).
Graph grid2d(std::uint32_t rows, std::uint32_t cols);

/// The parameters of rmat().
struct RmatParams {
  /// The quadrant probabilities; d = 1 - a - b - c (Lonestar's defaults).
  /// @{
  double a = 0.45, b = 0.15, c = 0.15;
  /// @}
  std::uint32_t edge_factor = 8;   ///< arcs per vertex
  std::uint32_t max_weight = 100;  ///< weights uniform in [0, max_weight]
};
/// R-MAT with 2^scale vertices and edge_factor * 2^scale arcs (no self loops).
Graph rmat(std::uint32_t scale, std::uint64_t seed, const RmatParams& p = {});

/// Uniform random directed graph G(n, m) like GTgraph's: weights uniform in [0, max_weight].
Graph uniform(std::uint32_t n, std::uint64_t m, std::uint64_t seed, std::uint32_t max_weight = 100);

/// Road-like: vertices on a grid, every row a path, rows joined at column 0 (so it is connected
/// and its diameter grows like sqrt(n)), plus random extra vertical streets; both directions;
/// average out-degree about 2.8; weights 1..1000 (metres).
Graph road_like(std::uint32_t n, std::uint64_t seed);

/// Circuit-like stand-in for G3_circuit: a grid with a few edges dropped and sparse random
/// long-range extras; average out-degree about 3.8, high diameter.
Graph circuit_like(std::uint32_t n, std::uint64_t seed);

/// What generate() made: the graph and what it is.
struct Generated {
  Graph graph;               ///< the graph (empty from describe())
  std::string name;          ///< the preset or spec
  std::string description;   ///< what it is, and "stand-in for ..." where it replaces a real graph
  std::string stand_in_for;  ///< the real graph a preset replaces ("" when it replaces none)
};

/// The paper's inputs by name: ecology, g3_circuit, usa-ny, usa-nw, usa-w, rmat20, rmat22,
/// 1k-128k, 2k-1m.
std::vector<std::string> preset_names();
/// A preset name, or a spec: grid:RxC, rmat:SCALE[:EDGEFACTOR], uniform:N:M, road:N,
/// circuit:N. Throws std::invalid_argument naming the spec and what is wrong.
Generated generate(const std::string& spec, std::uint64_t seed = 1);
/// What generate(spec) would make (name, description, stand_in_for; an empty graph), without
/// making it: checks a spec cheaply and lists the presets. Throws like generate.
Generated describe(const std::string& spec);

}  // namespace coop::graph
