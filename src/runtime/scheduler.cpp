#include "coop/detail/scheduler.hpp"

#include <cstdio>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include "coop/detail/spin.hpp"

namespace coop::detail {

Scheduler::Scheduler(std::uint32_t capacity_units, bool restart_thread)
    : capacity_(capacity_units), epoch_(clock::now()) {
  if (capacity_units == 0) throw std::invalid_argument("scheduler capacity must be at least 1");
  if (restart_thread) restarter_ = std::thread([this] { restart_loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  restart_cv_.notify_all();
  if (restarter_.joinable()) restarter_.join();
}

// Preempted jobs restart here rather than in dispatch(): dispatch runs inside backend callbacks
// (a job reporting its suspension), where restarting that same job would re-enter its backend.
// The lock is held across restart() so that a job cannot unregister while it is restarted.
void Scheduler::restart_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    restart_cv_.wait(lock, [&] { return stopping_ || !restarts_.empty(); });
    if (stopping_) return;
    restart_due();
  }
}

void Scheduler::run_restarts() {
  std::lock_guard lock(mu_);
  restart_due();
}

// A job restarts with its target now, not the M decided when its restart was queued: a request
// that came meanwhile has taken the grants back (reclaim), and the job must not start on the
// capacity handed to that task. (On an H200 the restart launched all N workgroups beside a
// task granted at once; the task's kernels never found room, and the co-location benchmark
// stalled.) A request that wanted the job suspended again finds it suspended, not launched.
void Scheduler::restart_due() {
  std::vector<JobControl*> todo;
  todo.swap(restarts_);
  bool suspended_again = false;
  for (JobControl* job : todo) {
    JobEntry* e = find(job);
    if (!e) continue;
    if (e->preempting) {
      e->preempting = false;
      e->preempted = e->suspended = true;
      set_target(*e, 0);
      suspended_again = true;
      continue;
    }
    const bool whole = job->preemption() == JobControl::Preemption::whole;
    job->restart(whole ? e->n : std::max(e->target, 1u));
  }
  if (suspended_again) dispatch();
}

void Scheduler::set_preemption(const PreemptionPolicy& p) {
  if (!(p.suspend_above >= 0.0 && p.suspend_above <= 1.0))
    throw std::invalid_argument("the hybrid threshold must be a fraction in [0, 1]");
  std::lock_guard lock(mu_);
  preemption_ = p;
}

PreemptionPolicy Scheduler::preemption() const {
  std::lock_guard lock(mu_);
  return preemption_;
}

bool Scheduler::suspends_for(const JobEntry& e, std::uint32_t request_units) const {
  switch (e.job->preemption()) {
    case JobControl::Preemption::whole:
      return true;
    case JobControl::Preemption::suspend:
      return preemption_.mode == PreemptionPolicy::Mode::suspend ||
             (preemption_.mode == PreemptionPolicy::Mode::hybrid &&
              double(request_units) > preemption_.suspend_above * double(capacity_));
    case JobControl::Preemption::none:
      break;
  }
  return false;
}

double Scheduler::now_ms() const {
  return std::chrono::duration<double, std::milli>(clock::now() - epoch_).count();
}

Scheduler::JobEntry* Scheduler::find(JobControl* job) {
  for (auto& e : jobs_)
    if (e.job == job) return &e;
  return nullptr;
}

std::uint32_t Scheduler::occupied(const JobEntry& e) const {
  if (e.suspended) return 0;
  return units_for(e, e.reserved ? e.n : std::max(e.target, e.job->reported_active()));
}

std::int64_t Scheduler::free_locked() const {
  std::int64_t used = 0;
  for (const auto& w : waiters_) used += w.got;
  for (const auto& e : jobs_) used += occupied(e);
  return std::int64_t(capacity_) - used;
}

std::uint32_t Scheduler::spare_groups(const JobEntry& e, std::uint32_t base,
                                      std::uint32_t most) const {
  // free_locked() still counts the units just gathered for the job's first `base` workgroups
  // (they are no waiter's any more and not yet the job's): they are part of what the job may
  // take, not extra. Counting them twice started a job of N beside a task of one workgroup on a
  // device that holds N (coop bench on the H200: the job's last block never became resident
  // and the job waited at its first barrier until the task ended).
  const std::int64_t avail = std::max<std::int64_t>(0, free_locked());
  std::int64_t m = std::min<std::int64_t>(std::int64_t(base) + most, avail / e.cost);
  if (m >= e.n && std::int64_t(e.full) > avail) m = e.n - 1;  // at N the job holds `full`
  return std::uint32_t(std::max<std::int64_t>(m, base) - base);
}

std::uint32_t Scheduler::reference_cost() const {
  std::lock_guard lock(mu_);
  const JobEntry* low = nullptr;
  for (const auto& e : jobs_)
    if (!low || e.priority < low->priority) low = &e;
  return low ? low->cost : 1;
}

std::uint32_t Scheduler::gatherable_units(std::uint32_t wanted) const {
  std::lock_guard lock(mu_);
  std::int64_t keep = 0;
  // A cooperative job may have no resizing barrier and never suspend: only a whole-only job
  // (interruptible kernel) is counted as giving everything.
  for (const auto& e : jobs_) {
    if (e.suspended) continue;
    if (e.job->preemption() == JobControl::Preemption::whole && suspends_for(e, wanted)) continue;
    keep += e.reserved || e.policy.kind == Policy::Kind::fixed ? e.full : e.cost;
  }
  return std::uint32_t(std::max<std::int64_t>(0, std::int64_t(capacity_) - keep));
}

std::uint32_t Scheduler::limit_of(const JobEntry& e) const {
  if (e.policy.kind == Policy::Kind::cap) return std::min(e.cap, e.n);
  return e.n;
}

void Scheduler::set_target(JobEntry& e, std::uint32_t t, bool pause) {
  // Armed before the target is sent, so that the job sees the slot when it acts on the target.
  if (arming_ && t < e.job->reported_active()) arming_->arm(*e.job, t);
  e.target = t;
  e.paused = pause;
  e.grown_after = false;  // this target supersedes a growth in stream order
  e.job->set_target(t, pause);
}

std::uint32_t Scheduler::gather(std::uint32_t units, int priority,
                                std::unique_lock<std::mutex>& lock, bool deadline) {
  const WaiterRef it = enqueue(units, priority);
  await(it, lock, deadline);
  const std::uint32_t got = it->got;
  waiters_.erase(it);  // the caller's job takes the capacity over
  return got;
}

std::uint32_t Scheduler::granted_units() const {
  std::uint32_t units = 0;
  for (const auto& w : waiters_)
    if (w.got == w.need) units += w.got;
  return units;
}

bool Scheduler::short_waiter() const {
  for (const auto& w : waiters_)
    if (w.got < w.need) return true;
  return false;
}

Scheduler::WaiterRef Scheduler::enqueue(std::uint32_t units, int priority) {
  withdraw_growth();  // the capacity is decided again, from the targets before it
  auto it = waiters_.emplace(waiters_.end(), units, priority, seq_++);
  dispatch();
  reclaim();
  return it;
}

namespace {
/// The waiter dispatch() serves next: the highest priority short of its units, the oldest among
/// those (nullptr when none is short).
template <class Waiters>
auto next_waiter(Waiters& waiters) -> decltype(&*waiters.begin()) {
  decltype(&*waiters.begin()) best = nullptr;
  for (auto& w : waiters)
    if (w.got < w.need && (!best || w.priority > best->priority ||
                           (w.priority == best->priority && w.seq < best->seq)))
      best = &w;
  return best;
}
template <class Waiters, class Waiter>
bool served_next_of(const Waiters& waiters, const Waiter& w) {
  return next_waiter(waiters) == &w;
}
}  // namespace

void Scheduler::await(WaiterRef it, std::unique_lock<std::mutex>& lock, bool deadline, bool spin) {
  const std::uint32_t units = it->need;
  if (deadline && it->got < it->need && gather_report_) {
    // A task that waits for a reserved job waits for that job's end: say so once, at once.
    const std::string why = describe_reserved_blockers(units);
    if (!why.empty()) {
      auto report = gather_report_;  // not under the lock: the report may call into the runtime
      lock.unlock();
      report(why);
      lock.lock();
    }
  }
  // Only the waiter served next (dispatch()'s order) spins, once, when it becomes that waiter;
  // the others sleep. With every waiter spinning, a deep queue of submitted tasks (a serving
  // system's requests at 60 % load) kept a dozen threads busy beside the service thread that
  // hands capacity over, and each wake-up of every waiter reclaimed again under the lock.
  auto served_next = [&] { return served_next_of(waiters_, *it); };
  bool spun = false;
  auto may_spin = [&] { return spin && !spun && !closed_ && it->got < it->need && served_next(); };
  auto spin_if_next = [&] {
    if (!may_spin()) return;
    spun = true;
    lock.unlock();
    spin_for_grant(*it);
    lock.lock();
  };
  spin_if_next();
  auto ready = [&] {
    if (closed_) return true;
    // Jobs may have shrunk or finished meanwhile; reclaim() asks for every waiter's shortfall.
    if (it->got < it->need && served_next()) reclaim();
    return it->got == it->need;
  };
  // Sleeps until ready, or until this waiter is served next and has not spun for it yet.
  auto sleep_until_ready = [&](auto&& wait) {
    while (!ready()) {
      if (!wait([&] { return ready() || may_spin(); })) return false;
      spin_if_next();
    }
    return true;
  };
  auto refuse_if_closed = [&] {
    if (!closed_ || it->got == it->need) return;
    waiters_.erase(it);  // what it had gathered is free again
    dispatch();
    throw runtime_closed("the runtime shut down while this request waited for capacity");
  };
  if (deadline && gather_deadline_s_ > 0) {
    const auto due = clock::now() + std::chrono::duration_cast<clock::duration>(
                                        std::chrono::duration<double>(gather_deadline_s_));
    if (!sleep_until_ready([&](auto&& pred) { return it->wake.wait_until(lock, due, pred); })) {
      const std::string what = describe_holders(*it);
      if (gather_report_) {  // not under the lock: the report may call into the runtime
        auto report = gather_report_;
        lock.unlock();
        report(what);
        lock.lock();
      }
      if (gather_deadline_fails_ && !closed_) {
        waiters_.erase(it);  // what it had gathered is free again
        dispatch();
        throw gather_timeout(what);
      }
    }
  }
  sleep_until_ready([&](auto&& pred) {
    it->wake.wait(lock, pred);
    return true;
  });
  refuse_if_closed();
}

bool Scheduler::spin_for_grant(const Waiter& w) {
  // Spin for a while before sleeping: a gather takes tens of microseconds, about what waking a
  // sleeping thread costs. Without the lock, which the thread reporting the jobs' membership
  // (the GPU's service thread) needs to hand the capacity over.
  return spin_for(std::chrono::milliseconds(2),
                  [&] { return w.whole.load(std::memory_order_acquire); });
}

std::string Scheduler::describe_reserved_blockers(std::uint32_t units) const {
  std::uint64_t reserved_units = 0;
  std::string names;
  int i = 0;
  for (const auto& e : jobs_) {
    const int index = i++;
    if (!e.reserved || e.suspended || e.cancelled || suspends_for(e, units)) continue;
    reserved_units += occupied(e);
    names += std::string(names.empty() ? "" : "; ") + "job " + std::to_string(index) +
             " (N = " + std::to_string(e.n) + ", " +
             (e.policy.kind == Policy::Kind::adversarial ? "policy " + e.policy.name()
                                                         : std::string("Mode::persistent")) +
             ")";
  }
  if (names.empty() || std::uint64_t(units) + reserved_units <= capacity_) return {};
  return "a task asking for " + std::to_string(units) +
         " units of capacity waits until reserved jobs end: " + names +
         ". A reserved job (adversarial policy or Mode::persistent) holds all N workgroups until "
         "it ends and gives none to tasks; use the generous, fixed or cap policy for a job that "
         "tasks run beside";
}

std::string Scheduler::describe_holders(const Waiter& w) const {
  char waited[32];
  std::snprintf(waited, sizeof waited, "%g", gather_deadline_s_);
  std::string s = std::string("a task waited ") + waited + " s for " + std::to_string(w.need) +
                  " units of capacity and has " + std::to_string(w.got) + ";";
  if (const std::uint32_t held = granted_units())
    s += " running tasks hold " + std::to_string(held) + " units;";
  int i = 0;
  for (const auto& e : jobs_) {
    s += " job " + std::to_string(i++) + " holds " + std::to_string(occupied(e)) +
         " units (M = " + std::to_string(e.job->reported_active()) +
         " of N = " + std::to_string(e.n) + ", asked to shrink to " + std::to_string(e.target) +
         ")";
    if (e.reserved) s += " and holds all N until it ends (adversarial or persistent)";
    s += ";";
  }
  return s +
         " a cooperative kernel gives workgroups back only at offer_kill and resizing "
         "barriers: one that reaches neither keeps them";
}

void Scheduler::set_gather_deadline(double seconds, bool fail,
                                    std::function<void(const std::string&)> report) {
  std::lock_guard lock(mu_);
  gather_deadline_s_ = seconds;
  gather_deadline_fails_ = fail;
  gather_report_ = std::move(report);
}

void Scheduler::report(const std::string& what) const {
  std::function<void(const std::string&)> fn;
  {
    std::lock_guard lock(mu_);
    fn = gather_report_;
  }
  if (fn) fn(what);
}

std::uint32_t Scheduler::admit(JobControl* job, const LaunchConfig& cfg, std::uint32_t n,
                               std::uint32_t cost, std::uint32_t full_units) {
  bool reserved = cfg.mode == Mode::persistent || cfg.policy.kind == Policy::Kind::adversarial;
  std::uint32_t need = reserved ? n : 1;
  JobEntry e{job, cfg.policy, cfg.priority, n, cost, 0, reserved, false, cfg.policy.cap};
  e.reserved_at_admit = reserved;
  e.full = std::max<std::uint32_t>(full_units, n * cost);
  if (units_for(e, need) > capacity_)
    throw std::invalid_argument("job needs " + std::to_string(need) +
                                " co-resident workgroups but the device holds only " +
                                std::to_string(capacity_ / cost));
  std::unique_lock lock(mu_);
  Call call(*this, "launch a job");
  // A job may start with fewer than N workgroups, but not before one is free (paper §3.1):
  // its first workgroups are gathered like a task's, from jobs that can shrink.
  std::uint32_t m0 = std::min(n, gather(units_for(e, need), cfg.priority, lock) / cost);
  if (!reserved) m0 += spare_groups(e, m0, limit_of(e) - m0);
  e.target = reserved ? n : m0;
  jobs_.push_back(e);
  job->set_target(e.target, false);
  dispatch();
  return m0;
}

void Scheduler::membership_changed(JobControl* job) {
  std::lock_guard lock(mu_);
  if (find(job)) dispatch();
}

void Scheduler::job_finished(JobControl* job) {
  std::lock_guard lock(mu_);
  jobs_.remove_if([&](const JobEntry& e) { return e.job == job; });
  std::erase_if(restarts_, [&](JobControl* r) { return r == job; });
  dispatch();
}

void Scheduler::job_suspended(JobControl* job, bool by_scheduler) {
  std::lock_guard lock(mu_);
  JobEntry* e = find(job);
  if (!e) return;
  e->suspended = true;
  if (by_scheduler) {
    e->preempting = false;
    e->preempted = true;  // restarted by dispatch() once no task waits for capacity
  } else {
    e->reserved = false;
  }
  set_target(*e, 0);
  dispatch();
}

std::uint32_t Scheduler::resume(JobControl* job, std::uint32_t m) {
  std::unique_lock lock(mu_);
  Call call(*this, "resume a job");
  JobEntry* e = find(job);
  if (!e || !e->suspended) throw std::logic_error("resume() needs a suspended job");
  m = std::clamp<std::uint32_t>(m, 1, limit_of(*e));
  std::uint32_t m0 = gather(e->cost, e->priority, lock) / e->cost;
  e = find(job);
  m0 += spare_groups(*e, m0, m - m0);
  e->suspended = false;
  set_target(*e, m0);
  dispatch();
  return m0;
}

void Scheduler::set_cap(JobControl* job, std::uint32_t cap) {
  std::lock_guard lock(mu_);
  JobEntry* e = find(job);
  if (!e || e->cancelled) return;
  if (e->policy.kind != Policy::Kind::cap)
    throw std::logic_error("set_cap needs a job launched with the cap policy");
  if (cap == 0 || cap > e->n)
    throw std::invalid_argument("cap must be in [1, N=" + std::to_string(e->n) + "], got " +
                                std::to_string(cap));
  e->cap = cap;
  if (e->target > cap) set_target(*e, cap);  // unconsumed grants return, the rest are kills
  dispatch();
}

void Scheduler::dispatch() {
  std::int64_t free = free_locked();
  // Waiting tasks first, highest priority first, FIFO within a priority. Not once the runtime
  // has closed: a request still short then fails, even if capacity comes back meanwhile (the
  // cancelled jobs end).
  while (free > 0 && !closed_) {
    Waiter* best = next_waiter(waiters_);
    if (!best) break;
    std::uint32_t give = std::uint32_t(std::min<std::int64_t>(free, best->need - best->got));
    best->got += give;
    free -= give;
    if (best->got == best->need) {
      best->whole.store(true, std::memory_order_release);
      best->wake.notify_one();
    }
  }
  // Of the waiters still short, only the one served next has anything to do (spin for its
  // grant, reclaim what jobs gave back meanwhile): waking every one on every dispatch, which
  // each membership report makes, kept a queue of submitted requests' threads taking the lock
  // in turn (on an H200 at 60 % load, submit() calls waited up to 4 ms for it, and the queue
  // ran away).
  if (Waiter* next = next_waiter(waiters_)) next->wake.notify_one();
  cv_.notify_all();
  if (short_waiter()) return;
  // No task waits: preemptions not acted on yet are withdrawn (a job without resizing barriers
  // never suspends; it gave capacity by kills instead and may grow again). Not a restartable
  // job's while tasks run: its workgroup 0 leaves at its next offer, and its slot is theirs.
  const bool tasks_run = granted_units() != 0;
  for (auto& e : jobs_)
    if (e.preempting && !e.cancelled && !(tasks_run && e.job->restartable())) {
      e.preempting = false;
      e.job->unpreempt();
    }
  if (free > 0) grow_jobs(free);
  // No task runs either: workgroups paused for one go on, those of jobs grown just now by their
  // new target, the others (at their limit, or nothing free) here.
  if (granted_units() == 0)
    for (auto& e : jobs_)
      if (e.paused && !e.cancelled) set_target(e, e.target);
}

void Scheduler::grow_jobs(std::int64_t free) {
  // Jobs the scheduler preempted come back once no task holds capacity (restarted on what a
  // running task leaves, a job would have to grow back by forks, slower than restarting whole),
  // highest priority first: a whole-only job (interruptible kernel) when all of its workgroups
  // fit, a suspended cooperative job with what is free.
  const bool tasks_run = granted_units() != 0;
  std::vector<JobEntry*> back;
  for (auto& e : jobs_)
    if (e.preempted && !e.cancelled && (!tasks_run || closed_)) back.push_back(&e);
  std::stable_sort(back.begin(), back.end(),
                   [](auto* a, auto* b) { return a->priority > b->priority; });
  for (JobEntry* e : back) {
    const bool whole = e->job->preemption() == JobControl::Preemption::whole;
    std::uint32_t m = whole ? (free >= std::int64_t(e->full) ? e->n : 0)
                            : std::uint32_t(std::min<std::int64_t>(free / e->cost, limit_of(*e)));
    if (m == 0) continue;
    e->preempted = e->suspended = false;
    e->reserved = e->reserved_at_admit;
    set_target(*e, m);
    free -= std::int64_t(occupied(*e));
    restarts_.push_back(e->job);
    restart_cv_.notify_one();
  }
  // Then grow jobs that run below their limit, highest priority first. A job that still owes
  // kills (M above target) is not grown: its capacity is not free yet. Nor while a task runs:
  // the task's blocks are not the job's shape, so capacity free by the count may not fit a
  // job's block, and a forked block that cannot become resident stalls the job's next barrier
  // and with it every block of the job. (On an H200, coop bench units with the plain barrier
  // hung with 593 of M = 594 workgroups at a barrier, the 594th forked during a task; the same
  // units finish with this rule.)
  if (free <= 0 || tasks_run) return;
  for (JobEntry* e : growable_jobs()) {
    const std::uint32_t give = growth(*e, free);
    if (give == 0) continue;
    set_target(*e, e->target + give);
    free -= std::int64_t(give) * e->cost;
  }
}

std::vector<Scheduler::JobEntry*> Scheduler::growable_jobs() {
  std::vector<JobEntry*> order;
  for (auto& e : jobs_)
    if (!e.reserved && !e.suspended && !e.preempting && !e.cancelled &&
        e.policy.kind != Policy::Kind::fixed && e.job->reported_active() <= e.target)
      order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->priority > b->priority; });
  return order;
}

std::uint32_t Scheduler::growth(const JobEntry& e, std::int64_t free) const {
  const std::uint32_t limit = limit_of(e);
  if (e.target >= limit || free <= 0) return 0;
  return std::uint32_t(std::min<std::int64_t>(free / e.cost, limit - e.target));
}

void Scheduler::grow_after(const TaskTicket& t, CUstream_st* stream) {
  std::lock_guard lock(mu_);
  if (closed_ || stream == nullptr) return;
  // Only the last task standing: with another request waiting or running, the capacity the task
  // returns is decided at its end, as always. Preempted jobs are restarted by the host then.
  for (const auto& w : waiters_)
    if (&w != &*t.waiter) return;
  // Nor a job whose restart is queued: its restart writes the target it has then, which would
  // be this growth before the task's work has run.
  if (!restarts_.empty()) return;
  for (const auto& e : jobs_)
    if (e.preempted || e.preempting) return;
  // What dispatch() would hand out once this task's units are free: the free capacity counts
  // the task's units twice until its end (the job's new target and the task's grant), so that
  // nothing else is granted them meanwhile.
  std::int64_t free = free_locked() + t.waiter->got;
  for (JobEntry* e : growable_jobs()) {
    const std::uint32_t give = growth(*e, free);
    if (give == 0 && !e->paused) continue;
    const std::uint32_t before = e->target;
    const bool paused = e->paused;
    if (!e->job->set_target_after(before + give, stream)) continue;
    e->target = before + give;
    e->paused = false;
    e->grown_after = true;
    e->target_before = before;
    e->paused_before = paused;
    free -= std::int64_t(give) * e->cost;
  }
}

void Scheduler::withdraw_growth() {
  for (auto& e : jobs_)
    if (e.grown_after && !e.cancelled) set_target(e, e.target_before, e.paused_before);
}

void Scheduler::growth_landed() {
  for (auto& e : jobs_) e.grown_after = false;
}

void Scheduler::reclaim() {
  // What the waiters still miss, less the capacity already on its way back (kills requested,
  // not yet reported; jobs suspending, all but a paused workgroup 0). Counted again after every
  // dispatch(): a waiter reclaiming on its own thread can find a job's report already read (its
  // M down) but not yet handed out, which the dispatch below hands out. Counted before it, the
  // shortfall stayed and was asked of the job again: a request for half of an H200 took the job
  // down to workgroup 0, and the join grid that regrew it put low ids on the SMs the next
  // half-device task needed (coop bench, bfs with its workgroups numbered by SM).
  std::uint32_t largest = 0;  // the largest request decides between kills and suspension
  auto shortfall = [&] {
    std::int64_t missing = 0;
    largest = 0;
    for (auto& w : waiters_) {
      missing += w.need - w.got;
      if (w.got < w.need) largest = std::max(largest, w.need);
    }
    for (auto& e : jobs_) {
      std::uint32_t m = e.job->reported_active();
      if (e.preempting)
        missing -= occupied(e) - (e.paused ? e.cost : 0);
      else if (!e.reserved && m > e.target)
        missing -= std::int64_t(units_for(e, m)) - units_for(e, e.target);
    }
    return missing;
  };
  dispatch();
  std::int64_t missing = shortfall();
  if (missing <= 0) return;
  // Unconsumed grants come back at once, down to workgroup 0: a job restarted after a suspension
  // reports M 0 until its kernel runs, and a target of 0 would leave it on workgroup 0 for good
  // (never grown again: M above target reads as kills still owed).
  for (auto& e : jobs_) {
    if (e.reserved || e.preempting || e.cancelled || missing <= 0) continue;
    const std::uint32_t m = std::max(e.job->reported_active(), 1u);
    if (e.target > m) {
      missing -= std::int64_t(e.target - m) * e.cost;
      set_target(e, m);
    }
  }
  dispatch();
  missing = shortfall();
  if (missing <= 0) return;
  // Then kills or whole-job preemption (by the preemption policy), lowest-priority jobs first;
  // a job that gives capacity by kills keeps its workgroup 0. Jobs asked down to workgroup 0
  // get their target once it is known whether that workgroup pauses (below).
  std::vector<JobEntry*> order;
  for (auto& e : jobs_)
    if (!e.suspended && !e.preempting && !e.cancelled) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->priority < b->priority; });
  std::vector<JobEntry*> to_zero;
  const std::int64_t kept = preemption_.pause_kept ? 1 : 0;  // a paused workgroup 0 stays
  for (JobEntry* e : order) {
    if (missing <= 0) break;
    if (suspends_for(*e, largest)) {
      // A cooperative job suspends at its next resizing barrier; one without resizing barriers
      // (work stealing) never does, so it is also asked to shrink to workgroup 0 by kills.
      e->preempting = true;
      e->job->preempt();
      if (e->job->preemption() == JobControl::Preemption::suspend) {
        to_zero.push_back(e);
        missing -= occupied(*e) - kept * e->cost;
      } else {
        missing -= occupied(*e);
      }
      continue;
    }
    if (e->reserved || e->policy.kind == Policy::Kind::fixed) continue;
    std::uint32_t can = e->target > 1 ? e->target - 1 : 0;
    std::uint32_t ask =
        std::uint32_t(std::min<std::int64_t>(can, (missing + e->cost - 1) / e->cost));
    if (ask == 0) continue;
    // What leaving N frees includes the room the job kept on every SM (units_for).
    missing -= std::int64_t(units_for(*e, e->target)) - units_for(*e, e->target - ask);
    if (e->target - ask == 1)
      to_zero.push_back(e);
    else
      set_target(*e, e->target - ask);
  }
  // Workgroup 0 of a job taken down to it pauses while the tasks run (a workgroup that keeps
  // computing starves the task's blocks on its SM: docs/cuda-backend.md, "Pausing workgroup
  // 0"), but only while the requests can be served without the jobs: by the kills asked and
  // by the tasks that hold or were granted capacity, which end on their own. A request that
  // also waits for a job to end or to suspend would wait for ever on a paused workgroup 0.
  const std::int64_t returning = granted_units();
  const bool pause = preemption_.pause_kept && missing <= returning;
  for (JobEntry* e : to_zero) set_target(*e, 1, pause);
  if (!pause)
    for (auto& e : jobs_)
      if (e.paused && !e.cancelled) set_target(e, e.target);
}

Scheduler::TaskTicket Scheduler::request_task(std::uint32_t units, std::uint32_t groups,
                                              int priority, ReleaseGate* gate) {
  if (units == 0) throw std::invalid_argument("a task needs at least one workgroup");
  if (units > capacity_)
    throw std::invalid_argument("task asks for " + std::to_string(groups) +
                                " workgroups but the device holds only " +
                                std::to_string(capacity_ / std::max(1u, units / groups)));
  std::lock_guard lock(mu_);
  if (closed_) throw runtime_closed("cannot run a task: the runtime has shut down");
  ++calls_;  // until run_requested returns
  TaskTicket t;
  t.units = units;
  t.record.groups = groups;
  t.record.priority = priority;
  t.record.request_ms = now_ms();
  // The jobs release the task from the device only if what they give is all the task's: with
  // another task waiting or running (its waiter stays until its work ends), that task is served
  // first, and a gate the jobs opened would start this task's kernels beside it (on an H200 a
  // request queued behind another whole-device request ran beside it, its kernels' span p99
  // 0.72 ms against 0.49). The host opens the gate at the grant then.
  arming_ = waiters_.empty() ? gate : nullptr;  // ReleaseGate::arm does not throw
  t.waiter = enqueue(units, priority);
  arming_ = nullptr;
  return t;
}

bool Scheduler::granted(const TaskTicket& t) const {
  std::lock_guard lock(mu_);
  return t.waiter->got == t.waiter->need;
}

TaskRecord Scheduler::run_requested(TaskTicket& t, const std::function<void()>& work) {
  std::unique_lock lock(mu_, std::defer_lock);
  struct EndCall {  // destroyed first, with the lock held: every way out takes it
    Scheduler& s;
    ~EndCall() {
      if (--s.calls_ == 0) s.cv_.notify_all();
    }
  } end_call{*this};
  TaskRecord rec = t.record;
  // The grant is awaited without the lock (await spins without it, if this task is served
  // next), and the work starts as soon as it is seen: the capacity stays the waiter's until the
  // work ends, so nothing needs the lock before it.
  if (!t.waiter->whole.load(std::memory_order_acquire)) {
    lock.lock();
    const bool next = served_next_of(waiters_, *t.waiter);
    lock.unlock();
    if (!next || !spin_for_grant(*t.waiter)) {
      lock.lock();
      await(t.waiter, lock, /*deadline=*/true, /*spin=*/!next);
      lock.unlock();
    }
  }
  rec.gathered_ms = rec.start_ms = now_ms();
  try {
    work();
  } catch (...) {
    lock.lock();
    growth_landed();
    waiters_.erase(t.waiter);  // the capacity comes back
    dispatch();
    throw;
  }
  rec.end_ms = now_ms();
  lock.lock();
  growth_landed();  // the work has run, and with it what grow_after put behind it
  waiters_.erase(t.waiter);
  records_.push_back(rec);
  dispatch();
  return rec;
}

void Scheduler::drop_requested(TaskTicket& t) {
  std::lock_guard lock(mu_);
  waiters_.erase(t.waiter);  // what it had gathered is free again
  dispatch();
  if (--calls_ == 0) cv_.notify_all();
}

Scheduler::Call::Call(Scheduler& sched, const char* what) : s(sched) {
  // Constructed and destroyed with s.mu_ held.
  if (s.closed_)
    throw runtime_closed(std::string("cannot ") + what + ": the runtime has shut down");
  ++s.calls_;
}

Scheduler::Call::~Call() {
  if (--s.calls_ == 0) s.cv_.notify_all();
}

void Scheduler::cancel_locked(std::list<JobEntry>::iterator it) {
  JobControl* job = it->job;
  if (it->suspended) {
    // Not on the device and, once dropped here, never restarted.
    std::erase_if(restarts_, [&](JobControl* r) { return r == job; });
    jobs_.erase(it);
    job->cancel(false);
    dispatch();
    return;
  }
  it->cancelled = true;
  it->preempting = false;
  job->cancel(true);
}

bool Scheduler::cancel(JobControl* job) {
  std::lock_guard lock(mu_);
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
    if (it->job == job) {
      if (!it->cancelled) cancel_locked(it);
      return true;
    }
  return false;
}

bool Scheduler::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void Scheduler::shutdown(bool cancel_jobs) {
  std::unique_lock lock(mu_);
  closed_ = true;
  for (auto& w : waiters_) w.wake.notify_one();  // waiting requests fail
  cv_.notify_all();
  // A job the user suspended could only go on by resume(), which is closed now: it is
  // cancelled, now or when it suspends later (a suspend() racing the shutdown).
  auto cancel_some = [&](bool all) {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      auto next = std::next(it);
      if (!it->cancelled && (all || (it->suspended && !it->preempted))) cancel_locked(it);
      it = next;
    }
  };
  cancel_some(cancel_jobs);
  dispatch();  // preempted jobs restart to finish (closed: tasks no longer hold them back)
  cv_.wait(lock, [&] {
    cancel_some(false);
    return calls_ == 0 && jobs_.empty();
  });
}

std::string Scheduler::describe() const {
  std::lock_guard lock(mu_);
  std::string s = "scheduler: capacity " + std::to_string(capacity_) + " units, free " +
                  std::to_string(free_locked()) + ", running tasks hold " +
                  std::to_string(granted_units()) + (closed_ ? ", closed" : "") + "\n";
  for (const auto& w : waiters_)
    if (w.got < w.need)
      s += "  request (priority " + std::to_string(w.priority) + ") has " + std::to_string(w.got) +
           " of " + std::to_string(w.need) + " units\n";
  int i = 0;
  for (const auto& e : jobs_) {
    s += "  job " + std::to_string(i++) + ": N " + std::to_string(e.n) + ", target " +
         std::to_string(e.target) + ", reported M " + std::to_string(e.job->reported_active()) +
         ", " + std::to_string(e.cost) + " units per workgroup";
    if (e.reserved) s += ", reserved";
    if (e.suspended) s += e.preempted ? ", preempted" : ", suspended";
    if (e.preempting) s += ", preempting";
    if (e.cancelled) s += ", cancelled";
    const std::string more = e.job->describe();
    if (!more.empty()) s += "\n    " + more;
    s += "\n";
  }
  return s;
}

std::vector<TaskRecord> Scheduler::task_records() const {
  std::lock_guard lock(mu_);
  return records_;
}

}  // namespace coop::detail
