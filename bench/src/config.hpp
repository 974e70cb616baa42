// Reading a bench configuration, shared by planning (config.cpp) and the runner. Internal to
// coop::bench.
#pragma once

#include <cstdint>
#include <string>

#include "coop/bench/harness.hpp"

namespace coop::bench {

/// The configuration's pair called `name`; throws std::invalid_argument when there is none.
const json& find_pair(const json& config, const std::string& name);
/// A task's workgroups from "1", "N/4", "N/2", "N-1" or "N" (the whole device of n);
/// throws std::invalid_argument for anything else.
std::uint32_t resolve_groups(const std::string& spec, std::uint32_t n);
/// An experiment's optional "shared_carveout" (LaunchConfig::shared_carveout of the app's job).
int carveout_of(const json& experiment);

}  // namespace coop::bench
