// CPU backend of interruptible kernels: each launch runs the grid's blocks on a pool of OS
// threads, a block's threads as fibers (so workgroup barriers work), with the budget read from
// steady_clock. Included by coop/interruptible.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coop/cpu/job.hpp"
#include "coop/interruptible.hpp"

namespace coop::cpu {

/// Nanoseconds on the clock CPU launches budget with.
inline std::uint64_t ik_now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

/// What every thread of one CPU launch shares.
struct IkLaunch {
  std::uint32_t blocks = 0, threads = 0, launch = 0;
  detail::ThreadBudget budget;  ///< the template each thread copies
  std::uint64_t budget_ns = 0;  ///< time mode: each block's budget, from its own start
  std::atomic<std::uint32_t>* stop = nullptr;
  std::atomic<std::uint64_t> finished{0};
  std::mutex mu;  ///< guards the misuse report
  detail::SliceSummary report;
  std::string error;
  void misuse(std::uint32_t bit, std::uint64_t gid, std::int32_t point) {
    std::lock_guard lock(mu);
    if (report.misuse == 0) {
      report.misuse_thread = gid;
      report.misuse_point = point;
    }
    report.misuse |= bit;
  }
  void fail(const std::string& what) {
    std::lock_guard lock(mu);
    if (error.empty()) error = what;
  }
};

/// The context of one emulated thread of an interruptible kernel on the CPU.
template <class K>
class IkCtx {
 public:
  IkCtx(IkLaunch& l, WorkgroupBase& wg, ik_shared_t<K>& shared, unsigned lid, int point,
        std::uint64_t deadline)
      : l_(l), wg_(wg), shared_(shared), lid_(lid), point_(point), budget_(l.budget) {
    budget_.deadline = deadline;
  }

  // COOP_HD with host-only bodies: kernel templates are compiled for both sides by nvcc, and
  // the device pass never runs this context (see COOP_HOST_BODY).
  COOP_HD int resume_point() const { COOP_HOST_BODY(return point_;) }
  COOP_HD std::uint32_t group_id() const { COOP_HOST_BODY(return wg_.id;) }
  COOP_HD std::uint32_t num_groups() const { COOP_HOST_BODY(return l_.blocks;) }
  COOP_HD std::uint32_t local_id() const { COOP_HOST_BODY(return lid_;) }
  COOP_HD std::uint32_t local_size() const { COOP_HOST_BODY(return l_.threads;) }
  COOP_HD std::uint64_t global_id() const {
    COOP_HOST_BODY(return std::uint64_t(wg_.id) * l_.threads + lid_;)
  }
  COOP_HD std::uint64_t global_size() const {
    COOP_HOST_BODY(return std::uint64_t(l_.blocks) * l_.threads;)
  }
  COOP_HD ik_shared_t<K>& shared() { COOP_HOST_BODY(return shared_;) }
  COOP_HD void barrier(int site = __builtin_LINE()) {
    COOP_HOST_BODY(wg_.sync(detail::SiteKind::workgroup_barrier, site, lid_);)
  }
  COOP_HD bool checkpoint(int line) {
    COOP_HOST_BODY(now_ = ik_now_ns(); return budget_.due(now_) && pause_at(line, false);)
  }
  COOP_HD bool workgroup_checkpoint(int line) {
    COOP_HOST_BODY(now_ = ik_now_ns();
                   return wg_.sync(detail::SiteKind::checkpoint, line, lid_, budget_.due(now_)) &&
                          pause_at(line, true);)
  }
  COOP_HD void complete() { COOP_HOST_BODY(complete_ = true;) }
  COOP_HD void unknown_resume_point() {
    COOP_HOST_BODY(l_.misuse(detail::kMisuseUnknownPoint, global_id(), point_);)
  }

  COOP_HD bool paused() const { COOP_HOST_BODY(return paused_;) }
  /// After a due checkpoint: true when the thread stops there (the whole workgroup decides
  /// together at a workgroup checkpoint).
  COOP_HD bool settle() { COOP_HOST_BODY(return decide();) }

  bool interrupted() const { return interrupted_; }
  bool completed() const { return complete_; }
  int point() const { return point_; }

 private:
  bool decide() {
    paused_ = false;
    bool stop =
        budget_.stop(now_, [&] { return l_.stop->load(std::memory_order_relaxed) >= l_.launch; });
    if (workgroup_) stop = wg_.sync(detail::SiteKind::checkpoint, point_, lid_, stop);
    interrupted_ = stop;
    return stop;
  }
  bool pause_at(int line, bool workgroup) {
    point_ = line;
    paused_ = true;
    workgroup_ = workgroup;
    return true;
  }

  IkLaunch& l_;
  WorkgroupBase& wg_;
  ik_shared_t<K>& shared_;
  unsigned lid_;
  int point_;
  detail::ThreadBudget budget_;
  std::uint64_t now_ = 0;
  bool complete_ = false, interrupted_ = false, paused_ = false, workgroup_ = false;
};

/// Runs launches of interruptible kernel K on the CPU.
template <class K>
class IkRunner final : public detail::SliceRunner {
  using Args = typename K::Args;
  using Locals = typename K::Locals;

 public:
  IkRunner(const Args& args, bool checking) : args_(args), checking_(checking) {}

  void prepare(std::uint32_t blocks, std::uint32_t threads, bool fresh) override {
    const std::size_t total = std::size_t(blocks) * threads;
    if (fresh || points_.size() != total || blocks_ != blocks || threads_ != threads) {
      if (!fresh && !points_.empty())
        throw std::invalid_argument("resume needs the grid of the interrupted launch (" +
                                    std::to_string(blocks_) + " x " + std::to_string(threads_) +
                                    " threads)");
      points_.assign(total, 0);
      locals_.assign(total, Locals{});
    }
    blocks_ = blocks;
    threads_ = threads;
  }

  detail::SliceSummary run(std::uint64_t budget_ns, std::uint32_t checkpoints) override {
    IkLaunch l;
    l.blocks = blocks_;
    l.threads = threads_;
    l.launch = launch_.fetch_add(1) + 1;
    l.stop = &stop_;
    l.budget.limit = checkpoints;
    l.budget_ns = budget_ns;
    l.budget.poll = detail::kPollNs;
    std::atomic<std::uint32_t> next{0};
    const unsigned workers =
        std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), blocks_));
    auto work = [&] {
      for (std::uint32_t b; (b = next.fetch_add(1)) < blocks_;) run_block(l, b);
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    if (!l.error.empty()) throw misuse_error(l.error);
    detail::SliceSummary s = l.report;
    s.finished = l.finished.load();
    return s;
  }

  void stop_current() override {
    // The running launch, or the next one if none runs (see InterruptibleJob::preempt). Launch
    // numbers only grow: a stop word below a launch's number does not concern it.
    const std::uint32_t launch = launch_.load() + 1;
    std::uint32_t cur = stop_.load();
    while (cur < launch && !stop_.compare_exchange_weak(cur, launch)) {
    }
  }
  std::uint32_t resident_groups(std::uint32_t) const override { return ~0u; }
  std::uint32_t group_cost(std::uint32_t) const override { return 1; }
  bool has_watchdog() const override { return false; }

 private:
  struct BlockArg {
    IkRunner* self;
    IkLaunch* launch;
    WorkgroupBase* wg;
    ik_shared_t<K>* shared;
    std::uint64_t deadline;
  };

  void run_block(IkLaunch& l, std::uint32_t b) {
    try {
      WorkgroupBase wg(nullptr, b, threads_, 0);
      ik_shared_t<K> shared{};
      // Blocks run a few at a time here (as many as there are hardware threads), so each one's
      // budget counts from its own start: a block started late still gets its slice's worth of
      // progress (on a GPU the whole grid is resident and the budget counts from the launch).
      BlockArg arg{this, &l, &wg, &shared, ik_now_ns() + l.budget_ns};
      wg.team.run(&IkRunner::fiber_main, &arg);
      if (!wg.failure.empty())
        l.fail("block " + std::to_string(b) + ": " + wg.failure +
               (checking_ ? "" : " (found although checking is off)"));
    } catch (const std::exception& e) {
      l.fail("block " + std::to_string(b) + " could not run: " + e.what());
    }
  }

  static void fiber_main(void* p, unsigned lid) {
    auto* a = static_cast<BlockArg*>(p);
    IkRunner& self = *a->self;
    IkLaunch& l = *a->launch;
    WorkgroupBase& wg = *a->wg;
    const std::uint64_t gid = std::uint64_t(wg.id) * self.threads_ + lid;
    try {
      const std::int32_t point = self.points_[gid];
      if (point != detail::kThreadComplete) {
        Locals locals = point != 0 ? self.locals_[gid] : Locals{};
        IkCtx<K> ic(l, wg, *a->shared, lid, point, a->deadline);
        detail::run_thread<K>(ic, self.args_, locals);
        if (ic.interrupted()) {
          self.locals_[gid] = locals;
          self.points_[gid] = ic.point();
        } else {
          if (!ic.completed()) l.misuse(detail::kMisuseNoCompletion, gid, ic.point());
          self.points_[gid] = detail::kThreadComplete;
        }
      }
      if (self.points_[gid] == detail::kThreadComplete) l.finished.fetch_add(1);
      wg.thread_exit(lid);
    } catch (const Aborted&) {
      wg.team.stop();
    } catch (const std::exception& e) {
      l.fail("thread " + std::to_string(gid) + ": " + e.what());
      wg.team.stop();
    }
  }

  const Args& args_;
  bool checking_;
  std::uint32_t blocks_ = 0, threads_ = 0;
  std::vector<std::int32_t> points_;
  std::vector<Locals> locals_;
  std::atomic<std::uint32_t> launch_{0};  ///< launches so far (the running one's number)
  std::atomic<std::uint32_t> stop_{0};    ///< launches numbered <= this stop
};

}  // namespace coop::cpu
