// The two example cooperative kernels give correct results under 1,000 adversarial schedules
// each (200 on the GPU) (random kill / fork / resize decisions, reproducible from the seed), and
// under the generous scheduler while high-priority tasks take workgroups away.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backend.hpp"
#include "kernels/frontier_bfs.hpp"
#include "kernels/task_queue.hpp"

using namespace coop;
using namespace coop::examples;

using coop::test::seeds;

namespace {

// Seeds [first, last] of the BFS's adversarial schedules. The seeds run in four quarters, four
// tests: each finishes in seconds on an idle machine and far within its time limit on a loaded
// one (the CPU backend's workgroups are threads, and a busy host slows every barrier).
void bfs_adversarial_seeds(std::uint64_t first, std::uint64_t last) {
  auto rt = test::make_runtime(8);
  std::uint64_t kills = 0, forked = 0;
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    // Shapes vary with the seed: sparse long rings and denser short graphs.
    auto g = random_graph(200 + std::uint32_t(seed % 7) * 150, std::uint32_t(seed % 3), seed);
    const std::uint32_t source = std::uint32_t(seed % g.n());
    BfsBuffers b(g, source);
    auto job =
        rt->launch<FrontierBfs>({.max_groups = 1 + std::uint32_t(seed % 8),
                                 .threads = 1 + std::uint32_t(seed % 4),
                                 .policy = test::adversarial(seed),
                                 .barrier = seed % 2 ? ResizeBarrier::query : ResizeBarrier::plain},
                                b.params());
    job.wait();
    ASSERT_EQ(b.level.to_vector(), reference_bfs(g, source))
        << "wrong BFS levels; reproduce with: coop demo --kernel bfs --policy "
        << test::adversarial(seed).name();
    kills += job.stats().kills;
    forked += job.stats().forked_groups;
  }
  const std::uint64_t n = last - first + 1;
  EXPECT_GT(kills, test::under_sanitizer() ? n / 4 : n);  // shrink-only: at most M-1 a run
  if (test::under_sanitizer())
    EXPECT_EQ(forked, 0u) << "the shrink-only adversary forked";
  else
    EXPECT_GT(forked, n);
}

// The quarter q (0..3) of seeds 1..seeds().
void bfs_adversarial_quarter(std::uint64_t q) {
  const std::uint64_t n = std::max<std::uint64_t>(seeds(), 4);
  bfs_adversarial_seeds(q * n / 4 + 1, (q + 1) * n / 4);
}

// One TaskQueue run over `queues` pools of `capacity` tasks under seed's adversarial schedule
// (a shape that varies with the seed), its sum and pending count checked; its stats.
JobStats task_queue_adversarial_run(Runtime& rt, std::uint64_t seed, std::uint32_t queues,
                                    std::uint64_t grain, std::uint32_t capacity) {
  const std::uint32_t groups = 1 + std::uint32_t(seed % 8);
  const std::uint64_t total = 5000 + seed * 37 % 20000;
  TaskQueueBuffers b(queues, total, grain, capacity);
  auto job = rt.launch<TaskQueue>({.max_groups = groups,
                                   .threads = 1 + std::uint32_t(seed % 4),
                                   .policy = test::adversarial(seed)},
                                  b.params());
  job.wait();
  EXPECT_EQ(*b.sum, TaskQueueBuffers::reference(total))
      << "wrong sum; reproduce with: coop demo --kernel queue --policy "
      << test::adversarial(seed).name() << " (" << queues << " pools of " << capacity << ")";
  EXPECT_EQ(*b.pending, 0u);
  return job.stats();
}

}  // namespace

TEST(FrontierBfs, AdversarialSchedulesFirstQuarter) { bfs_adversarial_quarter(0); }
TEST(FrontierBfs, AdversarialSchedulesSecondQuarter) { bfs_adversarial_quarter(1); }
TEST(FrontierBfs, AdversarialSchedulesThirdQuarter) { bfs_adversarial_quarter(2); }
TEST(FrontierBfs, AdversarialSchedulesFourthQuarter) { bfs_adversarial_quarter(3); }

TEST(TaskQueue, AdversarialSchedules) {
  auto rt = test::make_runtime(8);
  const std::uint64_t n = seeds();
  std::uint64_t kills = 0, forked = 0;
  const auto exercised = [&] {
    return kills > n / 10 && (test::under_sanitizer() ? forked == 0 : forked > n / 50);
  };
  // How often the adversary gets the chance to kill and fork depends on timing (a loaded 2-core
  // machine finishes queues in fewer rounds): more seeds, up to four times as many, until it
  // has; the per-seed result check is the real test.
  for (std::uint64_t seed = 1; seed <= n || (!exercised() && seed <= 4 * n); ++seed) {
    const JobStats s = task_queue_adversarial_run(*rt, seed, 1 + std::uint32_t(seed % 8),
                                                  64 + seed % 200, 8 + std::uint32_t(seed % 16));
    if (::testing::Test::HasFailure()) return;
    kills += s.kills;
    forked += s.forked_groups;
  }
  // The adversary must have exercised kills and forks.
  EXPECT_GT(kills, n / 10);
  if (test::under_sanitizer())
    EXPECT_EQ(forked, 0u) << "the shrink-only adversary forked";
  else
    EXPECT_GT(forked, n / 50);
}

TEST(FrontierBfs, CorrectWhileTasksTakeWorkgroups) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  auto g = random_graph(20000, 1, 42);
  for (ResizeBarrier kind : {ResizeBarrier::query, ResizeBarrier::plain}) {
    BfsBuffers b(g, 0);
    auto job =
        rt->launch<FrontierBfs>({.max_groups = 0, .threads = 4, .barrier = kind}, b.params());
    int tasks = 0;
    while (!job.done() && tasks < 200) {
      rt->run(1 + tasks % 7, [](Task&) {});
      ++tasks;
    }
    job.wait();
    EXPECT_EQ(b.level.to_vector(), reference_bfs(g, 0));
    EXPECT_GT(tasks, 0);
  }
}

// More pools than one steal scan looks at (WorkPool::kStealWindow): workgroups killed by the
// adversary leave tasks in pools that only the rotating scans of the others reach.
TEST(TaskQueue, AdversarialSchedulesWithMorePoolsThanOneScanReaches) {
  auto rt = test::make_runtime(8);
  constexpr std::uint32_t kPools = 3 * WorkPool<TaskQueue::Range>::kStealWindow + 5;
  for (std::uint64_t seed = 1; seed <= 60 && !::testing::Test::HasFailure(); ++seed)
    // Small pools: pushes overflow into the pools after a full one, far from the home pools.
    task_queue_adversarial_run(*rt, seed, kPools, 16 + seed % 64, 2 + std::uint32_t(seed % 3));
}

// One workgroup alone finds a task in any pool within the calls its rotating scan needs to pass
// every pool once, and a pool view without scan offsets looks at every pool in one call.
struct PauseOnly {
  COOP_HD void pause() {}
};

TEST(WorkPool, AStealScanReachesEveryPoolInTurn) {
  using Pool = WorkPool<std::uint32_t>;
  constexpr std::uint32_t kPools = 2 * Pool::kStealWindow + 7;
  constexpr std::uint32_t kCallsToPassAll =
      (kPools - 1 + Pool::kStealWindow - 1) / Pool::kStealWindow;
  PauseOnly ctx;
  for (std::uint32_t home : {0u, 5u, kPools - 1}) {
    for (std::uint32_t at = 0; at < kPools; ++at) {
      if (at == home) continue;
      WorkPoolBuffers<std::uint32_t> b(kPools, 4);
      ASSERT_TRUE(b.push(at, 1000 + at));
      Pool view = b.view();
      std::uint32_t task = 0, calls = 0;
      bool got = false;
      while (!got && calls < 2 * kCallsToPassAll) {
        got = view.take(ctx, home, home + 1, task);
        ++calls;
      }
      ASSERT_TRUE(got) << "a task in pool " << at << " was not found from home pool " << home;
      EXPECT_EQ(task, 1000 + at);
      EXPECT_LE(calls, kCallsToPassAll) << "pool " << at << ", home " << home;
      EXPECT_EQ(b.size(at), 0u);
      EXPECT_FALSE(view.take(ctx, home, home + 1, task)) << "a task was taken twice";
    }
  }
  // Without the offsets (a view made by hand before they existed): one call scans every pool.
  WorkPoolBuffers<std::uint32_t> b(kPools, 4);
  ASSERT_TRUE(b.push(kPools - 2, 7));
  Pool whole = b.view();
  whole.scan = nullptr;
  std::uint32_t task = 0;
  EXPECT_TRUE(whole.take(ctx, 0, 1, task));
  EXPECT_EQ(task, 7u);
}

TEST(TaskQueue, CorrectWhileTasksTakeWorkgroups) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  TaskQueueBuffers b(8, 3'000'000, 2000, 64);
  auto job = rt->launch<TaskQueue>({.max_groups = 0, .threads = 4}, b.params());
  int tasks = 0;
  while (!job.done() && tasks < 100) {
    TaskRecord r = rt->run(1 + tasks % 7, [](Task&) {});
    EXPECT_LE(r.gathered_ms, r.start_ms);
    ++tasks;
  }
  job.wait();
  EXPECT_EQ(*b.sum, TaskQueueBuffers::reference(3'000'000));
}
