#include "coop/scheduler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace coop::detail {

Scheduler::Scheduler(std::uint32_t capacity)
    : capacity_(capacity), epoch_(clock::now()), free_(capacity) {
  if (capacity == 0) throw std::invalid_argument("scheduler capacity must be at least 1");
}

double Scheduler::now_ms() const {
  return std::chrono::duration<double, std::milli>(clock::now() - epoch_).count();
}

std::uint32_t Scheduler::free_slots() const {
  std::lock_guard lock(mu_);
  return free_;
}

Scheduler::JobEntry* Scheduler::find(JobControl* job) {
  for (auto& e : jobs_)
    if (e.job == job) return &e;
  return nullptr;
}

std::uint32_t Scheduler::target_of(const JobEntry& e) const {
  if (e.policy.kind == Policy::Kind::cap) return std::min(e.cap, e.n);
  return e.n;
}

std::uint32_t Scheduler::admit(JobControl* job, const LaunchConfig& cfg, std::uint32_t n) {
  bool reserved = cfg.mode == Mode::persistent || cfg.policy.kind == Policy::Kind::adversarial;
  std::uint32_t need = reserved ? n : 1;
  if (need > capacity_)
    throw std::invalid_argument("job needs " + std::to_string(need) +
                                " co-resident workgroups but the device holds only " +
                                std::to_string(capacity_));
  JobEntry e{job, cfg.policy, cfg.priority, n, 0, 0, reserved, cfg.policy.cap};
  std::unique_lock lock(mu_);
  // A job may start with fewer than N workgroups, but not before one is free (paper §3.1):
  // its first slots are gathered like a task's, from jobs that can shrink.
  auto it = waiters_.insert(waiters_.end(), Waiter{need, 0, cfg.priority, seq_++});
  dispatch();
  reclaim();
  cv_.wait(lock, [&] {
    if (it->got < it->need) reclaim();
    return it->got == it->need;
  });
  std::uint32_t m0 = it->got;
  waiters_.erase(it);
  std::uint32_t extra = std::min(free_, target_of(e) - m0);
  m0 += reserved ? 0 : extra;
  free_ -= reserved ? 0 : extra;
  e.held = m0;
  jobs_.push_back(e);
  dispatch();
  return m0;
}

void Scheduler::group_exited(JobControl* job) {
  std::lock_guard lock(mu_);
  JobEntry* e = find(job);
  if (!e || e->reserved) return;
  if (e->held > 0) --e->held;
  if (e->pending_kills > 0) --e->pending_kills;
  ++free_;
  dispatch();
}

void Scheduler::job_finished(JobControl* job) {
  std::lock_guard lock(mu_);
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if (it->job != job) continue;
    // Whatever is still held (unconsumed grants, a reservation) returns to the pool.
    free_ += it->held;
    jobs_.erase(it);
    break;
  }
  dispatch();
}

void Scheduler::set_cap(JobControl* job, std::uint32_t cap) {
  std::lock_guard lock(mu_);
  JobEntry* e = find(job);
  if (!e) return;
  if (e->policy.kind != Policy::Kind::cap)
    throw std::logic_error("set_cap needs a job launched with the cap policy");
  if (cap == 0 || cap > e->n)
    throw std::invalid_argument("cap must be in [1, N=" + std::to_string(e->n) + "], got " +
                                std::to_string(cap));
  e->cap = cap;
  std::uint32_t revoked = e->job->revoke_grant();
  e->held -= revoked;
  free_ += revoked;
  Membership m = e->job->membership();
  std::uint32_t expected = m.active - std::min(m.active, e->pending_kills);
  if (expected > cap) {
    e->job->request_kills(expected - cap);
    e->pending_kills += expected - cap;
  }
  dispatch();
}

void Scheduler::dispatch() {
  // Waiting tasks first, highest priority first, FIFO within a priority.
  while (free_ > 0) {
    Waiter* best = nullptr;
    for (auto& w : waiters_)
      if (w.got < w.need && (!best || w.priority > best->priority ||
                             (w.priority == best->priority && w.seq < best->seq)))
        best = &w;
    if (!best) break;
    std::uint32_t give = std::min(free_, best->need - best->got);
    best->got += give;
    free_ -= give;
  }
  cv_.notify_all();
  if (free_ == 0 || !waiters_.empty()) return;
  // Then grow jobs that run below their target, highest priority first.
  std::vector<JobEntry*> order;
  for (auto& e : jobs_)
    if (!e.reserved && e.policy.kind != Policy::Kind::fixed && e.pending_kills == 0)
      order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->priority > b->priority; });
  for (JobEntry* e : order) {
    std::uint32_t target = target_of(*e);
    if (e->held >= target || free_ == 0) continue;
    std::uint32_t give = std::min(free_, target - e->held);
    e->job->grant(give);
    e->held += give;
    free_ -= give;
  }
}

void Scheduler::reclaim() {
  std::uint32_t missing = 0;
  for (auto& w : waiters_) missing += w.need - w.got;
  std::uint32_t pending = 0;
  for (auto& e : jobs_) pending += e.pending_kills;
  if (missing <= pending) return;
  missing -= pending;
  // Unconsumed grants come back at once.
  for (auto& e : jobs_) {
    if (e.reserved || missing == 0) continue;
    std::uint32_t revoked = e.job->revoke_grant();
    e.held -= revoked;
    free_ += revoked;
    missing -= std::min(missing, revoked);
  }
  dispatch();
  if (missing == 0) return;
  // Then kills, lowest-priority jobs first; workgroup 0 of each job stays.
  std::vector<JobEntry*> order;
  for (auto& e : jobs_)
    if (!e.reserved && e.policy.kind != Policy::Kind::fixed) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->priority < b->priority; });
  for (JobEntry* e : order) {
    if (missing == 0) break;
    Membership m = e->job->membership();
    std::uint32_t running = m.active > e->pending_kills ? m.active - e->pending_kills : 0;
    std::uint32_t can = running > 1 ? running - 1 : 0;
    std::uint32_t ask = std::min(can, missing);
    if (ask == 0) continue;
    e->job->request_kills(ask);
    e->pending_kills += ask;
    missing -= ask;
  }
}

TaskRecord Scheduler::run_task(std::uint32_t groups, int priority,
                               const std::function<void()>& work) {
  if (groups == 0) throw std::invalid_argument("a task needs at least one workgroup");
  if (groups > capacity_)
    throw std::invalid_argument("task asks for " + std::to_string(groups) +
                                " workgroups but the device holds only " +
                                std::to_string(capacity_));
  TaskRecord rec;
  rec.groups = groups;
  rec.priority = priority;
  std::unique_lock lock(mu_);
  rec.request_ms = now_ms();
  auto it = waiters_.insert(waiters_.end(), Waiter{groups, 0, priority, seq_++});
  dispatch();
  reclaim();
  cv_.wait(lock, [&] {
    if (it->got < it->need) reclaim();  // jobs may have shrunk or finished meanwhile
    return it->got == it->need;
  });
  rec.gathered_ms = now_ms();
  waiters_.erase(it);
  lock.unlock();
  rec.start_ms = now_ms();
  try {
    work();
  } catch (...) {
    lock.lock();
    free_ += groups;
    dispatch();
    throw;
  }
  rec.end_ms = now_ms();
  lock.lock();
  free_ += groups;
  records_.push_back(rec);
  dispatch();
  return rec;
}

std::vector<TaskRecord> Scheduler::task_records() const {
  std::lock_guard lock(mu_);
  return records_;
}

}  // namespace coop::detail
