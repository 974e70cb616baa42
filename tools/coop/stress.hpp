#pragma once

#include <cstdint>
#include <string>

namespace coop::cli {

struct StressOptions {
  std::uint64_t cycles = 100000;  ///< kill/fork cycles: min(workgroups killed, forked)
  std::uint64_t tasks = 10000;    ///< high-priority tasks of 1, N/4, N/2, N-1 workgroups
  std::uint64_t seed = 1;         ///< the first adversarial job's seed
  double churn_seconds = 60;      ///< at most this long on adversarial jobs
  double stall_seconds = 30;      ///< no progress this long: print the runtime's state, exit 3
  std::string backend = "auto";
  std::uint32_t slots = 0;  ///< CPU backend capacity (0 = default)
  std::string json;         ///< write the report here
};

/// `coop stress`: adversarial jobs (every item of their work checked) for up to `churn_seconds`,
/// then `tasks` tasks taken from a running job, each followed by its regrowth to N, in one
/// runtime; fails unless `cycles` workgroups were killed and forked again; compares threads, file
/// descriptors, coop's CUDA streams and device memory before and after and reports the tasks'
/// gather and response percentiles. Returns 0 when nothing leaked and every result was right, 1
/// otherwise, 3 (after printing Runtime::describe) when it made no progress for `stall_seconds`.
int stress_main(const StressOptions& o);

}  // namespace coop::cli
