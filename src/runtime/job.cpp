#include "coop/job.hpp"

#include <stdexcept>

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
  if (!error_.empty()) throw misuse_error(error_);
  return suspended_;
}

void JobLifecycle::require_suspended() const {
  std::lock_guard lock(mu_);
  if (!suspended_) throw std::logic_error("resume() needs a suspended job");
}

void JobLifecycle::set_error(const std::string& what) {
  std::lock_guard lock(mu_);
  if (error_.empty()) error_ = what;
}

}  // namespace coop::detail
