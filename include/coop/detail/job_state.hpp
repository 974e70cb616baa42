// The job core every backend shares: the scheduler's view of a job (JobControl) and the user's
// (JobImpl, behind coop::Job), written once over a narrow backend driver.
//
// JobState keeps the host-side state: finished / suspended / cancelled, the first error, the
// statistics and M timeline, under one mutex. It implements wait, done, stats, set_cap,
// suspend, resume, cancel and the release of the last user handle, and the scheduler's
// preemption (preempt, unpreempt, restart, cancel). A backend supplies the device side:
//   * reported_active(), membership(), set_target(), describe() (JobControl / JobImpl, read or
//     written on the device),
//   * request_suspend(on): set or clear the suspension request the kernel reads at its
//     resizing barriers,
//   * relaunch(m): start m workgroups at the resume point where the job suspended,
//   * abort_on_device(): make every workgroup leave at its next protocol point,
//   * take_counters(stats): the channel's event counters (kills, forks, barriers ...),
//   * join_workgroups(): optional, after the job finished (the CPU backend joins its threads),
//   * require_suspendable(): optional, throws when the job cannot suspend,
// and reports the end of each run with end_run().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "coop/detail/protocol.hpp"
#include "coop/detail/scheduler.hpp"
#include "coop/job.hpp"
#include "coop/policy.hpp"
#include "coop/stats.hpp"

namespace coop::detail {

/// Sets up a new job's channel (N, seed, the protocol flags the launch asks for).
void init_channel(Channel& ch, const LaunchConfig& cfg, const KernelTraits& traits,
                  std::uint32_t n);

/// A channel's event counters (kills, forks, barriers ...) into `s`.
void take_counters(JobStats& s, const Channel& ch);

class JobState : public JobControl, public JobImpl {
 public:
  JobState(Scheduler& sched, const LaunchConfig& cfg, std::uint32_t n);
  /// A job destroyed without ever having had a handle (its launch failed) unregisters here.
  ~JobState() override;
  JobState(const JobState&) = delete;
  JobState& operator=(const JobState&) = delete;

  // The user's view (coop::Job).
  void wait() override;
  bool done() const override;
  JobStats stats() const override;
  std::uint32_t max_groups() const override { return n_; }
  void set_cap(std::uint32_t cap) override;
  bool suspend() override;
  std::uint32_t resume(std::uint32_t m) override;
  bool cancel() override;
  void release() noexcept override;

  // The scheduler's view.
  Preemption preemption() const override;
  void preempt() override { request_suspend(true); }
  void unpreempt() override { request_suspend(false); }
  void restart(std::uint32_t m) override { relaunch(m); }
  void cancel(bool on_device) override;

  std::uint32_t threads() const { return cfg_.threads; }
  Scheduler& scheduler() { return sched_; }

 protected:
  // The backend's driver (see the file comment).
  virtual void request_suspend(bool on) = 0;
  virtual void relaunch(std::uint32_t m) = 0;
  virtual void abort_on_device() = 0;
  virtual void take_counters(JobStats& s) const = 0;
  virtual void join_workgroups() {}
  virtual void require_suspendable() const {}

  /// A (re)start with M0 workgroups (the first one also sets the initial statistics).
  void record_start(std::uint32_t m0);
  /// M changed to `m`: the timeline, then the scheduler.
  void record_membership(std::uint32_t m);
  /// Keeps the first error.
  void set_error(const std::string& what);
  /// Every workgroup has left. `suspended`: at a suspension request (it stays suspended unless
  /// it failed or was cancelled); otherwise it finished with `final_groups` workgroups.
  /// `device_error` (kept unless the job was cancelled) is why it failed, if it did. Tells the
  /// scheduler and wakes the waiters. Called with mu_ held (`lock`), which it keeps.
  void end_run(std::unique_lock<std::mutex>& lock, bool suspended, std::uint32_t final_groups,
               const std::string& device_error = {});
  bool cancelled() const { return cancelled_.load(); }

  Scheduler& sched_;
  const LaunchConfig cfg_;
  const std::uint32_t n_;
  mutable std::mutex mu_;
  std::condition_variable cv_;

 private:
  /// wait()'s verdict once the job finished (mu_ held): job_cancelled, misuse_error or nothing.
  void throw_if_failed_locked() const;

  bool finished_ = false, suspended_ = false;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> user_suspend_{false};  ///< the suspension under way is the user's
  std::string error_;
  JobStats stats_;
};

}  // namespace coop::detail
