#include "coop/detail/job_state.hpp"

#include <chrono>
#include <stdexcept>

namespace coop::detail {

void init_channel(Channel& ch, const LaunchConfig& cfg, const KernelTraits& traits,
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
  if (traits.restartable) f |= flag_restartable;
  ch.flags = f;
}

void take_counters(JobStats& s, const Channel& ch) {
  s.kills = ch.kills;
  s.forks = ch.forks;
  s.forked_groups = ch.forked_groups;
  s.resizes = ch.resizes;
  s.barriers = ch.barriers;
  s.suspends = ch.suspends;
}

JobState::JobState(Scheduler& sched, const LaunchConfig& cfg, std::uint32_t n)
    : sched_(sched), cfg_(cfg), n_(n) {
  stats_.max_groups = n;
}

JobState::~JobState() {
  // Only a job whose launch failed gets here unfinished: release() finished every job that had
  // a handle, and after a runtime shutdown every job has finished (the scheduler may be gone).
  bool registered = false;
  {
    std::lock_guard lock(mu_);
    registered = !finished_;
  }
  if (registered) sched_.job_finished(this);
}

// ---------------------------------------------------------------- bookkeeping for the backends

void JobState::record_start(std::uint32_t m0) {
  const double now = sched_.now_ms();
  std::lock_guard lock(mu_);
  if (stats_.timeline.empty()) {
    stats_.initial_groups = m0;
    stats_.start_ms = now;
  }
  stats_.timeline.push_back({now, m0});
  finished_ = suspended_ = false;
}

void JobState::record_membership(std::uint32_t m) {
  // The scheduler first: a task waiting for this change starts before the timeline is written.
  // (Its time is taken under the lock, so that the timeline's times stay in order.)
  sched_.membership_changed(this);
  std::lock_guard lock(mu_);
  stats_.timeline.push_back({sched_.now_ms(), m});
}

void JobState::set_error(const std::string& what) {
  std::lock_guard lock(mu_);
  if (error_.empty()) error_ = what;
}

void JobState::end_run(std::unique_lock<std::mutex>& lock, bool suspended,
                       std::uint32_t final_groups, const std::string& device_error) {
  if (!device_error.empty() && error_.empty() && !cancelled_.load()) error_ = device_error;
  // The device may not be reachable later (stats() of a finished job answers from here); after
  // a device fault the counters are lost and the error says why.
  try {
    take_counters(stats_);
  } catch (const std::exception&) {
  }
  // The scheduler is told with mu_ held, so that nobody sees the job finished (and lets the
  // runtime go) before the scheduler has its capacity back.
  if (suspended && error_.empty() && !cancelled_.load()) {
    // A preemption is the scheduler's business: wait() goes on waiting through it.
    const bool by_user = user_suspend_.load();
    if (by_user) suspended_ = true;
    sched_.job_suspended(this, !by_user);
  } else {
    finished_ = true;
    suspended_ = false;
    stats_.end_ms = sched_.now_ms();
    stats_.final_groups = final_groups;
    sched_.job_finished(this);
  }
  (void)lock;
  cv_.notify_all();
}

void JobState::throw_if_failed_locked() const {
  if (cancelled_.load())
    throw job_cancelled(
        "the job was cancelled before it finished (Job::cancel, a runtime shutdown or its last "
        "Job handle dropped); its results are incomplete");
  if (!error_.empty()) throw misuse_error(error_);
}

// ---------------------------------------------------------------- the user's view

void JobState::wait() {
  {
    std::unique_lock lock(mu_);
    if (suspended_) throw std::logic_error("wait() on a suspended job: resume it first");
    cv_.wait(lock, [&] { return finished_; });
  }
  join_workgroups();
  std::lock_guard lock(mu_);
  throw_if_failed_locked();
}

bool JobState::done() const {
  std::lock_guard lock(mu_);
  return finished_;
}

JobStats JobState::stats() const {
  JobStats s;
  {
    std::lock_guard lock(mu_);
    if (finished_) return stats_;  // counters read when it finished
    s = stats_;
  }
  take_counters(s);
  return s;
}

// set_cap and cancel do nothing once the job has finished: the runtime may be gone by then.

void JobState::set_cap(std::uint32_t cap) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
  }
  sched_.set_cap(this, cap);
}

bool JobState::cancel() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return false;
  }
  return sched_.cancel(this);
}

bool JobState::suspend() {
  require_suspendable();
  std::unique_lock lock(mu_);
  if (finished_) return false;
  if (suspended_) return true;
  user_suspend_.store(true);
  request_suspend(true);
  cv_.wait(lock, [&] { return finished_ || suspended_; });
  throw_if_failed_locked();
  return suspended_;
}

std::uint32_t JobState::resume(std::uint32_t m) {
  {
    std::lock_guard lock(mu_);
    if (cancelled_.load()) throw job_cancelled("resume(): the job was cancelled");
    if (!suspended_) throw std::logic_error("resume() needs a suspended job");
  }
  user_suspend_.store(false);
  const std::uint32_t m0 = sched_.resume(this, m == 0 ? n_ : m);
  relaunch(m0);
  return m0;
}

void JobState::release() noexcept {
  // The last handle is gone: nobody can wait for the job or read its results, and the buffers
  // its kernel uses may be freed next. Cancel it and return only once no workgroup runs.
  bool running = false;
  {
    std::lock_guard lock(mu_);
    running = !finished_;
  }
  if (running) {
    try {
      sched_.cancel(this);
    } catch (const std::exception&) {
      // Not registered (any more): it is finishing on its own.
    }
    using namespace std::chrono_literals;
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, 5s, [&] { return finished_; })) {
      // mu_ stays held: the job cannot finish, nor the runtime go, while this is reported.
      sched_.report(
          "a job whose last Job handle was dropped is still running after 5 s: "
          "its workgroups leave only at offer_kill, a resizing barrier or a "
          "protocol wait, and this waits until they have (" +
          std::to_string(reported_active()) + " of N = " + std::to_string(n_) + " still run)");
      cv_.wait(lock, [&] { return finished_; });
    }
  }
  join_workgroups();
}

// ---------------------------------------------------------------- the scheduler's view

JobControl::Preemption JobState::preemption() const {
  return cfg_.mode == Mode::cooperative ? Preemption::suspend : Preemption::none;
}

void JobState::cancel(bool on_device) {
  cancelled_.store(true);
  if (on_device) {
    abort_on_device();
    return;
  }
  // Suspended and already dropped by the scheduler: finished as cancelled, at once.
  const double now = sched_.now_ms();
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  suspended_ = false;
  stats_.end_ms = now;
  stats_.final_groups = 0;
  cv_.notify_all();
}

}  // namespace coop::detail
