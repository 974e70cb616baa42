// The launch loop of interruptible kernels, the same for every backend.
#include "coop/interruptible.hpp"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>

namespace coop {

double default_slice_ms(bool has_watchdog) { return has_watchdog ? 100.0 : 1000.0; }

namespace detail {
namespace {

/// The scheduler's view of a running interruptible kernel: it holds its resident workgroups
/// while it runs and gives them back only whole, when a launch stops early for a task.
class InterruptibleJob final : public JobControl {
 public:
  InterruptibleJob(SliceRunner& runner, std::uint32_t groups) : runner_(runner), groups_(groups) {}

  std::uint32_t reported_active() const override {
    std::lock_guard lock(mu_);
    return held_ ? groups_ : 0;
  }
  void set_target(std::uint32_t, bool) override {}
  Preemption preemption() const override { return Preemption::whole; }
  void preempt() override {
    {
      std::lock_guard lock(mu_);
      wanted_ = true;
    }
    // A preemption that lands between two launches stops the next one at its first checkpoint
    // (see SliceRunner::stop_current): the loop then sees `wanted_` and gives the device up.
    runner_.stop_current();
  }
  void unpreempt() override {
    std::lock_guard lock(mu_);
    wanted_ = false;
  }
  void restart(std::uint32_t) override {
    std::lock_guard lock(mu_);
    held_ = true;
    cv_.notify_all();
  }
  void cancel(bool) override {
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      cv_.notify_all();
    }
    runner_.stop_current();
  }
  /// Runtime::shutdown with Shutdown::cancel stopped it.
  bool cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }

  /// Between launches: true if the scheduler wants the device (the caller then suspends).
  bool preempt_wanted() {
    std::lock_guard lock(mu_);
    return wanted_;
  }
  /// Gives the device up (before Scheduler::job_suspended, which may restart it at once).
  void release() {
    std::lock_guard lock(mu_);
    held_ = false;
    wanted_ = false;
  }
  /// Blocks until restart() (or cancellation).
  void wait_restart(const std::stop_token& cancel) {
    std::stop_callback wake(cancel, [&] {  // before the lock: it may run right here
      std::lock_guard l(mu_);
      cv_.notify_all();
    });
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return held_ || cancelled_ || cancel.stop_requested(); });
  }
  void hold() { restart(0); }

 private:
  SliceRunner& runner_;
  const std::uint32_t groups_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, wanted_ = false, cancelled_ = false;
};

/// Unregisters the job however the loop ends.
struct Registration {
  Scheduler& sched;
  JobControl* job;
  ~Registration() { sched.job_finished(job); }
};

std::string misuse_message(const SliceSummary& s) {
  const std::string who = "thread " + std::to_string(s.misuse_thread);
  if (s.misuse & kMisuseUnknownPoint)
    return who + " of the interruptible kernel resumed at checkpoint line " +
           std::to_string(s.misuse_point) +
           ", which its COOP_INTERRUPTIBLE_BEGIN switch does not contain (is the checkpoint inside "
           "a nested switch statement?)";
  return who +
         " returned from the interruptible kernel without completing: end the body with "
         "COOP_INTERRUPTIBLE_END and leave early only through COOP_COMPLETE or a checkpoint";
}

}  // namespace

InterruptProgress drive(Scheduler& sched, SliceRunner& runner, std::uint32_t blocks,
                        std::uint32_t threads, const InterruptOptions& opts, int priority) {
  using clock = std::chrono::steady_clock;
  if (blocks == 0) throw std::invalid_argument("an interruptible kernel needs at least one block");
  if (threads == 0 || threads > 1024)
    throw std::invalid_argument("threads per block must be in [1, 1024], got " +
                                std::to_string(threads));
  if (!(opts.slice_ms >= 0) || !std::isfinite(opts.slice_ms))
    throw std::invalid_argument("slice_ms must be a non-negative number of milliseconds");
  runner.prepare(blocks, threads, !opts.resume);

  const double slice_ms =
      opts.slice_ms > 0 ? opts.slice_ms : default_slice_ms(runner.has_watchdog());
  const auto budget_ns = std::uint64_t(slice_ms * 1e6);
  const std::uint32_t cost = runner.group_cost(threads);
  const std::uint32_t groups = std::max<std::uint32_t>(
      1, std::min({blocks, runner.resident_groups(threads), sched.capacity() / cost}));

  InterruptibleJob job(runner, groups);
  LaunchConfig cfg;
  cfg.threads = threads;
  cfg.max_groups = groups;
  cfg.mode = Mode::persistent;  // the scheduler reserves all of its resident workgroups
  cfg.priority = priority;
  sched.admit(&job, cfg, groups, cost);
  Registration reg{sched, &job};
  job.hold();

  std::stop_callback on_cancel(opts.cancel, [&] { runner.stop_current(); });
  InterruptProgress p;
  p.threads = std::uint64_t(blocks) * threads;
  const auto t0 = clock::now();
  auto ms_since = [](clock::time_point a) {
    return std::chrono::duration<double, std::milli>(clock::now() - a).count();
  };
  for (;;) {
    if (opts.cancel.stop_requested() || job.cancelled())
      throw interrupt_error(interrupt_error::Kind::cancelled,
                            std::string(job.cancelled() ? "runtime shut down: " : "") +
                                "interruptible kernel cancelled after " +
                                std::to_string(p.launches) + " launches (" +
                                std::to_string(p.finished) + " of " + std::to_string(p.threads) +
                                " threads complete)",
                            p);
    if (opts.max_launches && p.launches >= opts.max_launches)
      throw interrupt_error(interrupt_error::Kind::launch_limit,
                            "interruptible kernel not done after " + std::to_string(p.launches) +
                                " launches (" + std::to_string(p.finished) + " of " +
                                std::to_string(p.threads) + " threads complete)",
                            p);
    if (job.preempt_wanted()) {
      job.release();
      sched.job_suspended(&job, true);
      job.wait_restart(opts.cancel);
      ++p.preemptions;
      continue;
    }
    const auto l0 = clock::now();
    SliceSummary s = runner.run(budget_ns, opts.checkpoints);
    p.last_launch_ms = ms_since(l0);
    p.longest_launch_ms = std::max(p.longest_launch_ms, p.last_launch_ms);
    ++p.launches;
    p.finished = s.finished;
    p.elapsed_ms = ms_since(t0);
    if (s.misuse) throw misuse_error(misuse_message(s));
    if (p.finished >= p.threads) return p;
    if (opts.on_progress) opts.on_progress(p);
  }
}

}  // namespace detail
}  // namespace coop
