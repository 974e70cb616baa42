// Graph readers. Text formats are read whole and parsed line by line; every number is checked
// (syntax, range) and every header count is checked against what the file holds, so a header
// that lies can neither make the reader allocate from it nor index out of range.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include "coop/graph/graph.hpp"

namespace coop::graph {

namespace {

constexpr std::uint64_t kMaxVertices = std::numeric_limits<std::uint32_t>::max() - 1;
constexpr std::uint64_t kMaxArcs = std::numeric_limits<std::uint32_t>::max();

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw parse_error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// A text file read whole, handed out line by line, with errors that name file and line.
class Text {
 public:
  explicit Text(const std::string& path) : path_(path), data_(slurp(path)) {}

  bool next(std::string_view& line) {
    if (pos_ >= data_.size()) return false;
    std::size_t end = data_.find('\n', pos_);
    if (end == std::string::npos) end = data_.size();
    line = std::string_view(data_).substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    ++line_no_;
    return true;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw parse_error(path_ + ":" + std::to_string(line_no_) + ": " + why);
  }
  std::size_t size() const { return data_.size(); }

 private:
  std::string path_, data_;
  std::size_t pos_ = 0, line_no_ = 0;
};

/// Whitespace-separated tokens of one line.
class Tokens {
 public:
  Tokens(std::string_view line, const Text& text) : rest_(line), text_(text) {}
  bool next(std::string_view& tok) {
    std::size_t b = rest_.find_first_not_of(" \t");
    if (b == std::string_view::npos) return false;
    std::size_t e = rest_.find_first_of(" \t", b);
    if (e == std::string_view::npos) e = rest_.size();
    tok = rest_.substr(b, e - b);
    rest_ = rest_.substr(e);
    return true;
  }
  std::string_view need(const char* what) {
    std::string_view tok;
    if (!next(tok)) text_.fail(std::string("missing ") + what);
    return tok;
  }
  std::uint64_t number(const char* what, std::uint64_t lo, std::uint64_t hi) {
    std::string_view tok = need(what);
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && (v < lo || v > hi)))
      text_.fail(std::string(what) + " " + std::string(tok) + " is out of range [" +
                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
    if (ec != std::errc() || end != tok.data() + tok.size())
      text_.fail(std::string(what) + " '" + std::string(tok) + "' is not a non-negative integer");
    return v;
  }
  double real(const char* what) {
    std::string_view tok = need(what);
    double v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || end != tok.data() + tok.size() || !std::isfinite(v))
      text_.fail(std::string(what) + " '" + std::string(tok) + "' is not a finite number");
    return v;
  }
  void end() {
    std::string_view tok;
    if (next(tok)) text_.fail("unexpected '" + std::string(tok) + "' at the end of the line");
  }

 private:
  std::string_view rest_;
  const Text& text_;
};

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

// Never trust a header's arc count for an allocation: a text arc takes at least 4 bytes.
std::size_t reserve_for(std::uint64_t claimed, std::size_t file_bytes) {
  return std::size_t(std::min<std::uint64_t>(claimed, file_bytes / 4 + 1));
}

// A header's vertex count costs 8 bytes of memory per vertex (CSR offsets and the counting sort
// in Graph::from_arcs) although vertices without arcs take no bytes in DIMACS or Matrix Market.
// So that a lying header cannot allocate gigabytes from a few bytes, a file of B bytes may
// declare at most max(2^20, 16 B) vertices: far more isolated vertices than real graphs have.
constexpr std::uint64_t kFreeVertices = std::uint64_t(1) << 20;
constexpr std::uint64_t kVerticesPerByte = 16;

void check_vertex_count(std::uint64_t n, const Text& text) {
  const std::uint64_t limit =
      std::max<std::uint64_t>(kFreeVertices, kVerticesPerByte * text.size());
  if (n > limit)
    text.fail("vertex count " + std::to_string(n) + " is implausible for a file of " +
              std::to_string(text.size()) + " bytes (at most " + std::to_string(limit) +
              " = max(2^20, 16 per byte of the file) vertices)");
}

std::uint32_t to_weight(double v, const Text& text) {
  // Range check before converting: a double beyond the integer range (1e300) has no rounding
  // to an integer type (std::llround's result is unspecified, the cast undefined).
  const double w = std::round(std::fabs(v));
  if (!(w <= double(std::numeric_limits<std::uint32_t>::max()))) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", v);
    text.fail(std::string("weight ") + shown + " does not fit in 32 bits");
  }
  return std::uint32_t(w);
}

}  // namespace

const char* format_name(Format f) {
  switch (f) {
    case Format::dimacs:
      return "DIMACS";
    case Format::metis:
      return "METIS";
    case Format::matrix_market:
      return "Matrix Market";
    case Format::galois_binary:
      return "Galois binary v1";
    case Format::coop_binary:
      break;
  }
  return "coop binary";
}

Format detect_format(const std::string& path) {
  auto ends = [&](const char* ext) {
    std::size_t k = std::strlen(ext);
    return path.size() >= k && path.compare(path.size() - k, k, ext) == 0;
  };
  if (ends(".graph") || ends(".metis")) return Format::metis;
  if (ends(".mtx")) return Format::matrix_market;
  if (ends(".coopcsr")) return Format::coop_binary;
  if (ends(".gr")) {
    // Galois binary files start with the 64-bit version 1; DIMACS text with 'c' or 'p'.
    std::ifstream in(path, std::ios::binary);
    if (!in) throw parse_error(path + ": cannot open (" + std::strerror(errno) + ")");
    unsigned char head[8] = {};
    in.read(reinterpret_cast<char*>(head), 8);
    if (in.gcount() == 8 && head[0] == 1 &&
        std::all_of(head + 1, head + 8, [](auto c) { return c == 0; }))
      return Format::galois_binary;
    return Format::dimacs;
  }
  throw parse_error(path + ": unknown graph format (expected .gr, .graph, .mtx or .coopcsr)");
}

Graph read_graph(const std::string& path) {
  switch (detect_format(path)) {
    case Format::dimacs:
      return read_dimacs(path);
    case Format::metis:
      return read_metis(path);
    case Format::matrix_market:
      return read_matrix_market(path);
    case Format::galois_binary:
      return read_galois_binary(path);
    case Format::coop_binary:
      break;
  }
  return read_binary(path);
}

Graph read_dimacs(const std::string& path) {
  Text text(path);
  std::string_view line;
  std::uint64_t n = 0, m = 0;
  bool header = false;
  std::vector<Arc> arcs;
  while (text.next(line)) {
    if (blank(line) || line[0] == 'c') continue;
    Tokens t(line, text);
    std::string_view kind = t.need("line type");
    if (kind == "p") {
      if (header) text.fail("a second 'p' line");
      if (t.need("problem type") != "sp") text.fail("expected 'p sp N M'");
      n = t.number("vertex count", 1, kMaxVertices);
      m = t.number("arc count", 0, kMaxArcs);
      t.end();
      check_vertex_count(n, text);
      header = true;
      arcs.reserve(reserve_for(m, text.size()));
    } else if (kind == "a") {
      if (!header) text.fail("arc before the 'p sp N M' line");
      if (arcs.size() == m) text.fail("more arcs than the " + std::to_string(m) + " in the header");
      std::uint32_t u = std::uint32_t(t.number("source vertex", 1, n) - 1);
      std::uint32_t v = std::uint32_t(t.number("target vertex", 1, n) - 1);
      std::uint32_t w =
          std::uint32_t(t.number("weight", 0, std::numeric_limits<std::uint32_t>::max()));
      t.end();
      arcs.push_back({u, v, w});
    } else {
      text.fail("unknown line type '" + std::string(kind) + "' (expected c, p or a)");
    }
  }
  if (!header) text.fail("no 'p sp N M' line");
  if (arcs.size() != m)
    text.fail("the header announces " + std::to_string(m) + " arcs but the file has " +
              std::to_string(arcs.size()));
  return Graph::from_arcs(std::uint32_t(n), arcs);
}

Graph read_metis(const std::string& path) {
  Text text(path);
  std::string_view line;
  auto next_content = [&](bool allow_blank) {
    while (text.next(line))
      if (line.empty() || line[0] != '%') {
        if (allow_blank || !blank(line)) return true;
      }
    return false;
  };
  if (!next_content(false)) text.fail("no header line 'N M [FMT [NCON]]'");
  Tokens h(line, text);
  std::uint64_t n = h.number("vertex count", 1, kMaxVertices);
  std::uint64_t m = h.number("edge count", 0, kMaxArcs / 2);
  std::uint64_t fmt = 0, ncon = 0;
  std::string_view tok;
  if (h.next(tok)) {
    for (char c : tok)
      if (c != '0' && c != '1') text.fail("format '" + std::string(tok) + "' must be digits 0/1");
    std::string_view digits = tok.substr(std::min(tok.find_first_not_of('0'), tok.size()));
    if (digits.size() > 3)
      text.fail("format '" + std::string(tok) + "' has more than three digits");
    for (char c : digits) fmt = 10 * fmt + std::uint64_t(c - '0');
    if (h.next(tok)) {
      ncon = Tokens(tok, text).number("vertex weight count", 0,
                                      std::numeric_limits<std::uint32_t>::max());
      h.end();
    }
  }
  const bool sizes = fmt / 100 % 10, vweights = fmt / 10 % 10, eweights = fmt % 10;
  if (vweights && ncon == 0) ncon = 1;
  std::vector<Arc> arcs;
  arcs.reserve(reserve_for(2 * m, text.size()));
  for (std::uint64_t v = 0; v < n; ++v) {
    if (!next_content(true))
      text.fail("the header announces " + std::to_string(n) + " vertices but the file has " +
                std::to_string(v));
    Tokens t(line, text);
    if (sizes) t.number("vertex size", 0, std::numeric_limits<std::uint64_t>::max());
    for (std::uint64_t c = 0; c < ncon; ++c)
      t.number("vertex weight", 0, std::numeric_limits<std::uint64_t>::max());
    while (t.next(tok)) {
      Tokens one(tok, text);
      std::uint32_t u = std::uint32_t(one.number("neighbour", 1, n) - 1);
      std::uint32_t w =
          eweights
              ? std::uint32_t(t.number("edge weight", 0, std::numeric_limits<std::uint32_t>::max()))
              : 1u;
      if (arcs.size() == 2 * m)
        text.fail("more adjacency entries than the 2 x " + std::to_string(m) +
                  " that the header's edge count allows");
      arcs.push_back({std::uint32_t(v), u, w});
    }
  }
  while (text.next(line))
    if (!blank(line) && line[0] != '%')
      text.fail("more vertex lines than the header's " + std::to_string(n));
  if (arcs.size() != 2 * m)
    text.fail("the header announces " + std::to_string(m) + " edges (" + std::to_string(2 * m) +
              " adjacency entries) but the file has " + std::to_string(arcs.size()) + " entries");
  return Graph::from_arcs(std::uint32_t(n), arcs);
}

Graph read_matrix_market(const std::string& path) {
  Text text(path);
  std::string_view line;
  if (!text.next(line)) text.fail("empty file");
  Tokens b(line, text);
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (char& c : r) c = char(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  if (b.need("banner") != "%%MatrixMarket" || lower(b.need("object")) != "matrix")
    text.fail("expected '%%MatrixMarket matrix coordinate <field> <symmetry>'");
  if (lower(b.need("format")) != "coordinate")
    text.fail("only the coordinate format describes a graph (not 'array')");
  const std::string field = lower(b.need("field")), symmetry = lower(b.need("symmetry"));
  if (field != "real" && field != "integer" && field != "pattern")
    text.fail("field '" + field + "' is not supported (real, integer or pattern)");
  if (symmetry != "general" && symmetry != "symmetric")
    text.fail("symmetry '" + symmetry + "' is not supported (general or symmetric)");
  bool size_line = false;
  while ((size_line = text.next(line)) && (blank(line) || line[0] == '%')) {
  }
  if (!size_line) text.fail("no size line 'ROWS COLS ENTRIES' after the banner");
  Tokens s(line, text);
  std::uint64_t rows = s.number("row count", 1, kMaxVertices);
  std::uint64_t cols = s.number("column count", 1, kMaxVertices);
  std::uint64_t nnz = s.number("entry count", 0, kMaxArcs);
  s.end();
  if (rows != cols)
    text.fail("a graph needs a square matrix, not " + std::to_string(rows) + " x " +
              std::to_string(cols));
  check_vertex_count(rows, text);
  const bool sym = symmetry == "symmetric";
  std::vector<Arc> arcs;
  arcs.reserve(reserve_for(sym ? 2 * nnz : nnz, text.size()));
  std::uint64_t entries = 0;
  while (text.next(line)) {
    if (blank(line) || line[0] == '%') continue;
    if (entries == nnz) text.fail("more entries than the " + std::to_string(nnz) + " announced");
    Tokens t(line, text);
    std::uint32_t i = std::uint32_t(t.number("row", 1, rows) - 1);
    std::uint32_t j = std::uint32_t(t.number("column", 1, cols) - 1);
    std::uint32_t w = 1;
    if (field == "integer")
      w = to_weight(double(t.number("value", 0, std::numeric_limits<std::uint32_t>::max())), text);
    if (field == "real") w = to_weight(t.real("value"), text);
    t.end();
    ++entries;
    // Checked before every arc (a symmetric entry adds two), so the offsets cannot wrap.
    if (arcs.size() + (sym && i != j ? 2 : 1) > kMaxArcs)
      text.fail("more than " + std::to_string(kMaxArcs) + " arcs (32-bit offsets)");
    arcs.push_back({i, j, w});
    if (sym && i != j) arcs.push_back({j, i, w});
  }
  if (entries != nnz)
    text.fail("the size line announces " + std::to_string(nnz) + " entries but the file has " +
              std::to_string(entries));
  return Graph::from_arcs(std::uint32_t(rows), arcs);
}

namespace {

/// A binary file read whole, with checked reads that name the offset.
class Bytes {
 public:
  explicit Bytes(const std::string& path) : path_(path), data_(slurp(path)) {}
  template <class T>
  T get(const char* what) {
    if (data_.size() - pos_ < sizeof(T)) fail(std::string("file ends inside the ") + what);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  void array(std::vector<T>& out, std::uint64_t count, const char* what) {
    if ((data_.size() - pos_) / sizeof(T) < count)
      fail(std::string("file is too short for the ") + what);
    out.resize(count);
    if (count) std::memcpy(out.data(), data_.data() + pos_, count * sizeof(T));
    pos_ += count * sizeof(T);
  }
  void skip(std::uint64_t bytes, const char* what) {
    if (data_.size() - pos_ < bytes) fail(std::string("file is too short for the ") + what);
    pos_ += bytes;
  }
  void expect_end() {
    if (pos_ != data_.size())
      fail(std::to_string(data_.size() - pos_) + " unexpected bytes after the graph");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw parse_error(path_ + ": byte " + std::to_string(pos_) + ": " + why);
  }

 private:
  std::string path_, data_;
  std::size_t pos_ = 0;
};

void check_csr(Bytes& in, const Graph& g) {
  if (g.row[0] != 0) in.fail("the first row offset is not 0");
  for (std::uint32_t v = 0; v < g.n(); ++v)
    if (g.row[v + 1] < g.row[v]) in.fail("row offsets decrease at vertex " + std::to_string(v));
  if (g.row.back() != g.m()) in.fail("the last row offset is not the arc count");
  for (std::uint32_t e = 0; e < g.m(); ++e)
    if (g.col[e] >= g.n())
      in.fail("arc " + std::to_string(e) + " points to vertex " + std::to_string(g.col[e]) +
              " >= N");
}

constexpr char kMagic[8] = {'C', 'O', 'O', 'P', 'C', 'S', 'R', '1'};

}  // namespace

Graph read_galois_binary(const std::string& path) {
  Bytes in(path);
  std::uint64_t version = in.get<std::uint64_t>("version");
  if (version != 1)
    in.fail("Galois binary version " + std::to_string(version) + " (only 1 is supported)");
  std::uint64_t edge_bytes = in.get<std::uint64_t>("edge data size");
  if (edge_bytes != 0 && edge_bytes != 4)
    in.fail("edge data of " + std::to_string(edge_bytes) + " bytes (0 or 4 supported)");
  std::uint64_t n = in.get<std::uint64_t>("vertex count");
  std::uint64_t m = in.get<std::uint64_t>("edge count");
  if (n == 0 || n > kMaxVertices) in.fail("vertex count " + std::to_string(n) + " out of range");
  if (m > kMaxArcs) in.fail("edge count " + std::to_string(m) + " out of range");
  std::vector<std::uint64_t> ends;
  in.array(ends, n, "edge index");
  Graph g;
  g.row.assign(n + 1, 0);
  for (std::uint64_t v = 0; v < n; ++v) {
    if (ends[v] > m || (v > 0 && ends[v] < ends[v - 1]))
      in.fail("edge index of vertex " + std::to_string(v) + " is not a valid end offset");
    g.row[v + 1] = std::uint32_t(ends[v]);
  }
  in.array(g.col, m, "edge targets");
  if (m % 2 == 1) in.skip(4, "padding");
  if (edge_bytes == 4) {
    in.array(g.weight, m, "edge data");
  } else {
    g.weight.assign(m, 1);
  }
  in.expect_end();
  check_csr(in, g);
  return g;
}

void write_binary(const Graph& g, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) + ")");
  std::uint64_t n = g.n(), m = g.m();
  out.write(kMagic, 8);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(reinterpret_cast<const char*>(&m), 8);
  out.write(reinterpret_cast<const char*>(g.row.data()), std::streamsize(g.row.size() * 4));
  out.write(reinterpret_cast<const char*>(g.col.data()), std::streamsize(m * 4));
  out.write(reinterpret_cast<const char*>(g.weight.data()), std::streamsize(m * 4));
  if (!out) throw std::runtime_error(path + ": write failed");
}

Graph read_binary(const std::string& path) {
  Bytes in(path);
  char magic[8];
  for (char& c : magic) c = in.get<char>("magic");
  if (std::memcmp(magic, kMagic, 8) != 0) in.fail("not a coop binary graph (bad magic)");
  std::uint64_t n = in.get<std::uint64_t>("vertex count");
  std::uint64_t m = in.get<std::uint64_t>("arc count");
  if (n == 0 || n > kMaxVertices || m > kMaxArcs) in.fail("sizes out of range");
  Graph g;
  in.array(g.row, n + 1, "row offsets");
  in.array(g.col, m, "targets");
  in.array(g.weight, m, "weights");
  in.expect_end();
  check_csr(in, g);
  return g;
}

}  // namespace coop::graph
