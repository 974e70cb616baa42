#include <algorithm>
#include <limits>

#include "coop/graph/graph.hpp"

namespace coop::graph {

Graph Graph::from_arcs(std::uint32_t n, const std::vector<Arc>& arcs) {
  Graph g;
  g.row.assign(std::size_t(n) + 1, 0);
  for (const Arc& a : arcs) ++g.row[a.from + 1];
  for (std::uint32_t v = 0; v < n; ++v) g.row[v + 1] += g.row[v];
  g.col.resize(arcs.size());
  g.weight.resize(arcs.size());
  std::vector<std::uint32_t> next(g.row.begin(), g.row.end() - 1);
  for (const Arc& a : arcs) {
    std::uint32_t at = next[a.from]++;
    g.col[at] = a.to;
    g.weight[at] = a.weight;
  }
  return g;
}

Graph Graph::transpose() const {
  std::vector<Arc> arcs;
  arcs.reserve(m());
  for (std::uint32_t v = 0; v < n(); ++v)
    for (std::uint32_t e = row[v]; e < row[v + 1]; ++e) arcs.push_back({col[e], v, weight[e]});
  return from_arcs(n(), arcs);
}

Graph Graph::symmetrize() const {
  std::vector<Arc> arcs;
  arcs.reserve(std::size_t(m()) * 2);
  for (std::uint32_t v = 0; v < n(); ++v)
    for (std::uint32_t e = row[v]; e < row[v + 1]; ++e) {
      if (col[e] == v) continue;
      arcs.push_back({v, col[e], weight[e]});
      arcs.push_back({col[e], v, weight[e]});
    }
  std::sort(arcs.begin(), arcs.end(), [](const Arc& a, const Arc& b) {
    return a.from != b.from ? a.from < b.from : a.to != b.to ? a.to < b.to : a.weight < b.weight;
  });
  arcs.erase(
      std::unique(arcs.begin(), arcs.end(),
                  [](const Arc& a, const Arc& b) { return a.from == b.from && a.to == b.to; }),
      arcs.end());
  return from_arcs(n(), arcs);
}

}  // namespace coop::graph
