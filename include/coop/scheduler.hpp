// The host scheduler: capacity accounting between cooperative jobs and non-cooperative tasks.
// Backend-neutral: a backend exposes each job through JobControl (the scheduler channel) and
// reports every workgroup that leaves; the scheduler decides who gets which slots.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <vector>

#include "coop/policy.hpp"
#include "coop/protocol.hpp"
#include "coop/stats.hpp"

namespace coop::detail {

/// The scheduler's handle on one running cooperative job.
class JobControl {
 public:
  virtual ~JobControl() = default;
  virtual Membership membership() const = 0;
  virtual void request_kills(std::uint32_t n) = 0;  ///< W += n
  virtual void grant(std::uint32_t n) = 0;          ///< G += n
  virtual std::uint32_t revoke_grant() = 0;         ///< G -> 0; returns the old G
};

class Scheduler {
 public:
  using clock = std::chrono::steady_clock;

  explicit Scheduler(std::uint32_t capacity);
  std::uint32_t capacity() const { return capacity_; }
  /// Milliseconds since the scheduler was created (all records use this clock).
  double now_ms() const;

  /// Admits a job asking for up to N workgroups; blocks until it can start. Returns M0.
  std::uint32_t admit(JobControl* job, const LaunchConfig& cfg, std::uint32_t n);
  /// A workgroup of `job` left the kernel (killed or finished): its slot comes back.
  void group_exited(JobControl* job);
  /// Every workgroup of `job` has left: the job's remaining reservation comes back.
  void job_finished(JobControl* job);
  /// cap(M) policy: change the limit while the job runs.
  void set_cap(JobControl* job, std::uint32_t cap);

  /// Gathers `groups` slots (from free capacity, unconsumed grants and kills), runs `work`,
  /// gives the slots back. Returns the task's record.
  TaskRecord run_task(std::uint32_t groups, int priority, const std::function<void()>& work);
  std::vector<TaskRecord> task_records() const;
  std::uint32_t free_slots() const;

 private:
  struct JobEntry {
    JobControl* job;
    Policy policy;
    int priority;
    std::uint32_t n;
    std::uint32_t held;           ///< slots reserved for the job (running groups + grants)
    std::uint32_t pending_kills;  ///< requested, not yet returned
    bool reserved;                ///< holds all N slots until it ends (adversarial, persistent)
    std::uint32_t cap;
  };
  struct Waiter {
    std::uint32_t need, got;
    int priority;
    std::uint64_t seq;
  };

  JobEntry* find(JobControl* job);
  void dispatch();  // hand free slots to waiting tasks, then to jobs that can grow
  void reclaim();   // ask jobs for the slots that waiting tasks still miss
  std::uint32_t target_of(const JobEntry& e) const;

  const std::uint32_t capacity_;
  const clock::time_point epoch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint32_t free_;
  std::list<JobEntry> jobs_;
  std::list<Waiter> waiters_;
  std::uint64_t seq_ = 0;
  std::vector<TaskRecord> records_;
};

}  // namespace coop::detail
