// Checking mode: misuse of the primitives is reported with who did what where, never a hang.
#include <gtest/gtest.h>

#include <string>

#include "backend.hpp"

using namespace coop;

namespace {
std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const misuse_error& e) {
    return e.what();
  }
  return "";
}

struct DivergentBarrier {
  struct Params {};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    if (ctx.local_id() == 1) {
      ctx.barrier();
    } else {
      ctx.barrier();
    }
  }
};

struct DivergentOfferKill {
  struct Params {};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    COOP_BEGIN(ctx);
    if (ctx.local_id() != 2) COOP_OFFER_KILL(ctx);
    ctx.barrier();
    COOP_END(ctx);
  }
};

struct EarlyReturnThread {
  struct Params {};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    if (ctx.local_id() == 0) return;
    ctx.barrier();
  }
};

struct SkipsGlobalBarrier {
  struct Params {};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    if (ctx.group_id() == 2) return;
    ctx.global_barrier();
  }
};

struct WaitsForever {
  struct Params {
    std::uint32_t* flag;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    if (ctx.group_id() == 1)
      while (atomic_ref<std::uint32_t>(*p.flag).load() == 0) ctx.pause();
    ctx.global_barrier();
  }
};

struct ContinuesAfterKill {
  struct Params {};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    for (int i = 0; i < 1000; ++i) {
      ctx.offer_kill();  // ignores the answer
      ctx.barrier();
    }
  }
};

struct NestedSwitch {
  struct Params {};
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    COOP_BEGIN(ctx);
    for (int i = 0; i < 50; ++i) {
      switch (i % 2) {
        case 0:
          COOP_RESIZING_BARRIER(ctx);
          break;
        default:
          break;
      }
    }
    COOP_END(ctx);
  }
};
}  // namespace

TEST(Checking, PrimitiveNotReachedByAllThreads) {
  auto rt = test::make_runtime(2);
  std::string msg =
      failure_of([&] { rt->launch<DivergentBarrier>({.max_groups = 1, .threads = 4}, {}).wait(); });
  EXPECT_NE(msg.find("not reached by all threads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("thread 1: workgroup barrier at line"), std::string::npos) << msg;
}

TEST(Checking, OfferKillNotReachedByAllThreads) {
  auto rt = test::make_runtime(2);
  std::string msg = failure_of(
      [&] { rt->launch<DivergentOfferKill>({.max_groups = 2, .threads = 4}, {}).wait(); });
  EXPECT_NE(msg.find("thread 2: workgroup barrier"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offer_kill at line"), std::string::npos) << msg;
}

TEST(Checking, ThreadReturnsWhileOthersWait) {
  auto rt = test::make_runtime(2);
  std::string msg = failure_of(
      [&] { rt->launch<EarlyReturnThread>({.max_groups = 1, .threads = 3}, {}).wait(); });
  EXPECT_NE(msg.find("returned from the kernel"), std::string::npos) << msg;
}

TEST(Checking, GlobalBarrierNotReachedByAllWorkgroups) {
  auto rt = test::make_runtime(4);
  std::string msg = failure_of([&] {
    rt->launch<SkipsGlobalBarrier>({.max_groups = 4, .threads = 2, .policy = Policy::fixed()}, {})
        .wait();
  });
  EXPECT_NE(msg.find("can never complete"), std::string::npos) << msg;
  EXPECT_NE(msg.find("returned from the kernel without reaching it"), std::string::npos) << msg;
}

TEST(Checking, WatchdogReportsWhoWaitsWhere) {
  auto rt = test::make_runtime(3, /*watchdog_s=*/0.5);
  std::uint32_t flag = 0;
  std::string msg = failure_of([&] {
    rt->launch<WaitsForever>({.max_groups = 3, .threads = 2, .policy = Policy::fixed()}, {&flag})
        .wait();
  });
  EXPECT_NE(msg.find("no progress"), std::string::npos) << msg;
  EXPECT_NE(msg.find("workgroup 0: waits at global barrier"), std::string::npos) << msg;
  EXPECT_NE(msg.find("workgroup 1: running kernel code"), std::string::npos) << msg;
}

TEST(Checking, WorkgroupContinuesAfterBeingKilled) {
  auto rt = test::make_runtime(4);
  std::string msg = failure_of([&] {
    rt->launch<ContinuesAfterKill>(
          {.max_groups = 4, .threads = 2, .policy = Policy::adversarial(3)}, {})
        .wait();
  });
  EXPECT_NE(msg.find("after it was killed"), std::string::npos) << msg;
}

TEST(Checking, ResumePointInsideNestedSwitch) {
  auto rt = test::make_runtime(4);
  std::string msg = failure_of([&] {
    rt->launch<NestedSwitch>({.max_groups = 4, .threads = 1, .policy = Policy::adversarial(5)}, {})
        .wait();
  });
  EXPECT_NE(msg.find("nested switch"), std::string::npos) << msg;
}
