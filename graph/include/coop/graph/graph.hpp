// Graphs for the applications: CSR with arc weights, transpose and symmetrisation, and readers
// for the formats users bring (DIMACS .gr, METIS .graph, Matrix Market .mtx, Galois binary .gr
// v1) plus coop's own binary cache. Vertex ids are 0-based in file order (DIMACS / METIS /
// Matrix Market vertex 1 is id 0).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace coop::graph {

/// A malformed or unreadable graph file: the message names the file, the line (text formats)
/// or byte offset (binary formats) and the reason.
class parse_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Arc {
  std::uint32_t from, to, weight;
};

/// Compressed sparse rows: the arcs out of v are col[row[v] .. row[v+1]) with weight[...] (every
/// arc has a weight; formats without weights give 1).
struct Graph {
  std::vector<std::uint32_t> row{0};  ///< n + 1 offsets
  std::vector<std::uint32_t> col;     ///< m targets
  std::vector<std::uint32_t> weight;  ///< m weights

  std::uint32_t n() const { return std::uint32_t(row.size() - 1); }
  std::uint32_t m() const { return std::uint32_t(col.size()); }
  std::uint32_t degree(std::uint32_t v) const { return row[v + 1] - row[v]; }

  /// Builds CSR from arcs (a stable counting sort: each vertex's arcs keep their input order).
  static Graph from_arcs(std::uint32_t n, const std::vector<Arc>& arcs);
  /// The reversed graph (u -> v becomes v -> u), for pull-style algorithms.
  Graph transpose() const;
  /// Both directions of every arc, without self loops or duplicate arcs (the smallest weight
  /// is kept), for colouring and independent sets.
  Graph symmetrize() const;
  bool operator==(const Graph&) const = default;
};

enum class Format { dimacs, metis, matrix_market, galois_binary, coop_binary };
const char* format_name(Format f);
/// The format a file is in, from its extension and (for .gr) its first bytes.
Format detect_format(const std::string& path);

Graph read_dimacs(const std::string& path);
Graph read_metis(const std::string& path);
Graph read_matrix_market(const std::string& path);
Graph read_galois_binary(const std::string& path);
/// Reads any of the above by detect_format.
Graph read_graph(const std::string& path);

/// coop's binary cache: a header and the three arrays, checked on reading.
void write_binary(const Graph& g, const std::string& path);
Graph read_binary(const std::string& path);

}  // namespace coop::graph
