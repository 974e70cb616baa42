// Records the runtime keeps: per-job statistics and M-over-time, per-task gather/run records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coop {

struct TimelinePoint {
  double t_ms;           ///< since the runtime was created
  std::uint32_t active;  ///< M after the change
};

struct JobStats {
  std::uint32_t max_groups = 0;      ///< N
  std::uint32_t initial_groups = 0;  ///< M at launch
  std::uint32_t final_groups = 0;    ///< M when the last workgroup finished
  std::uint64_t kills = 0;           ///< workgroups removed (offer_kill or resizing barrier)
  std::uint64_t forks = 0;           ///< request_fork calls that added workgroups
  std::uint64_t forked_groups = 0;   ///< workgroups added (forks and growing barriers)
  std::uint64_t resizes = 0;         ///< resizing barriers that changed M
  std::uint64_t barriers = 0;        ///< global and resizing barriers completed
  std::uint64_t suspends = 0;        ///< times the job was suspended at a resizing barrier
  double start_ms = 0, end_ms = 0;   ///< since the runtime was created
  std::vector<TimelinePoint> timeline;
  double elapsed_ms() const { return end_ms - start_ms; }
};

/// One non-cooperative task: when it asked, when it had its workgroups, when it ran.
struct TaskRecord {
  std::uint32_t groups = 0;
  int priority = 0;
  double request_ms = 0, gathered_ms = 0, start_ms = 0, end_ms = 0;
  double gather_ms() const { return gathered_ms - request_ms; }
  double run_ms() const { return end_ms - start_ms; }
};

}  // namespace coop
