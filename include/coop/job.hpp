// The handle on a launched cooperative kernel, the same for every backend.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "coop/detail/protocol.hpp"
#include "coop/errors.hpp"
#include "coop/policy.hpp"
#include "coop/stats.hpp"

namespace coop {

namespace detail {
/// What a backend's job implements behind coop::Job.
class JobImpl {
 public:
  virtual ~JobImpl() = default;
  virtual void wait() = 0;
  virtual bool done() const = 0;
  virtual JobStats stats() const = 0;
  virtual std::uint32_t max_groups() const = 0;
  virtual Membership membership() const = 0;
  virtual void set_cap(std::uint32_t cap) = 0;
  virtual bool suspend() = 0;
  virtual std::uint32_t resume(std::uint32_t m) = 0;
  virtual bool cancel() = 0;
};

/// Sets up a new job's channel (N, seed, the protocol flags the launch asks for).
inline void init_channel(Channel& ch, const LaunchConfig& cfg, const KernelTraits& traits,
                         std::uint32_t n) {
  ch.max_groups = n;
  ch.seed = cfg.policy.seed;
  std::uint32_t f = 0;
  if (cfg.policy.kind == Policy::Kind::adversarial) f |= flag_adversarial;
  if (cfg.policy.kind == Policy::Kind::adversarial && cfg.policy.shrink_only) f |= flag_no_grow;
  if (cfg.policy.kind == Policy::Kind::fixed || cfg.mode == Mode::persistent) f |= flag_no_resize;
  if (cfg.barrier == ResizeBarrier::plain) f |= flag_plain_barrier;
  if (traits.kill_any_order) f |= flag_any_order;
  if (traits.allow_kill_zero) f |= flag_kill_zero;
  ch.flags = f;
}

class Scheduler;
class JobControl;

/// A channel's event counters (kills, forks, barriers ...) into `s`.
void take_counters(JobStats& s, const Channel& ch);

/// Host-side bookkeeping every backend's job shares: finished / suspended state, the first
/// error, statistics and the M timeline, under one mutex.
class JobLifecycle {
 protected:
  /// A (re)start with M0 workgroups (the first one also sets the initial statistics).
  void record_start(std::uint32_t m0, double now_ms);
  void record_membership(std::uint32_t m, double now_ms);
  /// Job::suspend: `request` asks the kernel to suspend; blocks until it did or finished.
  bool suspend_with(const std::function<void()>& request);
  /// Throws std::logic_error unless the job is suspended (resume's precondition).
  void require_suspended() const;
  /// Keeps the first error.
  void set_error(const std::string& what);
  /// wait()'s verdict once the job finished (mu_ held): job_cancelled, misuse_error or nothing.
  void throw_if_failed_locked() const;
  /// A job that is not on the device and never will be again: finished as cancelled.
  void finish_cancelled(double now_ms);
  /// Job::set_cap and Job::cancel of every backend: nothing once the job has finished (the
  /// runtime may be gone by then).
  void set_cap_with(Scheduler& sched, JobControl* self, std::uint32_t cap);
  bool cancel_with(Scheduler& sched, JobControl* self);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false, suspended_ = false;
  std::atomic<bool> cancelled_{false};
  std::string error_;
  JobStats stats_;
};
}  // namespace detail

/// Handle on a launched cooperative kernel.
class Job {
 public:
  Job() = default;
  explicit Job(std::shared_ptr<detail::JobImpl> impl) : impl_(std::move(impl)) {}
  /// Blocks until every workgroup has returned from the kernel; throws coop::misuse_error if
  /// the job failed, std::logic_error if it is suspended (resume it first).
  void wait() { impl_->wait(); }
  bool done() const { return impl_->done(); }
  JobStats stats() const { return impl_->stats(); }
  std::uint32_t max_groups() const { return impl_->max_groups(); }
  /// Current number of active workgroups M.
  std::uint32_t active_groups() const { return impl_->membership().active; }
  /// M, the kills the scheduler wants (W) and the capacity it grants (G).
  detail::Membership membership() const { return impl_->membership(); }
  /// cap(M) policy: change the limit on M while the job runs (energy throttling).
  void set_cap(std::uint32_t cap) { impl_->set_cap(cap); }
  /// Kernel-level preemption: at its next resizing barrier the job gives up every workgroup
  /// (M -> 0), keeping workgroup 0's transmitted state and the resume point. Blocks until the
  /// job is suspended (true) or has finished first (false).
  bool suspend() { return impl_->suspend(); }
  /// Restarts a suspended job with up to `m` workgroups (0 = N, at least one; blocks until the
  /// capacity is gathered) from the barrier where it stopped. Returns the M it resumed with.
  std::uint32_t resume(std::uint32_t m = 0) { return impl_->resume(m); }
  /// Stops the job early: its workgroups leave at their next offer_kill, resizing barrier or
  /// protocol wait (a suspended job at once) and wait() throws coop::job_cancelled. A kernel
  /// that reaches none of those runs to its end. Returns false if the job had already finished.
  bool cancel() { return impl_->cancel(); }
  explicit operator bool() const { return bool(impl_); }

 private:
  std::shared_ptr<detail::JobImpl> impl_;
};

}  // namespace coop
