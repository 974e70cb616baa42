#include "coop/cpu/job.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>

namespace coop::detail {
const char* site_name(SiteKind k) {
  switch (k) {
    case SiteKind::workgroup_barrier:
      return "workgroup barrier";
    case SiteKind::offer_kill:
      return "offer_kill";
    case SiteKind::request_fork:
      return "request_fork";
    case SiteKind::global_barrier:
      return "global barrier";
    case SiteKind::resizing_barrier:
      return "resizing barrier";
    case SiteKind::query:
      return "query";
    case SiteKind::checkpoint:
      return "workgroup checkpoint";
    case SiteKind::exit:
      break;
  }
  return "kernel exit";
}
}  // namespace coop::detail

namespace coop::cpu {

using detail::SiteKind;

// ---------------------------------------------------------------- WorkgroupBase

WorkgroupBase::WorkgroupBase(JobCore* job_, std::uint32_t id_, std::uint32_t threads_,
                             int resume_point_)
    : job(job_),
      id(id_),
      threads(threads_),
      resume_point(resume_point_),
      team(threads_, FiberTeam::default_stack_bytes()),
      sites_(threads_),
      exited_mask_(threads_, 0) {}

void WorkgroupBase::fail(const std::string& what) {
  if (job)
    job->fail(what);
  else if (failure.empty())
    failure = what;
  throw Aborted{};
}

std::string WorkgroupBase::describe_sites() const {
  std::ostringstream os;
  for (unsigned i = 0; i < threads; ++i) {
    if (i) os << ", ";
    if (exited_mask_[i])
      os << "thread " << i << ": returned from the kernel";
    else
      os << "thread " << i << ": " << detail::site_name(sites_[i].kind) << " at line "
         << sites_[i].line;
  }
  return os.str();
}

bool WorkgroupBase::sync(SiteKind kind, int site, unsigned lid, bool vote) {
  if (job && job->aborted()) throw Aborted{};
  if (threads == 1) return vote;
  sites_[lid] = {kind, site};
  ++arrived_;
  any_vote_ = any_vote_ || vote;
  const unsigned g = generation_;
  if (arrived_ + exited_ < threads) {
    while (generation_ == g) {
      team.yield();
      if (job && job->aborted()) throw Aborted{};
    }
    // The slot of generation g is rewritten only two barriers later, after this thread read it.
    return votes_[g & 1];
  }
  // Last arrival: every thread must be at the same primitive (workgroup-level functions must be
  // reached uniformly), and none may have left the kernel.
  bool uniform = exited_ == 0;
  if (job == nullptr || job->options().checking || !uniform) {
    for (unsigned i = 0; i < threads && uniform; ++i)
      uniform = sites_[i].kind == kind && sites_[i].line == site;
  }
  if (!uniform)
    fail("workgroup " + std::to_string(id) + ": a workgroup-level primitive was not reached by " +
         "all threads of the workgroup (" + describe_sites() + ")");
  arrived_ = 0;
  votes_[g & 1] = any_vote_;
  any_vote_ = false;
  ++generation_;
  return votes_[g & 1];
}

void WorkgroupBase::check_alive(SiteKind kind, int site) {
  if (killed)
    fail("workgroup " + std::to_string(id) + " reached " + detail::site_name(kind) + " at line " +
         std::to_string(site) +
         " after it was killed: return from the kernel when offer_kill or a resizing barrier "
         "says so (use COOP_OFFER_KILL / COOP_RESIZING_BARRIER)");
}

void WorkgroupBase::thread_exit(unsigned lid) {
  exited_mask_[lid] = 1;
  ++exited_;
  if (arrived_ > 0) {
    sites_[lid] = {SiteKind::exit, 0};
    fail("workgroup " + std::to_string(id) + ": thread " + std::to_string(lid) +
         " returned from the kernel while other threads wait at a workgroup-level primitive (" +
         describe_sites() + ")");
  }
}

void WorkgroupBase::pause() {
  if (job && job->aborted()) throw Aborted{};
  team.yield();
  std::this_thread::yield();
}

// ---------------------------------------------------------------- JobCore

JobCore::JobCore(detail::Scheduler& sched, const LaunchConfig& cfg, const KernelTraits& traits,
                 std::uint32_t n, const Options& opts)
    : JobState(sched, cfg, n),
      opts_(opts),
      channel_(std::make_unique<detail::Channel>()),
      wait_(std::make_unique<WaitState[]>(n)),
      incarnation_(std::make_unique<std::atomic<std::uint64_t>[]>(n)) {
  detail::init_channel(*channel_, cfg, traits, n);
}

JobCore::~JobCore() {
  // The kernel's threads never outlive the job (a handle's release() has joined them already;
  // a job without one, whose launch failed, is joined here).
  std::vector<std::thread> threads;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return live_ == 0; });
    threads.swap(threads_);
  }
  for (auto& t : threads)
    if (t.joinable()) t.join();
}

detail::Membership JobCore::membership() const { return detail::view_membership(*channel_); }

std::uint32_t JobCore::reported_active() const {
  return detail::active_of(detail::atomic<std::uint64_t>(channel_->membership).load());
}

void JobCore::set_target(std::uint32_t target, bool pause_kept) {
  const std::uint32_t t =
      detail::device_target(target, channel_->max_groups, pause_kept, channel_->flags);
  detail::atomic<std::uint32_t> request(channel_->request);
  for (std::uint32_t r = request.load();
       !request.cas(r, detail::request_word(t, detail::suspend_of(r)));) {
  }
}

void JobCore::start(std::uint32_t m0) {
  detail::reset_channel(*channel_, m0);
  record_start(m0);
}

void JobCore::start_thread(std::uint32_t id, std::function<void()> body) {
  std::lock_guard lock(mu_);
  reap_locked();
  ++live_;
  wait_[id].state.store(1);
  threads_.emplace_back(std::move(body));
}

void JobCore::start_threads(std::uint32_t m,
                            const std::function<std::function<void()>(std::uint32_t)>& body) {
  std::lock_guard lock(mu_);
  reap_locked();
  live_ += m;
  for (std::uint32_t id = 0; id < m; ++id) {
    wait_[id].state.store(1);
    threads_.emplace_back(body(id));
  }
}

void JobCore::reap_locked() {
  if (exited_threads_.empty()) return;
  for (auto it = threads_.begin(); it != threads_.end();) {
    auto f = std::find(exited_threads_.begin(), exited_threads_.end(), it->get_id());
    if (f != exited_threads_.end()) {
      it->join();
      exited_threads_.erase(f);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

void JobCore::join_workgroups() {
  std::vector<std::thread> threads;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return live_ == 0; });
    threads.swap(threads_);
    exited_threads_.clear();
  }
  for (auto& t : threads)
    if (t.joinable()) t.join();
}

void JobCore::group_exit(std::uint32_t id, bool finished_normally) {
  wait_[id].state.store(finished_normally ? 2 : 3);
  if (finished_normally) {
    detail::atomic<std::uint32_t>(channel_->finished).fetch_add(1);
  }
  std::unique_lock lock(mu_);
  exited_threads_.push_back(std::this_thread::get_id());
  if (--live_ == 0) {
    const bool suspended = detail::atomic<std::uint32_t>(channel_->suspended).load() != 0;
    end_run(lock, suspended && !aborted(), membership().active);
  }
  cv_.notify_all();
}

void JobCore::request_suspend(bool on) {
  detail::atomic<std::uint32_t> request(channel_->request);
  if (on)
    request.fetch_or(detail::kSuspendBit);
  else
    request.fetch_and(~detail::kSuspendBit);
}

void JobCore::relaunch(std::uint32_t m) {
  {
    std::lock_guard lock(mu_);
    reap_locked();
  }
  start(m);
  restart_groups(m);
}

void JobCore::abort_on_device() {
  // Every workgroup unwinds at its next workgroup barrier or protocol wait.
  aborted_.store(true);
  detail::atomic<std::uint32_t>(channel_->abort).store(1);
  detail::atomic<std::uint32_t>(channel_->request).store(detail::request_word(0, false));
}

void JobCore::take_counters(JobStats& s) const { detail::take_counters(s, *channel_); }

void JobCore::fail(const std::string& what) {
  set_error(what);
  aborted_.store(true);
  detail::atomic<std::uint32_t>(channel_->abort).store(1);
}

void JobCore::set_wait(std::uint32_t id, SiteKind kind, int site) {
  wait_[id].site.store(site, std::memory_order_relaxed);
  wait_[id].kind.store(int(kind), std::memory_order_relaxed);
}
void JobCore::clear_wait(std::uint32_t id) { wait_[id].kind.store(-1, std::memory_order_relaxed); }

std::uint64_t JobCore::next_incarnation(std::uint32_t id) { return incarnation_[id]++; }

std::string JobCore::sites_report() const {
  std::ostringstream os;
  for (std::uint32_t i = 0; i < n_; ++i) {
    int st = wait_[i].state.load();
    if (st == 0) continue;
    os << "\n  workgroup " << i << ": ";
    if (st == 2) {
      os << "finished";
    } else if (st == 3) {
      os << "left (killed)";
    } else {
      int k = wait_[i].kind.load();
      if (k < 0)
        os << "running kernel code (not at a primitive: a spin-wait of its own?)";
      else
        os << "waits at " << detail::site_name(SiteKind(k)) << " (line " << wait_[i].site.load()
           << ")";
    }
  }
  return os.str();
}

std::string JobCore::stall_report() const {
  std::ostringstream os;
  os << "job made no progress for " << opts_.watchdog_s << " s (M=" << membership().active
     << ", N=" << n_ << "); workgroups: " << sites_report();
  return os.str();
}

void JobCore::check_watchdog(std::uint32_t id, double waited_s) {
  (void)id;
  if (opts_.watchdog_s > 0 && waited_s > opts_.watchdog_s) {
    fail(stall_report());
    throw Aborted{};
  }
}

std::string JobCore::describe() const {
  detail::Channel& ch = *channel_;
  const std::uint64_t w = detail::atomic<std::uint64_t>(ch.membership).load();
  return "M " + std::to_string(detail::active_of(w)) + ", arrivals " +
         std::to_string(detail::barrier_arrivals(w)) + ", leaving " +
         std::to_string(detail::leaving_of(w)) + ", target " +
         std::to_string(detail::target_of(detail::atomic<std::uint32_t>(ch.request).load())) +
         (aborted() ? ", aborted" : "") + "; workgroups:" + sites_report();
}

}  // namespace coop::cpu
