/// \file
/// Interruptible kernels: kernels that stop at checkpoints when their launch's budget is spent
/// and are relaunched until every thread has finished, so that no single launch outlives a
/// display watchdog and the device can be handed to other work between launches.
///
/// An interruptible kernel is a type with
///
/// \code
///   struct Args   { ... };   // launch arguments (trivially copyable, passed by value)
///   struct Locals { ... };   // per-thread variables that must survive an interruption
///   struct Shared { ... };   // optional: workgroup-shared memory (NOT kept across launches)
///   template <class Ic> COOP_HD void operator()(Ic&, const Args&, Locals&) const;
/// \endcode
///
/// `Locals` lives in registers while the thread runs: the launcher loads it from device memory
/// when a thread resumes and stores it only when the thread stops at a checkpoint (keeping loop
/// variables in a device-memory status struct instead was measured 14.5x slower). The body is a
/// switch on the checkpoint the thread resumes after:
///
/// \code
///   COOP_INTERRUPTIBLE_BEGIN(ic);
///   for (l.i = 0; l.i < a.n; ++l.i) {     // loop state in Locals, no declarations skipped
///     COOP_CHECKPOINT(ic);                // may stop here; a relaunch continues right after
///     ... work ...
///   }
///   COOP_INTERRUPTIBLE_END(ic);           // this thread is complete
/// \endcode
///
/// COOP_CHECKPOINT is per thread: threads stop independently, so a kernel that uses workgroup
/// barriers (ic.barrier()) must use COOP_WG_CHECKPOINT instead, which every thread of the
/// workgroup reaches and where they all stop or all go on, and its threads must complete
/// together. Shared memory is not preserved across launches: keep what must survive in Locals
/// (each thread its part) and write it back to shared memory after resuming.
///
/// The launcher (coop::Interruptible<K>, this header) runs launches until every thread has
/// reached COOP_INTERRUPTIBLE_END or COOP_COMPLETE, with a budget per launch by time (GPU
/// %globaltimer; default from the device's watchdog attribute) or by checkpoints per thread (the
/// original interruptible-kernels library's behaviour), a limit on launches, a progress callback
/// and cancellation. Under a Runtime the kernel is a job the scheduler can preempt whole: a
/// high-priority task stops the current launch at the next checkpoint and runs before the next.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>

#include "coop/config.hpp"
#include "coop/errors.hpp"
#include "coop/runtime.hpp"

namespace coop {

/// What the launcher reports between launches and returns at the end.
struct InterruptProgress {
  std::uint32_t launches = 0;     ///< launches so far
  std::uint64_t threads = 0;      ///< threads in the grid
  std::uint64_t finished = 0;     ///< threads that have completed
  double elapsed_ms = 0;          ///< since launch() was called
  double last_launch_ms = 0;      ///< host-measured duration of the latest launch
  double longest_launch_ms = 0;   ///< the longest launch so far
  std::uint32_t preemptions = 0;  ///< times the scheduler stopped a launch for a task
};

/// How Interruptible::launch runs: the budget of each launch, limits, progress, cancellation.
struct InterruptOptions {
  /// Time budget of each launch in milliseconds, counted from the launch's first block; 0 = the
  /// default for the device (default_slice_ms). Threads stop at their first checkpoint past it.
  double slice_ms = 0;
  /// > 0: budget by checkpoints instead of time: each thread stops at its n-th checkpoint of a
  /// launch. In this mode a stop request (cancellation, a task) takes effect between launches.
  std::uint32_t checkpoints = 0;
  /// Gives up (interrupt_error, kind launch_limit) when the kernel is not done after this many
  /// launches; 0 = no limit.
  std::uint32_t max_launches = 0;
  /// Called after every launch that left work to do.
  std::function<void(const InterruptProgress&)> on_progress{};
  /// Cancellation: the running launch stops at its next checkpoint and launch() throws
  /// interrupt_error (kind cancelled). The kernel's state stays consistent: a later launch()
  /// with resume = true continues it.
  std::stop_token cancel{};
  /// Continue from the statuses a previous launch() left (cancelled or out of launches)
  /// instead of starting every thread afresh. The grid must have the same shape.
  bool resume = false;
};

/// A launch() that ended before the kernel was done.
class interrupt_error : public error {
 public:
  /// Why the launch ended early.
  enum class Kind : std::uint8_t {
    launch_limit,  ///< InterruptOptions::max_launches were used up
    cancelled,     ///< InterruptOptions::cancel was requested
  };
  /// An error of kind `k` with the message `what` and the progress `p` made.
  interrupt_error(Kind k, const std::string& what, const InterruptProgress& p)
      : error(what), kind_(k), progress_(p) {}
  /// Why the launch ended early.
  Kind kind() const { return kind_; }
  /// Where the kernel stood: finished threads keep their results, the others resume later.
  const InterruptProgress& progress() const { return progress_; }

 private:
  Kind kind_;
  InterruptProgress progress_;
};

/// The default time budget per launch: 100 ms on a device with a kernel-execution watchdog
/// (Windows' TDR fires at 2 s, X servers' watchdogs at a few seconds, and a display stays
/// usable), 1000 ms otherwise (launches still end every second, so progress reports and
/// cancellation stay prompt).
double default_slice_ms(bool has_watchdog);

namespace detail {

/// Per-thread resume point in device memory: 0 = not started, > 0 = the checkpoint's line,
/// kThreadComplete = done.
inline constexpr std::int32_t kThreadComplete = -1;

/// Misuse bits a launch reports.
inline constexpr std::uint32_t kMisuseNoCompletion = 1;  ///< returned without completing
inline constexpr std::uint32_t kMisuseUnknownPoint = 2;  ///< resume point not in the switch

/// How often a running launch reads its stop request, in ns: a stop takes effect within about
/// this plus one checkpoint's work.
inline constexpr std::uint64_t kPollNs = 10'000;

/// A thread's budget for one launch (written once for both backends). A checkpoint costs one
/// clock read and one compare with `soft`; past it the thread leaves the kernel's body and
/// `stop` decides outside it (deadline, stop request, checkpoint count), re-entering the body
/// at the same checkpoint when it goes on. Deciding inside the body's loop needs a
/// reconvergence point there, and that alone measured 1.10x on ~3 us of work per checkpoint
/// against 1.04x for a bare clock compare (H200; docs/interruptible.md).
struct ThreadBudget {
  std::uint64_t soft = 0;      ///< clock value from which checkpoints leave the body (0: all)
  std::uint64_t deadline = 0;  ///< time mode: stop at the first decision at or past it
  std::uint64_t poll = 0;      ///< time mode: how often the stop request is read
  std::uint32_t count = 0;     ///< checkpoint mode: checkpoints reached in this launch
  std::uint32_t limit = 0;     ///< > 0: checkpoint mode (soft stays 0: every one is counted)

  COOP_HD bool due(std::uint64_t now) const { return now >= soft; }

  /// At a checkpoint that is due: true when the thread must stop there.
  template <class Stopped>
  COOP_HD bool stop(std::uint64_t now, Stopped&& stopped) {
    if (limit) return ++count >= limit;
    if (now >= deadline || stopped()) return true;
    soft = now + poll < deadline ? now + poll : deadline;
    return false;
  }
};

/// Runs one thread's body; a checkpoint that is due leaves it, and the thread re-enters it
/// at that checkpoint (its Locals still in registers) unless the budget says stop.
template <class K, class Ic>
COOP_HD COOP_INLINE void run_thread(Ic& ic, const typename K::Args& args,
                                    typename K::Locals& locals) {
  do {
    K{}(ic, args, locals);
  } while (ic.paused() && !ic.settle());
}

/// What one launch reported.
struct SliceSummary {
  std::uint64_t finished = 0;  ///< threads complete after the launch (including earlier ones)
  std::uint32_t misuse = 0;    ///< kMisuse* bits
  std::uint64_t misuse_thread = 0;
  std::int32_t misuse_point = 0;
};

/// One backend's way of running launches of one interruptible kernel.
class SliceRunner {
 public:
  virtual ~SliceRunner() = default;
  /// Prepares statuses for `blocks` x `threads`; `fresh` starts every thread from the top.
  virtual void prepare(std::uint32_t blocks, std::uint32_t threads, bool fresh) = 0;
  /// Runs one launch to its end.
  virtual SliceSummary run(std::uint64_t budget_ns, std::uint32_t checkpoints) = 0;
  /// From any thread: the launch running now stops at its next polled checkpoint (if none runs,
  /// the next one stops at its first). Later launches are not affected.
  virtual void stop_current() = 0;
  /// Workgroups of this kernel resident at once and their cost in scheduler units.
  virtual std::uint32_t resident_groups(std::uint32_t threads) const = 0;
  virtual std::uint32_t group_cost(std::uint32_t threads) const = 0;
  virtual bool has_watchdog() const = 0;
};

/// The launch loop, written once: budgets, progress, cancellation, limits, misuse reports and
/// preemption by the scheduler.
InterruptProgress drive(Scheduler& sched, SliceRunner& runner, std::uint32_t blocks,
                        std::uint32_t threads, const InterruptOptions& opts, int priority);

template <class K, class = void>
struct ik_shared_of {
  using type = Empty;
};
template <class K>
struct ik_shared_of<K, std::void_t<typename K::Shared>> {
  using type = typename K::Shared;
};

}  // namespace detail

/// Interruptible kernel K's workgroup-shared memory: `K::Shared`, or coop::Empty.
template <class K>
using ik_shared_t = typename detail::ik_shared_of<K>::type;

}  // namespace coop

#include "coop/cpu/interruptible.hpp"
#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include "coop/cuda/interruptible.cuh"
#endif

namespace coop {

namespace cpu {
template <class K>
class IkRunner;
}
namespace cuda {
template <class K>
class IkRunner;
}

/// Launcher of interruptible kernel K (the original library's IntKernel<Args, Status, kernel>):
/// set `args`, call launch().
template <class K>
class Interruptible {
 public:
  using Args = typename K::Args;      ///< the kernel's launch arguments
  using Locals = typename K::Locals;  ///< the kernel's per-thread state kept across launches
  static_assert(std::is_trivially_copyable_v<Args>, "Args is copied to the device");
  static_assert(std::is_trivially_copyable_v<Locals>, "Locals is saved to device memory");

  /// `priority` orders this kernel among the runtime's jobs (tasks preempt lower ones first).
  explicit Interruptible(Runtime& rt, int priority = 0) : rt_(rt), priority_(priority) {
    if (rt.backend() == Backend::cuda) {
#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
      runner_ = std::make_unique<cuda::IkRunner<K>>(args, rt.cuda_device());
#else
      throw std::logic_error(
          "this runtime drives a GPU, but the interruptible kernel was compiled by a host "
          "compiler: use it from a .cu file compiled by nvcc");
#endif
    } else {
      runner_ = std::make_unique<cpu::IkRunner<K>>(args, rt.cpu_checking());
    }
  }

  /// The arguments the next launch() passes to every thread (set before launching).
  Args args{};

  /// Runs the kernel on `blocks` workgroups of `threads` threads, relaunching it until every
  /// thread is complete. Throws std::invalid_argument for an impossible grid, interrupt_error
  /// when cancelled or out of launches, misuse_error when a thread returns without
  /// completing or a checkpoint is misplaced, std::runtime_error for device errors.
  InterruptProgress launch(std::uint32_t blocks, std::uint32_t threads,
                           const InterruptOptions& opts = {}) {
    return detail::drive(rt_.scheduler(), *runner_, blocks, threads, opts, priority_);
  }

  /// The time budget a launch gets when InterruptOptions::slice_ms is 0.
  double default_slice() const { return default_slice_ms(runner_->has_watchdog()); }

 private:
  Runtime& rt_;
  int priority_;
  std::unique_ptr<detail::SliceRunner> runner_;
};

}  // namespace coop

/// Opens an interruptible kernel's body: dispatches to the checkpoint the thread resumes after.
#define COOP_INTERRUPTIBLE_BEGIN(ic) \
  switch ((ic).resume_point()) {     \
    default:                         \
      (ic).unknown_resume_point();   \
      return;                        \
    case 0:

/// Closes the body: the thread is complete.
#define COOP_INTERRUPTIBLE_END(ic) \
  }                                \
  (ic).complete()

/// A per-thread checkpoint: when the launch's budget is spent the thread saves its Locals and
/// leaves; the next launch continues right after this line.
#define COOP_CHECKPOINT(ic)              \
  if ((ic).checkpoint(__LINE__)) return; \
  [[fallthrough]];                       \
  case __LINE__:

/// A workgroup-level checkpoint (every thread of the workgroup reaches it; all stop or none).
#define COOP_WG_CHECKPOINT(ic)                     \
  if ((ic).workgroup_checkpoint(__LINE__)) return; \
  [[fallthrough]];                                 \
  case __LINE__:

/// Completes the thread early (an exit that is not the end of the body).
#define COOP_COMPLETE(ic) \
  do {                    \
    (ic).complete();      \
    return;               \
  } while (0)
