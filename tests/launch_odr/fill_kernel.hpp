// One kernel type that two translation units of test_launch_odr launch (one compiled by nvcc in
// the CUDA build), and what each of them exports to the test.
#pragma once

#include <cstdint>
#include <vector>

#include "coop/coop.hpp"

namespace coop::test::odr {

/// out[i] = i * mul + 1 for i < n, spread over the workgroups.
struct FillIds {
  struct Params {
    std::uint32_t* out;
    std::uint32_t n;
    std::uint32_t mul;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    for (std::uint64_t i = ctx.global_id(); i < p.n; i += ctx.global_size())
      p.out[i] = std::uint32_t(i) * p.mul + 1;
    COOP_END(ctx);
  }
};

using LaunchFn = Job (Runtime::*)(const LaunchConfig&, const params_t<FillIds>&,
                                  const transmit_t<FillIds>&);

/// Launches FillIds on `rt` from this translation unit and returns what it wrote.
std::vector<std::uint32_t> fill_from_first(Runtime& rt, std::uint32_t n, std::uint32_t mul);
std::vector<std::uint32_t> fill_from_second(Runtime& rt, std::uint32_t n, std::uint32_t mul);
/// &Runtime::launch<FillIds> as each translation unit sees it.
LaunchFn launch_in_first();
LaunchFn launch_in_second();
/// Whether the second translation unit was compiled by nvcc.
bool second_compiled_by_nvcc();

/// The launch both translation units make (a fixed grid: the loop needs no resizing points).
inline std::vector<std::uint32_t> fill(Runtime& rt, std::uint32_t n, std::uint32_t mul) {
  ManagedArray<std::uint32_t> out(n);
  auto job = rt.launch<FillIds>({.max_groups = 3, .threads = 4, .policy = Policy::fixed()},
                                {out.data(), n, mul});
  job.wait();
  return std::vector<std::uint32_t>(out.data(), out.data() + n);
}

}  // namespace coop::test::odr
