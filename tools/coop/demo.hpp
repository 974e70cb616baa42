#pragma once

#include <cstdint>
#include <string>

namespace coop::cli {

struct DemoOptions {
  std::string kernel = "bfs";  ///< bfs | queue
  std::string policy = "generous";
  std::string barrier = "query";  ///< query | plain
  std::string backend = "auto";   ///< auto | cpu | cuda
  std::uint32_t groups = 0;       ///< N (0 = as many as can be co-resident)
  std::uint32_t threads = 0;      ///< per workgroup (0 = 32 on the CPU, 256 on a GPU)
  std::uint32_t slots = 8;        ///< CPU backend capacity
  std::uint32_t size = 0;         ///< vertices (bfs) or elements (queue); 0 = default
  std::uint64_t seed = 1;
  double period_ms = 5;           ///< high-priority task period
  std::uint32_t task_groups = 0;  ///< workgroups per task (0 = N/2)
  std::uint32_t task_size = 0;    ///< task matmul size (0 = 96 on the CPU, 2048 on a GPU)
  bool json = false;
};

/// Runs the demo; returns the process exit code (non-zero if the result is wrong).
int run_demo(const DemoOptions& o);

}  // namespace coop::cli
