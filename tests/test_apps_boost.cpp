// Boost.Graph as an oracle independent of coop's own references: BFS levels, Dijkstra
// distances, Brandes centrality, and the colouring / independent-set properties checked over
// Boost's undirected view, on the real graphs and generated ones (CPU backend). The colour
// count is checked against the reference in test_apps: Pannotia's colouring gives each round
// its own colour, so no greedy colouring (Boost's) predicts it.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/betweenness_centrality.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <cmath>
#include <limits>

#include "backend.hpp"
#include "coop/apps/apps.hpp"
#include "coop/graph/generate.hpp"

using namespace coop;

namespace {

using BoostGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                          boost::property<boost::edge_weight_t, std::uint64_t>>;

BoostGraph to_boost(const graph::Graph& g) {
  BoostGraph b(g.n());
  for (std::uint32_t v = 0; v < g.n(); ++v)
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e)
      boost::add_edge(v, g.col[e], std::uint64_t(g.weight[e]), b);
  return b;
}

std::vector<std::shared_ptr<const graph::Graph>> graphs() {
  std::vector<std::shared_ptr<const graph::Graph>> out;
  for (const char* f : {"rome99.gr", "256_16384.gr"})
    out.push_back(std::make_shared<graph::Graph>(graph::read_graph(test::data_file(f))));
  for (const char* spec : {"grid:30x40", "rmat:10", "road:2000", "uniform:1500:1200"})
    out.push_back(std::make_shared<graph::Graph>(graph::generate(spec, 3).graph));
  return out;
}

apps::Result run_app(Runtime& rt, apps::Input& in) {
  in.check();
  return apps::run(rt, in, {});
}

}  // namespace

TEST(AppsVsBoost, BfsLevels) {
  auto rt = test::make_runtime(8);
  for (auto& g : graphs()) {
    BoostGraph b = to_boost(*g);
    std::vector<std::int64_t> dist(g->n(), -1);
    dist[0] = 0;
    boost::breadth_first_search(
        b, boost::vertex(0, b),
        boost::visitor(boost::make_bfs_visitor(boost::record_distances(
            boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, b)),
            boost::on_tree_edge()))));
    apps::Input in;
    in.app = "bfs";
    in.graph = g;
    EXPECT_EQ(run_app(*rt, in).values, dist);
  }
}

TEST(AppsVsBoost, DijkstraDistances) {
  auto rt = test::make_runtime(8);
  for (auto& g : graphs()) {
    BoostGraph b = to_boost(*g);
    std::vector<std::uint64_t> d(g->n());
    boost::dijkstra_shortest_paths(
        b, boost::vertex(0, b),
        boost::distance_map(
            boost::make_iterator_property_map(d.begin(), boost::get(boost::vertex_index, b)))
            .distance_inf(std::numeric_limits<std::uint64_t>::max()));
    std::vector<std::int64_t> want(g->n());
    for (std::uint32_t v = 0; v < g->n(); ++v)
      want[v] = d[v] == std::numeric_limits<std::uint64_t>::max() ? -1 : std::int64_t(d[v]);
    for (const char* app : {"l-sssp", "p-sssp"}) {
      apps::Input in;
      in.app = app;
      in.graph = g;
      EXPECT_EQ(run_app(*rt, in).values, want) << app;
    }
  }
}

TEST(AppsVsBoost, BrandesCentrality) {
  auto rt = test::make_runtime(8);
  for (const char* spec : {"road:400", "uniform:200:3000", "rmat:8"}) {
    auto g = std::make_shared<graph::Graph>(graph::generate(spec, 5).graph);
    BoostGraph b = to_boost(*g);
    std::vector<double> want(g->n());
    boost::brandes_betweenness_centrality(b,
                                          boost::centrality_map(boost::make_iterator_property_map(
                                              want.begin(), boost::get(boost::vertex_index, b))));
    apps::Input in;
    in.app = "bc";
    in.graph = g;  // every vertex a source, as Boost does
    auto got = run_app(*rt, in).centrality;
    ASSERT_EQ(got.size(), want.size());
    for (std::uint32_t v = 0; v < g->n(); ++v)
      EXPECT_NEAR(got[v], want[v], 1e-9 * std::max(1.0, want[v])) << spec << " vertex " << v;
  }
}

TEST(AppsVsBoost, ColouringAndIndependentSet) {
  auto rt = test::make_runtime(8);
  for (auto& g : graphs()) {
    apps::Input col;
    col.app = "color";
    col.graph = g;
    auto colours = run_app(*rt, col).values;
    apps::Input mis;
    mis.app = "mis";
    mis.graph = g;
    auto in_set = run_app(*rt, mis).values;
    // Boost's view of the symmetrised graph: every edge joins two colours and at most one
    // set member; every non-member has a member neighbour.
    using Undirected = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
    Undirected u(g->n());
    for (std::uint32_t v = 0; v < g->n(); ++v)
      for (std::uint32_t e = g->row[v]; e < g->row[v + 1]; ++e)
        if (g->col[e] != v) boost::add_edge(v, g->col[e], u);
    std::vector<bool> covered(g->n(), false);
    for (auto [e, end] = boost::edges(u); e != end; ++e) {
      auto a = boost::source(*e, u), c = boost::target(*e, u);
      ASSERT_NE(colours[a], colours[c]) << "edge " << a << "-" << c;
      ASSERT_FALSE(in_set[a] == 1 && in_set[c] == 1) << "edge " << a << "-" << c;
      if (in_set[a] == 1) covered[c] = true;
      if (in_set[c] == 1) covered[a] = true;
    }
    for (std::uint32_t v = 0; v < g->n(); ++v) {
      ASSERT_TRUE(in_set[v] == 1 || covered[v]) << "vertex " << v << " could join the set";
    }
  }
}
