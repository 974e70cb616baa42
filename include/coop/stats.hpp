// Records the runtime keeps: per-job statistics and M-over-time, per-task gather/run records.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace coop {

/// Thrown (from Job::wait, Runtime::launch or Runtime::run) when a kernel misuses the model or
/// the runtime detects a hang; the message says who did what where.
class misuse_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by Runtime::run / run_fraction when a task's workgroups were not gathered within the
/// runtime's gather deadline and the runtime is set to fail then
/// (RuntimeOptions::gather_deadline_fails); the message names the jobs that hold capacity. The
/// task did not run and holds nothing.
class gather_timeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by Job::wait when the job was cancelled (Job::cancel, or Runtime::shutdown with
/// Shutdown::cancel, or a job the user had suspended when the runtime shut down): its workgroups
/// left at their next offer_kill, resizing barrier or wait without finishing the kernel.
class job_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by Runtime::launch, run, run_fraction and Job::resume once Runtime::shutdown has
/// begun, including by calls that were waiting for capacity then (they hold nothing).
class runtime_closed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
