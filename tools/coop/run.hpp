#pragma once

#include <cstdint>
#include <string>

#include "coop/policy.hpp"

namespace coop::cli {

struct RunOptions {
  std::string app;
  std::string graph;  ///< a graph file
  std::string gen;    ///< or a generator spec / preset
  std::uint64_t gen_seed = 1;
  std::uint32_t source = 0;
  std::string backend = "auto";
  std::string form = "cooperative";
  std::string policy = "generous";
  std::string barrier = "query";
  std::uint32_t groups = 0;
  std::uint32_t threads = 0;
  int carveout = coop::LaunchConfig{}.shared_carveout;  ///< LaunchConfig::shared_carveout (CUDA)
  std::uint32_t slots = 0;                              ///< CPU backend capacity (0 = default)
  std::string priority = "hashed";
  std::uint32_t seed = 1;
  std::uint32_t bc_sources = 0;
  std::uint32_t particles = 1u << 20;
  std::uint32_t max_leaf = 32;
  std::uint32_t max_depth = 20;
  std::string moves;
  std::uint32_t depth = 7;
  std::uint32_t repeat = 1;
  bool validate = false;
  std::string output;
  bool json = false;
};

/// `coop run`: returns the exit code (1 when validation fails).
int run_app(const RunOptions& o);

}  // namespace coop::cli
