// The host scheduler: capacity accounting between cooperative jobs and non-cooperative tasks.
// Backend-neutral: a backend exposes each job through JobControl (its target M and the M it
// reports); the scheduler decides who gets which capacity.
//
// Capacity is counted in units. On the CPU backend a unit is one workgroup slot; on a GPU it is
// a fraction of a streaming multiprocessor, and a job's workgroup costs as many units as its
// occupancy implies. A job occupies max(target, M) workgroups: capacity given back by lowering
// its target is free only once the job reports that M went down, and a fork can only use
// capacity that was free when the target was raised.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coop/detail/protocol.hpp"
#include "coop/errors.hpp"
#include "coop/policy.hpp"
#include "coop/stats.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace coop::detail {

/// The scheduler's handle on one running cooperative job.
class JobControl {
 public:
  virtual ~JobControl() = default;
  /// M as far as the host knows it (the GPU reports changes with a short delay).
  virtual std::uint32_t reported_active() const = 0;
  /// The M the scheduler wants (kill requests above it, fork grants below it). `pause_kept`
  /// (with target 1): workgroup 0, once alone, pauses at its offers and resizing barriers until
  /// the next set_target (protocol's device_target).
  virtual void set_target(std::uint32_t target, bool pause_kept) = 0;
  /// set_target(target, false) in stream order: the job sees the target once the work enqueued
  /// on `stream` so far has run (a task's), not when the host learns that it has. A later
  /// set_target still wins, whenever either reaches the device. False if the backend cannot (the
  /// CPU backend; another such target still on its way): the target is then unchanged.
  virtual bool set_target_after(std::uint32_t target, CUstream_st* stream) {
    (void)target;
    (void)stream;
    return false;
  }

  /// How the scheduler may take the job's capacity besides kills.
  enum class Preemption : std::uint8_t {
    none,     ///< kills only (or nothing, for a reserved job)
    suspend,  ///< also the whole job at its next resizing barrier (a cooperative kernel)
    whole,    ///< only the whole job, at its next checkpoint (an interruptible kernel)
  };
  virtual Preemption preemption() const { return Preemption::none; }
  /// Asks the job to give up every workgroup at its next preemption point; the backend then
  /// calls Scheduler::job_suspended (or job_finished if it ends first). Called with the
  /// scheduler's lock held: it must not call back into the scheduler.
  virtual void preempt() {}
  /// Withdraws a preempt() the job has not acted on (the tasks that wanted it are served).
  virtual void unpreempt() {}
  /// Restarts a job the scheduler preempted, with `m` workgroups whose capacity is reserved for
  /// it. Called with the scheduler's lock held, from the scheduler's restart thread.
  virtual void restart(std::uint32_t m) { (void)m; }
  /// Whether a suspension also takes effect at an offer_kill, workgroup 0 included, the job
  /// restarting at its beginning (KernelTraits::restartable).
  virtual bool restartable() const { return false; }
  /// Stops the job early (Job::cancel, Runtime::shutdown). Called with the scheduler's lock
  /// held: it must not call back into the scheduler. `on_device`: the job runs (or is about to
  /// be restarted): it must leave at its next offer_kill, resizing barrier or protocol wait and
  /// then report job_finished as usual. Otherwise it is suspended and the scheduler has already
  /// dropped it: it finishes as cancelled at once.
  virtual void cancel(bool on_device) { (void)on_device; }
  /// A line or more on the job's state for Runtime::describe (the device's view where it has
  /// one).
  virtual std::string describe() const { return {}; }
};

/// A task enqueued before its capacity is free (TaskLaunch::at_request) waits for a backend's
/// release: the scheduler arms each job it shrinks for the task with the M at which the job has
/// given its share, and the job releases the task from the device when it gets there.
class ReleaseGate {
 public:
  virtual ~ReleaseGate() = default;
  /// `job` is asked to shrink to `m_at_most` for this task (called with the scheduler's lock
  /// held, before the job's new target is sent). Must not throw: a gate that cannot arm a job
  /// is opened by the host when the task is granted.
  virtual void arm(JobControl& job, std::uint32_t m_at_most) noexcept = 0;
};

class Scheduler {
 public:
  using clock = std::chrono::steady_clock;

  /// `restart_thread`: preempted jobs restart on a thread of the scheduler's as soon as they
  /// are due; without it, only when run_restarts() is called (tests that decide the order).
  explicit Scheduler(std::uint32_t capacity_units, bool restart_thread = true);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  std::uint32_t capacity() const { return capacity_; }
  /// Milliseconds since the scheduler was created (all records use this clock).
  double now_ms() const;

  /// Admits a job of up to N workgroups costing `cost` units each; blocks until it can start
  /// and sets its target. Returns M0. `full_units` (at least n * cost) is what the job holds at
  /// M = N: more when it keeps room on every SM that a workgroup's rounded cost leaves out.
  std::uint32_t admit(JobControl* job, const LaunchConfig& cfg, std::uint32_t n,
                      std::uint32_t cost = 1, std::uint32_t full_units = 0);
  /// The job's M changed (the backend calls this after each report).
  void membership_changed(JobControl* job);
  /// Every workgroup of `job` has left: its capacity comes back.
  void job_finished(JobControl* job);
  /// cap(M) policy: change the limit while the job runs.
  void set_cap(JobControl* job, std::uint32_t cap);
  /// The job suspended itself (M = 0): it holds nothing and is not grown until resumed.
  /// `by_scheduler`: the suspension answers preempt() (or a withdrawn one), not the user: the
  /// scheduler restarts the job when capacity frees.
  void job_suspended(JobControl* job, bool by_scheduler = false);
  /// Gathers capacity for a suspended job to resume with up to `m` workgroups (at least one);
  /// blocks like admit(). Returns the M to resume with.
  std::uint32_t resume(JobControl* job, std::uint32_t m);
  /// Restarts the preempted jobs that are due, as the restart thread does.
  void run_restarts();

 private:
  struct Waiter {
    Waiter(std::uint32_t units, int prio, std::uint64_t order)
        : need(units), priority(prio), seq(order) {}
    std::uint32_t need, got = 0;  ///< units
    int priority;
    std::uint64_t seq;
    /// got == need, set by dispatch() (with release): the task's thread waits on this without
    /// the lock and starts its work at once (a granted task stays a waiter until its work ends:
    /// its units are the waiter's `got`).
    std::atomic<bool> whole{false};
    /// Its thread sleeps on this (await): dispatch() wakes only the waiters it made whole and
    /// the one it serves next, shutdown every one.
    std::condition_variable wake;
  };
  using WaiterRef = std::list<Waiter>::iterator;

 public:
  /// A task in two steps: the request (the jobs are asked for the capacity at once, from the
  /// caller's thread: request_task), then, from any thread, the wait for the capacity and the
  /// work (run_requested: `units` gathered from free capacity, unconsumed grants and kills, the
  /// work run, the capacity given back). Every ticket must be passed to run_requested or
  /// drop_requested exactly once.
  struct TaskTicket {
    WaiterRef waiter;
    std::uint32_t units = 0;
    TaskRecord record;  ///< groups, priority and request_ms so far
  };
  /// `gate`: the jobs shrunk for this request are armed to release it (TaskLaunch::at_request).
  TaskTicket request_task(std::uint32_t units, std::uint32_t groups, int priority,
                          ReleaseGate* gate = nullptr);
  /// Whether the request already has all its capacity (the task may start at once).
  bool granted(const TaskTicket& ticket) const;
  TaskRecord run_requested(TaskTicket& ticket, const std::function<void()>& work);
  /// Withdraws a request that will not be run (its capacity goes back).
  void drop_requested(TaskTicket& ticket);
  /// The ticket's task has enqueued all its work on `stream` (a backend stream) and holds its
  /// capacity: when no other request waits or runs, the jobs are grown now to what they would
  /// get at the task's end, in stream order behind its work (JobControl::set_target_after), so
  /// that they regrow as the task's last kernel ends instead of once the host has seen it end.
  /// Such a growth is withdrawn (the targets restored) as soon as anything else asks for
  /// capacity, before it is served. Not while a job the scheduler preempted is out: it is
  /// restarted by the host at the task's end, before anything grows.
  void grow_after(const TaskTicket& ticket, CUstream_st* stream);
  std::vector<TaskRecord> task_records() const;
  /// The most units a task asking for `wanted` units can gather now: all but workgroup 0 of
  /// each running job that gives capacity by kills, all of a job the preemption policy would
  /// suspend for such a request, nothing of a reserved job that cannot be preempted.
  std::uint32_t gatherable_units(std::uint32_t wanted) const;
  /// A task still waiting for its workgroups `seconds` after its request is reported through
  /// `report` (once per task), and with `fail` withdrawn and failed with coop::gather_timeout;
  /// 0 seconds: never. Jobs that hold capacity and do not give it back are named.
  void set_gather_deadline(double seconds, bool fail,
                           std::function<void(const std::string&)> report);
  /// Passes `what` to the report function set_gather_deadline was given (none: nothing).
  void report(const std::string& what) const;
  void set_preemption(const PreemptionPolicy& p);
  PreemptionPolicy preemption() const;
  /// Units a workgroup of the lowest-priority running job costs (1 when none runs).
  std::uint32_t reference_cost() const;

  /// Job::cancel: false if the job is no longer registered (it finished).
  bool cancel(JobControl* job);
  /// Closes the scheduler: admissions, tasks and resumptions (waiting or new) fail with
  /// coop::runtime_closed; jobs the user suspended are cancelled, and with `cancel_jobs` every
  /// job is. Returns once no call is inside the scheduler and every job has finished (jobs the
  /// scheduler preempted are restarted to finish, unless cancelled).
  void shutdown(bool cancel_jobs);
  bool closed() const;
  /// Capacity, running tasks, waiting requests and every job (with the backend's view).
  std::string describe() const;

 private:
  struct JobEntry {
    JobControl* job;
    Policy policy;
    int priority;
    std::uint32_t n;
    std::uint32_t cost;    ///< units per workgroup
    std::uint32_t target;  ///< the M the job may hold
    bool reserved;         ///< holds all N until it ends (adversarial, persistent)
    bool suspended;
    std::uint32_t cap;
    bool reserved_at_admit = false;
    bool preempting = false;  ///< asked to suspend for a task; its capacity is on its way back
    bool preempted = false;   ///< suspended by the scheduler: restarted when capacity frees
    bool cancelled = false;   ///< stopping early: never grown, preempted or restarted again
    bool paused = false;      ///< shrunk to workgroup 0 for a task, which it pauses for
    /// Grown by grow_after, in stream order behind a running task; target_before and
    /// paused_before are what a withdrawal restores.
    bool grown_after = false;
    bool paused_before = false;
    std::uint32_t target_before = 0;
    std::uint32_t full = 0;  ///< units held at M = N (>= n * cost)
  };
  JobEntry* find(JobControl* job);
  std::uint32_t occupied(const JobEntry& e) const;  // units
  /// Units a job holds at M = m (all of `full` at N).
  static std::uint32_t units_for(const JobEntry& e, std::uint32_t m) {
    return m >= e.n ? e.full : m * e.cost;
  }
  std::int64_t free_locked() const;
  /// How many workgroups beyond the `base` just gathered a job being started can take from
  /// free capacity, at most `most`.
  std::uint32_t spare_groups(const JobEntry& e, std::uint32_t base, std::uint32_t most) const;
  std::uint32_t limit_of(const JobEntry& e) const;  // the most M the policy allows
  /// Sends `t` (and whether workgroup 0 pauses, PreemptionPolicy::pause_kept) to the job.
  void set_target(JobEntry& e, std::uint32_t t, bool pause = false);
  std::uint32_t gather(std::uint32_t units, int priority, std::unique_lock<std::mutex>& lock,
                       bool deadline = false);
  WaiterRef enqueue(std::uint32_t units, int priority);  // under the lock
  /// Until the waiter is whole; it stays in waiters_ (gather() erases it, a task's thread once
  /// its work has ended). `spin`: spin for it without the lock first.
  void await(WaiterRef it, std::unique_lock<std::mutex>& lock, bool deadline, bool spin = true);
  /// Spins (without the lock) for up to 2 ms until `w` is whole; false if it is not.
  static bool spin_for_grant(const Waiter& w);
  /// Units held by tasks: the waiters made whole (running, or about to).
  std::uint32_t granted_units() const;
  /// Whether a request still misses capacity.
  bool short_waiter() const;
  std::string describe_holders(const Waiter& w) const;
  /// Why a task of `units` must wait for reserved jobs (they hold all N until they end), or
  /// nothing when the rest of the device could serve it.
  std::string describe_reserved_blockers(std::uint32_t units) const;
  void dispatch();  // hand free capacity to waiting tasks, then to jobs that can grow
  /// dispatch()'s second half, once no task waits: restarts preempted jobs and grows jobs.
  void grow_jobs(std::int64_t free);
  /// Jobs that may grow into free capacity, highest priority first.
  std::vector<JobEntry*> growable_jobs();
  /// How many workgroups `e` grows by from `free` units.
  std::uint32_t growth(const JobEntry& e, std::int64_t free) const;
  /// Restores the targets of jobs grown by grow_after (another request came).
  void withdraw_growth();
  /// The task's stream has run its work: growths in stream order have reached the device.
  void growth_landed();
  void reclaim();  // ask jobs for the capacity that waiting tasks still miss
  bool suspends_for(const JobEntry& e, std::uint32_t request_units) const;
  void restart_loop();
  /// Under the lock: restarts the jobs in restarts_ with their targets now.
  void restart_due();
  void cancel_locked(std::list<JobEntry>::iterator it);
  /// Counts a blocking call (admit, a task's request until it has run, resume) for shutdown;
  /// refuses new ones once closed.
  struct Call {
    Scheduler& s;
    Call(Scheduler& sched, const char* what);
    ~Call();
  };

  const std::uint32_t capacity_;
  const clock::time_point epoch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  ///< shutdown waits on it for the calls and jobs to end
  std::list<JobEntry> jobs_;
  std::list<Waiter> waiters_;
  std::uint64_t seq_ = 0;
  std::vector<TaskRecord> records_;
  PreemptionPolicy preemption_;
  double gather_deadline_s_ = 0;
  bool gather_deadline_fails_ = false;
  std::function<void(const std::string&)> gather_report_;
  std::vector<JobControl*> restarts_;  ///< preempted jobs to restart (outside dispatch's callers)
  ReleaseGate* arming_ = nullptr;      ///< the request whose jobs set_target arms (request_task)
  bool stopping_ = false;
  bool closed_ = false;
  std::uint32_t calls_ = 0;  ///< blocking calls inside the scheduler (under mu_)
  std::condition_variable restart_cv_;
  std::thread restarter_;
};

}  // namespace coop::detail
