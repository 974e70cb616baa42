// Cancelling jobs and shutting a runtime down while jobs and tasks run: nothing hangs, every
// blocked call gets a clear answer, Job handles outlive the runtime. Run on both backends.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "backend.hpp"

#if COOP_TEST_CUDA
#include <cuda_runtime.h>
#endif

namespace coop {
namespace {

using namespace std::chrono_literals;

/// `rounds` resizing barriers (uniform: every workgroup runs the same count), counting rounds.
struct BarrierRounds {
  struct Params {
    std::uint32_t rounds;
    std::uint32_t* done_rounds;
  };
  struct Transmit {
    std::uint32_t step = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.step < p.rounds; ++t.step) {
      if (ctx.local_id() == 0 && ctx.group_id() == 0)
        atomic_ref<std::uint32_t>(*p.done_rounds).fetch_add(1);
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

constexpr std::uint32_t kForever = 1u << 30;

template <class F>
bool eventually(F&& f, std::chrono::milliseconds limit = 20s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!f()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// Prints the runtime's state if the test is still running after `after` (a hang's diagnosis).
class StallReport {
 public:
  StallReport(Runtime& rt, std::chrono::seconds after = 8s)
      : thread_([this, &rt, after] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, after, [&] { return done_; }))
            std::fprintf(stderr, "still running after %llds:\n%s\n", (long long)after.count(),
                         rt.describe().c_str());
        }) {}
  ~StallReport() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

TEST(Cancel, TwoJobsRunAtOnce) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  StallReport stall(*rt);
  ManagedArray<std::uint32_t> stop(1), rounds(1);
  auto spinner = rt->launch<test::Spinner>({.max_groups = 3, .threads = 2}, {stop.data()});
  auto second = rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {200, rounds.data()});
  second.wait();  // while the first still runs
  EXPECT_EQ(rounds[0], 200u);
  EXPECT_FALSE(spinner.done());
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  spinner.wait();
}

TEST(Cancel, StopsAJobAtItsOfferKill) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> stop(1);
  auto job = rt->launch<test::Spinner>({.max_groups = 4, .threads = 2}, {stop.data()});
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(job.cancel());
  EXPECT_THROW(job.wait(), job_cancelled);
  EXPECT_TRUE(job.done());
  EXPECT_FALSE(job.cancel()) << "a finished job cannot be cancelled again";
  // The capacity came back: a task can have all of it.
  EXPECT_NO_THROW(rt->run_fraction(1.0, [](Task&) {}));
}

TEST(Cancel, StopsAJobAtItsResizingBarrier) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> rounds(1);
  auto job = rt->launch<BarrierRounds>({.max_groups = 4, .threads = 2}, {kForever, rounds.data()});
  ASSERT_TRUE(eventually([&] { return atomic_ref<std::uint32_t>(rounds[0]).load() > 10; }));
  EXPECT_TRUE(job.cancel());
  EXPECT_THROW(job.wait(), job_cancelled);
  EXPECT_LT(atomic_ref<std::uint32_t>(rounds[0]).load(), kForever);
  EXPECT_GE(job.stats().barriers, 10u);  // round 11 is counted before its barrier
}

TEST(Cancel, ASuspendedJobEndsAtOnce) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> rounds(1);
  auto job = rt->launch<BarrierRounds>({.max_groups = 4, .threads = 2}, {kForever, rounds.data()});
  ASSERT_TRUE(job.suspend());
  EXPECT_TRUE(job.cancel());
  EXPECT_THROW(job.wait(), job_cancelled);
  EXPECT_THROW(job.resume(), job_cancelled);
}

TEST(Shutdown, CancelStopsRunningAndSuspendedJobs) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  StallReport stall(*rt);
  ManagedArray<std::uint32_t> stop(1), rounds(2);
  auto spinner = rt->launch<test::Spinner>({.max_groups = 3, .threads = 2}, {stop.data()});
  auto barriers =
      rt->launch<BarrierRounds>({.max_groups = 3, .threads = 2}, {kForever, &rounds[0]});
  auto parked = rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {kForever, &rounds[1]});
  ASSERT_TRUE(parked.suspend());
  rt->shutdown(Shutdown::cancel);
  for (Job* j : {&spinner, &barriers, &parked}) {
    EXPECT_TRUE(j->done());
    EXPECT_THROW(j->wait(), job_cancelled);
  }
  rt->shutdown();  // a second call does nothing
}

TEST(Shutdown, WaitLetsRunningJobsFinishAndCancelsSuspendedOnes) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  StallReport stall(*rt);
  ManagedArray<std::uint32_t> stop(1), rounds(1);
  auto spinner = rt->launch<test::Spinner>({.max_groups = 3, .threads = 2}, {stop.data()});
  auto parked = rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {kForever, &rounds[0]});
  ASSERT_TRUE(parked.suspend());
  std::atomic<bool> returned{false};
  std::thread closer([&] {
    rt->shutdown(Shutdown::wait);
    returned = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned) << "shutdown(wait) returned while a job still ran";
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  closer.join();
  EXPECT_NO_THROW(spinner.wait());
  EXPECT_THROW(parked.wait(), job_cancelled);
}

TEST(Shutdown, AJobSuspendedDuringAShutdownIsCancelled) {
  auto rt = test::make_runtime(6);
  StallReport stall(*rt);
  ManagedArray<std::uint32_t> rounds(1);
  auto job = rt->launch<BarrierRounds>({.max_groups = 4, .threads = 2}, {kForever, rounds.data()});
  std::thread closer([&] { rt->shutdown(Shutdown::wait); });
  std::this_thread::sleep_for(20ms);
  try {
    job.suspend();  // suspended (and then cancelled by the shutdown) or already cancelled
  } catch (const job_cancelled&) {
  }
  closer.join();  // returns: nobody could resume the job
  EXPECT_TRUE(job.done());
  EXPECT_THROW(job.wait(), job_cancelled);
}

TEST(Shutdown, WaitingRequestsFailRunningTasksFinish) {
  auto rt = test::make_runtime(6);
  StallReport stall(*rt);
  ManagedArray<std::uint32_t> stop(1);
  // A fixed job never gives capacity back: a task asking for all of it can only wait.
  auto job = rt->launch<test::Spinner>({.max_groups = 0, .threads = 2, .policy = Policy::fixed()},
                                       {stop.data()});
  std::atomic<bool> waiter_failed{false}, waiter_ran{false};
  std::thread waiter([&] {
    try {
      rt->run_fraction(1.0, [&](Task&) { waiter_ran = true; });
    } catch (const runtime_closed&) {
      waiter_failed = true;
    }
  });
  std::this_thread::sleep_for(30ms);
  std::thread closer([&] { rt->shutdown(Shutdown::wait); });
  ASSERT_TRUE(eventually([&] { return waiter_failed.load(); }))
      << "a task waiting for capacity was not refused at shutdown";
  waiter.join();
  EXPECT_FALSE(waiter_ran);
  EXPECT_THROW(rt->run(1, [](Task&) {}), runtime_closed);
  EXPECT_THROW((rt->launch<test::Spinner>({.max_groups = 1, .threads = 2}, {stop.data()})),
               runtime_closed);
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  closer.join();
  EXPECT_NO_THROW(job.wait());
}

TEST(Shutdown, ARunningTaskFinishesFirst) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> stop(1);
  auto job = rt->launch<test::Spinner>({.max_groups = 4, .threads = 2}, {stop.data()});
  std::atomic<bool> started{false}, finished{false}, returned{false};
  std::thread task([&] {
    rt->run(1, [&](Task&) {
      started = true;
      std::this_thread::sleep_for(100ms);
      finished = true;
    });
    returned = true;
  });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  rt->shutdown(Shutdown::cancel);
  EXPECT_TRUE(finished) << "shutdown returned while a task ran";
  task.join();
  EXPECT_TRUE(returned);
  EXPECT_THROW(job.wait(), job_cancelled);
}

TEST(Shutdown, JobHandlesOutliveTheRuntime) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> rounds(1);
  auto job = rt->launch<BarrierRounds>({.max_groups = 4, .threads = 2}, {200, rounds.data()});
  rt->shutdown(Shutdown::wait);
  rt.reset();
  EXPECT_TRUE(job.done());
  EXPECT_NO_THROW(job.wait());
  EXPECT_EQ(rounds[0], 200u);
  EXPECT_GE(job.stats().barriers, 200u);
  job.set_cap(1);  // nothing to limit any more: a no-op, not a use of the runtime
  EXPECT_FALSE(job.cancel());
}

TEST(Shutdown, TheDestructorCancelsRunningJobs) {
  COOP_SKIP_UNDER_SANITIZER();
  ManagedArray<std::uint32_t> stop(1), rounds(1);
  Job spinner, barriers;
  {
    auto rt = test::make_runtime(6);
    spinner = rt->launch<test::Spinner>({.max_groups = 2, .threads = 2}, {stop.data()});
    barriers =
        rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {kForever, rounds.data()});
  }  // as when an exception unwinds past the runtime: no wait for jobs nobody stops
  EXPECT_THROW(spinner.wait(), job_cancelled);
  EXPECT_THROW(barriers.wait(), job_cancelled);
}

TEST(Shutdown, ADroppedSuspendedJobGivesItsPlaceUp) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> rounds(1);
  {
    auto job =
        rt->launch<BarrierRounds>({.max_groups = 4, .threads = 2}, {kForever, rounds.data()});
    ASSERT_TRUE(job.suspend());
    EXPECT_NE(rt->describe().find("suspended"), std::string::npos) << rt->describe();
  }
  EXPECT_EQ(rt->describe().find("job 0"), std::string::npos) << rt->describe();
  EXPECT_NO_THROW(rt->run_fraction(1.0, [](Task&) {}));
}

/// Sets *stop after `limit` unless disarmed first: a test whose wait would otherwise hang on a
/// Spinner ends, and says so (rescued()).
class Rescue {
 public:
  Rescue(std::uint32_t* stop, std::chrono::seconds limit = 20s)
      : thread_([this, stop, limit] {
          if (!eventually([&] { return disarmed_.load(); }, limit)) {
            rescued_ = true;
            atomic_ref<std::uint32_t>(*stop).store(1);
          }
        }) {}
  ~Rescue() { disarm(); }
  /// Whether the stop had to be set; joins the thread.
  bool disarm() {
    disarmed_ = true;
    if (thread_.joinable()) thread_.join();
    return rescued_;
  }

 private:
  std::atomic<bool> disarmed_{false}, rescued_{false};
  std::thread thread_;
};

// Letting go of a finished job gives its memory back without waiting for the job beside it
// (on a GPU, freeing device or pinned memory waits for every running kernel: this job would
// wait for a spinner only this thread stops).
TEST(Shutdown, DroppingAFinishedJobDoesNotWaitForTheOthers) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> stop(1), rounds(1);
  auto spinner = rt->launch<test::Spinner>({.max_groups = 3, .threads = 2}, {stop.data()});
  Rescue rescue(stop.data());
  {
    auto second = rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {200, rounds.data()});
    second.wait();
  }
  EXPECT_FALSE(rescue.disarm()) << "dropping a finished job waited for the job still running";
  EXPECT_EQ(rounds[0], 200u);
  EXPECT_FALSE(spinner.done());
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  spinner.wait();
}

/// Reads `counter` until it keeps its value for `quiet`: the workgroups that bump it are gone.
bool stays_put(std::uint32_t* counter, std::chrono::milliseconds quiet = 50ms) {
  const std::uint32_t before = atomic_ref<std::uint32_t>(*counter).load();
  std::this_thread::sleep_for(quiet);
  return atomic_ref<std::uint32_t>(*counter).load() == before;
}

// Dropping the last handle of a running job cancels it and returns once its workgroups are
// gone (the kernel must not touch buffers freed next), without stalling the jobs beside it: on
// a GPU the service thread that serves every job's events goes on serving the others.
TEST(Shutdown, DroppingARunningJobCancelsItAndWaitsForItsWorkgroups) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  StallReport stall(*rt);
  ManagedArray<std::uint32_t> stop(1), rounds(1);
  auto spinner = rt->launch<test::Spinner>({.max_groups = 3, .threads = 2}, {stop.data()});
  Rescue rescue(stop.data());
  {
    auto dropped =
        rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {kForever, rounds.data()});
    ASSERT_TRUE(eventually([&] { return atomic_ref<std::uint32_t>(rounds[0]).load() > 10; }));
  }
  // At once, not when the runtime ends: no workgroup of it runs, the scheduler let it go.
  EXPECT_TRUE(stays_put(rounds.data())) << "the dropped job's workgroups still run";
  EXPECT_LT(atomic_ref<std::uint32_t>(rounds[0]).load(), kForever);
  EXPECT_EQ(rt->describe().find("job 1"), std::string::npos) << rt->describe();
  // The task needs one of the spinner's workgroups: its kill report goes through the service.
  rt->run(1, [](Task&) {});
  EXPECT_FALSE(rescue.disarm()) << "the task waited until the running job was stopped";
  EXPECT_FALSE(spinner.done());
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  spinner.wait();
}

/// Spins on *stop without reaching any coop primitive: nothing can stop it early.
struct Oblivious {
  struct Params {
    std::uint32_t* stop;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    while (atomic_ref<std::uint32_t>(*p.stop).load() == 0) {
    }
    COOP_END(ctx);
  }
};

// A runtime of 4 slots on the backend under test that keeps its reports, and a thread that sets
// a stop flag once the first report came.
struct ReportingRuntime {
  std::mutex mu;
  std::vector<std::string> reports;
  Runtime rt{options()};

  RuntimeOptions options() {
    RuntimeOptions o;
    o.backend = test::kOnGpu ? RuntimeOptions::Select::cuda : RuntimeOptions::Select::cpu;
    o.cpu_slots = 4;
    o.report = [this](const std::string& what) {
      std::lock_guard lock(mu);
      reports.push_back(what);
    };
    return o;
  }
  std::thread stop_after_report(std::uint32_t& stop, std::chrono::seconds within = 20s) {
    return std::thread([this, &stop, within] {
      eventually(
          [&] {
            std::lock_guard lock(mu);
            return !reports.empty();
          },
          within);
      atomic_ref<std::uint32_t>(stop).store(1);
    });
  }
  /// The reports once the test is done with the runtime's threads.
  std::vector<std::string> taken() {
    std::lock_guard lock(mu);
    return reports;
  }
};

// Dropping a running job whose kernel reaches no protocol point waits for it (its buffers must
// outlive it), but not silently: after 5 s the runtime's report says what it waits for.
TEST(Shutdown, DroppingAJobThatCannotStopEarlyWaitsAndSaysSo) {
  COOP_SKIP_UNDER_SANITIZER();
  ReportingRuntime r;
  ManagedArray<std::uint32_t> stop(1);
  std::optional<Job> job;
  job.emplace(r.rt.launch<Oblivious>({.max_groups = 2, .threads = 1, .policy = Policy::fixed()},
                                     {stop.data()}));
  std::thread stopper = r.stop_after_report(stop[0], 30s);
  job.reset();  // returns once the kernel has ended
  stopper.join();
  const std::vector<std::string> reports = r.taken();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].find("last Job handle was dropped is still running after 5 s"),
            std::string::npos)
      << reports[0];
}

// A user mistake that throws while a job runs (here a task larger than the device, refused
// before anything runs) unwinds past the job's handle: the job is cancelled, its workgroups are
// gone before the buffers declared with it are freed, nothing hangs.
TEST(Shutdown, UnwindingPastARunningJobCancelsIt) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  StallReport stall(*rt);
  auto rounds = std::make_unique<ManagedArray<std::uint32_t>>(1);
  std::uint32_t* counter = rounds->data();
  bool ran = false;
  try {
    auto job = rt->launch<BarrierRounds>({.max_groups = 2, .threads = 2}, {kForever, counter});
    ASSERT_TRUE(eventually([&] { return atomic_ref<std::uint32_t>(*counter).load() > 10; }));
    const std::uint32_t too_many = rt->capacity() + 1;
    rt->run(too_many, [&](Task&) { ran = true; });
    ADD_FAILURE() << "a task of " << too_many << " workgroups was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("but the device holds only"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(ran);
  EXPECT_TRUE(stays_put(counter)) << "the unwound job's workgroups still run";
  rounds.reset();  // with the job gone, freeing its buffer is safe
  EXPECT_EQ(rt->describe().find("job 0"), std::string::npos) << rt->describe();
  EXPECT_NO_THROW(rt->run_fraction(1.0, [](Task&) {}));
}

// Impossible task sizes are refused with std::invalid_argument before anything runs: no work,
// no record, the running job untouched.
TEST(Shutdown, ImpossibleTaskSizesAreRefusedBeforeAnythingRuns) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> stop(1);
  auto job = rt->launch<test::Spinner>({.max_groups = 3, .threads = 2}, {stop.data()});
  const std::uint32_t m = job.active_groups();
  bool ran = false;
  auto work = [&](Task&) { ran = true; };
  using test::expect_invalid;
  expect_invalid([&] { rt->run(0, work); }, "a task needs at least one workgroup");
  expect_invalid([&] { rt->run(rt->capacity() + 1, work); }, "but the device holds only");
  expect_invalid([&] { rt->run(~0u, work); }, "but the device holds only");
  for (double f : {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN()})
    expect_invalid([&] { rt->run_fraction(f, work); }, "device fraction must be in (0, 1]");
  EXPECT_FALSE(ran);
  EXPECT_TRUE(rt->task_records().empty());
  EXPECT_EQ(job.active_groups(), m) << "a refused task took workgroups from the job";
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  job.wait();
}

// A task that must wait for a reserved job (adversarial policy, or Mode::persistent: it holds
// all N until it ends) is reported at once, once, naming the job and why.
void expect_reserved_job_reported(const Policy& policy, Mode mode, const std::string& needle) {
  ReportingRuntime r;
  ManagedArray<std::uint32_t> stop(1);
  auto job = r.rt.launch<test::Spinner>(
      {.max_groups = test::kOnGpu ? 0u : 4u, .threads = 2, .policy = policy, .mode = mode},
      {stop.data()});
  // The job ends once the report says the task waits for it.
  std::thread stopper = r.stop_after_report(stop[0]);
  r.rt.run(1, [](Task&) {});
  stopper.join();
  job.wait();
  const std::vector<std::string> reports = r.taken();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].find("waits until reserved jobs end: job 0"), std::string::npos)
      << reports[0];
  EXPECT_NE(reports[0].find(needle), std::string::npos) << reports[0];
  EXPECT_NE(reports[0].find("holds all N workgroups until it ends"), std::string::npos)
      << reports[0];
}

TEST(Shutdown, ATaskWaitingForAnAdversarialJobIsReported) {
  COOP_SKIP_UNDER_SANITIZER();
  expect_reserved_job_reported(Policy::adversarial(3), Mode::cooperative, "policy adversarial:3");
}

TEST(Shutdown, ATaskWaitingForAPersistentJobIsReported) {
  COOP_SKIP_UNDER_SANITIZER();
  expect_reserved_job_reported(Policy::generous(), Mode::persistent, "Mode::persistent");
}

// A task that fits beside a reserved job is not reported.
TEST(Shutdown, ATaskBesideAReservedJobIsNotReported) {
  bool reported = false;
  RuntimeOptions o;
  o.backend = test::kOnGpu ? RuntimeOptions::Select::cuda : RuntimeOptions::Select::cpu;
  o.cpu_slots = 6;
  o.report = [&](const std::string&) { reported = true; };
  Runtime rt(o);
  ManagedArray<std::uint32_t> stop(1);
  auto job = rt.launch<test::Spinner>(
      {.max_groups = 2, .threads = 2, .policy = test::adversarial(5)}, {stop.data()});
  rt.run(1, [](Task&) {});
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  job.wait();
  EXPECT_FALSE(reported);
}

TEST(Shutdown, DescribeShowsTheJobsState) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> stop(1);
  auto job = rt->launch<test::Spinner>({.max_groups = 4, .threads = 2}, {stop.data()});
  const std::string d = rt->describe();
  EXPECT_NE(d.find("job 0: N 4"), std::string::npos) << d;
  EXPECT_NE(d.find("M "), std::string::npos) << d;
  atomic_ref<std::uint32_t>(stop[0]).store(1);
  job.wait();
}

#if COOP_TEST_CUDA
__global__ void write_through_null(int* p) { p[threadIdx.x] = 1; }

// Exits 0 when the faulting task and the job it killed both reported errors.
[[noreturn]] void fault_in_a_task() {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint32_t> stop(1);
  auto job = rt->launch<test::Spinner>({.max_groups = 4, .threads = 64}, {stop.data()});
  bool task_error = false, job_error = false;
  try {
    rt->run(1, [](Task& t) { write_through_null<<<1, 32, 0, t.stream()>>>(nullptr); });
  } catch (const std::runtime_error& e) {
    task_error = std::string(e.what()).find("illegal") != std::string::npos;
    std::fprintf(stderr, "task: %s\n", e.what());
  }
  try {
    job.wait();
  } catch (const std::exception& e) {
    job_error = true;
    std::fprintf(stderr, "job: %s\n", e.what());
  }
  rt.reset();
  std::exit(task_error && job_error ? 0 : 1);
}

// A task whose kernel faults: the task's call reports the CUDA error, the cooperative job the
// fault also killed reports it too, and the runtime shuts down; nothing hangs. In a child
// process: the fault leaves the CUDA context unusable.
TEST(Faults, IllegalAddressInATaskIsAnErrorNotAHang) {
  COOP_SKIP_UNDER_SANITIZER();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_in_a_task(), ::testing::ExitedWithCode(0), "task: .*illegal");
}
#endif

// A green context partitions a GPU: a runtime on the CPU backend cannot honour one.
TEST(Runtime, AGreenContextNeedsTheCudaBackend) {
  RuntimeOptions o;
  o.backend = RuntimeOptions::Select::cpu;
  o.green_context = reinterpret_cast<CUgreenCtx_st*>(std::uintptr_t(1));
  try {
    Runtime rt(o);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("green_context"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coop

