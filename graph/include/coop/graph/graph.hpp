/// \file
/// Graphs for the applications: CSR with arc weights, transpose and symmetrisation, and readers
/// for the formats users bring (DIMACS .gr, METIS .graph, Matrix Market .mtx, Galois binary .gr
/// v1) plus coop's own binary cache. Vertex ids are 0-based in file order (DIMACS / METIS /
/// Matrix Market vertex 1 is id 0).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

/// coop::graph (library coop::graph): the applications' graphs, their file formats and seeded
/// generators.
namespace coop::graph {

/// A malformed or unreadable graph file: the message names the file, the line (text formats)
/// or byte offset (binary formats) and the reason.
class parse_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One weighted arc `from` -> `to`, the input of Graph::from_arcs.
struct Arc {
  /// Tail vertex, head vertex and weight.
  /// @{
  std::uint32_t from, to, weight;
  /// @}
};

/// Compressed sparse rows: the arcs out of v are col[row[v] .. row[v+1]) with weight[...] (every
/// arc has a weight; formats without weights give 1).
struct Graph {
  std::vector<std::uint32_t> row{0};  ///< n + 1 offsets
  std::vector<std::uint32_t> col;     ///< m targets
  std::vector<std::uint32_t> weight;  ///< m weights

  /// The number of vertices.
  std::uint32_t n() const { return std::uint32_t(row.size() - 1); }
  /// The number of arcs.
  std::uint32_t m() const { return std::uint32_t(col.size()); }
  /// The out-degree of vertex `v`.
  std::uint32_t degree(std::uint32_t v) const { return row[v + 1] - row[v]; }

  /// Builds CSR from arcs (a stable counting sort: each vertex's arcs keep their input order).
  static Graph from_arcs(std::uint32_t n, const std::vector<Arc>& arcs);
  /// The reversed graph (u -> v becomes v -> u), for pull-style algorithms.
  Graph transpose() const;
  /// Both directions of every arc, without self loops or duplicate arcs (the smallest weight
  /// is kept), for colouring and independent sets.
  Graph symmetrize() const;
  /// The same CSR arrays (the same arcs in the same order).
  bool operator==(const Graph&) const = default;
};

/// The graph file formats coop reads.
enum class Format {
  dimacs,         ///< DIMACS shortest-path text (.gr)
  metis,          ///< METIS text (.graph, .metis)
  matrix_market,  ///< Matrix Market coordinate text (.mtx)
  galois_binary,  ///< Galois binary CSR, version 1 (.gr)
  coop_binary,    ///< coop's binary cache (.coopcsr; write_binary)
};
/// The format's name for messages ("DIMACS", "METIS", "Matrix Market", ...).
const char* format_name(Format f);
/// The format a file is in, from its extension and (for .gr) its first bytes.
Format detect_format(const std::string& path);

/// Reads a DIMACS .gr text file ('p sp N M' and 'a U V W' lines). Throws parse_error.
Graph read_dimacs(const std::string& path);
/// Reads a METIS .graph file (each edge is listed at both ends, giving an arc each way; weight 1
/// unless the file has edge weights). Throws parse_error.
Graph read_metis(const std::string& path);
/// Reads a Matrix Market coordinate file (square; general or symmetric, the latter giving both
/// arcs; pattern matrices get weight 1). Throws parse_error.
Graph read_matrix_market(const std::string& path);
/// Reads a Galois binary CSR file, version 1. Throws parse_error.
Graph read_galois_binary(const std::string& path);
/// Reads any of the formats, chosen by detect_format. Throws parse_error.
Graph read_graph(const std::string& path);

/// coop's binary cache: a header and the three arrays, checked on reading.
void write_binary(const Graph& g, const std::string& path);
/// Reads a file write_binary wrote. Throws parse_error.
Graph read_binary(const std::string& path);

}  // namespace coop::graph
