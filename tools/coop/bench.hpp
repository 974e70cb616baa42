#pragma once

#include <string>
#include <vector>

namespace coop::cli {

struct BenchOptions {
  std::string config;  ///< a built-in name or a JSON file ("" = paper on a GPU, quick on the CPU)
  std::string out;     ///< results folder ("" = coop-bench-<config name>)
  std::vector<std::string> only;     ///< experiments to run (empty = all in the config)
  std::vector<std::string> filter;   ///< run units whose key contains all of these
  std::vector<std::string> exclude;  ///< skip units whose key contains one of these
  std::string backend = "auto";
  double unit_timeout_s = 300;  ///< record a unit that runs longer as failed and stop (0 = none)
  bool retry_failed = false;    ///< run units whose stored result is a failure again
  double max_minutes = 0;       ///< start no unit after this long (0 = no limit)
  bool fresh = false;
  bool list = false;
  bool print_config = false;
};

/// `coop bench`: 0 when every planned unit has a measurement, 1 when a unit failed (recorded;
/// --retry-failed runs it again), 3 when stopped by --max-minutes and 4 when a unit overran
/// --unit-timeout (recorded; the process stops: a GPU kernel cannot be cancelled) — rerun to
/// continue in both cases.
int run_bench(const BenchOptions& o, const std::string& command);

}  // namespace coop::cli
