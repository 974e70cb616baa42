// libFuzzer target: coop::graph::read_binary on arbitrary bytes (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return coop_fuzz::run(data, size, "input.coopcsr", coop_fuzz::Where::byte,
                        coop::graph::read_binary);
}
