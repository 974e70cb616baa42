// The host scheduler: tasks gather workgroups from running jobs and give them back; policies;
// launch validation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "coop/detail/scheduler.hpp"
#include "kernels/task_queue.hpp"

using namespace coop;
using coop::test::Spinner;

namespace {

/// A job as the scheduler sees it, driven by the test: it reports the M the test sets.
struct ScriptedJob : detail::JobControl {
  std::atomic<std::uint32_t> active{0}, target{0};
  std::atomic<bool> paused{false};
  std::atomic<int> preempts{0};
  std::uint32_t reported_active() const override { return active; }
  void set_target(std::uint32_t t, bool pause) override {
    target = t;
    paused = pause;
  }
  Preemption preemption() const override { return Preemption::suspend; }
  void preempt() override { ++preempts; }
  // set_target_after: taken when `in_stream_order` is set. As a GPU job's copy from its mirror
  // of the request, the target waits in `after` until the test says the stream has run
  // (landed()), and a set_target made meanwhile is what lands.
  std::atomic<bool> in_stream_order{false};
  std::atomic<std::uint32_t> after{0}, set_targets{0};
  bool after_pause = false;
  CUstream_st* after_stream = nullptr;
  bool set_target_after(std::uint32_t t, CUstream_st* s) override {
    if (!in_stream_order) return false;
    after = t;
    after_pause = false;
    after_stream = s;
    return true;
  }
  void landed() {
    if (after == 0) return;
    target = after.load();
    paused = after_pause;
    after = 0;
  }
};

/// Counts set_target calls (the writes the host sends); one made while a target waits in stream
/// order is also what that target's copy lands.
struct CountingJob : ScriptedJob {
  void set_target(std::uint32_t t, bool pause) override {
    ScriptedJob::set_target(t, pause);
    ++set_targets;
    if (after != 0) {
      after = t;
      after_pause = pause;
    }
  }
};

/// The task's stream as the scheduler sees it: a handle it passes on and never dereferences.
CUstream_st* fake_stream() {
  static int token;
  return reinterpret_cast<CUstream_st*>(&token);
}

/// `job` reports M = m to `s`.
void report(detail::Scheduler& s, ScriptedJob& job, std::uint32_t m) {
  job.active = m;
  s.membership_changed(&job);
}

/// `s` (8 units) under `policy`, with `job` admitted at N = 8 and reporting it.
void admit_under(detail::Scheduler& s, ScriptedJob& job, const char* policy) {
  s.set_preemption(PreemptionPolicy::parse(policy));
  ASSERT_EQ(s.admit(&job, LaunchConfig{}, 8), 8u);
  report(s, job, 8);
}

/// admit_under the shrink policy.
void admit_shrinking(detail::Scheduler& s, ScriptedJob& job) { admit_under(s, job, "shrink"); }

}  // namespace

// A request that arrives while a suspended job restarts (its kernel not yet reporting M) must
// not leave the job on workgroup 0 for good: on an H100 an l-sssp job ran on one workgroup for
// minutes (target 0, M 1, never grown again) under the suspend policy.
TEST(Scheduler, ARequestDuringARestartLeavesTheJobFreeToGrowBack) {
  detail::Scheduler s(8);
  s.set_preemption(PreemptionPolicy::parse("suspend"));
  ScriptedJob job;
  ASSERT_EQ(s.admit(&job, LaunchConfig{}, 8), 8u);
  job.active = 8;
  s.membership_changed(&job);
  // A task for the whole device: the job is asked to suspend, suspends, the task runs.
  auto first = s.request_task(8, 8, 0);
  EXPECT_EQ(job.preempts, 1);
  job.active = 0;
  s.job_suspended(&job, true);
  s.run_requested(first, [] {});
  // The task is done: the job is restarted on the whole device, but has not reported yet.
  EXPECT_EQ(job.target, 8u);
  ASSERT_EQ(job.active, 0u);
  // A second request now: the grant not yet consumed comes back, but not below workgroup 0.
  auto second = s.request_task(8, 8, 0);
  EXPECT_GE(job.target, 1u) << "a running job's target fell to 0";
  // The restarted kernel runs on workgroup 0 only, and the request is withdrawn before the job
  // reaches a suspension point: the job must grow back.
  job.active = 1;
  s.membership_changed(&job);
  s.drop_requested(second);
  EXPECT_EQ(job.target, 8u) << "the job was not grown back";
  job.active = 0;
  s.job_finished(&job);
}

// A task that takes a job down to workgroup 0 pauses that workgroup (target 1 sent with the
// pause) while it waits and runs, by kills and by the suspend path alike, unless the policy
// says ",no-pause"; a task that leaves the job more never pauses it, and it goes on once no task
// runs, also when the job cannot be grown (a cap of 1).
TEST(Scheduler, AJobShrunkToWorkgroupZeroForATaskIsPausedUntilNoTaskRuns) {
  for (const char* policy : {"shrink", "suspend", "hybrid", "shrink,no-pause"}) {
    SCOPED_TRACE(policy);
    const bool pauses = std::string(policy).find("no-pause") == std::string::npos;
    detail::Scheduler s(8);
    ScriptedJob job;
    admit_under(s, job, policy);
    if (HasFatalFailure()) return;
    // Half the job: only the suspend policy takes the job down to workgroup 0 for it.
    const bool half_pauses = std::string(policy) == "suspend";
    auto half = s.request_task(4, 4, 0);
    EXPECT_EQ(bool(job.paused), half_pauses);
    report(s, job, 4);
    s.run_requested(half, [&] { EXPECT_EQ(bool(job.paused), half_pauses); });
    EXPECT_FALSE(job.paused);
    // The job gets to its target, and then grows back to N.
    for (int step = 0; step < 2; ++step) {
      report(s, job, job.target.load());
    }
    ASSERT_EQ(job.active, 8u);
    auto whole = s.request_task(7, 7, 0);
    EXPECT_EQ(job.target, 1u);
    EXPECT_EQ(bool(job.paused), pauses);
    report(s, job, 1);
    s.run_requested(whole, [&] { EXPECT_EQ(bool(job.paused), pauses); });
    EXPECT_FALSE(job.paused) << "workgroup 0 stays paused after the task";
    EXPECT_EQ(job.target, 8u);
    s.job_finished(&job);
  }
  // A request that needs the job's workgroup 0 too (here: all 8 units) waits for the job to end
  // or suspend, which a paused workgroup 0 would never do: it is not paused, and a job paused
  // for a running task goes on when such a request arrives.
  for (const char* policy : {"shrink", "hybrid"}) {
    SCOPED_TRACE(policy);
    detail::Scheduler s(8);
    ScriptedJob job;
    admit_under(s, job, policy);
    if (HasFatalFailure()) return;
    auto everything = s.request_task(8, 8, 0);
    EXPECT_EQ(job.target, 1u);
    EXPECT_FALSE(job.paused) << "paused although the request waits for the job's end";
    s.drop_requested(everything);
    report(s, job, job.target.load());
    ASSERT_EQ(job.target, 8u);
    report(s, job, 8);
    auto whole = s.request_task(7, 7, 0);
    report(s, job, 1);
    ASSERT_TRUE(s.granted(whole));
    EXPECT_TRUE(job.paused);
    // A second request for one unit while the first runs: the running task's end serves it.
    auto one = s.request_task(1, 1, 0);
    EXPECT_TRUE(job.paused);
    // One for all 8: only the job's end could serve it.
    auto all = s.request_task(8, 8, 0);
    EXPECT_FALSE(job.paused) << "a request waiting for the job's end left it paused";
    s.drop_requested(all);
    s.drop_requested(one);
    s.run_requested(whole, [] {});
    EXPECT_FALSE(job.paused);
    s.job_finished(&job);
  }
  // On a GPU a job at N holds more than N workgroups' cost (the room it keeps on every SM), all
  // of which comes back when it shrinks: a task of all but workgroup 0 pauses it.
  {
    detail::Scheduler s(20);
    s.set_preemption(PreemptionPolicy::parse("shrink"));
    ScriptedJob job;
    ASSERT_EQ(s.admit(&job, LaunchConfig{}, 4, /*cost=*/4, /*full_units=*/20), 4u);
    report(s, job, 4);
    auto whole = s.request_task(16, 4, 0);
    EXPECT_EQ(job.target, 1u);
    EXPECT_TRUE(job.paused) << "the room kept at N was counted as missing";
    report(s, job, 1);
    s.run_requested(whole, [] {});
    EXPECT_FALSE(job.paused);
    s.job_finished(&job);
  }
  // A job capped at 1 is never grown after the task: it must still be told to go on.
  detail::Scheduler s(8);
  s.set_preemption(PreemptionPolicy::parse("shrink"));
  ScriptedJob job;
  ASSERT_EQ(s.admit(&job, LaunchConfig{.policy = Policy::capped(2)}, 8), 2u);
  report(s, job, 2);
  auto all = s.request_task(7, 7, 0);
  EXPECT_TRUE(job.paused);
  report(s, job, 1);
  s.set_cap(&job, 1);
  s.run_requested(all, [] {});
  EXPECT_FALSE(job.paused) << "a job at its limit stays paused after the task";
  EXPECT_EQ(job.target, 1u);
  s.job_finished(&job);
}

// A granted task holds its capacity from the grant until its work returns, though its thread
// starts the work without taking the scheduler's lock: nothing grows into that capacity, a
// second request waits for it, and the report names it as the running task's.
TEST(Scheduler, AGrantedTaskHoldsItsCapacityUntilItsWorkReturns) {
  detail::Scheduler s(8);
  s.set_preemption(PreemptionPolicy::parse("shrink"));
  ScriptedJob job;
  ASSERT_EQ(s.admit(&job, LaunchConfig{}, 8), 8u);
  report(s, job, 8);
  auto first = s.request_task(3, 3, 0);
  EXPECT_EQ(job.target, 5u);
  EXPECT_FALSE(s.granted(first));
  report(s, job, 5);  // the kills arrive: the request is whole
  EXPECT_TRUE(s.granted(first));
  std::atomic<bool> running{false}, release{false};
  std::thread task([&] {
    s.run_requested(first, [&] {
      running = true;
      while (!release) std::this_thread::yield();
    });
  });
  while (!running) std::this_thread::yield();
  const std::string during = s.describe();
  EXPECT_NE(during.find("running tasks hold 3\n"), std::string::npos) << during;
  EXPECT_EQ(during.find("request (priority"), std::string::npos) << during;
  // A second request finds nothing free: it asks the job, which keeps its workgroup 0.
  auto second = s.request_task(4, 4, 0);
  EXPECT_EQ(job.target, 1u);
  report(s, job, 1);
  EXPECT_TRUE(s.granted(second));
  s.run_requested(second, [] {});
  EXPECT_EQ(job.target, 1u) << "the job grew into the running task's capacity";
  release = true;
  task.join();
  EXPECT_EQ(job.target, 8u) << "the job did not get the capacity back after the task";
  EXPECT_EQ(s.task_records().size(), 2u);
}

// A waiting task's own thread can find the kills done (the job's M already reads the target)
// before the job's report has handed their capacity out. That capacity is the task's; asking
// the job for it again took an H200 job down to workgroup 0 for a request of half the device
// (coop bench, bfs with its workgroups numbered by SM: the job regrew onto the task's SMs, and
// the next half-device tasks waited seconds for the SMs they needed).
TEST(Scheduler, KillsAlreadyDoneAreNotAskedOfTheJobAgain) {
  detail::Scheduler s(8);
  ScriptedJob job;
  admit_shrinking(s, job);
  auto task = s.request_task(4, 4, 0);
  EXPECT_EQ(job.target, 4u);
  ASSERT_FALSE(s.granted(task));
  job.active = 4;  // the kills are done; the report (membership_changed) is still on its way
  std::uint32_t target_during = 0;
  bool paused_during = true;
  s.run_requested(task, [&] {  // waits for the grant, finding the capacity free itself
    target_during = job.target;
    paused_during = job.paused;
  });
  EXPECT_EQ(target_during, 4u) << "the job was asked again for capacity the task already had";
  EXPECT_FALSE(paused_during);
  s.membership_changed(&job);  // the late report changes nothing
  EXPECT_EQ(job.target, 8u) << "the job did not get the capacity back after the task";
}

// The same under a schedule: a device thread carries out each target after a random delay and
// reports it after another (up to past the waiter's spin for its grant), while tasks for half
// of the device come one after another. Nothing else runs, so no task may take the job below
// its half. Seeded; the threads' interleaving varies from run to run.
TEST(Scheduler, HalfDeviceTasksNeverTakeTheJobBelowItsHalf) {
  struct LowestJob : ScriptedJob {
    std::atomic<std::uint32_t> lowest{8};
    void set_target(std::uint32_t t, bool pause) override {
      ScriptedJob::set_target(t, pause);
      if (t < lowest) lowest = t;
    }
  };
  detail::Scheduler s(8);
  LowestJob job;
  admit_shrinking(s, job);
  std::atomic<bool> stop{false};
  std::atomic<std::uint32_t> reported{8};
  std::thread device([&] {
    std::mt19937 rng(20261129);
    std::uniform_int_distribution<int> us(0, 3000);
    while (!stop) {
      const std::uint32_t t = job.target;
      if (t == job.active) {
        std::this_thread::yield();
        continue;
      }
      reported = 0;
      std::this_thread::sleep_for(std::chrono::microseconds(us(rng) / 10));
      job.active = t;  // the workgroups have left (or joined)
      std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
      s.membership_changed(&job);  // ... and the host hears of it
      reported = t;
    }
  });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Joiner() {
      stop = true;
      t.join();
    }
  } joiner{stop, device};
  for (int i = 0; i < 60; ++i) {
    // Grown back and reported: the next task needs kills.
    const auto due = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (job.target != 8 || job.active != 8 || reported != 8) {
      if (std::chrono::steady_clock::now() > due) break;
      std::this_thread::yield();
    }
    ASSERT_EQ(job.target, 8u) << "the job did not grow back after task " << i;
    auto task = s.request_task(4, 4, 0);
    s.run_requested(task, [] {});
  }
  EXPECT_GE(job.lowest, 4u) << "a task for half of the device took the job below its half";
}

// The last task standing grows the job back behind its own work (Scheduler::grow_after): the
// job is asked for its whole size at once, in stream order, and the host sends nothing more
// at the task's end. The capacity stays the task's until then: nothing else is granted it.
TEST(Scheduler, TheLastTaskGrowsTheJobBackInStreamOrder) {
  detail::Scheduler s(8);
  CountingJob job;
  job.in_stream_order = true;
  admit_shrinking(s, job);
  auto whole = s.request_task(7, 7, 0);
  EXPECT_EQ(job.target, 1u);
  EXPECT_TRUE(job.paused);
  report(s, job, 1);
  ASSERT_TRUE(s.granted(whole));
  const std::uint32_t writes = job.set_targets;
  s.run_requested(whole, [&] {
    s.grow_after(whole, fake_stream());
    EXPECT_EQ(job.after, 8u) << "the job was not grown in stream order";
    EXPECT_EQ(job.after_stream, fake_stream());
    EXPECT_EQ(job.target, 1u) << "the host wrote the growth before the task's end";
    EXPECT_TRUE(job.paused);
    EXPECT_NE(s.describe().find("free -7"), std::string::npos)
        << "the task's units were handed out twice:\n"
        << s.describe();
    job.landed();
  });
  EXPECT_EQ(job.target, 8u);
  EXPECT_FALSE(job.paused);
  EXPECT_EQ(job.set_targets, writes) << "the host sent targets beside the growth";
  report(s, job, 8);
  // Declined by the backend (the CPU's): the host grows the job at the task's end as before.
  job.in_stream_order = false;
  auto again = s.request_task(7, 7, 0);
  report(s, job, 1);
  s.run_requested(again, [&] {
    s.grow_after(again, fake_stream());
    EXPECT_EQ(job.target, 1u);
  });
  EXPECT_EQ(job.target, 8u);
  s.job_finished(&job);
}

namespace {

/// A restartable job (KernelTraits::restartable): counts the host's restarts and the withdrawn
/// preemptions.
struct RestartableJob : ScriptedJob {
  std::atomic<int> restarts{0}, unpreempts{0};
  std::atomic<std::uint32_t> restarted_m{0};
  bool restartable() const override { return true; }
  void unpreempt() override { ++unpreempts; }
  void restart(std::uint32_t m) override {
    ++restarts;
    restarted_m = m;
  }
};

bool within_a_second(const std::function<bool()>& done) {
  for (int i = 0; i < 1000 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}

}  // namespace

// A restartable job that the (default) hybrid policy suspends for a whole-device task keeps its
// preemption once the task is granted (its workgroup 0 leaves at its next offer, and its slot is
// the task's), is not grown in stream order behind the task, and is restarted whole by the host
// at the task's end. A job that is not restartable has its preemption withdrawn at the grant, as
// before (it keeps workgroup 0, paused).
TEST(Scheduler, ARestartableJobStaysPreemptedForItsTaskAndRestartsWholeAfter) {
  detail::Scheduler s(8);
  RestartableJob job;
  job.in_stream_order = true;
  ASSERT_EQ(s.admit(&job, LaunchConfig{}, 8), 8u);
  report(s, job, 8);
  auto task = s.request_task(7, 7, 0);  // above hybrid's half of the device: a suspension
  EXPECT_EQ(job.preempts, 1);
  EXPECT_TRUE(job.paused);
  report(s, job, 1);
  ASSERT_TRUE(s.granted(task));
  EXPECT_EQ(job.unpreempts, 0) << "the suspension was withdrawn once the task was granted";
  job.active = 0;
  s.job_suspended(&job, true);
  s.run_requested(task, [&] {
    s.grow_after(task, fake_stream());
    EXPECT_EQ(job.after, 0u) << "grown in stream order while suspended";
    EXPECT_EQ(job.restarts, 0) << "restarted while the task runs";
  });
  EXPECT_TRUE(within_a_second([&] { return job.restarts == 1; })) << "not restarted";
  EXPECT_EQ(job.restarted_m, 8u);
  report(s, job, 8);
  s.job_finished(&job);

  // Not restartable: the preemption is withdrawn at the grant.
  detail::Scheduler t(8);
  struct : ScriptedJob {
    std::atomic<int> unpreempts{0};
    void unpreempt() override { ++unpreempts; }
  } kept;
  ASSERT_EQ(t.admit(&kept, LaunchConfig{}, 8), 8u);
  report(t, kept, 8);
  auto other = t.request_task(7, 7, 0);
  report(t, kept, 1);
  ASSERT_TRUE(t.granted(other));
  EXPECT_EQ(kept.unpreempts, 1);
  t.run_requested(other, [] {});
  t.job_finished(&kept);
}

// A restart queued when a task ended is launched with the job's target when it runs, not the M
// decided then. A request that came in between was granted what the job had not taken back yet
// (the job reported M 0): the job starts on what that task leaves it, and is not grown in stream
// order behind the task before its restart (the restart would write that growth at once). On an
// H200 the stale restart launched all N workgroups beside the task granted at once, whose
// kernels then never found room (the co-location benchmark stalled). A request that wants the
// job suspended again finds it suspended, not launched.
TEST(Scheduler, AQueuedRestartStartsWithTheTargetARequestLeftIt) {
  detail::Scheduler s(8, /*restart_thread=*/false);
  RestartableJob job;
  job.in_stream_order = true;
  ASSERT_EQ(s.admit(&job, LaunchConfig{}, 8), 8u);
  report(s, job, 8);
  auto first = s.request_task(7, 7, 0);  // above hybrid's half of the device: a suspension
  report(s, job, 1);
  job.active = 0;
  s.job_suspended(&job, true);
  s.run_requested(first, [] {});
  ASSERT_EQ(job.target, 8u) << "the restart was not decided at the task's end";
  ASSERT_EQ(job.restarts, 0);
  auto second = s.request_task(7, 7, 0);
  ASSERT_TRUE(s.granted(second)) << "the grants the job had not taken were not taken back";
  s.run_requested(second, [&] {
    s.grow_after(second, fake_stream());
    EXPECT_EQ(job.after, 0u) << "grown in stream order before its restart";
    s.run_restarts();
    EXPECT_EQ(job.restarts, 1);
    EXPECT_EQ(job.restarted_m, 1u) << "restarted on the capacity the running task holds";
    report(s, job, 1);
  });
  EXPECT_EQ(job.target, 8u) << "not grown back after the task";
  report(s, job, 8);

  // The same, but the second request wants the whole device: the job is suspended again.
  auto third = s.request_task(7, 7, 0);
  report(s, job, 1);
  job.active = 0;
  s.job_suspended(&job, true);
  s.run_requested(third, [] {});
  ASSERT_EQ(job.restarts, 1);
  const int preempts = job.preempts;
  auto whole = s.request_task(8, 8, 0);
  EXPECT_EQ(job.preempts, preempts + 1);
  EXPECT_FALSE(s.granted(whole)) << "granted before the job gave its capacity";
  s.run_restarts();
  EXPECT_EQ(job.restarts, 1) << "launched although a request wants it suspended";
  EXPECT_EQ(job.target, 0u);
  if (!s.granted(whole)) {  // the job would have to report a suspension first
    ADD_FAILURE() << "the job's suspension did not free its capacity";
    s.drop_requested(whole);
    return;
  }
  s.run_requested(whole, [] {});
  s.run_restarts();
  EXPECT_EQ(job.restarts, 2);
  EXPECT_EQ(job.restarted_m, 8u);
  report(s, job, 8);
  s.job_finished(&job);
}

/// A task's release gate (TaskLaunch::at_request) as the scheduler sees it: the jobs armed to
/// release it from the device.
struct RecordingGate : detail::ReleaseGate {
  std::vector<std::uint32_t> armed;  // m_at_most of each arm
  void arm(detail::JobControl&, std::uint32_t m_at_most) noexcept override {
    armed.push_back(m_at_most);
  }
};

// The jobs release a task enqueued at its request only when what they give is all the task's.
// A request that comes while another waits for the same workgroups, or runs on them, is
// released by the host when it is granted: armed, the job would have released it as soon as it
// had shrunk for the first, and its kernels would have run beside the first's (on an H200 a
// whole-device request queued behind another: its span p99 0.72 ms against 0.49).
TEST(Scheduler, OnlyATaskServedAloneIsReleasedByTheJobs) {
  for (const char* policy : {"shrink", "suspend"}) {
    SCOPED_TRACE(policy);
    detail::Scheduler s(8);
    ScriptedJob job;
    admit_under(s, job, policy);
    if (HasFatalFailure()) return;
    RecordingGate first_gate, second_gate, third_gate;
    auto first = s.request_task(7, 7, 0, &first_gate);
    EXPECT_FALSE(first_gate.armed.empty()) << "the task served alone is not released by the job";
    auto second = s.request_task(7, 7, 0, &second_gate);  // while the job shrinks for the first
    EXPECT_TRUE(second_gate.armed.empty()) << "armed while another task waits";
    if (std::string(policy) == "suspend") {
      job.active = 0;
      s.job_suspended(&job, true);
    } else {
      report(s, job, 1);
    }
    ASSERT_TRUE(s.granted(first));
    EXPECT_FALSE(s.granted(second));
    s.run_requested(first, [&] {
      auto third = s.request_task(7, 7, 0, &third_gate);  // while the first runs
      EXPECT_TRUE(third_gate.armed.empty()) << "armed while another task runs";
      s.drop_requested(third);
    });
    ASSERT_TRUE(s.granted(second)) << "the first's units did not go to the second";
    s.run_requested(second, [] {});
    EXPECT_TRUE(second_gate.armed.empty());
    s.job_finished(&job);
  }
}

// A growth in stream order is withdrawn, its target and pause restored, as soon as another
// request asks for capacity: that request is then served as if the growth had never been made
// (from the running task's end here, with workgroup 0 still paused), and is never handed the
// capacity the growth had promised the job. With two tasks running none is made at all.
TEST(Scheduler, AGrowthInStreamOrderIsWithdrawnWhenAnotherRequestComes) {
  detail::Scheduler s(8);
  CountingJob job;
  job.in_stream_order = true;
  admit_shrinking(s, job);
  auto first = s.request_task(7, 7, 0);
  report(s, job, 1);
  std::optional<detail::Scheduler::TaskTicket> second;
  s.run_requested(first, [&] {
    s.grow_after(first, fake_stream());
    ASSERT_EQ(job.after, 8u);
    second = s.request_task(7, 7, 0);
    EXPECT_EQ(job.target, 1u) << "the growth was not withdrawn";
    EXPECT_TRUE(job.paused) << "the withdrawal did not restore the pause";
    EXPECT_FALSE(s.granted(*second)) << "granted capacity the running task still holds";
    job.landed();  // the copy lands after the withdrawal: it writes the host's word
    EXPECT_EQ(job.target, 1u);
  });
  EXPECT_TRUE(s.granted(*second)) << "the running task's end did not serve the next request";
  EXPECT_EQ(job.target, 1u);
  EXPECT_TRUE(job.paused);
  s.run_requested(*second, [] {});
  EXPECT_EQ(job.target, 8u);
  report(s, job, 8);
  // Partial tasks: while another runs, the first to finish makes no growth.
  auto a = s.request_task(3, 3, 0);
  auto b = s.request_task(3, 3, 0);
  report(s, job, 2);
  ASSERT_TRUE(s.granted(a) && s.granted(b));
  s.run_requested(a, [&] {
    s.grow_after(a, fake_stream());
    EXPECT_EQ(job.after, 0u) << "grown in stream order while another task holds capacity";
  });
  EXPECT_EQ(job.target, 2u) << "the job grew into the running task's capacity";
  s.run_requested(b, [&] {
    s.grow_after(b, fake_stream());
    EXPECT_EQ(job.after, 8u);
    job.landed();
  });
  EXPECT_EQ(job.target, 8u);
  s.job_finished(&job);
}

TEST(Scheduler, TaskGathersThenJobRegrows) {
  auto rt = test::make_runtime(8);
  std::uint32_t stop = 0;
  auto job = rt->launch<Spinner>({.max_groups = 8, .threads = 2}, {&stop});
  EXPECT_EQ(job.active_groups(), 8u);
  for (std::uint32_t k : {1u, 2u, 4u, 7u}) {
    TaskRecord r = rt->run(k, [&](Task& t) {
      EXPECT_EQ(t.groups(), k);
      // While the task holds its slots the job runs on what is left.
      EXPECT_LE(job.active_groups(), 8u - k);
    });
    EXPECT_EQ(r.groups, k);
    EXPECT_GE(r.gather_ms(), 0.0);
    EXPECT_LE(r.request_ms, r.gathered_ms);
    // Capacity comes back through fork grants: the job returns to N.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (job.active_groups() < 8 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    EXPECT_EQ(job.active_groups(), 8u) << "job did not regrow after a task of " << k;
  }
  atomic_ref<std::uint32_t>(stop).store(1);
  job.wait();
  JobStats s = job.stats();
  EXPECT_EQ(s.kills, 1u + 2 + 4 + 7);
  EXPECT_EQ(s.forked_groups, 1u + 2 + 4 + 7);
  EXPECT_GE(s.timeline.size(), 2u);
  EXPECT_EQ(rt->task_records().size(), 4u);
}

TEST(Scheduler, AJobLaunchedBesideATaskStartsWithWhatIsLeftThenGrows) {
  auto rt = test::make_runtime(8);
  std::uint32_t stop = 0;
  std::optional<Job> job;
  // Three slots are the task's while the job starts: it must take at most the other five (it
  // took six when the slots gathered for its workgroup 0 were counted as free again).
  rt->run(3, [&](Task&) {
    job.emplace(rt->launch<Spinner>({.max_groups = 8, .threads = 2}, {&stop}));
    EXPECT_EQ(job->active_groups(), 5u);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (job->active_groups() < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  EXPECT_EQ(job->active_groups(), 8u) << "the job did not grow once the task ended";
  atomic_ref<std::uint32_t>(stop).store(1);
  job->wait();
}

TEST(Scheduler, FixedPolicyNeverResizesAndTasksWaitForFreeSlots) {
  auto rt = test::make_runtime(6);
  std::uint32_t stop = 0;
  auto job =
      rt->launch<Spinner>({.max_groups = 4, .threads = 2, .policy = Policy::fixed()}, {&stop});
  EXPECT_EQ(job.active_groups(), 4u);
  // Two slots are free: a task of 2 runs at once without touching the job.
  rt->run(2, [&](Task&) { EXPECT_EQ(job.active_groups(), 4u); });
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    atomic_ref<std::uint32_t>(stop).store(1);
  });
  // A task of 5 must wait for the fixed job's workgroups to leave.
  TaskRecord r = rt->run(5, [&](Task&) { EXPECT_EQ(atomic_ref<std::uint32_t>(stop).load(), 1u); });
  stopper.join();
  EXPECT_GE(r.gather_ms(), 10.0);
  job.wait();
  EXPECT_EQ(job.stats().kills, 0u);
}

TEST(Scheduler, CapPolicyThrottlesWhileRunning) {
  auto rt = test::make_runtime(8);
  std::uint32_t stop = 0;
  auto job =
      rt->launch<Spinner>({.max_groups = 8, .threads = 2, .policy = Policy::capped(3)}, {&stop});
  EXPECT_EQ(job.active_groups(), 3u);
  auto wait_for = [&](std::uint32_t m) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (job.active_groups() != m && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    return job.active_groups();
  };
  job.set_cap(8);
  EXPECT_EQ(wait_for(8), 8u);
  job.set_cap(2);
  EXPECT_EQ(wait_for(2), 2u);
  job.set_cap(5);
  EXPECT_EQ(wait_for(5), 5u);
  EXPECT_THROW(job.set_cap(0), std::invalid_argument);
  EXPECT_THROW(job.set_cap(9), std::invalid_argument);
  atomic_ref<std::uint32_t>(stop).store(1);
  job.wait();
}

TEST(Scheduler, TwoJobsShareTheDevice) {
  auto rt = test::make_runtime(8);
  std::uint32_t stop = 0;
  auto a = rt->launch<Spinner>({.max_groups = 8, .threads = 1}, {&stop});
  EXPECT_EQ(a.active_groups(), 8u);
  // A second job starts with what a task-free scheduler can give it: the first must shrink.
  auto b_thread = std::thread([&] {
    examples::TaskQueueBuffers buf(4, 200000, 500);
    auto b = rt->launch<examples::TaskQueue>({.max_groups = 4, .threads = 2}, buf.params());
    b.wait();
    EXPECT_EQ(*buf.sum, examples::TaskQueueBuffers::reference(200000));
  });
  // Make room for the second job through a task that then releases its slots to it.
  rt->run(4, [](Task&) {});
  b_thread.join();
  atomic_ref<std::uint32_t>(stop).store(1);
  a.wait();
}

TEST(Scheduler, RejectsImpossibleLaunchesAndTasks) {
  auto rt = test::make_runtime(4);
  std::uint32_t stop = 1;
  using test::expect_invalid;
  expect_invalid([&] { rt->launch<Spinner>({.max_groups = 5}, {&stop}); },
                 "max_groups 5 exceeds the workgroups that can be resident at once (4)");
  expect_invalid([&] { rt->launch<Spinner>({.max_groups = 2, .threads = 0}, {&stop}); },
                 "threads per workgroup must be in [1, 1024], got 0");
  expect_invalid([&] { rt->launch<Spinner>({.max_groups = 2, .threads = 2048}, {&stop}); },
                 "threads per workgroup must be in [1, 1024], got 2048");
  expect_invalid(
      [&] { rt->launch<Spinner>({.max_groups = 2, .policy = Policy::capped(3)}, {&stop}); },
      "cap policy needs a cap in [1, N=2]");
  expect_invalid(
      [&] { rt->launch<Spinner>({.max_groups = 2, .shared_carveout = 101}, {&stop}); },
      "shared_carveout must be -1 (the driver's choice) or a percentage in [0, 100], got 101");
  expect_invalid([&] { rt->run(0, [](Task&) {}); }, "a task needs at least one workgroup");
  expect_invalid([&] { rt->run(5, [](Task&) {}); },
                 "task asks for 5 workgroups but the device holds only 4");
  expect_invalid([&] { rt->run_fraction(1.5, [](Task&) {}); },
                 "a task's device fraction must be in (0, 1]");
}

TEST(Scheduler, TaskExceptionReturnsSlots) {
  auto rt = test::make_runtime(4);
  EXPECT_THROW(rt->run(4, [](Task&) { throw std::runtime_error("task failed"); }),
               std::runtime_error);
  TaskRecord r = rt->run(4, [](Task&) {});
  EXPECT_EQ(r.groups, 4u);
}

// submit(): the caller goes on while the job gives way; several tasks in flight at once, each
// with its own record; the work's exception reaches wait(); impossible sizes throw at once.
TEST(Scheduler, SubmittedTasksRunWithoutBlockingTheCaller) {
  auto rt = test::make_runtime(8);
  std::uint32_t stop = 0;
  auto job = rt->launch<Spinner>({.max_groups = 8, .threads = 2}, {&stop});
  std::atomic<int> gate{0}, ran{0};
  // The first task holds its slots until the caller, which is not blocked, opens the gate.
  TaskHandle first = rt->submit(3, [&](Task& t) {
    EXPECT_EQ(t.groups(), 3u);
    while (gate.load() == 0) std::this_thread::yield();
    ++ran;
  });
  EXPECT_TRUE(first);
  EXPECT_FALSE(first.done());
  std::vector<TaskHandle> more;
  for (std::uint32_t k : {1u, 2u})
    more.push_back(rt->submit(k, [&, k](Task& t) {
      EXPECT_EQ(t.groups(), k);
      // Three tasks of 3 + 1 + 2 slots fit beside workgroup 0: all hold theirs at once.
      EXPECT_LE(job.active_groups(), 8u - k);
      ++ran;
    }));
  for (auto& h : more) {
    TaskRecord r = h.record();
    EXPECT_LE(r.request_ms, r.gathered_ms);
    EXPECT_LE(r.gathered_ms, r.start_ms);
    EXPECT_LE(r.start_ms, r.end_ms);
  }
  EXPECT_EQ(ran.load(), 2) << "the small tasks ran while the first one held its slots";
  EXPECT_FALSE(first.done());
  gate.store(1);
  first.wait();
  EXPECT_TRUE(first.done());
  EXPECT_EQ(first.record().groups, 3u);
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(rt->task_records().size(), 3u);

  TaskHandle failing = rt->submit(2, [](Task&) { throw std::runtime_error("task failed"); });
  EXPECT_THROW(failing.wait(), std::runtime_error);
  EXPECT_TRUE(failing.done());
  EXPECT_THROW(rt->submit(0, [](Task&) {}), std::invalid_argument);
  EXPECT_THROW(rt->submit(9, [](Task&) {}), std::invalid_argument);
  EXPECT_THROW(rt->submit_fraction(1.5, [](Task&) {}), std::invalid_argument);
  EXPECT_EQ(rt->submit_fraction(0.5, [](Task&) {}).record().groups, 4u);
  EXPECT_FALSE(TaskHandle().done());
  EXPECT_THROW(TaskHandle().wait(), std::logic_error);
  // After the runtime's threads have slept a while, tasks submitted together all run (each on
  // its own stream on the CUDA backend).
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  std::vector<TaskHandle> later;
  for (int i = 0; i < 6; ++i) later.push_back(rt->submit(1, [&](Task&) { ++ran; }));
  for (auto& h : later) h.wait();
  EXPECT_EQ(ran.load(), 9);
  atomic_ref<std::uint32_t>(stop).store(1);
  job.wait();
}

// Right after a task, one runtime thread spins for the next (Runtime::submit starts a task
// without a wake-up then); tasks submitted then still run at once each on a thread of its own:
// the first waits for the second, which must not wait for the first's thread.
TEST(Scheduler, TasksSubmittedWhileAThreadSpinsRunTogether) {
  auto rt = test::make_runtime(8);
  for (int round = 0; round < 20; ++round) {
    EXPECT_EQ(rt->submit(1, [](Task&) {}).record().groups, 1u);  // a thread now spins
    std::atomic<bool> second_ran{false}, first_saw_it{false};
    TaskHandle first = rt->submit(1, [&](Task&) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!second_ran.load() && std::chrono::steady_clock::now() < give_up)
        std::this_thread::yield();
      first_saw_it.store(second_ran.load());
    });
    TaskHandle second = rt->submit(1, [&](Task&) { second_ran.store(true); });
    second.wait();
    first.wait();
    ASSERT_TRUE(first_saw_it.load())
        << "round " << round << ": the second task waited for the first one's thread";
  }
  EXPECT_EQ(rt->task_records().size(), 60u);
}

// A queue of submitted tasks behind one that holds the workgroups: each waits asleep, woken only
// when it is served next or granted (Scheduler::dispatch), and each runs longer than the one
// served next spins for its grant, so a grant nobody is woken for would leave the queue waiting
// for ever (ctest TIMEOUT). They run one at a time, by priority, then in submission order.
TEST(Scheduler, AQueueOfSubmittedTasksRunsByPriorityThenInOrder) {
  auto rt = test::make_runtime(8);
  std::uint32_t stop = 0;
  auto job = rt->launch<Spinner>({.max_groups = 8, .threads = 2}, {&stop});
  std::atomic<bool> holding{false}, release{false};
  TaskHandle holder = rt->submit(7, [&](Task&) {
    holding.store(true);
    while (!release.load()) std::this_thread::yield();
  });
  while (!holding.load()) std::this_thread::yield();  // granted before the queue forms
  constexpr int kTasks = 24, kPriorities = 3;
  std::mutex mu;
  std::vector<int> ran;
  std::vector<TaskHandle> queue;
  for (int i = 0; i < kTasks; ++i)
    queue.push_back(rt->submit(
        7,
        [&, i](Task&) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          std::lock_guard lock(mu);
          ran.push_back(i);
        },
        i % kPriorities));
  release.store(true);
  for (auto& h : queue) h.wait();
  holder.wait();
  std::vector<int> expected;
  for (int p = kPriorities - 1; p >= 0; --p)
    for (int i = p; i < kTasks; i += kPriorities) expected.push_back(i);
  EXPECT_EQ(ran, expected);
  atomic_ref<std::uint32_t>(stop).store(1);
  job.wait();
}

// A submitted task still waiting for capacity when the runtime shuts down fails with
// runtime_closed, as does one whose handle was dropped (it is not lost silently either).
TEST(Scheduler, SubmittedTasksAndShutdown) {
  auto rt = test::make_runtime(4);
  std::uint32_t stop = 0;
  auto job =
      rt->launch<Spinner>({.max_groups = 4, .threads = 1, .policy = Policy::fixed()}, {&stop});
  std::atomic<bool> dropped_ran{false};
  rt->submit(4, [&](Task&) { dropped_ran = true; });  // waits for the fixed job's end
  TaskHandle waiting = rt->submit(4, [](Task&) {});
  EXPECT_FALSE(waiting.done());
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rt->shutdown(Shutdown::cancel);
  });
  EXPECT_THROW(waiting.wait(), runtime_closed);
  stopper.join();
  EXPECT_THROW(rt->submit(1, [](Task&) {}), runtime_closed);
  EXPECT_FALSE(dropped_ran.load());
}

TEST(Policy, ParsesAndNames) {
  EXPECT_EQ(Policy::parse("generous").kind, Policy::Kind::generous);
  EXPECT_EQ(Policy::parse("fixed").kind, Policy::Kind::fixed);
  EXPECT_EQ(Policy::parse("adversarial:17").seed, 17u);
  EXPECT_FALSE(Policy::parse("adversarial:17").shrink_only);
  EXPECT_TRUE(Policy::parse("adversarial-shrink:5").shrink_only);
  EXPECT_EQ(Policy::parse("adversarial-shrink:5").name(), "adversarial-shrink:5");
  EXPECT_EQ(Policy::parse("adversarial:5").name(), "adversarial:5");
  EXPECT_EQ(Policy::parse("cap:3").cap, 3u);
  EXPECT_EQ(Policy::parse("cap:3").name(), "cap:3");
  EXPECT_THROW(Policy::parse("cap:0"), std::invalid_argument);
  EXPECT_THROW(Policy::parse("adversarial:"), std::invalid_argument);
  EXPECT_THROW(Policy::parse("greedy"), std::invalid_argument);
}

// A cooperative kernel that never offers kills nor reaches a resizing barrier: it keeps its
// workgroups until told to stop.
struct Hog {
  struct Params {
    std::uint32_t* stop;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) == 0) ctx.pause();
    COOP_END(ctx);
  }
};

namespace {
struct Reports {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& s) {
      std::lock_guard lock(mu);
      lines.push_back(s);
    };
  }
};
}  // namespace

TEST(Faults, TaskGetsAClearErrorWhenAJobStopsOfferingKills) {
  Reports reports;
  RuntimeOptions ro;
  ro.backend = RuntimeOptions::Select::cpu;
  ro.cpu_slots = 4;
  ro.gather_deadline_s = 0.2;
  ro.gather_deadline_fails = true;
  ro.report = reports.sink();
  Runtime rt(ro);
  std::uint32_t stop = 0;
  Job job = rt.launch<Hog>({.max_groups = 4}, {&stop});
  try {
    rt.run(2, [](Task&) { ADD_FAILURE() << "the task ran without its workgroups"; });
    FAIL() << "expected coop::gather_timeout";
  } catch (const gather_timeout& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("job 0 holds 4 units (M = 4 of N = 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("offer_kill and resizing barriers"), std::string::npos) << msg;
  }
  ASSERT_EQ(reports.lines.size(), 1u);
  atomic_ref<std::uint32_t>(stop).store(1);
  job.wait();
  // Nothing was lost: the whole device is free again.
  EXPECT_EQ(rt.run(4, [](Task&) {}).groups, 4u);
}

TEST(Faults, TaskWaitsPastTheReportAndRunsWhenCapacityFrees) {
  Reports reports;
  RuntimeOptions ro;
  ro.backend = RuntimeOptions::Select::cpu;
  ro.cpu_slots = 4;
  ro.gather_deadline_s = 0.1;
  ro.report = reports.sink();
  Runtime rt(ro);
  std::uint32_t stop = 0;
  Job job = rt.launch<Hog>({.max_groups = 4}, {&stop});
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    atomic_ref<std::uint32_t>(stop).store(1);
  });
  bool ran = false;
  TaskRecord r = rt.run(2, [&](Task&) { ran = true; });
  release.join();
  job.wait();
  EXPECT_TRUE(ran);
  EXPECT_GE(r.gather_ms(), 300.0) << "the task ran before the job let go";
  ASSERT_EQ(reports.lines.size(), 1u);
  EXPECT_NE(reports.lines[0].find("a task waited"), std::string::npos) << reports.lines[0];
}

// TaskLaunch is named and parsed like the other options; the CPU backend runs a task's work
// once its slots are held whatever the setting (there is no stream to enqueue on early).
TEST(Scheduler, TaskLaunchIsAnOptionTheCpuBackendRunsAfterTheGather) {
  EXPECT_EQ(parse_task_launch("at_request"), TaskLaunch::at_request);
  EXPECT_EQ(parse_task_launch(task_launch_name(TaskLaunch::after_gather)),
            TaskLaunch::after_gather);
  EXPECT_THROW(parse_task_launch("soon"), std::invalid_argument);
  RuntimeOptions ro;
  ro.backend = RuntimeOptions::Select::cpu;
  ro.cpu_slots = 4;
  ro.task_launch = TaskLaunch::at_request;
  Runtime rt(ro);
  EXPECT_EQ(rt.task_launch(), TaskLaunch::at_request);
  std::uint32_t stop = 0;
  Job job = rt.launch<Hog>({.max_groups = 4}, {&stop});
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    atomic_ref<std::uint32_t>(stop).store(1);
  });
  const double asked = rt.now_ms();
  double ran_at = 0;
  TaskHandle h = rt.submit(
      2, [&](Task&) { ran_at = rt.now_ms(); }, 0, TaskLaunch::at_request);
  const TaskRecord r = h.record();
  release.join();
  job.wait();
  EXPECT_GE(ran_at - asked, 150.0) << "the work ran before the job let go of its slots";
  EXPECT_GE(r.gather_ms(), 150.0);
  rt.set_task_launch(TaskLaunch::after_gather);
  EXPECT_EQ(rt.task_launch(), TaskLaunch::after_gather);
}
