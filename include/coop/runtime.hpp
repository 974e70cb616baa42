// The host-side entry point: a Runtime owns the scheduler of one device (a GPU, or the CPU
// backend's virtual compute units), launches cooperative kernels as jobs and runs
// non-cooperative tasks that borrow workgroup slots from them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coop/cpu/backend.hpp"
#include "coop/kernel.hpp"
#include "coop/policy.hpp"
#include "coop/scheduler.hpp"
#include "coop/stats.hpp"

namespace coop {

enum class Backend : std::uint8_t { cpu, cuda };
const char* backend_name(Backend b);

struct RuntimeOptions {
  /// CPU backend: how many workgroups can be resident at once (its "compute units").
  /// 0 = $COOP_CPU_SLOTS, else 16.
  std::uint32_t cpu_slots = 0;
  /// CPU backend: check workgroup-level uniformity and report misuse (cheap; on by default).
  bool checking = true;
  /// CPU backend: report a job whose workgroups all wait this long without progress (0 = never).
  double watchdog_s = 20;
};

/// Handle on a launched cooperative kernel.
class Job {
 public:
  Job() = default;
  /// Blocks until every workgroup has left; throws coop::misuse_error if the job failed.
  void wait() { core_->wait(); }
  bool done() const { return core_->done(); }
  JobStats stats() const { return core_->stats(); }
  std::uint32_t max_groups() const { return core_->max_groups(); }
  /// Current number of active workgroups M.
  std::uint32_t active_groups() const { return core_->membership().active; }
  /// cap(M) policy: change the limit on M while the job runs (energy throttling).
  void set_cap(std::uint32_t cap) { core_->set_cap(cap); }
  explicit operator bool() const { return bool(core_); }

 private:
  friend class Runtime;
  explicit Job(std::shared_ptr<cpu::JobCore> core) : core_(std::move(core)) {}
  std::shared_ptr<cpu::JobCore> core_;
};

/// What a non-cooperative task gets while it holds its workgroups.
class Task {
 public:
  std::uint32_t groups() const { return groups_; }
  Backend backend() const { return backend_; }

 private:
  friend class Runtime;
  Task(std::uint32_t g, Backend b) : groups_(g), backend_(b) {}
  std::uint32_t groups_;
  Backend backend_;
};

class Runtime {
 public:
  /// The CPU backend (the CUDA backend is selected by coop::cuda::Runtime when built).
  explicit Runtime(RuntimeOptions opts = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Backend backend() const { return Backend::cpu; }
  std::string device_name() const;
  /// Workgroup slots of the device (CPU: cpu_slots).
  std::uint32_t capacity() const { return sched_->capacity(); }
  double now_ms() const { return sched_->now_ms(); }

  /// Launches cooperative kernel K with at most cfg.max_groups workgroups (0 = capacity).
  /// Returns once it runs with M0 >= 1 workgroups.
  template <class K>
  Job launch(const LaunchConfig& cfg, const params_t<K>& params,
             const transmit_t<K>& transmit = {}) {
    std::uint32_t n = checked_groups(cfg);
    auto job = std::make_shared<cpu::Job<K>>(*sched_, cfg, n, cpu_options(), params);
    std::uint32_t m0 = sched_->admit(job.get(), cfg, n);
    job->launch(m0, transmit);
    return Job(std::move(job));
  }

  /// Runs a non-cooperative task on `groups` workgroup slots gathered from the running jobs:
  /// blocks until they are free, runs `work`, gives them back. Returns the task's record.
  TaskRecord run(std::uint32_t groups, const std::function<void(Task&)>& work, int priority = 0);
  std::vector<TaskRecord> task_records() const { return sched_->task_records(); }

 private:
  std::uint32_t checked_groups(const LaunchConfig& cfg) const;
  cpu::Options cpu_options() const { return {opts_.checking, opts_.watchdog_s}; }
  RuntimeOptions opts_;
  std::unique_ptr<detail::Scheduler> sched_;
};

}  // namespace coop
