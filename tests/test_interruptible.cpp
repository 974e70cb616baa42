// Interruptible kernels: results equal the uninterrupted run at every budget down to one
// checkpoint per launch; launch counts follow from the budget; limits, cancellation, progress,
// resume, misuse and bad launches; preemption by tasks. Written once, run per backend.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

#include "backend.hpp"
#include "coop/interruptible.hpp"
#include "kernels/interruptible_kernels.hpp"

using namespace coop;
using coop::examples::Collatz;
using coop::examples::NestedLoops;
using coop::examples::Relaxation;

namespace {

struct NestedSetup {
  explicit NestedSetup(Runtime& rt, std::uint32_t outer, std::uint32_t inner, std::uint64_t n)
      : out(n), kernel(rt) {
    kernel.args = {out.data(), outer, inner, n};
  }
  void clear() { std::fill(out.begin(), out.end(), 0); }
  ManagedArray<std::uint64_t> out;
  Interruptible<NestedLoops> kernel;
};

std::uint32_t ceil_div(std::uint64_t a, std::uint32_t b) { return std::uint32_t((a + b - 1) / b); }

}  // namespace

TEST(Interruptible, NestedLoopsEqualReferenceAtEveryCheckpointBudget) {
  auto rt = test::make_runtime(8);
  const std::uint32_t outer = 5, inner = 7, threads = 32;
  const std::uint64_t n = 1000;  // not a multiple of the block: some threads complete at once
  NestedSetup s(*rt, outer, inner, n);
  const auto want = NestedLoops::reference(s.kernel.args);
  const std::uint64_t checkpoints = outer * (1 + inner);  // per thread with output
  for (std::uint32_t budget : {1u, 2u, 3u, 7u, 40u, 1000u}) {
    s.clear();
    InterruptProgress p = s.kernel.launch(ceil_div(n, threads), threads, {.checkpoints = budget});
    // Each launch passes `budget` checkpoints per thread; the last one finds none left.
    EXPECT_EQ(p.launches, checkpoints / budget + 1) << "budget " << budget;
    EXPECT_EQ(p.finished, std::uint64_t(ceil_div(n, threads)) * threads);
    for (std::uint64_t t = 0; t < n; ++t)
      ASSERT_EQ(s.out[t], want[t]) << "thread " << t << " at " << budget << " checkpoints/launch";
  }
}

TEST(Interruptible, NestedLoopsEqualReferenceAtTimeBudgets) {
  auto rt = test::make_runtime(8);
  // Under compute-sanitizer a twentieth of the GPU's work (racecheck: a twenty-thousandth):
  // still many 20 us slices.
  const bool san = test::under_sanitizer(), race = test::under_racecheck();
  const std::uint64_t n = test::kOnGpu ? (race ? 2'000 : san ? 20'000 : 200'000) : 1'024;
  NestedSetup s(*rt, 20, test::kOnGpu ? (race ? 20 : san ? 2000 : 4000) : 50, n);
  const auto want = NestedLoops::reference(s.kernel.args);
  for (double ms : {0.02, 0.5, 0.0 /* the default */}) {
    s.clear();
    InterruptProgress p = s.kernel.launch(ceil_div(n, 128), 128, {.slice_ms = ms});
    EXPECT_GE(p.launches, 1u);
    if (ms == 0.02) {
      EXPECT_GT(p.launches, 1u) << "a 20 us budget should need relaunches";
    }
    for (std::uint64_t t = 0; t < n; ++t)
      ASSERT_EQ(s.out[t], want[t]) << "thread " << t << " at " << ms << " ms per launch";
  }
}

TEST(Interruptible, CollatzDataDependentLengths) {
  auto rt = test::make_runtime(8);
  const std::uint64_t n = 3000;
  ManagedArray<std::uint32_t> steps(n);
  Interruptible<Collatz> k(*rt);
  k.args = {steps.data(), 1'000'000'007ull, n, 16};
  const auto want = Collatz::reference(k.args);
  for (InterruptOptions o : {InterruptOptions{.checkpoints = 1}, InterruptOptions{.checkpoints = 5},
                             InterruptOptions{.slice_ms = 0.05}}) {
    std::fill(steps.begin(), steps.end(), 0u);
    InterruptProgress p = k.launch(ceil_div(n, 64), 64, o);
    if (o.checkpoints) {
      // The longest chain decides: ceil(steps / 16) checkpoints, `checkpoints` per launch.
      std::uint32_t longest = *std::max_element(want.begin(), want.end());
      std::uint32_t cps = (longest + 15) / 16;
      EXPECT_EQ(p.launches, cps / o.checkpoints + 1);
    }
    for (std::uint64_t t = 0; t < n; ++t) ASSERT_EQ(steps[t], want[t]) << "thread " << t;
  }
}

TEST(Interruptible, RelaxationWorkgroupCheckpointsRebuildSharedMemory) {
  auto rt = test::make_runtime(8);
  const std::uint32_t blocks = 12, threads = 48;
  ManagedArray<float> out(std::size_t(blocks) * threads);
  Interruptible<Relaxation> k(*rt);
  k.args = {out.data(), 300, 10};
  const auto want = Relaxation::reference(k.args, blocks, threads);
  for (InterruptOptions o : {InterruptOptions{.checkpoints = 1}, InterruptOptions{.checkpoints = 3},
                             InterruptOptions{.slice_ms = 0.05}, InterruptOptions{}}) {
    std::fill(out.begin(), out.end(), -1.0f);
    InterruptProgress p = k.launch(blocks, threads, o);
    if (o.checkpoints) {
      EXPECT_EQ(p.launches, 30 / o.checkpoints + 1);
    }
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], want[i]) << "cell " << i << " (bitwise: the update is exact)";
  }
}

TEST(Interruptible, LaunchLimitThenResume) {
  auto rt = test::make_runtime(8);
  NestedSetup s(*rt, 4, 4, 256);
  const auto want = NestedLoops::reference(s.kernel.args);
  try {
    s.kernel.launch(8, 32, {.checkpoints = 2, .max_launches = 3});
    FAIL() << "expected interrupt_error";
  } catch (const interrupt_error& e) {
    EXPECT_EQ(e.kind(), interrupt_error::Kind::launch_limit);
    EXPECT_EQ(e.progress().launches, 3u);
    EXPECT_EQ(e.progress().finished, 0u);
    EXPECT_NE(std::string(e.what()).find("not done after 3 launches"), std::string::npos);
  }
  // The statuses are intact: resuming finishes the work (20 checkpoints, 6 already passed).
  InterruptProgress p = s.kernel.launch(8, 32, {.checkpoints = 2, .resume = true});
  EXPECT_EQ(p.launches, (20u - 6u) / 2 + 1);
  for (std::uint64_t t = 0; t < 256; ++t) ASSERT_EQ(s.out[t], want[t]);
  EXPECT_THROW(s.kernel.launch(4, 32, {.resume = true}), std::invalid_argument);
}

TEST(Interruptible, ProgressAndCancellation) {
  auto rt = test::make_runtime(8);
  NestedSetup s(*rt, 6, 6, 512);
  const auto want = NestedLoops::reference(s.kernel.args);
  std::stop_source stop;
  std::vector<InterruptProgress> seen;
  InterruptOptions o{.checkpoints = 1};
  o.cancel = stop.get_token();
  o.on_progress = [&](const InterruptProgress& p) {
    seen.push_back(p);
    if (p.launches == 4) stop.request_stop();
  };
  try {
    s.kernel.launch(16, 32, o);
    FAIL() << "expected cancellation";
  } catch (const interrupt_error& e) {
    EXPECT_EQ(e.kind(), interrupt_error::Kind::cancelled);
    EXPECT_EQ(e.progress().launches, 4u);
  }
  ASSERT_EQ(seen.size(), 4u);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].launches, i + 1);
    EXPECT_EQ(seen[i].threads, 512u);
    EXPECT_GE(seen[i].elapsed_ms, seen[i].last_launch_ms);
  }
  InterruptProgress p = s.kernel.launch(16, 32, {.checkpoints = 1, .resume = true});
  EXPECT_EQ(p.launches, 42u / 1 + 1 - 4);
  for (std::uint64_t t = 0; t < 512; ++t) ASSERT_EQ(s.out[t], want[t]);
}

namespace {
// Returns without COOP_INTERRUPTIBLE_END on one thread.
struct ForgetsToComplete {
  struct Args {
    std::uint32_t bad;
  };
  struct Locals {
    std::uint32_t i;
  };
  template <class Ic>
  COOP_HD void operator()(Ic& ic, const Args& a, Locals& l) const {
    COOP_INTERRUPTIBLE_BEGIN(ic);
    for (l.i = 0; l.i < 3; ++l.i) {
      COOP_CHECKPOINT(ic);
    }
    if (ic.global_id() == a.bad) return;
    COOP_INTERRUPTIBLE_END(ic);
  }
};
}  // namespace

TEST(Interruptible, ReturningWithoutCompletingIsReported) {
  auto rt = test::make_runtime(8);
  Interruptible<ForgetsToComplete> k(*rt);
  k.args = {37};
  try {
    k.launch(4, 16, {.checkpoints = 1});
    FAIL() << "expected misuse_error";
  } catch (const misuse_error& e) {
    EXPECT_NE(std::string(e.what()).find("thread 37 returned from the interruptible kernel "
                                         "without completing"),
              std::string::npos)
        << e.what();
  }
}

TEST(Interruptible, RejectsImpossibleLaunches) {
  auto rt = test::make_runtime(8);
  NestedSetup s(*rt, 1, 1, 64);
  using test::expect_invalid;
  expect_invalid([&] { s.kernel.launch(0, 32); },
                 "an interruptible kernel needs at least one block");
  expect_invalid([&] { s.kernel.launch(2, 0); }, "threads per block must be in [1, 1024], got 0");
  expect_invalid([&] { s.kernel.launch(2, 2048); },
                 "threads per block must be in [1, 1024], got 2048");
  expect_invalid([&] { s.kernel.launch(2, 32, {.slice_ms = -1}); },
                 "slice_ms must be a non-negative number of milliseconds");
  EXPECT_EQ(s.kernel.launch(2, 32).finished, 64u);  // still usable afterwards
}

TEST(Interruptible, TasksPreemptTheKernelBetweenLaunches) {
  auto rt = test::make_runtime(4);
  // The kernel must fill the device (a task then needs it off): under compute-sanitizer the
  // same grid with a twentieth of the work per thread (racecheck: a thousandth).
  const std::uint64_t n = test::kOnGpu ? 400'000 : 2'000;
  const std::uint32_t outer = test::under_racecheck() ? 10 : 50;
  NestedSetup s(*rt, outer,
                test::kOnGpu ? (test::under_racecheck()   ? 4
                                : test::under_sanitizer() ? 200
                                                          : 4000)
                             : 400,
                n);
  const auto want = NestedLoops::reference(s.kernel.args);
  std::atomic<bool> done{false};
  InterruptProgress p;
  std::thread runner([&] {
    // Slices long against a launch's own cost (fibers are made per launch on the CPU: slow
    // under sanitizers), short against the kernel.
    p = s.kernel.launch(ceil_div(n, 64), 64, {.slice_ms = test::kOnGpu ? 2.0 : 20.0});
    done = true;
  });
  // Tasks fire while the kernel runs: each one needs it off the device.
  std::uint32_t tasks = 0;
  while (!done && tasks < 20) {
    rt->run(1, [&](Task&) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
    ++tasks;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  runner.join();
  EXPECT_GE(p.preemptions, 1u) << tasks << " tasks ran";
  for (std::uint64_t t = 0; t < n; ++t) ASSERT_EQ(s.out[t], want[t]) << "thread " << t;
}

TEST(Interruptible, DefaultSliceFollowsTheWatchdog) {
  EXPECT_EQ(default_slice_ms(true), 100.0);
  EXPECT_EQ(default_slice_ms(false), 1000.0);
  auto rt = test::make_runtime(2);
  Interruptible<NestedLoops> k(*rt);
  EXPECT_GT(k.default_slice(), 0.0);
}

#if !COOP_TEST_CUDA
namespace {
// A per-thread checkpoint between workgroup barriers: in checkpoint mode thread 0 stops one
// checkpoint before the others, which then wait at a barrier it will not reach.
struct CheckpointBeforeBarrier {
  struct Args {};
  struct Locals {
    std::uint32_t i;
  };
  template <class Ic>
  COOP_HD void operator()(Ic& ic, const Args&, Locals& l) const {
    COOP_INTERRUPTIBLE_BEGIN(ic);
    for (l.i = 0; l.i < 4; ++l.i) {
      if (ic.local_id() == 0) {
        COOP_CHECKPOINT(ic);
      }
      ic.barrier();
    }
    COOP_INTERRUPTIBLE_END(ic);
  }
};
}  // namespace

// On the GPU this is undefined behaviour (a barrier some threads never reach); the CPU backend
// names it.
TEST(Interruptible, PerThreadCheckpointAcrossABarrierIsReported) {
  auto rt = test::make_runtime(4);
  Interruptible<CheckpointBeforeBarrier> k(*rt);
  try {
    k.launch(2, 4, {.checkpoints = 1});
    FAIL() << "expected misuse_error";
  } catch (const misuse_error& e) {
    EXPECT_NE(std::string(e.what()).find("thread 0: returned from the kernel"), std::string::npos)
        << e.what();
  }
}
#endif

// ---------------------------------------------------------------- hybrid preemption

namespace {
// A cooperative kernel with a resizing barrier per round: every item is counted once per
// round whatever M is, so the counts check the run after suspensions and kills.
struct Rounds {
  struct Params {
    std::uint32_t* hits;
    std::uint32_t items, rounds;
  };
  struct Transmit {
    std::uint32_t round;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    while (t.round < p.rounds) {
      for (std::uint64_t i = ctx.global_id(); i < p.items; i += ctx.global_size())
        atomic_ref<std::uint32_t>(p.hits[i]).fetch_add(1);
      ++t.round;
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

struct RoundsRun {
  RoundsRun(Runtime& rt, std::uint32_t rounds) : hits(kItems, 0u) {
    job = rt.launch<Rounds>({.threads = 32}, {hits.data(), kItems, rounds}, {0});
  }
  void check(std::uint32_t rounds) {
    job.wait();
    for (std::uint32_t i = 0; i < kItems; ++i) ASSERT_EQ(hits[i], rounds) << "item " << i;
  }
  static constexpr std::uint32_t kItems = 4096;
  ManagedArray<std::uint32_t> hits;
  Job job;
};

void small_task(Runtime& rt) {
  rt.run_fraction(0.2, [](Task&) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
}
void large_task(Runtime& rt) {
  rt.run_fraction(0.75, [](Task&) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
}
}  // namespace

TEST(Preemption, KernelLevelSuspendsTheWholeJobAndResumesIt) {
  auto rt = test::make_runtime(8);
  rt->set_preemption(PreemptionPolicy::parse("suspend"));
  // Under racecheck every round's grid barrier is slow: fewer rounds still outlast the task.
  const std::uint32_t rounds = test::kOnGpu ? (test::under_racecheck() ? 500 : 20000) : 3000;
  RoundsRun r(*rt, rounds);
  small_task(*rt);
  r.check(rounds);
  JobStats s = r.job.stats();
  EXPECT_GE(s.suspends, 1u);
  EXPECT_EQ(s.kills, 0u);
}

TEST(Preemption, CooperativeGathersWithoutSuspending) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  rt->set_preemption(PreemptionPolicy::parse("shrink"));
  const std::uint32_t rounds = test::kOnGpu ? 20000 : 3000;
  RoundsRun r(*rt, rounds);
  large_task(*rt);
  r.check(rounds);
  JobStats s = r.job.stats();
  EXPECT_EQ(s.suspends, 0u);
  EXPECT_GE(s.kills, 1u);
}

TEST(Preemption, HybridGathersSmallRequestsAndSuspendsForLargeOnes) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  rt->set_preemption(PreemptionPolicy::parse("hybrid:0.5"));
  const std::uint32_t rounds = test::kOnGpu ? 40000 : 6000;
  RoundsRun r(*rt, rounds);
  small_task(*rt);
  JobStats a = r.job.stats();
  EXPECT_EQ(a.suspends, 0u) << "a request of 20% should be gathered cooperatively";
  EXPECT_GE(a.kills, 1u);
  large_task(*rt);
  r.check(rounds);
  EXPECT_GE(r.job.stats().suspends, 1u) << "a request of 75% should suspend the job";
}

TEST(Preemption, JobWithoutResizingBarriersStillGivesCapacityUnderKernelPolicy) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  rt->set_preemption(PreemptionPolicy::parse("suspend"));
  ManagedArray<std::uint32_t> stop(1, 0u);
  auto job = rt->launch<test::Spinner>({.threads = 2}, {stop.data()});
  const std::uint32_t n = job.max_groups();
  large_task(*rt);  // served by kills: the job never reaches a resizing barrier
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (job.active_groups() < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  EXPECT_EQ(job.active_groups(), n) << "the withdrawn preemption must let the job regrow";
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  job.wait();
  EXPECT_EQ(job.stats().suspends, 0u);
}

TEST(Preemption, PolicyParsesAndNames) {
  EXPECT_EQ(PreemptionPolicy::parse("hybrid:0.25").name(), "hybrid:0.25");
  EXPECT_EQ(PreemptionPolicy::parse("suspend").name(), "suspend");
  EXPECT_EQ(PreemptionPolicy::parse("shrink").name(), "shrink");
  // The former names still parse.
  EXPECT_EQ(PreemptionPolicy::parse("kernel").mode, PreemptionPolicy::Mode::suspend);
  EXPECT_EQ(PreemptionPolicy::parse("cooperative").mode, PreemptionPolicy::Mode::shrink);
  EXPECT_THROW(PreemptionPolicy::parse("hybrid:2"), std::invalid_argument);
  EXPECT_THROW(PreemptionPolicy::parse("sometimes"), std::invalid_argument);
  // Workgroup 0 pauses for a task by default; ",no-pause" keeps it working.
  EXPECT_TRUE(PreemptionPolicy::parse("shrink").pause_kept);
  const PreemptionPolicy kept = PreemptionPolicy::parse("hybrid:0.25,no-pause");
  EXPECT_FALSE(kept.pause_kept);
  EXPECT_EQ(kept.suspend_above, 0.25);
  EXPECT_EQ(kept.name(), "hybrid:0.25,no-pause");
  EXPECT_EQ(PreemptionPolicy::parse("shrink,no-pause").name(), "shrink,no-pause");
  EXPECT_THROW(PreemptionPolicy::parse(",no-pause"), std::invalid_argument);
  EXPECT_THROW(PreemptionPolicy::parse("shrink,pause"), std::invalid_argument);
}
