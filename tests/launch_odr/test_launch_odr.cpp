// One kernel type launched from two translation units of one binary, on the CPU backend: in the
// CUDA build one of them is compiled by nvcc, where Runtime::launch<K> has a different body (it
// can reach the GPU). Each must keep its own: were the two merged by the linker, a .cu launch on
// a GPU could throw "compiled by a host compiler" (or a .cpp launch take the GPU path).
#include <gtest/gtest.h>

#include "launch_odr/fill_kernel.hpp"

namespace coop::test::odr {

std::vector<std::uint32_t> fill_from_first(Runtime& rt, std::uint32_t n, std::uint32_t mul) {
  return fill(rt, n, mul);
}

LaunchFn launch_in_first() { return &Runtime::launch<FillIds>; }

namespace {

std::vector<std::uint32_t> expected(std::uint32_t n, std::uint32_t mul) {
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = i * mul + 1;
  return v;
}

TEST(LaunchOdr, OneKernelLaunchedFromTwoTranslationUnits) {
  RuntimeOptions o;
  o.backend = RuntimeOptions::Select::cpu;
  o.cpu_slots = 4;
  Runtime rt(o);
  EXPECT_EQ(fill_from_first(rt, 1000, 3), expected(1000, 3));
  EXPECT_EQ(fill_from_second(rt, 777, 5), expected(777, 5));
#ifdef COOP_HAVE_CUDA
  ASSERT_TRUE(second_compiled_by_nvcc());
  EXPECT_NE(launch_in_first(), launch_in_second())
      << "the .cpp and the .cu file share one Runtime::launch<FillIds>: the linker kept one of "
         "two different bodies";
#else
  EXPECT_FALSE(second_compiled_by_nvcc());
  EXPECT_EQ(launch_in_first(), launch_in_second());
#endif
}

}  // namespace
}  // namespace coop::test::odr
