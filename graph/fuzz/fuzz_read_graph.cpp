// libFuzzer target: coop::graph::read_graph, the entry point that picks the reader by
// detect_format (extension, and for .gr the first 8 bytes). The first input byte chooses the
// file name's extension, the rest is the file; a graph read_graph returns must equal what the
// detected format's own reader returns.
#include "fuzz_common.hpp"

namespace {

using namespace coop::graph;

constexpr const char* kNames[] = {"input.gr",      "input.graph", "input.metis",  "input.mtx",
                                  "input.coopcsr", "input.txt",   "input.gr.mtx", "input"};

Graph read_as(Format f, const std::string& path) {
  switch (f) {
    case Format::dimacs:
      return read_dimacs(path);
    case Format::metis:
      return read_metis(path);
    case Format::matrix_market:
      return read_matrix_market(path);
    case Format::galois_binary:
      return read_galois_binary(path);
    case Format::coop_binary:
      return read_binary(path);
  }
  coop_fuzz::finding("detect_format returned an unknown Format " + std::to_string(int(f)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char* name = kNames[data[0] % (sizeof kNames / sizeof kNames[0])];
  return coop_fuzz::run(data + 1, size - 1, name, coop_fuzz::Where::any,
                        [](const std::string& path) {
                          Graph g = read_graph(path);
                          const Format f = detect_format(path);
                          if (format_name(f) == nullptr) coop_fuzz::finding("format_name null");
                          if (!(read_as(f, path) == g))
                            coop_fuzz::finding(std::string("read_graph and the ") + format_name(f) +
                                               " reader disagree");
                          return g;
                        });
}
