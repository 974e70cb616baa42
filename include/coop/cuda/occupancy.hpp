// What a kernel's occupancy means for the scheduler on a GPU: capacity units per SM, the blocks
// per SM a job may use, and the launch check that turns occupancy into N.
#pragma once

#include <cstdint>

#include "coop/cuda/device.hpp"
#include "coop/policy.hpp"

namespace coop::cuda {

/// Capacity units per streaming multiprocessor: a block of a kernel with occupancy `occ`
/// blocks/SM costs ceil(kUnitsPerSM / occ). 10080 is divisible by 1-10, 12, 14-16, 18, 20, 21,
/// 24, 28, 30 and 32, so those occupancies are exact.
inline constexpr std::uint32_t kUnitsPerSM = 10080;

/// Blocks per SM that a job of `threads`-thread blocks may use, from the kernel's occupancy:
/// one fewer when a block's warps are not a multiple of four. Measured on the H200
/// (coop_probe_residency, test_cuda_runtime; docs/cuda-backend.md): with 64-thread blocks at
/// full occupancy, the place a returning block freed took no other block, not even one of the
/// same kernel, until the whole grid ended, so joining workgroups and tasks waited for the job.
int shareable_occupancy(int occupancy, int threads);

/// Checks a launch on device `dev` for a kernel with `occupancy` blocks/SM at cfg.threads and
/// returns N (coop::detail::checked_groups, with the device's residency); throws
/// std::invalid_argument with the reason when it cannot run.
std::uint32_t checked_groups(const DeviceInfo& dev, const LaunchConfig& cfg, int occupancy);

}  // namespace coop::cuda
