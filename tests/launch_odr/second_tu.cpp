// The second translation unit of test_launch_odr: compiled by nvcc in the CUDA build (through
// second_tu.cu), by the host compiler otherwise.
#include "launch_odr/fill_kernel.hpp"

namespace coop::test::odr {

std::vector<std::uint32_t> fill_from_second(Runtime& rt, std::uint32_t n, std::uint32_t mul) {
  return fill(rt, n, mul);
}

LaunchFn launch_in_second() { return &Runtime::launch<FillIds>; }

bool second_compiled_by_nvcc() { return COOP_CUDA_COMPILER != 0; }

}  // namespace coop::test::odr
