// coop::for_each: every item of every loop is visited exactly once, whatever the schedule does
// to the workgroups mid-loop (adversarial kills and forks, tasks taking workgroups, any kill
// order); misuse of a cursor is reported in checking mode.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backend.hpp"

using namespace coop;

namespace {

/// Runs `loops` for_each loops (one per resizing-barrier interval) over the ranges
/// [begin[l], end[l]) and counts each item's visits in visits[offset[l] + i - begin[l]].
struct VisitCounter {
  struct Params {
    LoopCursor* cursor;
    const std::uint64_t* begin;
    const std::uint64_t* end;
    const std::uint64_t* offset;
    std::uint32_t* visits;
    std::uint64_t* left_in_loop;  ///< workgroups that for_each told to leave
    std::uint32_t loops;
    std::uint32_t first_epoch;  ///< near 2^32 in some runs: the epoch wraps
    /// Between consecutive loops' epochs: 1, or more in some runs (the rules ask only that
    /// the epoch increase).
    std::uint32_t epoch_step;
    std::uint32_t grain;
    std::uint32_t interval_ns;
  };
  struct Transmit {
    std::uint32_t loop = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.loop < p.loops; ++t.loop) {
      COOP_REQUEST_FORK(ctx);  // forked workgroups start here and join the running loop
      {
        const std::uint64_t begin = p.begin[t.loop];
        std::uint32_t* row = p.visits + p.offset[t.loop];
        const auto visit = [&](std::uint64_t i) {
          atomic_ref<std::uint32_t>(row[i - begin]).fetch_add(1, memory_order::relaxed);
        };
        if (for_each(ctx, *p.cursor, p.first_epoch + t.loop * p.epoch_step, begin, p.end[t.loop],
                     p.grain, visit, p.interval_ns)) {
          if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(*p.left_in_loop).fetch_add(1);
          return;
        }
      }
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

/// The same loops with forks only where a loop offers (for_each_strided_joinable): workgroups
/// forked inside a loop start at its join point and claim what is left of it.
struct JoinableVisitCounter {
  struct Params {
    VisitCounter::Params loops;
    std::uint64_t* entered;  ///< workgroups that came to a loop from the start or a barrier
    std::uint64_t* reached;  ///< workgroups that came to a loop (the rest joined inside it)
  };
  using Transmit = VisitCounter::Transmit;
  static constexpr int kJoin = __LINE__;
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.loop < p.loops.loops; ++t.loop) {
      if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(*p.entered).fetch_add(1);
      COOP_JOIN_POINT(kJoin);
      if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(*p.reached).fetch_add(1);
      {
        const std::uint64_t begin = p.loops.begin[t.loop];
        std::uint32_t* row = p.loops.visits + p.loops.offset[t.loop];
        COOP_FOR_EACH_STRIDED_JOINABLE(
            ctx, kJoin, *p.loops.cursor, p.loops.first_epoch + t.loop * p.loops.epoch_step, begin,
            p.loops.end[t.loop], p.loops.grain,
            [&](std::uint64_t first, std::uint64_t end, std::uint64_t stride) {
              for (std::uint64_t i = first; i < end; i += stride)
                atomic_ref<std::uint32_t>(row[i - begin]).fetch_add(1, memory_order::relaxed);
            },
            p.loops.interval_ns);
      }
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

/// The same kernel with any workgroup killable (ids not contiguous).
struct VisitCounterAnyOrder : VisitCounter {
  static constexpr KernelTraits traits{.kill_any_order = true};
};

/// The ranges and counters of one run.
struct Loops {
  Loops(const std::vector<std::uint64_t>& begins, const std::vector<std::uint64_t>& ends)
      : begin(begins), end(ends), offset(begins.size() + 1) {
    for (std::size_t l = 0; l < begins.size(); ++l) offset[l + 1] = offset[l] + ends[l] - begins[l];
    visits = ManagedArray<std::uint32_t>(offset[begins.size()] + 1);
  }
  VisitCounter::Params params(std::uint32_t first_epoch, std::uint32_t grain,
                              std::uint32_t interval_ns, std::uint32_t epoch_step = 1) {
    return {cursor.get(),
            begin.data(),
            end.data(),
            offset.data(),
            visits.data(),
            left.get(),
            std::uint32_t(begin.size()),
            first_epoch,
            epoch_step,
            grain,
            interval_ns};
  }
  /// "" or the first item not visited exactly once.
  std::string check() const {
    for (std::size_t l = 0; l + 1 < offset.size(); ++l)
      for (std::uint64_t i = offset[l]; i < offset[l + 1]; ++i)
        if (visits[i] != 1)
          return "loop " + std::to_string(l) + " item " + std::to_string(begin[l] + i - offset[l]) +
                 " visited " + std::to_string(visits[i]) + " times";
    return "";
  }
  ManagedArray<std::uint64_t> begin, end, offset;
  ManagedArray<std::uint32_t> visits{1};
  Managed<LoopCursor> cursor;
  Managed<std::uint64_t> left;
};

/// Ranges of odd sizes for seed `seed`: empty, one item, less than a chunk, large, at offsets.
std::vector<std::uint64_t> sizes_for(std::uint64_t seed) {
  return {0, 1, 1 + seed % 7, 5000 + seed * 37 % 3000, seed % 3, 100 + seed % 900};
}

template <class K>
void adversarial_runs(const char* name) {
  auto rt = test::make_runtime(8);
  const std::uint64_t seeds = test::seeds() / 5;
  std::uint64_t kills = 0, forks = 0, left = 0;
  // Whether a workgroup is told to leave inside a loop depends on the workgroups' threads
  // running side by side: on a starved machine (one core, or a loaded CI runner) one thread
  // may run a whole loop in its time slice. More seeds, up to four times as many, until the
  // adversary has done each thing, so that the checks below say what was covered rather than
  // how busy the machine was.
  const auto covered = [&] {
    return kills > seeds / 10 && left > 0 && (test::under_sanitizer() || forks > 0);
  };
  for (std::uint64_t seed = 1; seed <= seeds || (!covered() && seed <= 4 * seeds); ++seed) {
    std::vector<std::uint64_t> begins, ends;
    for (std::uint64_t size : sizes_for(seed)) {
      const std::uint64_t begin = seed * 1009 % 5000;
      begins.push_back(begin);
      ends.push_back(begin + size);
    }
    Loops loops(begins, ends);
    // Offers after every chunk in some runs (most interference), the default in others; the
    // epochs wrap past 2^32 in some, and skip some values in others.
    const std::uint32_t interval = seed % 3 == 0 ? 0 : kOfferIntervalNs;
    const std::uint32_t first_epoch = seed % 2 ? 0xfffffffdu : std::uint32_t(seed);
    const std::uint32_t threads = 1 + std::uint32_t(seed % 4);
    auto job = rt->launch<K>(
        {.max_groups = 1 + std::uint32_t(seed % 8),
         .threads = threads,
         .policy = test::adversarial(seed)},
        loops.params(first_epoch, 1 + std::uint32_t(seed % 5), interval, seed % 4 == 1 ? 3u : 1u));
    job.wait();
    ASSERT_EQ(loops.check(), "") << name << " seed " << seed;
    kills += job.stats().kills;
    forks += job.stats().forked_groups;
    left += *loops.left;
  }
  // The per-item check is the test; these say the adversary did kill inside loops and fork.
  EXPECT_GT(kills, seeds / 10) << name;
  EXPECT_GT(left, 0u) << name << ": no workgroup was told to leave inside a loop";
  if (!test::under_sanitizer()) {
    EXPECT_GT(forks, 0u) << name;
  }
}

}  // namespace

TEST(ForEach, EveryItemOnceUnderAdversarialSchedules) {
  COOP_SKIP_UNDER_SANITIZER();
  adversarial_runs<VisitCounter>("contiguous ids");
}

TEST(ForEach, EveryItemOnceWhenAnyWorkgroupMayBeKilled) {
  COOP_SKIP_UNDER_SANITIZER();
  adversarial_runs<VisitCounterAnyOrder>("kill_any_order");
}

TEST(ForEach, EveryItemOnceWhileTasksTakeWorkgroups) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  std::vector<std::uint64_t> begins, ends;
  // Loops far longer than a time slice of the CPU backend's workgroup threads (a batch of
  // kills forms only while no workgroup waits at the barrier), and one short loop.
  for (std::uint64_t l = 0; l < 6; ++l) {
    begins.push_back(l * 17);
    ends.push_back(l * 17 + (l == 3 ? 7 : 2000000 + l * 1000));
  }
  Loops loops(begins, ends);
  auto job = rt->launch<VisitCounter>({.max_groups = 0, .threads = test::kOnGpu ? 256u : 4u},
                                      loops.params(1, 1, kOfferIntervalNs));
  // Tasks take workgroups while the loops run.
  std::uint32_t tasks = 0;
  while (!job.done() && tasks < 200) {
    rt->run(2, [](Task&) {});
    ++tasks;
  }
  job.wait();
  EXPECT_EQ(loops.check(), "");
  EXPECT_GT(tasks, 0u);
  // Where the job gave workgroups up (inside a loop or at a barrier) depends on when the CPU
  // backend's workgroup threads get a core; the adversarial tests check leaving mid-loop.
  EXPECT_GT(job.stats().kills, 0u);
}

TEST(ForEach, WorkgroupsForkedInsideAJoinableLoopJoinIt) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  const std::uint64_t seeds = test::seeds() / 5;
  std::uint64_t joined = 0;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    std::vector<std::uint64_t> begins, ends;
    for (std::uint64_t size : sizes_for(seed)) {
      begins.push_back(seed * 31 % 700);
      ends.push_back(begins.back() + size * 4);
    }
    Loops loops(begins, ends);
    Managed<std::uint64_t> entered, reached;
    auto job = rt->launch<JoinableVisitCounter>(
        {.max_groups = 2 + std::uint32_t(seed % 7),
         .threads = 1 + std::uint32_t(seed % 4),
         .policy = test::adversarial(seed)},
        {loops.params(std::uint32_t(seed), 1, seed % 2 ? 0 : kOfferIntervalNs,
                      seed % 3 == 2 ? 2u : 1u),
         entered.get(), reached.get()});
    job.wait();
    ASSERT_EQ(loops.check(), "") << "seed " << seed;
    ASSERT_GE(*reached, *entered);
    joined += *reached - *entered;
  }
  // The adversary forked inside loops (the per-item check above is the test).
  EXPECT_GT(joined, 0u);
}

// Misuse is reported by the CPU backend in checking mode and always on the GPU.
namespace {

/// Misuse: workgroup 0 runs two loops on one cursor without a barrier between them, and
/// workgroup 1 starts the first loop only after that: it finds the cursor on the later epoch.
struct NoBarrierBetweenLoops {
  struct Params {
    LoopCursor* cursor;
    std::uint32_t* started_second;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    if (ctx.group_id() == 1)
      while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.started_second).load()) == 0) ctx.pause();
    COOP_FOR_EACH(ctx, *p.cursor, 1, 0, 100, 1, [](std::uint64_t) {});
    COOP_FOR_EACH(ctx, *p.cursor, 2, 0, 100, 1, [](std::uint64_t) {});
    if (ctx.group_id() == 0 && ctx.local_id() == 0)
      atomic_ref<std::uint32_t>(*p.started_second).store(1);
  }
};

/// Misuse: the second loop's epoch is older than the first's.
struct EpochBackwards {
  struct Params {
    LoopCursor* cursor;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_FOR_EACH(ctx, *p.cursor, 5, 0, 100, 1, [](std::uint64_t) {});
    ctx.global_barrier();
    COOP_FOR_EACH(ctx, *p.cursor, 4, 0, 100, 1, [](std::uint64_t) {});
  }
};

std::unique_ptr<Runtime> misuse_runtime(bool checking = true) {
#if COOP_TEST_CUDA
  (void)checking;
  return test::make_runtime(4);
#else
  RuntimeOptions o;
  o.backend = RuntimeOptions::Select::cpu;
  o.cpu_slots = 4;
  o.checking = checking;
  return std::make_unique<Runtime>(o);
#endif
}

std::string misuse_of(Job& job) {
  try {
    job.wait();
  } catch (const misuse_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ForEach, CursorReusedWithoutBarrierIsReported) {
  auto rt = misuse_runtime();
  Managed<LoopCursor> cursor;
  Managed<std::uint32_t> started;
  auto job = rt->launch<NoBarrierBetweenLoops>(
      {.max_groups = 2, .threads = 3, .policy = Policy::fixed()}, {cursor.get(), started.get()});
  const std::string what = misuse_of(job);
  EXPECT_NE(what.find("coop::for_each"), std::string::npos) << what;
  EXPECT_NE(what.find("workgroup 1"), std::string::npos) << what;
}

TEST(ForEach, EpochGoingBackwardsIsReported) {
  auto rt = misuse_runtime();
  Managed<LoopCursor> cursor;
  auto job = rt->launch<EpochBackwards>({.max_groups = 3, .threads = 2, .policy = Policy::fixed()},
                                        {cursor.get()});
  const std::string what = misuse_of(job);
  EXPECT_NE(what.find("later loop"), std::string::npos) << what;
}

#if !COOP_TEST_CUDA
// The cursor alone (detail::issue_claim / resolve_claim), its workgroups' claims interleaved
// at random — each issued, then resolved after other workgroups' claims, as thread 0 claims
// ahead of its chunk — some workgroups stopping after a chunk (leaving, holding no claim) and
// others joining mid-loop: over consecutive loops on one cursor (epochs by 1, and some that
// skip, so that a loop finds its word reset ahead or stale) every item is claimed exactly once,
// and every workgroup's claims end.
TEST(ForEach, ClaimsCoverEveryItemOnceUnderAnyInterleaving) {
  std::mt19937_64 rng(2026);
  const std::uint64_t counts[] = {0, 1, 15, 17, 700, 5000};
  struct Workgroup {
    bool live = true;
    bool pending = false;
    detail::PendingClaim claim{0, 0};
  };
  for (int run = 0; run < 300; ++run) {
    LoopCursor cursor;
    std::uint32_t epoch = std::uint32_t(rng());
    for (int loop = 0; loop < 6; ++loop) {
      epoch += rng() % 4 == 0 ? 2 + std::uint32_t(rng() % 3) : 1u;
      const std::uint64_t begin = rng() % 1000, count = counts[rng() % std::size(counts)];
      std::vector<Workgroup> groups(1 + rng() % 40);
      std::vector<int> claimed(count, 0);
      for (std::size_t alive = groups.size(); alive > 0;) {
        const std::size_t g = rng() % groups.size();
        Workgroup& w = groups[g];
        if (!w.live) continue;
        if (!w.pending) {
          w.claim = detail::issue_claim(cursor, epoch, 1 + rng() % 300);
          w.pending = true;
          if (rng() % 2) continue;  // answered later, after other workgroups' claims
        }
        std::uint64_t chunk = 0;
        const auto r = detail::resolve_claim(cursor, epoch, begin, begin + count, w.claim, chunk);
        w.pending = false;
        ASSERT_NE(r, detail::ClaimResult::misuse) << "run " << run << " loop " << loop;
        const std::uint64_t n = r == detail::ClaimResult::chunk ? chunk >> detail::kIndexBits : 0;
        const std::uint64_t first = chunk & detail::kIndexMask;
        ASSERT_TRUE(n == 0 || (first >= begin && first + n <= begin + count));
        for (std::uint64_t i = first; i < first + n; ++i) ++claimed[i - begin];
        // Out of items, or leaving after its chunk (workgroup 0 never leaves: someone finishes).
        if (n == 0 || (g != 0 && rng() % 8 == 0)) {
          groups[g].live = false;
          --alive;
        }
        if (n != 0 && rng() % 50 == 0) groups.emplace_back(), ++alive;  // forked mid-loop
      }
      for (std::uint64_t i = 0; i < count; ++i)
        ASSERT_EQ(claimed[i], 1) << "run " << run << " loop " << loop << " item " << i << " of "
                                 << count << " with " << groups.size() << " workgroups";
    }
  }
}

// share_grain: half an even share of the range, never below one grain nor above four, whatever
// the sizes (degenerate ones included).
TEST(ForEach, ShareGrainIsHalfAnEvenShareBetweenOneAndFourGrains) {
  EXPECT_EQ(share_grain(1'000'000, 528, 256), 946u);    // 1e6 / (2 * 528), rounded down
  EXPECT_EQ(share_grain(100, 528, 256), 256u);          // fewer items than threads: one grain
  EXPECT_EQ(share_grain(1ull << 36, 528, 256), 1024u);  // a long loop: four grains
  EXPECT_EQ(share_grain(1000, 0, 0), 4u);               // no groups counts as one, no grain 1
  EXPECT_EQ(share_grain(1ull << 39, 1, 1u << 30), detail::kMaxClaim);  // never above a claim
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t items = rng() >> (rng() % 64);
    const std::uint32_t groups = std::uint32_t(rng() % 2000),
                        least = 1 + std::uint32_t(rng() % 4096);
    const std::uint64_t g = share_grain(items, groups, least);
    ASSERT_GE(g, least);
    ASSERT_LE(g, 4ull * least);
    if (g > least && g < 4ull * least) {
      ASSERT_EQ(g, items / (2ull * (groups ? groups : 1)));
    }
  }
}

// Without checking (CPU backend), the misused loop ends instead of hanging.
TEST(ForEach, MisuseWithoutCheckingEndsTheLoop) {
  auto rt = misuse_runtime(false);
  Managed<LoopCursor> cursor;
  auto job = rt->launch<EpochBackwards>({.max_groups = 3, .threads = 2, .policy = Policy::fixed()},
                                        {cursor.get()});
  EXPECT_EQ(misuse_of(job), "");
}
#endif
