/// \file
/// The handle on a launched cooperative kernel, the same for every backend.
#pragma once

#include <cstdint>
#include <memory>

#include "coop/detail/protocol.hpp"
#include "coop/errors.hpp"
#include "coop/policy.hpp"
#include "coop/stats.hpp"

namespace coop {

namespace detail {
/// What a backend's job implements behind coop::Job (coop::detail::JobState, for every
/// backend).
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
  /// The last coop::Job handle is gone: cancel the job if it still runs and return once none of
  /// its workgroups does.
  virtual void release() noexcept = 0;
};
}  // namespace detail

/// Handle on a launched cooperative kernel. Copies share the job.
///
/// Dropping the last handle of a job that still runs (letting it go out of scope, or an
/// exception unwinding past it) cancels the job, as Job::cancel does, and returns once none of
/// its workgroups runs any more, on every backend: the kernel never touches the buffers the
/// caller frees next. Call wait() first to let a job finish. A kernel that reaches no
/// offer_kill, resizing barrier or protocol wait cannot be stopped early: the handle's
/// destructor then waits for it to end, and says so through RuntimeOptions::report after 5 s.
class Job {
 public:
  /// An empty handle, referring to no job (operator bool is false).
  Job() = default;
  /// Takes the backend's job (coop's launchers call this).
  explicit Job(std::shared_ptr<detail::JobImpl> impl) {
    if (!impl) return;
    detail::JobImpl* raw = impl.get();
    // The handles share one count of their own: the backend may hold the job longer (on a GPU
    // its service thread does), but only the handles' end means nobody wants the results.
    impl_ = std::shared_ptr<detail::JobImpl>(raw,
                                             [owner = std::move(impl)](detail::JobImpl* p) mutable {
                                               p->release();
                                               owner.reset();
                                             });
  }
  /// Blocks until every workgroup has returned from the kernel; throws coop::misuse_error if
  /// the job failed, std::logic_error if it is suspended (resume it first).
  void wait() { impl_->wait(); }
  /// True once the job has ended: every workgroup returned, it failed, or it was cancelled. A
  /// suspended job is not done.
  bool done() const { return impl_->done(); }
  /// What the job did: the counters so far while it runs (on a GPU, read from the device),
  /// those it ended with once it is done.
  JobStats stats() const { return impl_->stats(); }
  /// N: the most workgroups the job may have (LaunchConfig::max_groups, or as many as could be
  /// co-resident where that was 0).
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
  /// Whether this handle refers to a job (false for a default-constructed Job).
  explicit operator bool() const { return bool(impl_); }

 private:
  std::shared_ptr<detail::JobImpl> impl_;
};

}  // namespace coop
