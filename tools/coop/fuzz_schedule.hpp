#pragma once

#include <cstdint>
#include <string>

namespace coop::cli {

struct FuzzOptions {
  std::string apps = "all";  ///< "all" or a comma-separated list
  std::uint64_t seeds = 1000;
  std::uint64_t first = 1;
  std::string backend = "cpu";
  std::uint32_t slots = 0;  ///< CPU backend capacity (0 = default)
  bool keep_going = false;  ///< do not stop at the first failure
  bool rotate = false;      ///< each seed runs one app (seed mod the apps) instead of all
  /// adversarial-shrink schedules: kills and shrinking resizes only, so each run is one grid
  /// (for compute-sanitizer, which runs one kernel at a time)
  bool shrink_only = false;
};

/// `coop fuzz-schedule`: every app on small seeded inputs under the adversarial policy (random
/// kills, forks and resizes drawn from the seed) and both resizing barriers, each result
/// validated against the CPU reference; prints the command reproducing any failure. Returns 0
/// when every run was right, 1 otherwise.
int fuzz_schedules(const FuzzOptions& o);

}  // namespace coop::cli
