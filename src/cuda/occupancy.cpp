#include "coop/cuda/occupancy.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "coop/detail/launch_checks.hpp"

namespace coop::cuda {

int shareable_occupancy(int occupancy, int threads) {
  // An SM schedules warps on four partitions; a block of fewer warps than that (or a count
  // that is not a multiple of it) leaves the partitions unevenly full, and on the H200 a
  // returning block's place then did not take a new block of the same shape while the rest of
  // the grid ran (64-thread blocks at 32 and at 24 per SM). One block per SM of slack lets a
  // joining workgroup or a task start.
  const int warps = (threads + 31) / 32;
  return warps % 4 != 0 && occupancy > 1 ? occupancy - 1 : occupancy;
}

std::uint32_t checked_groups(const DeviceInfo& dev, const LaunchConfig& cfg, int occupancy) {
  coop::detail::check_threads(cfg);
  if (occupancy <= 0)
    throw std::invalid_argument("the kernel cannot be resident with " +
                                std::to_string(cfg.threads) +
                                " threads per block (registers or shared memory exceed an SM)");
  const std::uint64_t resident = std::uint64_t(occupancy) * std::uint64_t(dev.multiprocessors);
  const std::uint64_t limit = std::min<std::uint64_t>(resident, kMaxGroupsLimit);
  return coop::detail::checked_groups(
      cfg, resident,
      "the " + std::to_string(limit) + " blocks of this kernel that can be co-resident on " +
          dev.name + " at " + std::to_string(cfg.threads) + " threads (" +
          std::to_string(occupancy) + " per SM x " + std::to_string(dev.multiprocessors) + " SMs)");
}

}  // namespace coop::cuda
