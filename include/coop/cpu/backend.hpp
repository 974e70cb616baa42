// CPU backend, template side: the kernel context (one per emulated GPU thread), the Env through
// which thread 0 of a workgroup runs the shared protocol, and the job that starts workgroups.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "coop/cpu/job.hpp"
#include "coop/detail/launch_checks.hpp"
#include "coop/detail/protocol.hpp"
#include "coop/kernel.hpp"

namespace coop::cpu {

template <class K>
class Job;

/// A workgroup of kernel K.
template <class K>
struct Workgroup : WorkgroupBase {
  Workgroup(Job<K>* j, std::uint32_t group, int resume, const transmit_t<K>& t)
      : WorkgroupBase(j, group, j->threads(), resume), kjob(j), transmit_init(t) {}
  Job<K>* kjob;
  transmit_t<K> transmit_init;
  transmit_t<K>* transmit0 = nullptr;  ///< thread 0's transmitted variables
  shared_t<K> shared{};
};

/// The protocol's view of the CPU backend for one workgroup (used by its thread 0).
template <class K>
class Env {
 public:
  explicit Env(Workgroup<K>& wg) : wg_(wg) {}
  COOP_HD void begin_wait() { COOP_HOST_BODY(spins_ = 0; started_ = false;) }
  COOP_HD void relax(detail::WaitKind kind, int) {
    COOP_HOST_BODY(
        ++spins_; if (spins_ < 32) return;
        if ((spins_ & 255) == 0 && wg_.job->aborted()) throw Aborted{};
        if (spins_ < 2048) { std::this_thread::yield(); } else {
          // Long waits sleep so that 2 cores never livelock among dozens of spinning workgroups.
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        // A pause lasts as long as the task it makes room for: not a stall.
        if (kind != detail::WaitKind::paused && (spins_ & 1023) == 0) {
          auto now = std::chrono::steady_clock::now();
          if (!started_) {
            since_ = now;
            started_ = true;
          }
          wg_.job->check_watchdog(wg_.id, std::chrono::duration<double>(now - since_).count());
        })
  }
  COOP_HD void spawn(std::uint32_t id, std::uint32_t count, int site) {
    COOP_HOST_BODY(for (std::uint32_t i = 0; i < count; ++i)
                       wg_.kjob->start_group(id + i, site, *wg_.transmit0);)
  }
  COOP_HD void suspend(int site) {
    COOP_HOST_BODY(wg_.kjob->save_for_resume(site, *wg_.transmit0);)
  }
  COOP_HD std::uint64_t random() {
    COOP_HOST_BODY(if (!seeded_) {
      state_ =
          detail::mix64(wg_.job->channel().seed ^ detail::mix64(std::uint64_t(wg_.id) << 32 ^
                                                                wg_.job->next_incarnation(wg_.id)));
      seeded_ = true;
    } return detail::mix64(state_++);)
  }
  COOP_HD void on_membership(std::uint32_t, std::uint32_t after) {
    COOP_HOST_BODY(wg_.job->record_membership(after);)
  }
  COOP_HD void barrier_unreachable(int site, std::uint32_t arrived, std::uint32_t active,
                                   std::uint32_t finished) {
    COOP_HOST_BODY(
        wg_.fail("global barrier at line " + std::to_string(site) +
                 " can never complete: " + std::to_string(arrived) + " of " +
                 std::to_string(active) + " workgroups arrived and " + std::to_string(finished) +
                 " returned from the kernel without reaching it (kernel-level barriers must be "
                 "reached by every workgroup)");)
  }
  COOP_HD void invariant_failed(const char* what) {
    COOP_HOST_BODY(wg_.fail(std::string("cooperative-kernel invariant violated: ") + what);)
  }
  COOP_HD void abort() { COOP_HOST_BODY(throw Aborted{};) }

 private:
  Workgroup<K>& wg_;
  std::uint64_t spins_ = 0;
  bool started_ = false;
  std::chrono::steady_clock::time_point since_;
  bool seeded_ = false;
  std::uint64_t state_ = 0;
};

/// The kernel context of one emulated GPU thread (see include/coop/kernel.hpp).
template <class K>
class Ctx {
 public:
  Ctx(Workgroup<K>& wg, unsigned lid, Env<K>* env) : wg_(wg), lid_(lid), env_(env) {}

  COOP_HD std::uint32_t group_id() const { COOP_HOST_BODY(return wg_.id;) }
  COOP_HD std::uint32_t num_groups() const {
    COOP_HOST_BODY(return m_seen_ ? m_seen_ : protocol().active();)
  }
  COOP_HD std::uint32_t max_groups() const { COOP_HOST_BODY(return wg_.job->max_groups();) }
  COOP_HD std::uint32_t local_id() const { COOP_HOST_BODY(return lid_;) }
  COOP_HD std::uint32_t local_size() const { COOP_HOST_BODY(return wg_.threads;) }
  COOP_HD std::uint64_t global_id() const {
    COOP_HOST_BODY(return std::uint64_t(wg_.id) * wg_.threads + lid_;)
  }
  COOP_HD std::uint64_t global_size() const {
    COOP_HOST_BODY(return std::uint64_t(num_groups()) * wg_.threads;)
  }
  COOP_HD int resume_point() const { COOP_HOST_BODY(return wg_.resume_point;) }
  COOP_HD shared_t<K>& shared() { COOP_HOST_BODY(return wg_.shared;) }

  COOP_HD void barrier(int site = __builtin_LINE()) {
    COOP_HOST_BODY(wg_.check_alive(detail::SiteKind::workgroup_barrier, site);
                   wg_.sync(detail::SiteKind::workgroup_barrier, site, lid_);)
  }
  COOP_HD bool offer_kill(int site = __builtin_LINE()) {
    COOP_HOST_BODY(m_seen_ = 0; return collective(detail::SiteKind::offer_kill, site, [&] {
                                         auto p = protocol();
                                         if (p.offer_kill(wg_.id, site)) return 1u;
                                         return p.pause_at_offer(site) ? 1u : 0u;
                                       }) != 0;)
  }
  COOP_HD bool kill_requested(int site = __builtin_LINE()) {
    COOP_HOST_BODY(return collective(detail::SiteKind::query, site, [&] {
                            return protocol().kill_wanted(wg_.id) ? 1u : 0u;
                          }) != 0;)
  }
  COOP_HD Polled poll_barrier(int site = __builtin_LINE()) {
    COOP_HOST_BODY(
        return detail::polled_of(std::uint32_t(collective(detail::SiteKind::query, site, [&] {
                 auto p = protocol();
                 return detail::polled_bits(p.kill_wanted(wg_.id), p.fork_wanted());
               })));)
  }
  COOP_HD std::uint32_t request_fork(int site = __builtin_LINE()) {
    COOP_HOST_BODY(m_seen_ = 0;
                   return std::uint32_t(collective(detail::SiteKind::request_fork, site, [&] {
                     return protocol().request_fork(wg_.id, site);
                   }));)
  }
  COOP_HD void global_barrier(int site = __builtin_LINE()) {
    COOP_HOST_BODY(seen(collective(detail::SiteKind::global_barrier, site, [&] {
                     return detail::barrier_result(protocol().barrier(wg_.id, false, site));
                   }));)
  }
  COOP_HD bool resizing_barrier(int site = __builtin_LINE()) {
    COOP_HOST_BODY(return seen(collective(detail::SiteKind::resizing_barrier, site, [&] {
                            return detail::barrier_result(protocol().barrier(wg_.id, true, site));
                          }));)
  }
  COOP_HD std::uint32_t query(int site = __builtin_LINE()) {
    COOP_HOST_BODY(return std::uint32_t(collective(detail::SiteKind::query, site,
                                                   [&] { return protocol().query(); }));)
  }
  /// Workgroup-level: every thread gets thread 0's `value` (at most 8 bytes).
  template <class T>
  COOP_HD T broadcast(const T& value, int site = __builtin_LINE()) {
    COOP_HOST_BODY(
        static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>);
        std::uint64_t bits = 0; if (lid_ == 0) std::memcpy(&bits, &value, sizeof(T));
        std::uint64_t r =
            collective(detail::SiteKind::workgroup_barrier, site, [&] { return bits; });
        T out; std::memcpy(&out, &r, sizeof(T)); return out;)
  }
  /// One step of a spin-wait in kernel code: lets other threads and workgroups run.
  COOP_HD void pause() { COOP_HOST_BODY(wg_.pause();) }
  /// Misuse that a library primitive (coop::for_each) found in kernel code, by one thread: in
  /// checking mode the job fails with coop::misuse_error naming the workgroup, thread and line
  /// (this thread unwinds; the others do at their next wait). Otherwise nothing happens and the
  /// primitive takes its safe way out, as on the GPU.
  COOP_HD void report_misuse(int site, const char* what) {
    COOP_HOST_BODY(if (!wg_.job->options().checking) return;
                   wg_.fail("workgroup " + std::to_string(wg_.id) + ", thread " +
                            std::to_string(lid_) + ", line " + std::to_string(site) + ": " + what);)
  }

  COOP_HD void unknown_resume_point() {
    COOP_HOST_BODY(
        wg_.fail("workgroup " + std::to_string(wg_.id) + " was started at resume point line " +
                 std::to_string(wg_.resume_point) +
                 ", which the kernel's COOP_BEGIN switch does not contain (is the resume point "
                 "inside a nested switch statement?)");)
  }

 private:
  COOP_HD detail::Protocol<Env<K>> protocol() const {
    COOP_HOST_BODY(return detail::Protocol<Env<K>>(wg_.job->channel(), *env_);)
  }
  // A workgroup-level primitive: every thread arrives, thread 0 runs the protocol, all threads
  // get its answer. Two workgroup barriers: one to check uniformity, one to publish the answer.
  template <class F>
  COOP_HD std::uint64_t collective(detail::SiteKind kind, int site, F&& thread0) {
    COOP_HOST_BODY(wg_.check_alive(kind, site); wg_.sync(kind, site, lid_); if (lid_ == 0) {
      wg_.job->set_wait(wg_.id, kind, site);
      env_->begin_wait();
      wg_.result = thread0();
      wg_.job->clear_wait(wg_.id);
      if ((wg_.result & 1) &&
          (kind == detail::SiteKind::offer_kill || kind == detail::SiteKind::resizing_barrier))
        wg_.killed = true;
    } wg_.sync(kind, site, lid_);
                   std::uint64_t r = wg_.result; return r;)
  }

  // After a barrier: M as it left it (the grid-stride loops after it use the same value).
  COOP_HD bool seen(std::uint64_t result) {
    COOP_HOST_BODY(m_seen_ = std::uint32_t(result >> 1); return (result & 1) != 0;)
  }

  Workgroup<K>& wg_;
  unsigned lid_;
  Env<K>* env_;               // thread 0's; other threads never touch it
  std::uint32_t m_seen_ = 0;  ///< M from the last barrier (0: not known, read it)
};

/// A running cooperative kernel of type K on the CPU backend.
template <class K>
class Job : public JobCore {
 public:
  Job(detail::Scheduler& sched, const LaunchConfig& cfg, std::uint32_t n, const Options& opts,
      const params_t<K>& params)
      : JobCore(sched, cfg, detail::traits_of<K>(), n, opts), params_(params) {}

  void start_group(std::uint32_t id, int resume, const transmit_t<K>& t) {
    start_thread(id, [this, id, resume, t] { run_group(id, resume, t); });
  }
  /// Workgroups [0, m) at `resume` (a run's start or restart).
  void start_groups(std::uint32_t m, int resume, const transmit_t<K>& t) {
    start_threads(m, [this, resume, &t](std::uint32_t id) -> std::function<void()> {
      return [this, id, resume, t] { run_group(id, resume, t); };
    });
  }

  void launch(std::uint32_t m0, const transmit_t<K>& t0) {
    start(m0);
    start_groups(m0, 0, t0);
  }

  /// Workgroup 0 at the resizing barrier that suspends the job.
  void save_for_resume(int site, const transmit_t<K>& t) {
    resume_site_ = site;
    resume_transmit_ = t;
  }

 protected:
  void restart_groups(std::uint32_t m) override { start_groups(m, resume_site_, resume_transmit_); }

 private:
  struct FiberArg {
    Job* job;
    Workgroup<K>* wg;
    Env<K>* env;
  };

  static void fiber_main(void* p, unsigned lid) {
    auto* a = static_cast<FiberArg*>(p);
    Workgroup<K>& wg = *a->wg;
    try {
      transmit_t<K> t = wg.transmit_init;
      if (lid == 0) wg.transmit0 = &t;
      Ctx<K> ctx(wg, lid, a->env);
      K{}(ctx, a->job->params_, t);
      wg.thread_exit(lid);
    } catch (const Aborted&) {
      wg.team.stop();
    } catch (const std::exception& e) {
      a->job->fail("workgroup " + std::to_string(wg.id) + ": " + e.what());
      wg.team.stop();
    }
  }

  void run_group(std::uint32_t id, int resume, transmit_t<K> t) {
    bool finished = false;
    try {
      Workgroup<K> wg(this, id, resume, t);
      Env<K> env(wg);
      FiberArg arg{this, &wg, &env};
      wg.team.run(&Job::fiber_main, &arg);
      finished = !wg.killed && wg.team.finished() == wg.threads;
    } catch (const std::exception& e) {
      fail("workgroup " + std::to_string(id) + " could not start: " + e.what());
    }
    group_exit(id, finished);
  }

  params_t<K> params_;
  int resume_site_ = 0;
  transmit_t<K> resume_transmit_{};
};

/// Launches cooperative kernel K on the CPU backend (used by coop::Runtime::launch): checks the
/// launch, admits the job (blocks until it can start), starts its M0 workgroups.
template <class K>
coop::Job launch(detail::Scheduler& sched, const LaunchConfig& cfg, const Options& opts,
                 const params_t<K>& params, const transmit_t<K>& transmit) {
  const std::uint32_t n = detail::checked_groups(
      cfg, sched.capacity(),
      "the workgroups that can be resident at once (" + std::to_string(sched.capacity()) + ")",
      detail::traits_of<K>());
  auto job = std::make_shared<Job<K>>(sched, cfg, n, opts, params);
  const std::uint32_t m0 = sched.admit(job.get(), cfg, n);
  job->launch(m0, transmit);
  return coop::Job(std::move(job));
}

}  // namespace coop::cpu
