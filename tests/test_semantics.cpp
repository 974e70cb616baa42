// One test per rule of the cooperative kernels semantics (paper §3.1), each checked by the
// kernel itself under adversarial schedules: violations are counted in memory the test reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backend.hpp"

using namespace coop;
using coop::test::hash3;

namespace {

/// Failure counters and observations shared by the instrumented kernels.
struct Probe {
  std::uint32_t not_below_m = 0;   // a live workgroup saw id >= M (ids not contiguous)
  std::uint32_t m_above_n = 0;     // M > N observed
  std::uint32_t zero_killed = 0;   // workgroup 0 was killed
  std::uint32_t duplicate = 0;     // two live workgroups with the same id
  std::uint32_t bad_transmit = 0;  // a new workgroup's transmit is not thread 0's
  std::uint32_t unstable_m = 0;    // M changed inside a resizing-barrier interval
  std::uint32_t bad_memory = 0;    // a global barrier did not order memory
  std::uint64_t kills = 0, forked = 0, observed_query = 0;
  std::uint64_t token = 0;       // next incarnation token
  std::uint64_t owner[64] = {};  // token of the live owner of each id
};

template <class Ctx>
COOP_HD void check_alive(Ctx& ctx, Probe* pr, std::uint64_t token) {
  if (ctx.local_id() != 0) return;
  const std::uint32_t m = ctx.num_groups();
  if (ctx.group_id() >= m) atomic_ref<std::uint32_t>(pr->not_below_m).fetch_add(1);
  if (m > ctx.max_groups()) atomic_ref<std::uint32_t>(pr->m_above_n).fetch_add(1);
  if (atomic_ref<std::uint64_t>(pr->owner[ctx.group_id()]).load() != token)
    atomic_ref<std::uint32_t>(pr->duplicate).fetch_add(1);
}

template <class Ctx>
COOP_HD std::uint64_t claim_id(Ctx& ctx, Probe* pr) {
  std::uint64_t token = 0;
  if (ctx.local_id() == 0) {
    token = atomic_ref<std::uint64_t>(pr->token).fetch_add(1) + 1;
    atomic_ref<std::uint64_t>(pr->owner[ctx.group_id()]).store(token);
  }
  return token;
}

// Kill/fork loop: every workgroup offers a kill and requests a fork each iteration.
struct KillFork {
  struct Params {
    Probe* probe;
    std::uint32_t rounds;
  };
  struct Transmit {
    std::uint32_t iteration = 0;
    std::uint32_t origin = 0;
    std::uint64_t value = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    std::uint64_t token = claim_id(ctx, p.probe);
    COOP_BEGIN(ctx);
    for (; t.iteration < p.rounds; ++t.iteration) {
      check_alive(ctx, p.probe, token);
      if (ctx.offer_kill()) {
        if (ctx.local_id() == 0) {
          atomic_ref<std::uint64_t>(p.probe->kills).fetch_add(1);
          if (ctx.group_id() == 0) atomic_ref<std::uint32_t>(p.probe->zero_killed).fetch_add(1);
        }
        return;
      }
      check_alive(ctx, p.probe, token);
      // Every thread holds its own value; new workgroups must receive thread 0's.
      t.origin = ctx.group_id();
      t.value = hash3(ctx.group_id(), ctx.local_id(), t.iteration);
      COOP_REQUEST_FORK(ctx);
      if (ctx.group_id() != t.origin) {
        // A new workgroup: it received thread 0's transmitted state.
        if (t.value != hash3(t.origin, 0, t.iteration))
          atomic_ref<std::uint32_t>(p.probe->bad_transmit).fetch_add(1);
        if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(p.probe->forked).fetch_add(1);
      }
      check_alive(ctx, p.probe, token);
    }
    COOP_END(ctx);
  }
};

// Resizing-barrier loop: M may only change at the barriers.
struct Resizing {
  struct Params {
    Probe* probe;
    std::uint32_t rounds;
  };
  struct Transmit {
    std::uint32_t iteration = 0;
    std::uint32_t origin = 0;
    std::uint64_t value = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    std::uint64_t token = claim_id(ctx, p.probe);
    COOP_BEGIN(ctx);
    for (; t.iteration < p.rounds; ++t.iteration) {
      {
        const std::uint32_t m_start = ctx.num_groups();
        for (int spin = 0; spin < 3; ++spin) ctx.pause();  // let others run inside the interval
        check_alive(ctx, p.probe, token);
        if (ctx.num_groups() != m_start && ctx.local_id() == 0)
          atomic_ref<std::uint32_t>(p.probe->unstable_m).fetch_add(1);
      }
      t.origin = ctx.group_id();
      t.value = hash3(ctx.group_id(), ctx.local_id(), t.iteration);
      COOP_RESIZING_BARRIER(ctx);
      if (t.origin != ctx.group_id()) {
        // A new workgroup: it joins as if forked from workgroup 0, with its thread 0's state.
        if (t.origin != 0 || t.value != hash3(0, 0, t.iteration))
          atomic_ref<std::uint32_t>(p.probe->bad_transmit).fetch_add(1);
      }
      check_alive(ctx, p.probe, token);
    }
    COOP_END(ctx);
  }
};

Probe run_killfork(Policy policy, std::uint32_t n, std::uint32_t threads, std::uint32_t rounds,
                   KernelTraits = {}) {
  auto rt = test::make_runtime(n);
  Managed<Probe> probe;
  auto job = rt->launch<KillFork>({.max_groups = n, .threads = threads, .policy = policy},
                                  {probe.get(), rounds});
  job.wait();
  return *probe;
}

void expect_clean(const Probe& p) {
  EXPECT_EQ(p.not_below_m, 0u) << "a live workgroup had id >= M: ids not contiguous";
  EXPECT_EQ(p.m_above_n, 0u);
  EXPECT_EQ(p.zero_killed, 0u) << "workgroup 0 was killed";
  EXPECT_EQ(p.duplicate, 0u) << "two live workgroups shared an id";
  EXPECT_EQ(p.bad_transmit, 0u);
  EXPECT_EQ(p.unstable_m, 0u);
}

}  // namespace

TEST(Semantics, OnlyTopIdKilledIdsContiguousZeroNeverKilled) {
  COOP_SKIP_UNDER_SANITIZER();
  std::uint64_t kills = 0, forks = 0;
  // At least 60 seeds, more while the adversary has not yet exercised enough kills and forks
  // (how often a seeded decision meets a fork depends on the interleaving: a loaded machine
  // gives fewer).
  for (std::uint64_t seed = 1; seed <= 60 || ((kills <= 30 || forks <= 10) && seed <= 600);
       ++seed) {
    Probe p = run_killfork(Policy::adversarial(seed), 6, 4, 40);
    expect_clean(p);
    kills += p.kills;
    forks += p.forked;
  }
  // The adversary must actually have exercised kills and forks.
  EXPECT_GT(kills, 30u);
  EXPECT_GT(forks, 10u);
}

TEST(Semantics, ForkGivesFreshIdsAndTransmitsThreadZeroState) {
  COOP_SKIP_UNDER_SANITIZER();
  for (std::uint64_t seed = 100; seed < 140; ++seed) {
    Probe p = run_killfork(Policy::adversarial(seed), 8, 8, 30);
    EXPECT_EQ(p.bad_transmit, 0u) << "seed " << seed;
    EXPECT_EQ(p.duplicate, 0u) << "seed " << seed;
    EXPECT_EQ(p.m_above_n, 0u) << "seed " << seed;
  }
}

TEST(Semantics, MStableWithinResizingBarrierInterval) {
  COOP_SKIP_UNDER_SANITIZER();
  std::uint64_t resizes = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto rt = test::make_runtime(6);
    Managed<Probe> probe;
    auto job = rt->launch<Resizing>(
        {.max_groups = 6, .threads = 4, .policy = Policy::adversarial(seed)}, {probe.get(), 30});
    job.wait();
    expect_clean(*probe);
    resizes += job.stats().resizes;
  }
  EXPECT_GT(resizes, 200u);
}

// The shrink-only adversary (for tools that run one kernel at a time) kills at offer_kill and
// shrinks at resizing barriers, and never forks or grows: M only goes down.
TEST(Semantics, ShrinkOnlyAdversaryNeverGrows) {
  std::uint64_t kills = 0, resizes = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto rt = test::make_runtime(6);
    const Policy policy = Policy::adversarial_shrinking(seed);
    Probe p = run_killfork(policy, 6, 4, 40);
    expect_clean(p);
    EXPECT_EQ(p.forked, 0u) << "seed " << seed;
    kills += p.kills;
    Managed<Probe> probe;
    auto job =
        rt->launch<Resizing>({.max_groups = 6, .threads = 4, .policy = policy}, {probe.get(), 30});
    job.wait();
    expect_clean(*probe);
    const JobStats s = job.stats();
    EXPECT_EQ(s.forked_groups, 0u) << "seed " << seed;
    for (std::size_t i = 1; i < s.timeline.size(); ++i)
      EXPECT_LE(s.timeline[i].active, s.timeline[i - 1].active) << "seed " << seed;
    resizes += s.resizes;
  }
  EXPECT_GT(kills, 20u);
  EXPECT_GT(resizes, 20u);
}

// A resizing barrier to M' in [1, N]: after it exactly ids [0, M') run.
struct CountAfterBarrier {
  struct Params {
    std::uint32_t rounds;
    std::uint32_t* seen;     // per round: how many workgroups passed the barrier
    std::uint32_t* max_id;   // per round: the largest id that passed
    std::uint32_t* m_after;  // per round: M after the barrier
    std::uint32_t* release;  // host flag: the test has set the cap for this round
  };
  struct Transmit {
    std::uint32_t step = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.step < p.rounds; ++t.step) {
      if (ctx.group_id() == 0 && ctx.local_id() == 0)
        while (atomic_ref<std::uint32_t>(*p.release).load() <= t.step) ctx.pause();
      COOP_RESIZING_BARRIER(ctx);
      if (ctx.local_id() == 0) {
        atomic_ref<std::uint32_t>(p.seen[t.step]).fetch_add(1);
        std::uint32_t id = ctx.group_id(), cur = atomic_ref<std::uint32_t>(p.max_id[t.step]).load();
        while (id > cur && !atomic_ref<std::uint32_t>(p.max_id[t.step]).cas(cur, id)) {
        }
        if (ctx.group_id() == 0)
          atomic_ref<std::uint32_t>(p.m_after[t.step]).store(ctx.num_groups());
      }
      ctx.global_barrier();
    }
    COOP_END(ctx);
  }
};

TEST(Semantics, ResizingBarrierKillsAndForksTheRightIds) {
  COOP_SKIP_UNDER_SANITIZER();
  const std::uint32_t n = 8, rounds = 8;
  auto rt = test::make_runtime(n);
  ManagedArray<std::uint32_t> seen(rounds), max_id(rounds), m_after(rounds);
  Managed<std::uint32_t> release;
  auto job = rt->launch<CountAfterBarrier>(
      {.max_groups = n, .threads = 2, .policy = Policy::capped(n)},
      {rounds, seen.data(), max_id.data(), m_after.data(), release.get()});
  const std::uint32_t caps[rounds] = {8, 3, 3, 1, 6, 8, 2, 5};
  for (std::uint32_t r = 0; r < rounds; ++r) {
    job.set_cap(caps[r]);
    // Kills are requested now; grants arrive as capacity is free: wait until the scheduler's
    // request is in place before letting the kernel reach the barrier.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    atomic_ref<std::uint32_t>(*release).store(r + 1);
    while (atomic_ref<std::uint32_t>(seen[r]).load() == 0) std::this_thread::yield();
  }
  job.wait();
  for (std::uint32_t r = 0; r < rounds; ++r) {
    EXPECT_EQ(m_after[r], caps[r]) << "round " << r;
    EXPECT_EQ(seen[r], m_after[r]) << "round " << r << ": workgroups past the barrier != M'";
    EXPECT_EQ(max_id[r] + 1, m_after[r]) << "round " << r << ": ids after the barrier not [0, M')";
  }
}

// A global barrier orders memory: values written before it are read after it by others.
struct BarrierMemory {
  struct Params {
    std::uint64_t* data;
    std::uint32_t rounds;
    std::uint32_t* errors;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    const std::uint64_t n = ctx.global_size(), me = ctx.global_id();
    for (std::uint32_t r = 0; r < p.rounds; ++r) {
      p.data[me] = hash3(r, me, 7);
      ctx.global_barrier();
      const std::uint64_t other = (me * 7 + r + 1) % n;
      if (p.data[other] != hash3(r, other, 7)) atomic_ref<std::uint32_t>(*p.errors).fetch_add(1);
      ctx.global_barrier();
    }
  }
};

TEST(Semantics, GlobalBarrierOrdersMemory) {
  for (Mode mode : {Mode::persistent, Mode::cooperative}) {
    auto rt = test::make_runtime(6);
    ManagedArray<std::uint64_t> data(6 * 8);
    Managed<std::uint32_t> errors;
    auto job = rt->launch<BarrierMemory>(
        {.max_groups = 6, .threads = 8, .policy = Policy::fixed(), .mode = mode},
        {data.data(), 200, errors.get()});
    job.wait();
    EXPECT_EQ(*errors, 0u);
    EXPECT_EQ(job.stats().barriers, 400u);
  }
}

// coop::fetch_increment hands every caller its own slot: threads push a data-dependent number
// of items (so the lanes of a warp call it at different times) to one of two worklists (so
// lanes at one call may name different counters), and every pushed item must be in its list
// exactly once, the lists exactly as long as the pushes.
struct SlotPushes {
  struct Params {
    std::uint32_t* length;  ///< length[2]: the lists' counters
    std::uint64_t* list[2];
    std::uint32_t rounds;
  };
  COOP_HD static std::uint32_t pushes(std::uint64_t r, std::uint64_t gid) {
    return std::uint32_t(hash3(r, gid, 1) % 5);
  }
  COOP_HD static std::uint32_t which(std::uint64_t r, std::uint64_t gid, std::uint64_t j) {
    return std::uint32_t(hash3(r, gid, j + 2) & 1);
  }
  COOP_HD static std::uint64_t item(std::uint64_t r, std::uint64_t gid, std::uint64_t j) {
    return gid << 32 | r << 8 | j;
  }
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    const std::uint64_t me = ctx.global_id();
    for (std::uint32_t r = 0; r < p.rounds; ++r)
      for (std::uint32_t j = 0; j < pushes(r, me); ++j) {
        const std::uint32_t l = which(r, me, j);
        p.list[l][fetch_increment(p.length[l])] = item(r, me, j);
      }
  }
};

TEST(Semantics, FetchIncrementHandsOutEverySlotOnce) {
  const std::uint32_t groups = 6, threads = test::kOnGpu ? 256 : 8, rounds = 40;
  const std::uint64_t capacity = std::uint64_t(groups) * threads * rounds * 4;
  auto rt = test::make_runtime(groups);
  ManagedArray<std::uint32_t> length(2);
  ManagedArray<std::uint64_t> a(capacity), b(capacity);
  auto job =
      rt->launch<SlotPushes>({.max_groups = groups, .threads = threads, .policy = Policy::fixed()},
                             {length.data(), {a.data(), b.data()}, rounds});
  job.wait();
  std::vector<std::uint64_t> want[2];
  for (std::uint64_t gid = 0; gid < std::uint64_t(groups) * threads; ++gid)
    for (std::uint32_t r = 0; r < rounds; ++r)
      for (std::uint32_t j = 0; j < SlotPushes::pushes(r, gid); ++j)
        want[SlotPushes::which(r, gid, j)].push_back(SlotPushes::item(r, gid, j));
  const ManagedArray<std::uint64_t>* lists[2] = {&a, &b};
  for (int l = 0; l < 2; ++l) {
    ASSERT_EQ(length[l], want[l].size()) << "list " << l;
    std::vector<std::uint64_t> got(lists[l]->data(), lists[l]->data() + length[l]);
    std::sort(got.begin(), got.end());
    std::sort(want[l].begin(), want[l].end());
    EXPECT_EQ(got, want[l]) << "list " << l;
  }
}

// The arrival count lives in 16 bits of the membership word and is never reset per barrier:
// far more arrivals than 2^16 must neither carry into the neighbouring field nor miscount.
TEST(Semantics, ArrivalCountWrapsSafely) {
  auto rt = test::make_runtime(6);
  ManagedArray<std::uint64_t> data(6 * 2);
  Managed<std::uint32_t> errors;
  const std::uint32_t rounds = test::kOnGpu ? 20000 : 8000;  // 2 x 6 arrivals a round: > 2^16
  auto job = rt->launch<BarrierMemory>({.max_groups = 6, .threads = 2},
                                       {data.data(), rounds, errors.get()});
  job.wait();
  EXPECT_EQ(*errors, 0u);
  EXPECT_EQ(job.stats().barriers, 2u * rounds);
}

// query() returns the number of workgroups the scheduler wants back, and a wanted workgroup's
// offer_kill right after the query that reported the request accepts (on the GPU the offer
// decides on the words the query loaded, not on older ones).
struct QueryProbe {
  struct Params {
    std::uint64_t* observed;
    std::uint32_t* stop;
    std::uint32_t task_groups;          // the one task's k: the wanted ids are the top k of N
    std::uint32_t* declined_by_wanted;  // offers of wanted ids that declined after the query
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    // The loop condition must be uniform across the workgroup: thread 0 decides for all.
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) == 0) {
      // A workgroup offers itself only after it has seen the request, so every workgroup that
      // leaves has observed query() while W was outstanding.
      const std::uint32_t q = ctx.query();
      if (q > 0) {
        if (ctx.local_id() == 0) {
          std::uint64_t seen = atomic_ref<std::uint64_t>(*p.observed).load();
          while (q > seen && !atomic_ref<std::uint64_t>(*p.observed).cas(seen, q)) {
          }
        }
        COOP_OFFER_KILL(ctx);
        if (ctx.local_id() == 0 && ctx.group_id() + p.task_groups >= ctx.max_groups())
          atomic_ref<std::uint32_t>(*p.declined_by_wanted).fetch_add(1);
      }
      ctx.pause();
    }
    COOP_END(ctx);
  }
};

TEST(Semantics, QueryReturnsOutstandingRequest) {
  // The job fills the device (N = all that fit), so a task of 3 needs 3 of its workgroups.
  auto rt = test::make_runtime(6);
  Managed<std::uint64_t> observed;
  Managed<std::uint32_t> stop, declined;
  auto job = rt->launch<QueryProbe>({.max_groups = 0, .threads = 2},
                                    {observed.get(), stop.get(), 3, declined.get()});
  ASSERT_EQ(job.active_groups(), job.max_groups());
  TaskRecord rec = rt->run(3, [&](Task& t) { EXPECT_EQ(t.groups(), 3u); });
  EXPECT_EQ(*observed, 3u) << "query() did not report the scheduler's request for 3 workgroups";
  EXPECT_EQ(*declined, 0u) << "a wanted workgroup's offer_kill declined after query() saw the "
                              "request";
  EXPECT_GE(rec.gather_ms(), 0.0);
  atomic_ref<std::uint32_t>(*stop).store(1);
  job.wait();
  EXPECT_EQ(job.stats().kills, 3u);
}

TEST(Semantics, BackwardsCompatibleModeIsAPlainPersistentKernel) {
  auto rt = test::make_runtime(6);
  Managed<Probe> probe;
  auto job = rt->launch<KillFork>({.max_groups = 6, .threads = 4, .mode = Mode::persistent},
                                  {probe.get(), 50});
  job.wait();
  expect_clean(*probe);
  JobStats s = job.stats();
  EXPECT_EQ(s.initial_groups, 6u);
  EXPECT_EQ(s.kills, 0u);
  EXPECT_EQ(s.forked_groups, 0u);
}

// App. B: kill in any order (ids need not be contiguous), and killing workgroup 0 when last.
struct AnyOrder : KillFork {
  static constexpr KernelTraits traits{.kill_any_order = true, .allow_kill_zero = false};
};

TEST(Semantics, AnyOrderKillsKeepIdsUniqueAndBounded) {
  COOP_SKIP_UNDER_SANITIZER();
  std::uint64_t kills = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    auto rt = test::make_runtime(6);
    Managed<Probe> probe;
    auto job = rt->launch<AnyOrder>(
        {.max_groups = 6, .threads = 2, .policy = Policy::adversarial(seed)}, {probe.get(), 30});
    job.wait();
    EXPECT_EQ(probe->duplicate, 0u);
    EXPECT_EQ(probe->m_above_n, 0u);
    EXPECT_EQ(probe->zero_killed, 0u);
    EXPECT_EQ(probe->bad_transmit, 0u);
    kills += probe->kills;
  }
  EXPECT_GT(kills, 50u);
}

// Suspend / resume: at a resizing barrier the job gives up every workgroup, keeping workgroup
// 0's transmitted state, and later continues from that barrier with a different M.
struct SuspendRounds {
  struct Params {
    std::uint32_t rounds;
    std::uint32_t* arrived;  // per round: workgroups that ran it
    std::uint32_t* m;        // per round: M seen by workgroup 0
  };
  struct Transmit {
    std::uint32_t step = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.step < p.rounds; ++t.step) {
      if (ctx.local_id() == 0) {
        atomic_ref<std::uint32_t>(p.arrived[t.step]).fetch_add(1);
        if (ctx.group_id() == 0) p.m[t.step] = ctx.num_groups();
      }
      for (int i = 0; i < 20; ++i) ctx.pause();
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

TEST(Semantics, SuspendAndResumeContinueFromTheBarrier) {
  auto rt = test::make_runtime(6);
  const std::uint32_t rounds = 400;
  ManagedArray<std::uint32_t> arrived(rounds), m(rounds);
  auto job = rt->launch<SuspendRounds>({.max_groups = 4, .threads = 2},
                                       {rounds, arrived.data(), m.data()});
  for (std::uint32_t resume_with : {2u, 1u, 4u}) {
    ASSERT_TRUE(job.suspend()) << "the job finished before it could be suspended";
    EXPECT_EQ(job.active_groups(), 0u);
    EXPECT_FALSE(job.done());
    EXPECT_THROW(job.wait(), std::logic_error);
    EXPECT_EQ(job.resume(resume_with), resume_with);
  }
  job.wait();
  EXPECT_EQ(job.stats().suspends, 3u);
  std::uint32_t resumed_rounds = 0;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    // Every round ran exactly once, by exactly the M workgroups present in it.
    ASSERT_GE(m[r], 1u) << "round " << r << " never ran";
    ASSERT_EQ(arrived[r], m[r]) << "round " << r;
    if (r > 0 && m[r] != m[r - 1]) ++resumed_rounds;
  }
  EXPECT_GE(resumed_rounds, 2u);
}

namespace {

// Workgroup 0 counts its rounds; every workgroup offers to leave and asks to grow in each, or
// (at_barrier) meets a resizing barrier instead. The workgroups stop together once the host
// sets `stop`: at the offers as they see it, at the barriers in the round after workgroup 0
// saw it (a barrier's members must agree on the last round).
struct Heartbeat {
  struct Params {
    std::uint64_t* beats;  // rounds workgroup 0 has run
    std::uint32_t* stop;
    std::uint32_t* last;  // at_barrier: the last round, once workgroup 0 has seen `stop`
    std::uint32_t at_barrier;
    std::uint64_t* alone = nullptr;  // rounds workgroup 0 ran with M = 1 (optional)
  };
  struct Transmit {
    std::uint32_t round = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (;; ++t.round) {
      if (ctx.local_id() == 0 && ctx.group_id() == 0) {
        atomic_ref<std::uint64_t>(*p.beats).fetch_add(1);
        if (p.alone && ctx.num_groups() == 1) atomic_ref<std::uint64_t>(*p.alone).fetch_add(1);
      }
      ctx.pause();
      if (p.at_barrier) {
        if (ctx.local_id() == 0 && ctx.group_id() == 0 &&
            atomic_ref<std::uint32_t>(*p.stop).load() != 0 &&
            atomic_ref<std::uint32_t>(*p.last).load() == 0)
          atomic_ref<std::uint32_t>(*p.last).store(t.round + 1);
        COOP_RESIZING_BARRIER(ctx);
        const std::uint32_t last = ctx.broadcast(atomic_ref<std::uint32_t>(*p.last).load());
        if (last != 0 && t.round >= last) break;
      } else {
        COOP_OFFER_KILL(ctx);
        COOP_REQUEST_FORK(ctx);
        if (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) != 0) break;
      }
    }
    COOP_END(ctx);
  }
};

std::uint64_t beats_of(std::uint64_t* beats) { return atomic_ref<std::uint64_t>(*beats).load(); }

/// Polls `done` for up to `limit`; true once it holds.
template <class F>
bool eventually(F&& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// poll_barrier() is a workgroup barrier that also tells whether the scheduler wants this
// workgroup (kill: an offer_kill would accept) or more workgroups (fork: a request_fork would add
// some). Each thread marks its shared slot before the poll and reads its neighbour's after it;
// a workgroup leaves where the poll says kill and forks where it says fork, so a task gets its
// workgroups and the job regrows through the polls alone.
struct PollProbe {
  struct Params {
    std::uint32_t* stop;    // nonzero: leave the loop (null: stop after `rounds` rounds in all)
    std::uint64_t* rounds;  // rounds run, over all workgroups
    std::uint64_t limit;
    std::uint32_t* unsynced;  // a thread read its neighbour's mark before the neighbour wrote it
    std::uint64_t* kills_seen;
    std::uint64_t* forks_seen;
  };
  struct Shared {
    std::uint32_t mark[64];
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    auto& sh = ctx.shared();
    COOP_BEGIN(ctx);
    for (std::uint32_t round = 1;; ++round) {
      const bool go =
          ctx.broadcast(ctx.local_id() == 0 &&
                        (p.stop ? atomic_ref<std::uint32_t>(*p.stop).load() == 0
                                : atomic_ref<std::uint64_t>(*p.rounds).fetch_add(1) < p.limit));
      if (!go) break;
      const std::uint32_t lid = ctx.local_id(), n = ctx.local_size();
      sh.mark[lid] = round;
      const Polled want = ctx.poll_barrier();
      if (sh.mark[(lid + 1) % n] != round) atomic_ref<std::uint32_t>(*p.unsynced).fetch_add(1);
      ctx.barrier();  // every thread has read its neighbour's mark before the next round's
      if (want.fork) {
        if (lid == 0) atomic_ref<std::uint64_t>(*p.forks_seen).fetch_add(1);
        ctx.request_fork(0);  // new workgroups start at the beginning, with round 1
      }
      if (want.kill) {
        if (lid == 0) atomic_ref<std::uint64_t>(*p.kills_seen).fetch_add(1);
        COOP_OFFER_KILL(ctx);
      }
      ctx.pause();
    }
    COOP_END(ctx);
  }
};

TEST(Semantics, PollBarrierIsABarrierThatReportsKillsAndForks) {
  auto rt = test::make_runtime(6);
  Managed<std::uint32_t> stop, unsynced;
  Managed<std::uint64_t> rounds, kills_seen, forks_seen;
  auto job = rt->launch<PollProbe>(
      {.max_groups = 0, .threads = 2},
      {stop.get(), rounds.get(), 0, unsynced.get(), kills_seen.get(), forks_seen.get()});
  ASSERT_EQ(job.active_groups(), job.max_groups());
  rt->run(3, [&](Task& t) { EXPECT_EQ(t.groups(), 3u); });
  EXPECT_TRUE(
      eventually([&] { return job.active_groups() == job.max_groups(); }, std::chrono::seconds(10)))
      << "the job did not regrow through poll_barrier's forks";
  atomic_ref<std::uint32_t>(*stop).store(1);
  job.wait();
  EXPECT_EQ(*unsynced, 0u) << "poll_barrier did not synchronise the workgroup";
  EXPECT_EQ(job.stats().kills, 3u);
  EXPECT_GE(*kills_seen, 3u);
  EXPECT_GE(*forks_seen, 1u);
  EXPECT_GE(job.stats().forked_groups, 3u);
}

TEST(Semantics, PollBarrierUnderAdversarialSchedules) {
  COOP_SKIP_UNDER_SANITIZER();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    auto rt = test::make_runtime(6);
    Managed<std::uint32_t> unsynced;
    Managed<std::uint64_t> rounds, kills_seen, forks_seen;
    auto job = rt->launch<PollProbe>(
        {.max_groups = 6, .threads = 4, .policy = Policy::adversarial(seed)},
        {nullptr, rounds.get(), 200, unsynced.get(), kills_seen.get(), forks_seen.get()});
    job.wait();
    EXPECT_EQ(*unsynced, 0u) << "seed " << seed;
    // An adversarial schedule says yes to both, so every poll takes both paths.
    EXPECT_GT(*kills_seen, 0u) << "seed " << seed;
    EXPECT_GT(*forks_seen, 0u) << "seed " << seed;
    EXPECT_EQ(*kills_seen, *forks_seen) << "seed " << seed;
  }
}

// A task that takes all but workgroup 0 of a job pauses that workgroup at its next offer or
// resizing barrier until the task ends (PreemptionPolicy::pause_kept); with ",no-pause" it works
// on beside the task. Afterwards the job goes on and grows back.
void expect_pause(const char* policy, bool at_barrier) {
  SCOPED_TRACE(std::string(policy) + (at_barrier ? ", resizing barriers" : ", offers"));
  const bool pauses = std::string(policy).find("no-pause") == std::string::npos;
  auto rt = test::make_runtime(6);
  rt->set_preemption(PreemptionPolicy::parse(policy));
  Managed<std::uint64_t> beats;
  Managed<std::uint32_t> stop, last;
  auto job = rt->launch<Heartbeat>({.max_groups = 6, .threads = 2},
                                   {beats.get(), stop.get(), last.get(), at_barrier ? 1u : 0u});
  ASSERT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)));
  std::uint64_t during = 0;
  rt->run_fraction(1.0, [&](Task&) {
    EXPECT_EQ(job.active_groups(), 1u);
    // Workgroup 0 is alone from here on and pauses at the first offer or barrier it meets.
    const std::uint64_t first = beats_of(beats.get());
    if (pauses) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      during = beats_of(beats.get()) - first;
    } else {
      EXPECT_TRUE(
          eventually([&] { return beats_of(beats.get()) >= first + 3; }, std::chrono::seconds(10)))
          << "workgroup 0 did not work beside the task";
    }
  });
  if (pauses) {
    EXPECT_LE(during, 1u) << "workgroup 0 worked on beside the task";
  }
  const std::uint64_t after = beats_of(beats.get());
  EXPECT_TRUE(
      eventually([&] { return beats_of(beats.get()) > after + 3; }, std::chrono::seconds(10)))
      << "workgroup 0 did not go on after the task";
  EXPECT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)))
      << "the job did not grow back";
  atomic_ref<std::uint32_t>(*stop.get()).store(1);
  job.wait();
}

}  // namespace

TEST(Semantics, WorkgroupZeroPausesWhileATaskHoldsTheRestOfItsJob) {
  COOP_SKIP_UNDER_SANITIZER();
  expect_pause("shrink", false);
  expect_pause("hybrid", false);  // the suspend path: no resizing barrier, kills to workgroup 0
  expect_pause("shrink", true);
  expect_pause("shrink,no-pause", false);
}

// A job that a whole-device task takes down to workgroup 0 at a resizing barrier waits there
// and grows back at that same barrier when the task ends: no round runs on workgroup 0 alone,
// neither beside the task nor after it (before, the round after each of those barriers did, and
// a kernel whose phases are long ran a whole phase on one workgroup).
TEST(Semantics, AJobPausedAtABarrierGrowsBackThere) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  rt->set_preemption(PreemptionPolicy::parse("shrink"));  // kills, not a suspension
  Managed<std::uint64_t> beats, alone;
  Managed<std::uint32_t> stop, last;
  auto job = rt->launch<Heartbeat>({.max_groups = 6, .threads = 2},
                                   {beats.get(), stop.get(), last.get(), 1u, alone.get()});
  ASSERT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)));
  for (int task = 0; task < 3; ++task) {
    atomic_ref<std::uint64_t>(*alone.get()).store(0);
    rt->run_fraction(1.0, [&](Task&) {
      EXPECT_EQ(job.active_groups(), 1u);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    EXPECT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)))
        << "the job did not grow back";
    const std::uint64_t after = beats_of(beats.get());
    EXPECT_TRUE(
        eventually([&] { return beats_of(beats.get()) > after + 3; }, std::chrono::seconds(10)));
    EXPECT_EQ(atomic_ref<std::uint64_t>(*alone.get()).load(), 0u)
        << "task " << task << ": workgroup 0 ran rounds alone";
  }
  atomic_ref<std::uint32_t>(*stop.get()).store(1);
  job.wait();
}

namespace {

// A restartable kernel (KernelTraits::restartable): workgroups claim items from a counter in
// global memory and offer between items, so workgroups started at the beginning (resume point 0)
// carry on where the others left.
struct RestartableItems {
  struct Params {
    std::uint32_t* next;  // the claim counter
    std::uint32_t* done;  // per item: times processed
    std::uint32_t items;
    std::uint32_t* stop;  // 1: leave at the next item
  };
  static constexpr KernelTraits traits{.restartable = true};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);
      ctx.request_fork(0);
      if (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) != 0) break;
      const std::uint32_t i =
          ctx.broadcast(ctx.local_id() == 0 ? atomic_ref<std::uint32_t>(*p.next).fetch_add(1) : 0u);
      if (i >= p.items) break;
      ctx.pause();
      if (ctx.local_id() == 0) atomic_ref<std::uint32_t>(p.done[i]).fetch_add(1);
    }
    COOP_END(ctx);
  }
};

// Runs RestartableItems under `policy` with `tasks` whole-device tasks of seeded random lengths
// and gaps; checks that every item claimed ran exactly once. Returns the job's stats.
JobStats run_restartable(const char* policy, int tasks, std::uint64_t seed, bool leaves) {
  SCOPED_TRACE(std::string(policy) + ", seed " + std::to_string(seed));
  auto rt = test::make_runtime(6);
  rt->set_preemption(PreemptionPolicy::parse(policy));
  const std::uint32_t items = 1u << 22;
  ManagedArray<std::uint32_t> done(items);
  Managed<std::uint32_t> next, stop;
  auto job = rt->launch<RestartableItems>({.max_groups = 6, .threads = 2},
                                          {next.get(), done.data(), items, stop.get()});
  auto claimed = [&] { return atomic_ref<std::uint32_t>(*next.get()).load(); };
  std::uint64_t rng = seed;
  for (int task = 0; task < tasks; ++task) {
    EXPECT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)))
        << "task " << task << ": the job did not come back whole";
    const std::uint32_t before = claimed();
    EXPECT_TRUE(eventually([&] { return claimed() > before; }, std::chrono::seconds(10)))
        << "task " << task << ": the job does not run";
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;  // a seeded LCG
    std::this_thread::sleep_for(std::chrono::microseconds((rng >> 33) % 3000));
    rt->run_fraction(1.0, [&](Task&) {
      if (leaves) {
        EXPECT_TRUE(eventually([&] { return job.active_groups() == 0; }, std::chrono::seconds(10)))
            << "task " << task << ": workgroup 0 did not leave";
      } else {
        EXPECT_EQ(job.active_groups(), 1u);
      }
      // Nothing of the job runs beside the task (workgroup 0 leaves or pauses at its next offer,
      // with at most the item it holds to finish).
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const std::uint32_t during = claimed();
      std::this_thread::sleep_for(std::chrono::microseconds(1000 + (rng >> 40) % 4000));
      EXPECT_EQ(claimed(), during) << "task " << task << ": the job ran beside the task";
    });
  }
  EXPECT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)));
  atomic_ref<std::uint32_t>(*stop.get()).store(1);
  job.wait();
  const std::uint32_t n = std::min(claimed(), items);
  EXPECT_GT(n, 0u);
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < items; ++i)
    if (done[i] != (i < n ? 1u : 0u)) ++wrong;
  EXPECT_EQ(wrong, 0u) << "items not run exactly once";
  return job.stats();
}

}  // namespace

// A whole-device task (the hybrid policy suspends jobs for it) takes a restartable job off the
// device whole, workgroup 0 included, at its offers; the job restarts at its beginning after
// the task and loses nothing. Under the shrink policy workgroup 0 stays, paused.
TEST(Semantics, ARestartableJobLeavesWholeForAWholeDeviceTaskAndRestarts) {
  COOP_SKIP_UNDER_SANITIZER();
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const JobStats st = run_restartable("hybrid", 4, seed, true);
    EXPECT_EQ(st.suspends, 4u) << "seed " << seed;
  }
  EXPECT_EQ(run_restartable("shrink", 2, 7, false).suspends, 0u);
}

// kill_requested() (detail::kill_wanted) says yes to workgroup 0 alone with target 0 (paused for
// a task, or a restartable job suspended whole), so that a kernel saves half-done work before the
// offer that pauses it or lets it leave; no while other members are still there.
TEST(Semantics, KillRequestedSaysYesToWorkgroupZeroLeftAloneForATask) {
  using detail::kill_wanted;
  using detail::with_active;
  const std::uint32_t flags = 0;
  EXPECT_TRUE(kill_wanted(0, with_active(0, 1), 0, flags));
  EXPECT_FALSE(kill_wanted(0, with_active(0, 2), 0, flags));  // the others leave first
  EXPECT_TRUE(kill_wanted(1, with_active(0, 2), 0, flags));
  EXPECT_FALSE(kill_wanted(0, with_active(0, 1), 1, flags));  // target 1: nothing asked
  EXPECT_FALSE(kill_wanted(0, with_active(0, 1), 0, detail::flag_no_resize));
  EXPECT_TRUE(kill_wanted(0, with_active(0, 1), 0, detail::flag_restartable));
}

// The same kernel under adversarial schedules: random kills (workgroup 0 kept) and forks at
// resume point 0 between items lose nothing and run nothing twice.
TEST(Semantics, ARestartableKernelUnderAdversarialSchedules) {
  COOP_SKIP_UNDER_SANITIZER();
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    auto rt = test::make_runtime(6);
    const std::uint32_t items = 3000;
    ManagedArray<std::uint32_t> done(items);
    Managed<std::uint32_t> next, stop;
    auto job = rt->launch<RestartableItems>(
        {.max_groups = 6, .threads = 2, .policy = Policy::adversarial(seed)},
        {next.get(), done.data(), items, stop.get()});
    job.wait();
    std::uint32_t wrong = 0;
    for (std::uint32_t i = 0; i < items; ++i) wrong += done[i] != 1u;
    EXPECT_EQ(wrong, 0u) << "seed " << seed;
    EXPECT_GT(job.stats().kills, 0u) << "seed " << seed;
  }
}

// A paused job can still be cancelled: its workgroup 0 leaves at once, not after the task.
TEST(Semantics, APausedJobCanBeCancelled) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(6);
  Managed<std::uint64_t> beats;
  Managed<std::uint32_t> stop, last;
  auto job = rt->launch<Heartbeat>({.max_groups = 6, .threads = 2},
                                   {beats.get(), stop.get(), last.get(), 0});
  ASSERT_TRUE(eventually([&] { return job.active_groups() == 6; }, std::chrono::seconds(10)));
  std::atomic<bool> release{false};
  TaskHandle task = rt->submit_fraction(
      1.0, [&](Task&) { eventually([&] { return release.load(); }, std::chrono::seconds(30)); }, 0,
      TaskLaunch::after_gather);
  ASSERT_TRUE(eventually([&] { return job.active_groups() == 1; }, std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // to its pause
  EXPECT_TRUE(job.cancel());
  EXPECT_TRUE(eventually([&] { return job.done(); }, std::chrono::seconds(10)))
      << "a paused workgroup 0 did not see the cancellation";
  EXPECT_THROW(job.wait(), job_cancelled);
  EXPECT_FALSE(task.done());
  release = true;
  task.wait();
}
