// Non-template parts of the CPU backend: a job's channel, workgroup threads, statistics,
// checking-mode state, and the per-workgroup synchronisation the kernel context uses.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coop/cpu/fiber.hpp"
#include "coop/detail/job_state.hpp"
#include "coop/detail/protocol.hpp"
#include "coop/detail/scheduler.hpp"
#include "coop/kernel.hpp"
#include "coop/policy.hpp"
#include "coop/stats.hpp"

namespace coop::cpu {

/// Unwinds a workgroup's fibers when its job stops (error elsewhere, misuse detected).
struct Aborted {};

struct Options {
  bool checking = true;
  double watchdog_s = 20;
};

/// One workgroup instance: its fibers, barrier state, broadcast slot and shared memory.
class WorkgroupBase {
 public:
  /// `job` may be null (a workgroup of an interruptible kernel): misuse then lands in `failure`.
  WorkgroupBase(class JobCore* job, std::uint32_t id, std::uint32_t threads, int resume_point);
  /// Workgroup barrier for thread `lid`; checks that every thread reached the same primitive.
  /// Returns whether any thread voted (a workgroup-wide OR, like CUDA's __syncthreads_or).
  bool sync(detail::SiteKind kind, int site, unsigned lid, bool vote = false);
  /// Misuse check: a killed workgroup must not reach another primitive.
  void check_alive(detail::SiteKind kind, int site);
  /// Thread `lid` returned from the kernel.
  void thread_exit(unsigned lid);
  void pause();  ///< a spin-wait step inside kernel code
  [[noreturn]] void fail(const std::string& what);

  JobCore* const job;
  const std::uint32_t id;
  const std::uint32_t threads;
  const int resume_point;
  FiberTeam team;
  bool killed = false;
  std::uint64_t result = 0;  ///< thread 0's answer to a workgroup-level primitive
  std::string failure;       ///< the misuse found when the workgroup has no job (job == nullptr)

 private:
  struct Site {
    detail::SiteKind kind;
    int line;
  };
  std::string describe_sites() const;
  unsigned arrived_ = 0, exited_ = 0, generation_ = 0;
  bool any_vote_ = false;
  bool votes_[2] = {false, false};
  std::vector<Site> sites_;
  std::vector<unsigned char> exited_mask_;
};

/// The CPU backend's driver under the shared job core: the channel in host memory, one thread
/// per workgroup, checking-mode state.
class JobCore : public detail::JobState {
 public:
  JobCore(detail::Scheduler& sched, const LaunchConfig& cfg, const KernelTraits& traits,
          std::uint32_t n, const Options& opts);
  ~JobCore() override;

  std::uint32_t reported_active() const override;
  void set_target(std::uint32_t target, bool pause_kept) override;
  bool restartable() const override { return (channel_->flags & detail::flag_restartable) != 0; }
  std::string describe() const override;
  detail::Membership membership() const override;

  detail::Channel& channel() { return *channel_; }
  const Options& options() const { return opts_; }

  /// Sets the channel up for M0 workgroups (after admission or resume) and records it.
  void start(std::uint32_t m0);
  /// Starts workgroup `id` on a new thread; `body` runs it.
  void start_thread(std::uint32_t id, std::function<void()> body);
  /// Workgroups [0, m), each `body(id)`, counted live together before any runs: one that ends
  /// at once cannot end the run (and take the scheduler's lock, which a restart holds) while
  /// the others are still being started.
  void start_threads(std::uint32_t m,
                     const std::function<std::function<void()>(std::uint32_t)>& body);
  /// A workgroup's thread is done with it (killed, finished or aborted).
  void group_exit(std::uint32_t id, bool finished_normally);
  using JobState::record_membership;

  /// First error wins; every workgroup unwinds at its next wait.
  void fail(const std::string& what);
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  /// Checking mode: what workgroup `id`'s thread 0 is waiting for (watchdog report).
  void set_wait(std::uint32_t id, detail::SiteKind kind, int site);
  void clear_wait(std::uint32_t id);
  /// Called while a workgroup has been waiting `waited_s` seconds; reports a stall.
  void check_watchdog(std::uint32_t id, double waited_s);
  std::uint64_t next_incarnation(std::uint32_t id);

 protected:
  /// Starts workgroups [0, m) at the resume point where the job was suspended.
  virtual void restart_groups(std::uint32_t m) = 0;

  void request_suspend(bool on) override;
  void relaunch(std::uint32_t m) override;
  void abort_on_device() override;
  void take_counters(JobStats& s) const override;
  void join_workgroups() override;

 private:
  std::string stall_report() const;
  std::string sites_report() const;  ///< one line per workgroup that ran: where it is
  void reap_locked();

  Options opts_;
  std::unique_ptr<detail::Channel> channel_;
  std::atomic<bool> aborted_{false};

  std::uint32_t live_ = 0;
  std::vector<std::thread> threads_;
  std::vector<std::thread::id> exited_threads_;
  struct WaitState {
    std::atomic<int> kind{-1};
    std::atomic<int> site{0};
    std::atomic<int> state{0};  // 0 absent, 1 running, 2 finished, 3 killed
  };
  std::unique_ptr<WaitState[]> wait_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> incarnation_;
};

}  // namespace coop::cpu
