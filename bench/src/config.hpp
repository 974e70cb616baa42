// Reading a bench configuration, shared by planning (config.cpp) and the runner. Internal to
// coop::bench.
#pragma once

#include <cstdint>
#include <string>

#include "coop/bench/harness.hpp"
#include "coop/policy.hpp"
#include "coop/runtime.hpp"

namespace coop::bench {

/// The configuration's pair called `name`; throws std::invalid_argument when there is none.
const json& find_pair(const json& config, const std::string& name);
/// A pair's graph input names a file as "file:PATH" (any format coop reads: DIMACS, METIS,
/// Matrix Market, Galois binary, coop's .coopcsr); anything else is a generator preset or spec.
/// Returns PATH, or "" for a generator.
std::string graph_file_of(const std::string& input);
/// A task's workgroups from "1", "N/4", "N/2", "N-1" or "N" (the whole device of n);
/// throws std::invalid_argument for anything else.
std::uint32_t resolve_groups(const std::string& spec, std::uint32_t n);
/// An experiment's optional "shared_carveout" (LaunchConfig::shared_carveout of the app's job).
int carveout_of(const json& experiment);

/// How the co-location experiment shares the device between the background app and the
/// requests (one entry of "colocate": "mechanisms").
struct Mechanism {
  enum class Background : std::uint8_t {
    none,         ///< no background: the request stream's own floor (queueing behind itself)
    standalone,   ///< the app as a plain persistent kernel, requests on a high-priority stream
    cooperative,  ///< the app as a cooperative job, each request a task through the scheduler
    green,        ///< a static split: the app as a plain persistent kernel on a green context of
                  ///< the device's other SMs, the requests on one of `sms` SMs (GPU only)
    process,      ///< the app as a plain persistent kernel in one process and the requests in
                  ///< another: the driver time-slices them, or MPS runs both with the app
                  ///< limited to `mps_percent` of the SMs
  };
  std::string name;
  Background background = Background::cooperative;
  PreemptionPolicy policy{PreemptionPolicy::Mode::shrink};  ///< cooperative: how capacity is freed
  double share = 1;       ///< cooperative: the fraction of the device a request asks for
  bool prestage = false;  ///< cooperative: the request is enqueued on the high-priority stream
                          ///< at once, while the job gives way (no host hop after the gather)
  bool yield_in_phases = false;  ///< apps::RunConfig::yield_in_phases
  bool ids_by_sm = false;        ///< apps::RunConfig::ids_by_sm (GPU: requests get whole SMs)
  /// cooperative: when the request's kernels are enqueued (TaskLaunch::at_request: at once,
  /// behind the release the job's leaving workgroups write)
  TaskLaunch launch = TaskLaunch::after_gather;
  std::uint32_t sms = 0;  ///< green: the requests' SMs (the driver rounds up)
  /// process: 0 = time slicing; else MPS with the app's process at this active-thread
  /// percentage (GPU only)
  std::uint32_t mps_percent = 0;
};
/// Reads one mechanism ({"name", "background": "none" | "standalone" | "cooperative" | "green" |
/// "process", "policy", "share", "prestage", "task_launch", "yield_in_phases", "ids_by_sm", "sms",
/// "mps_percent"}); throws
/// std::invalid_argument naming `where` and the field.
Mechanism parse_mechanism(const json& m, const std::string& where);

}  // namespace coop::bench
