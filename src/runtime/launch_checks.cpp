#include "coop/detail/launch_checks.hpp"

#include <algorithm>
#include <stdexcept>

#include "coop/config.hpp"

namespace coop::detail {

void check_threads(const LaunchConfig& cfg, const KernelTraits& traits) {
  if (cfg.threads == 0 || cfg.threads > 1024)
    throw std::invalid_argument("threads per workgroup must be in [1, 1024], got " +
                                std::to_string(cfg.threads));
  if (traits.max_threads && cfg.threads > traits.max_threads)
    throw std::invalid_argument(
        "the kernel declares at most " + std::to_string(traits.max_threads) +
        " threads per workgroup (KernelTraits::max_threads), got " + std::to_string(cfg.threads));
}

std::uint32_t checked_groups(const LaunchConfig& cfg, std::uint64_t resident,
                             const std::string& resident_text, const KernelTraits& traits) {
  check_threads(cfg, traits);
  const std::uint64_t limit = std::min<std::uint64_t>(resident, kMaxGroupsLimit);
  const std::uint64_t n = cfg.max_groups ? cfg.max_groups : limit;
  if (n > limit)
    throw std::invalid_argument("max_groups " + std::to_string(n) + " exceeds " + resident_text +
                                ": a cooperative kernel's workgroups must all fit");
  if (cfg.policy.kind == Policy::Kind::cap && (cfg.policy.cap == 0 || cfg.policy.cap > n))
    throw std::invalid_argument("cap policy needs a cap in [1, N=" + std::to_string(n) + "]");
  check_shared_carveout(cfg.shared_carveout);
  return std::uint32_t(n);
}

}  // namespace coop::detail
