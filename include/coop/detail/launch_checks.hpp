// Launch validation, the same for every backend (and so the same messages): a launch the CPU
// backend accepts is one a GPU accepts where the kernel fits.
#pragma once

#include <cstdint>
#include <string>

#include "coop/policy.hpp"

namespace coop::detail {

/// Throws std::invalid_argument unless cfg.threads is in [1, 1024] and within the kernel's
/// launch bound (KernelTraits::max_threads).
void check_threads(const LaunchConfig& cfg, const KernelTraits& traits = {});

/// Checks a launch on a device that holds `resident` workgroups of it at once and returns N
/// (cfg.max_groups, or `resident` for 0). `resident_text` says what `resident` is, as in
/// "max_groups 9 exceeds <resident_text>: ...". Throws std::invalid_argument with the reason
/// when the launch cannot run (threads, N, the cap policy's cap, the shared-memory carveout).
std::uint32_t checked_groups(const LaunchConfig& cfg, std::uint64_t resident,
                             const std::string& resident_text, const KernelTraits& traits = {});

}  // namespace coop::detail
