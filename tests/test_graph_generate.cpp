// Graph generators: sizes, structure against brute force, determinism per seed, the shape each
// stands in for (degree, connectivity, diameter, skew), and spec errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "coop/graph/generate.hpp"
#include "kernels/frontier_bfs.hpp"

using namespace coop::graph;

namespace {

double mean_degree(const Graph& g) { return double(g.m()) / g.n(); }

// How many vertices are reached from 0, and the largest level (the example's sequential BFS).
std::pair<std::uint32_t, std::uint32_t> reach(const Graph& g) {
  const std::vector<std::int32_t> level = coop::examples::reference_bfs(g, 0);
  std::uint32_t seen = 0, depth = 0;
  for (std::int32_t l : level)
    if (l >= 0) ++seen, depth = std::max(depth, std::uint32_t(l));
  return {seen, depth};
}

}  // namespace

TEST(GraphGenerate, GridIsEcologyOnesStructure) {
  Graph g = grid2d(1000, 1000);
  EXPECT_EQ(g.n(), 1'000'000u);
  EXPECT_EQ(g.m(), 3'996'000u);  // ecology1's 4,996,000 entries minus its diagonal
  EXPECT_EQ(g.degree(0), 2u);
  EXPECT_EQ(g.degree(1001), 4u);
  Graph s = grid2d(3, 4);
  for (std::uint32_t v = 0; v < s.n(); ++v) {
    std::set<std::uint32_t> want, got(s.col.begin() + s.row[v], s.col.begin() + s.row[v + 1]);
    std::int64_t r = v / 4, c = v % 4;
    for (auto [dr, dc] : {std::pair{-1, 0}, {1, 0}, {0, -1}, {0, 1}})
      if (r + dr >= 0 && r + dr < 3 && c + dc >= 0 && c + dc < 4)
        want.insert(std::uint32_t((r + dr) * 4 + c + dc));
    EXPECT_EQ(got, want) << "vertex " << v;
  }
}

TEST(GraphGenerate, RmatIsSkewedDeterministicAndLoopFree) {
  Graph g = rmat(12, 5);
  EXPECT_EQ(g.n(), 4096u);
  EXPECT_EQ(g.m(), 4096u * 8);
  for (std::uint32_t v = 0; v < g.n(); ++v)
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) {
      ASSERT_NE(g.col[e], v) << "self loop";
      ASSERT_LE(g.weight[e], 100u);
    }
  std::uint32_t max_degree = 0;
  for (std::uint32_t v = 0; v < g.n(); ++v) max_degree = std::max(max_degree, g.degree(v));
  // A uniform graph of this size has a maximum degree near 20; R-MAT's is several times that.
  EXPECT_GT(max_degree, 5 * mean_degree(g)) << "R-MAT degrees should be skewed";
  EXPECT_EQ(rmat(12, 5), g);
  EXPECT_NE(rmat(12, 6), g);
}

TEST(GraphGenerate, UniformMatchesGtgraphSizes) {
  Generated u = generate("1k-128k", 3);
  EXPECT_EQ(u.graph.n(), 1024u);
  EXPECT_EQ(u.graph.m(), 131072u);
  EXPECT_EQ(*std::max_element(u.graph.weight.begin(), u.graph.weight.end()), 100u);
  EXPECT_EQ(generate("1k-128k", 3).graph, u.graph);
}

TEST(GraphGenerate, RoadLikeIsConnectedSparseAndLong) {
  Graph g = road_like(40000, 2);
  EXPECT_EQ(g.n(), 40000u);
  EXPECT_NEAR(mean_degree(g), 2.8, 0.15);
  auto [seen, depth] = reach(g);
  EXPECT_EQ(seen, g.n()) << "road-like graph is not connected";
  EXPECT_GE(depth, 200u) << "diameter should grow like sqrt(n)";
  Generated ny = generate("usa-ny", 1);
  EXPECT_EQ(ny.graph.n(), 264'346u);
  EXPECT_NE(ny.description.find("stand-in"), std::string::npos);
}

TEST(GraphGenerate, CircuitLikeDegreeAndDiameter) {
  Graph g = circuit_like(40000, 4);
  EXPECT_NEAR(mean_degree(g), 3.84, 0.2);
  auto [seen, depth] = reach(g);
  EXPECT_GT(seen, g.n() * 99 / 100);
  EXPECT_GE(depth, 50u);
}

TEST(GraphGenerate, SpecsAndTheirErrors) {
  EXPECT_EQ(generate("grid:3x4").graph.n(), 12u);
  EXPECT_EQ(generate("rmat:10:4").graph.m(), 4096u);
  EXPECT_EQ(generate("uniform:10:20").graph.m(), 20u);
  EXPECT_EQ(generate("road:100").graph.n(), 100u);
  EXPECT_EQ(preset_names().size(), 9u);
  for (const char* bad :
       {"grid:3", "grid:0x4", "rmat:0", "rmat:40", "uniform:10:x", "road", "bogus", "circuit:-1"}) {
    try {
      generate(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}
