// Graph readers: real files from ../shared/data (checked against an independent line count and
// weight sum), round trips through every format (files written here by independent writers),
// transpose / symmetrize against brute force, and malformed files — each must fail with the
// file, the line (or byte) and the reason, never with a crash or a giant allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <typeinfo>
#include <vector>

#include <unistd.h>

#include "coop/graph/graph.hpp"

using namespace coop::graph;
namespace fs = std::filesystem;

namespace {

const std::string kData = COOP_TEST_DATA_DIR;

fs::path tmp(const std::string& name) {
  // Per process: ctest runs the tests of this file in parallel processes.
  static const fs::path dir =
      fs::temp_directory_path() / ("coop-graph-tests-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string write(const std::string& name, const std::string& text) {
  fs::path p = tmp(name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// Independent reading of a DIMACS file: arcs and the weight sum.
std::tuple<std::uint64_t, std::uint64_t> dimacs_facts(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::uint64_t arcs = 0, sum = 0;
  while (std::getline(in, line)) {
    if (line.rfind("a ", 0) != 0) continue;
    std::istringstream is(line.substr(2));
    std::uint64_t u, v, w;
    is >> u >> v >> w;
    ++arcs;
    sum += w;
  }
  return {arcs, sum};
}

Graph random_graph(std::uint32_t n, std::uint32_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Arc> arcs;
  for (std::uint32_t i = 0; i < m; ++i)
    arcs.push_back(
        {std::uint32_t(rng() % n), std::uint32_t(rng() % n), std::uint32_t(rng() % 100)});
  return Graph::from_arcs(n, arcs);
}

std::string expect_parse_error(const std::string& path) {
  try {
    read_graph(path);
  } catch (const parse_error& e) {
    return e.what();
  }
  ADD_FAILURE() << path << " was accepted";
  return {};
}

}  // namespace

TEST(GraphIo, ReadsTheRealDimacsGraphs) {
  for (auto [file, n, m] :
       {std::tuple{"rome99.gr", 3353u, 4444u}, std::tuple{"256_16384.gr", 256u, 16384u}}) {
    const std::string path = kData + "/" + file;
    ASSERT_EQ(detect_format(path), Format::dimacs);
    Graph g = read_graph(path);
    EXPECT_EQ(g.n(), n) << file;
    EXPECT_EQ(g.m(), m) << file;
    auto [arcs, sum] = dimacs_facts(path);
    EXPECT_EQ(arcs, m);
    std::uint64_t got = 0;
    for (auto w : g.weight) got += w;
    EXPECT_EQ(got, sum) << file;
  }
}

TEST(GraphIo, RoundTripsThroughEveryFormat) {
  Graph g = random_graph(500, 4000, 7);
  // DIMACS
  {
    std::ostringstream os;
    os << "c test\np sp " << g.n() << " " << g.m() << "\n";
    for (std::uint32_t v = 0; v < g.n(); ++v)
      for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e)
        os << "a " << v + 1 << " " << g.col[e] + 1 << " " << g.weight[e] << "\n";
    EXPECT_EQ(read_graph(write("g.gr", os.str())), g);
  }
  // Matrix Market, general, integer values
  {
    std::ostringstream os;
    os << "%%MatrixMarket matrix coordinate integer general\n% c\n"
       << g.n() << " " << g.n() << " " << g.m() << "\n";
    for (std::uint32_t v = 0; v < g.n(); ++v)
      for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e)
        os << v + 1 << " " << g.col[e] + 1 << " " << g.weight[e] << "\n";
    EXPECT_EQ(read_graph(write("g.mtx", os.str())), g);
  }
  // METIS (undirected, edge weights): the symmetrised graph
  {
    Graph s = g.symmetrize();
    std::ostringstream os;
    os << "% c\n" << s.n() << " " << s.m() / 2 << " 1\n";
    for (std::uint32_t v = 0; v < s.n(); ++v) {
      for (std::uint32_t e = s.row[v]; e < s.row[v + 1]; ++e)
        os << s.col[e] + 1 << " " << s.weight[e] << " ";
      os << "\n";
    }
    EXPECT_EQ(read_graph(write("g.graph", os.str())), s);
  }
  // Galois binary v1 with 4-byte edge data (odd m: padding)
  {
    Graph h = random_graph(300, 2001, 9);
    std::ofstream out(tmp("h.gr"), std::ios::binary);
    std::uint64_t hdr[4] = {1, 4, h.n(), h.m()};
    out.write(reinterpret_cast<char*>(hdr), sizeof hdr);
    for (std::uint32_t v = 0; v < h.n(); ++v) {
      std::uint64_t end = h.row[v + 1];
      out.write(reinterpret_cast<char*>(&end), 8);
    }
    out.write(reinterpret_cast<const char*>(h.col.data()), h.m() * 4);
    std::uint32_t pad = 0;
    out.write(reinterpret_cast<char*>(&pad), 4);
    out.write(reinterpret_cast<const char*>(h.weight.data()), h.m() * 4);
    out.close();
    ASSERT_EQ(detect_format(tmp("h.gr").string()), Format::galois_binary);
    EXPECT_EQ(read_graph(tmp("h.gr").string()), h);
  }
  // coop's binary cache
  write_binary(g, tmp("g.coopcsr").string());
  EXPECT_EQ(read_graph(tmp("g.coopcsr").string()), g);
}

TEST(GraphIo, SymmetricMatrixMarketAddsBothDirections) {
  Graph g = read_graph(write("s.mtx",
                             "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n"
                             "2 1\n3 1\n3 3\n"));
  EXPECT_EQ(g.n(), 3u);
  EXPECT_EQ(g.m(), 5u);  // 1<->2, 1<->3, 3->3
  EXPECT_EQ(g.degree(0), 2u);
}

TEST(GraphIo, TransposeAndSymmetrizeMatchBruteForce) {
  Graph g = random_graph(60, 400, 3);
  std::multiset<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> fwd, back;
  for (std::uint32_t v = 0; v < g.n(); ++v)
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e) fwd.insert({g.col[e], v, g.weight[e]});
  Graph t = g.transpose();
  for (std::uint32_t v = 0; v < t.n(); ++v)
    for (std::uint32_t e = t.row[v]; e < t.row[v + 1]; ++e) back.insert({v, t.col[e], t.weight[e]});
  EXPECT_EQ(fwd, back);
  Graph s = g.symmetrize();
  std::set<std::pair<std::uint32_t, std::uint32_t>> want, got;
  for (std::uint32_t v = 0; v < g.n(); ++v)
    for (std::uint32_t e = g.row[v]; e < g.row[v + 1]; ++e)
      if (g.col[e] != v) {
        want.insert({v, g.col[e]});
        want.insert({g.col[e], v});
      }
  for (std::uint32_t v = 0; v < s.n(); ++v)
    for (std::uint32_t e = s.row[v]; e < s.row[v + 1]; ++e) got.insert({v, s.col[e]});
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.m(), want.size()) << "duplicate arcs after symmetrize";
}

TEST(GraphIo, MalformedFilesNameFileLineAndReason) {
  struct Case {
    const char* name;
    const char* text;
    const char* where;
    const char* why;
  };
  const Case cases[] = {
      {"v.gr", "p sp 4 1\na 1 5 3\n", ":2:", "out of range"},
      {"w.gr", "p sp 4 1\na 1 2 x\n", ":2:", "not a non-negative integer"},
      {"m.gr", "p sp 4 3\na 1 2 3\n", ":2:", "announces 3 arcs but the file has 1"},
      {"x.gr", "p sp 4 1\na 1 2 3\na 2 3 4\n", ":3:", "more arcs than"},
      {"p.gr", "a 1 2 3\n", ":1:", "before the 'p sp N M' line"},
      {"q.gr", "p sp 4 1\nz 1 2\n", ":2:", "unknown line type"},
      {"big.gr", "p sp 99999999999999999999 1\n", ":1:", "out of range"},
      {"huge.gr", "p sp 5 4000000000\na 1 2 3\n", ":2:", "announces 4000000000 arcs"},
      {"n.graph", "3 1\n2\n1\n", ":3:", "announces 3 vertices but the file has 2"},
      {"e.graph", "2 1\n2\n1 2\n", ":3:", "more adjacency entries"},
      {"r.graph", "2 1\n3\n1\n", ":2:", "out of range"},
      {"c.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n",
       ":1:", "not supported"},
      {"sq.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1.5\n",
       ":2:", "square"},
      {"nn.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n",
       ":3:", "announces 2 entries but the file has 1"},
      {"nan.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 nan\n",
       ":3:", "not a finite number"},
      // Found by parser fuzzing (docs/reliability.md).
      {"ov.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1e300\n",
       ":3:", "weight 1e+300 does not fit in 32 bits"},
      {"ns.mtx", "%%MatrixMarket matrix coordinate real general\n% no size line\n",
       ":2:", "no size line"},
      {"hv.gr", "p sp 400000000 0\n", ":1:", "implausible for a file of 17 bytes"},
      {"hv.mtx", "%%MatrixMarket matrix coordinate pattern general\n400000000 400000000 0\n",
       ":2:", "vertex count 400000000 is implausible"},
      {"nc.graph", "3 1 011 x\n2\n1\n\n", ":1:", "vertex weight count 'x' is not"},
      {"ft.graph", "3 1 11111111111111111111111\n2\n1\n\n", ":1:", "more than three digits"},
  };
  for (const Case& c : cases) {
    std::string path = write(c.name, c.text);
    std::string msg = expect_parse_error(path);
    EXPECT_NE(msg.find(path + c.where), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.why), std::string::npos) << c.name << ": " << msg;
  }
}

TEST(GraphIo, LyingBinaryHeadersFailWithoutGiantAllocations) {
  // Galois binary claiming 2^31 vertices in a 40-byte file.
  {
    std::ofstream out(tmp("lie.gr"), std::ios::binary);
    std::uint64_t hdr[5] = {1, 0, 1ull << 31, 5, 0};
    out.write(reinterpret_cast<char*>(hdr), sizeof hdr);
  }
  std::string msg = expect_parse_error(tmp("lie.gr").string());
  EXPECT_NE(msg.find("too short for the edge index"), std::string::npos) << msg;
  // An edge index that points past the edges.
  {
    std::ofstream out(tmp("idx.gr"), std::ios::binary);
    std::uint64_t words[6] = {1, 0, 2, 2, 7, 2};
    out.write(reinterpret_cast<char*>(words), sizeof words);
    std::uint32_t cols[2] = {0, 1};
    out.write(reinterpret_cast<char*>(cols), sizeof cols);
  }
  msg = expect_parse_error(tmp("idx.gr").string());
  EXPECT_NE(msg.find("not a valid end offset"), std::string::npos) << msg;
  // A corrupted cache: a target out of range.
  Graph g = random_graph(10, 20, 1);
  g.col[3] = 99;
  write_binary(g, tmp("bad.coopcsr").string());
  msg = expect_parse_error(tmp("bad.coopcsr").string());
  EXPECT_NE(msg.find("points to vertex 99"), std::string::npos) << msg;
  // Unknown extension and missing file.
  EXPECT_THROW(read_graph(write("g.txt", "1 2\n")), parse_error);
  EXPECT_THROW(read_graph(tmp("missing.gr").string()), parse_error);
}

TEST(GraphIo, FuzzRegressionsFailCleanly) {
  // tests/data/fuzz/<reader>/FILE (see its README.md): ok-* must be read, every other file must
  // fail with parse_error naming the file.
  using Reader = Graph (*)(const std::string&);
  const std::map<std::string, Reader> readers = {
      {"dimacs", read_dimacs}, {"metis", read_metis},      {"matrix_market", read_matrix_market},
      {"binary", read_binary}, {"read_graph", read_graph}, {"galois_binary", read_galois_binary}};
  const fs::path root = fs::path(kData).parent_path() / "fuzz";
  std::size_t files = 0;
  for (const auto& [reader, read] : readers) {
    std::vector<fs::path> paths;
    if (fs::is_directory(root / reader))
      for (const auto& e : fs::directory_iterator(root / reader))
        if (e.is_regular_file()) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const fs::path& p : paths) {
      ++files;
      const std::string path = p.string();
      const bool ok = p.filename().string().rfind("ok-", 0) == 0;
      try {
        Graph g = read(path);
        EXPECT_TRUE(ok) << reader << " accepted " << path;
        ASSERT_GE(g.row.size(), 2u) << path;
        EXPECT_EQ(g.row.front(), 0u) << path;
        EXPECT_TRUE(std::is_sorted(g.row.begin(), g.row.end())) << path;
        EXPECT_EQ(g.row.back(), g.m()) << path;
        EXPECT_EQ(g.weight.size(), g.col.size()) << path;
        EXPECT_TRUE(std::all_of(g.col.begin(), g.col.end(), [&](auto v) { return v < g.n(); }))
            << path;
      } catch (const parse_error& e) {
        EXPECT_FALSE(ok) << reader << " rejected " << path << ": " << e.what();
        EXPECT_EQ(std::string(e.what()).rfind(path + ":", 0), 0u) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << reader << " threw " << typeid(e).name() << " (not parse_error) on " << path
                      << ": " << e.what();
      }
    }
  }
  EXPECT_GE(files, 20u) << "regression inputs missing under " << root;
}
