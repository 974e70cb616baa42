#include "coop/job.hpp"

#include <stdexcept>

#include "coop/detail/scheduler.hpp"

namespace coop::detail {

void JobLifecycle::record_start(std::uint32_t m0, double now_ms) {
  std::lock_guard lock(mu_);
  if (stats_.timeline.empty()) {
    stats_.initial_groups = m0;
    stats_.start_ms = now_ms;
  }
  stats_.timeline.push_back({now_ms, m0});
  finished_ = suspended_ = false;
}

void JobLifecycle::record_membership(std::uint32_t m, double now_ms) {
  std::lock_guard lock(mu_);
  stats_.timeline.push_back({now_ms, m});
}

bool JobLifecycle::suspend_with(const std::function<void()>& request) {
  std::unique_lock lock(mu_);
  if (finished_) return false;
  if (suspended_) return true;
  request();
  cv_.wait(lock, [&] { return finished_ || suspended_; });
  throw_if_failed_locked();
  return suspended_;
}

void JobLifecycle::require_suspended() const {
  std::lock_guard lock(mu_);
  if (cancelled_.load()) throw job_cancelled("resume(): the job was cancelled");
  if (!suspended_) throw std::logic_error("resume() needs a suspended job");
}

void JobLifecycle::set_error(const std::string& what) {
  std::lock_guard lock(mu_);
  if (error_.empty()) error_ = what;
}

}  // namespace coop::detail

namespace coop::detail {

void JobLifecycle::throw_if_failed_locked() const {
  if (cancelled_.load())
    throw job_cancelled(
        "the job was cancelled before it finished (Job::cancel or a runtime "
        "shutdown); its results are incomplete");
  if (!error_.empty()) throw misuse_error(error_);
}

void JobLifecycle::finish_cancelled(double now_ms) {
  std::lock_guard lock(mu_);
  cancelled_.store(true);
  if (finished_) return;
  finished_ = true;
  suspended_ = false;
  stats_.end_ms = now_ms;
  stats_.final_groups = 0;
  cv_.notify_all();
}

}  // namespace coop::detail

namespace coop::detail {

void take_counters(JobStats& s, const Channel& ch) {
  s.kills = ch.kills;
  s.forks = ch.forks;
  s.forked_groups = ch.forked_groups;
  s.resizes = ch.resizes;
  s.barriers = ch.barriers;
  s.suspends = ch.suspends;
}

void JobLifecycle::set_cap_with(Scheduler& sched, JobControl* self, std::uint32_t cap) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
  }
  sched.set_cap(self, cap);
}

bool JobLifecycle::cancel_with(Scheduler& sched, JobControl* self) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return false;
  }
  return sched.cancel(self);
}

}  // namespace coop::detail
