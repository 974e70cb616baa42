// Tests are written once against this header; each backend build instantiates them: the .cpp
// files build for the CPU backend, tests/gpu/*.cu include the same files with COOP_TEST_CUDA
// set and run them on the GPU (label gpu; every test skips when there is no device).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "coop/coop.hpp"
#include "coop/memory.hpp"

namespace coop::test {

// GPU binaries skip themselves without a device (tests/gpu/gpu_main.cpp).
#if COOP_TEST_CUDA
inline constexpr bool kOnGpu = true;
#else
inline constexpr bool kOnGpu = false;
#endif

/// True on the GPU when $COOP_SANITIZER is set: the tests run under compute-sanitizer, which
/// runs one kernel at a time (a forked grid, a task or a second job would wait for the job
/// beside it) and runs them far slower. Tests that need two grids at once skip themselves
/// (COOP_SKIP_UNDER_SANITIZER), adversarial schedules become shrink-only, the longest tests
/// use less work.
inline bool under_sanitizer() {
  static const bool on = kOnGpu && std::getenv("COOP_SANITIZER") != nullptr;
  return on;
}

/// True when $COOP_SANITIZER names racecheck, which instruments every shared-memory access and
/// block barrier and runs kernels another order of magnitude slower than memcheck: the longest
/// tests keep their code paths and checks but shrink their work again.
inline bool under_racecheck() {
  static const bool on =
      under_sanitizer() && std::string_view(std::getenv("COOP_SANITIZER")) == "racecheck";
  return on;
}
#define COOP_SKIP_UNDER_SANITIZER()                                                           \
  do {                                                                                        \
    if (coop::test::under_sanitizer())                                                        \
      GTEST_SKIP() << "needs two grids at once; compute-sanitizer runs one kernel at a time"; \
  } while (0)

/// The adversarial policy for seed `seed` (shrink-only when kernels run one at a time).
inline Policy adversarial(std::uint64_t seed) {
  return under_sanitizer() ? Policy::adversarial_shrinking(seed) : Policy::adversarial(seed);
}

/// A runtime of the backend under test. `slots` is the CPU backend's capacity; on the GPU the
/// capacity is the device's (tests that need a full device launch with max_groups = 0).
inline std::unique_ptr<Runtime> make_runtime(std::uint32_t slots, double watchdog_s = 60) {
  RuntimeOptions o;
  o.backend = kOnGpu ? RuntimeOptions::Select::cuda : RuntimeOptions::Select::cpu;
  o.cpu_slots = slots;
  o.watchdog_s = watchdog_s;
  return std::make_unique<Runtime>(o);
}

#ifdef COOP_TEST_DATA_DIR
/// The small real graphs (tests/data/graphs); $COOP_TEST_DATA_DIR overrides the build's path
/// (for binaries run on another machine).
inline std::string data_file(const std::string& name) {
  const char* dir = std::getenv("COOP_TEST_DATA_DIR");
  return std::string(dir ? dir : COOP_TEST_DATA_DIR) + "/" + name;
}
#endif

/// Expects `call` to throw std::invalid_argument whose message contains `needle`.
template <class F>
void expect_invalid(F&& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected std::invalid_argument mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// Adversarial seeds per example kernel: $COOP_TEST_SEEDS, else 1000 (CPU) / 200 (GPU).
inline std::uint64_t seeds() {
  if (const char* s = std::getenv("COOP_TEST_SEEDS")) return std::strtoull(s, nullptr, 10);
  return kOnGpu ? 200 : 1000;
}

/// Runs until told to stop, offering kills and requesting forks every iteration.
struct Spinner {
  struct Params {
    std::uint32_t* stop;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) == 0) {
      COOP_OFFER_KILL(ctx);
      COOP_REQUEST_FORK(ctx);
      ctx.pause();
    }
    COOP_END(ctx);
  }
};

/// splitmix-style hash for test values.
COOP_HD constexpr std::uint64_t hash3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull ^
                    (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
                    (c + 1) * 0x94d049bb133111ebull;
  return x ^ (x >> 29);
}

}  // namespace coop::test
