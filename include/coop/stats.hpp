/// \file
/// Records the runtime keeps: per-job statistics and M-over-time, per-task gather/run records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coop {

/// One change of a job's M (JobStats::timeline).
struct TimelinePoint {
  double t_ms;           ///< since the runtime was created
  std::uint32_t active;  ///< M after the change
};

/// What a job did (Job::stats): its sizes, the scheduler's kills and forks, barriers, M over
/// time. Times are milliseconds since the Runtime was created (Runtime::now_ms).
struct JobStats {
  std::uint32_t max_groups = 0;      ///< N
  std::uint32_t initial_groups = 0;  ///< M at launch
  std::uint32_t final_groups = 0;    ///< M when the last workgroup finished
  std::uint64_t kills = 0;           ///< workgroups removed (offer_kill or resizing barrier)
  std::uint64_t forks = 0;           ///< request_fork calls that added workgroups
  std::uint64_t forked_groups = 0;   ///< workgroups added (forks and growing barriers)
  std::uint64_t resizes = 0;         ///< resizing barriers that changed M
  /// Global and resizing barriers. On the GPU workgroup 0 adds them in batches of 32, so a
  /// running or cancelled job's count may be up to 31 short.
  std::uint64_t barriers = 0;
  std::uint64_t suspends = 0;           ///< times the job was suspended at a resizing barrier
  double start_ms = 0;                  ///< when the job started running
  double end_ms = 0;                    ///< when its last workgroup finished (0 while it runs)
  std::vector<TimelinePoint> timeline;  ///< every change of M, in order
  /// end_ms - start_ms: how long the job ran.
  double elapsed_ms() const { return end_ms - start_ms; }
};

/// One non-cooperative task (Runtime::run, run_fraction): when it asked, when it had its
/// workgroups, when it ran. Times are milliseconds since the Runtime was created.
struct TaskRecord {
  std::uint32_t groups = 0;  ///< workgroup slots it held (run_fraction: the slots gathered)
  int priority = 0;          ///< the priority it was run with
  double request_ms = 0;     ///< when run() was called
  double gathered_ms = 0;    ///< when its workgroups were free (jobs had given them up)
  double start_ms = 0;       ///< when its work began
  double end_ms = 0;         ///< when its work (CUDA: its stream) had finished
  /// gathered_ms - request_ms: how long the task waited for the jobs to give way.
  double gather_ms() const { return gathered_ms - request_ms; }
  /// end_ms - start_ms: how long its work took.
  double run_ms() const { return end_ms - start_ms; }
};

}  // namespace coop
