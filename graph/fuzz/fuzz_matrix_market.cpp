// libFuzzer target: coop::graph::read_matrix_market on arbitrary bytes (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return coop_fuzz::run(data, size, "input.mtx", coop_fuzz::Where::line,
                        coop::graph::read_matrix_market);
}
