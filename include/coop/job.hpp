// The handle on a launched cooperative kernel, the same for every backend.
#pragma once

#include <cstdint>
#include <memory>

#include "coop/protocol.hpp"
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
  explicit operator bool() const { return bool(impl_); }

 private:
  std::shared_ptr<detail::JobImpl> impl_;
};

}  // namespace coop
