// Shared by the libFuzzer targets of the graph readers. The readers take paths, so each input is
// written to a per-process scratch file and handed to the reader through the public API.
// coop::graph::parse_error (the one failure graph.hpp documents for a bad file) is accepted when
// its message names the file, then the line (text formats) or byte offset (binary formats), then
// a reason. Everything else is a finding and aborts: another exception type (std::bad_alloc,
// std::out_of_range, ...), a graph that is not well-formed CSR, or a graph that does not survive
// a round trip through the binary cache. Crashes, sanitizer reports, allocations over
// -malloc_limit_mb and hangs over -timeout are findings by libFuzzer itself.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <typeinfo>

#include <unistd.h>

#include "coop/graph/graph.hpp"

namespace coop_fuzz {

using coop::graph::Graph;

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==coop-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// A scratch folder of this process under $TMPDIR, else /dev/shm (five times the executions per
/// second of a disk-backed /tmp), else /tmp; removed at exit.
inline const std::filesystem::path& scratch() {
  // Deliberately never destroyed: the exit handler below still needs it.
  static const std::filesystem::path* dir = [] {
    std::filesystem::path base = std::filesystem::temp_directory_path();
    if (!std::getenv("TMPDIR") && ::access("/dev/shm", W_OK | X_OK) == 0) base = "/dev/shm";
    auto* d = new std::filesystem::path(base / ("coop-fuzz-" + std::to_string(::getpid())));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch(), ec);
    });
    return d;
  }();
  return *dir;
}

/// Writes the input to scratch()/name and returns the path.
inline std::string write_input(const std::uint8_t* data, std::size_t size,
                               const std::string& name) {
  const std::string path = (scratch() / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) finding("cannot create the scratch file " + path);
  const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  if (std::fclose(f) != 0 || !ok) finding("cannot write the scratch file " + path);
  return path;
}

/// Where a parse_error must say the problem is.
enum class Where {
  line,  ///< "PATH:LINE: reason" (text formats)
  byte,  ///< "PATH: byte OFFSET: reason" (binary formats)
  any,   ///< either of the above, or "PATH: reason" (format detection, unreadable file)
};

inline void check_message(const std::string& msg, const std::string& path, Where where) {
  auto bad = [&](const char* why) { finding(std::string("parse_error ") + why + ": " + msg); };
  if (msg.compare(0, path.size(), path) != 0) bad("does not start with the file name");
  std::size_t at = path.size();
  auto digits = [&] {
    std::size_t b = at;
    while (at < msg.size() && std::isdigit(static_cast<unsigned char>(msg[at]))) ++at;
    return at > b;
  };
  auto literal = [&](const char* s) {
    const std::string lit(s);
    if (msg.compare(at, lit.size(), lit) != 0) return false;
    at += lit.size();
    return true;
  };
  const std::size_t start = at;
  bool located = false;
  if (where != Where::byte && literal(":") && digits() && literal(": ")) located = true;
  if (!located) at = start;
  if (!located && where != Where::line && literal(": byte ") && digits() && literal(": "))
    located = true;
  if (!located) at = start;
  if (!located && where == Where::any && literal(": ")) located = true;
  if (!located) bad(where == Where::line ? "does not give the line" : "does not give the offset");
  if (at >= msg.size()) bad("gives no reason");
}

/// The invariants of every graph a reader returns.
inline void check_graph(const Graph& g) {
  constexpr std::size_t kMaxVertices = std::numeric_limits<std::uint32_t>::max() - 1;
  if (g.row.size() < 2)
    finding("a graph without vertices (row has " + std::to_string(g.row.size()) + " entries)");
  if (g.row.size() - 1 > kMaxVertices) finding("more vertices than 32-bit ids allow");
  if (g.col.size() > std::numeric_limits<std::uint32_t>::max())
    finding("more arcs than 32-bit offsets allow");
  if (g.weight.size() != g.col.size())
    finding(std::to_string(g.col.size()) + " targets but " + std::to_string(g.weight.size()) +
            " weights");
  if (g.row.front() != 0) finding("row[0] = " + std::to_string(g.row.front()));
  for (std::size_t v = 0; v + 1 < g.row.size(); ++v)
    if (g.row[v + 1] < g.row[v]) finding("row offsets decrease at vertex " + std::to_string(v));
  if (g.row.back() != g.col.size())
    finding("row[n] = " + std::to_string(g.row.back()) + " but there are " +
            std::to_string(g.col.size()) + " arcs");
  for (std::size_t e = 0; e < g.col.size(); ++e)
    if (g.col[e] >= g.n())
      finding("arc " + std::to_string(e) + " targets " + std::to_string(g.col[e]) +
              " >= n = " + std::to_string(g.n()));
}

/// The binary cache must give back exactly the graph written.
inline void check_round_trip(const Graph& g) {
  const std::string path = (scratch() / "round-trip.coopcsr").string();
  coop::graph::write_binary(g, path);
  if (!(coop::graph::read_binary(path) == g)) finding("the binary cache changed the graph");
}

/// Feeds the input to read(path); see the top of this file for what counts as a finding.
template <class Read>
int run(const std::uint8_t* data, std::size_t size, const std::string& name, Where where,
        Read read) {
  const std::string path = write_input(data, size, name);
  Graph g;
  try {
    g = read(path);
  } catch (const coop::graph::parse_error& e) {
    check_message(e.what(), path, where);
    return 0;
  } catch (const std::exception& e) {
    finding(std::string("undocumented exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding("an exception not derived from std::exception");
  }
  check_graph(g);
  try {
    check_round_trip(g);
  } catch (const std::exception& e) {
    finding(std::string("round trip through the binary cache threw: ") + e.what());
  }
  return 0;
}

}  // namespace coop_fuzz
