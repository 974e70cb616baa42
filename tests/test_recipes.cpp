// The kernel author's guide's recipes (docs/guide.md; examples/kernels/jacobi.hpp,
// prime_queue.hpp and persistent_gemm.hpp) give the sequential reference's results under
// adversarial schedules (random kill / fork / resize decisions, reproducible from the seed) and
// beside high-priority tasks, so that the guide's code cannot rot.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>

#include "backend.hpp"
#include "kernels/jacobi.hpp"
#include "kernels/persistent_gemm.hpp"
#include "kernels/prime_queue.hpp"

using namespace coop;
using namespace coop::examples;

namespace {
// Each run has dozens of barriers: a fifth of the examples' seeds keeps the suite's time.
std::uint64_t recipe_seeds() { return std::max<std::uint64_t>(1, test::seeds() / 5); }
}  // namespace

TEST(JacobiRecipe, AdversarialSchedulesMatchTheSequentialIteration) {
  auto rt = test::make_runtime(8);
  const std::uint64_t n = recipe_seeds();
  std::uint64_t kills = 0, forked = 0, converged = 0;
  for (std::uint64_t seed = 1; seed <= n; ++seed) {
    // Plates of 3x3 to 20x20; some converge before max_iters, some stop there.
    const std::uint32_t side = 3 + std::uint32_t(seed % 18);
    const std::uint32_t tolerance = std::uint32_t(seed % 4) * 50;
    const std::uint32_t max_iters = 8 + std::uint32_t(seed % 5) * 12;
    JacobiBuffers b(side, tolerance, max_iters);
    auto job =
        rt->launch<Jacobi>({.max_groups = 1 + std::uint32_t(seed % 8),
                            .threads = 1 + std::uint32_t(seed % 4),
                            .policy = test::adversarial(seed),
                            .barrier = seed % 2 ? ResizeBarrier::query : ResizeBarrier::plain},
                           b.params());
    job.wait();
    const auto [plate, iterations] = JacobiBuffers::reference(side, tolerance, max_iters);
    ASSERT_EQ(*b.iterations, iterations) << "seed " << seed;
    ASSERT_EQ(b.result(), plate) << "seed " << seed;
    converged += iterations < max_iters;
    kills += job.stats().kills;
    forked += job.stats().forked_groups;
  }
  EXPECT_GT(converged, 0u) << "no run stopped by the termination test";
  EXPECT_LT(converged, n) << "every run converged: max_iters was never tested";
  EXPECT_GT(kills, n);  // the adversary resized at the barriers
  if (test::under_sanitizer())
    EXPECT_EQ(forked, 0u) << "the shrink-only adversary forked";
  else
    EXPECT_GT(forked, n);
}

TEST(PrimeQueueRecipe, AdversarialSchedulesCountEveryChunkOnce) {
  auto rt = test::make_runtime(8);
  const std::uint64_t n = recipe_seeds();
  std::uint64_t kills = 0, forked = 0;
  // Kills and forks happen only while the queue lasts, and a fast machine may drain it within
  // one workgroup's time slice: more seeds (at most 10n) until some schedule forked.
  const bool forks_expected = !test::under_sanitizer();
  for (std::uint64_t seed = 1; seed <= n || (forks_expected && forked == 0 && seed <= 10 * n);
       ++seed) {
    const std::uint64_t limit = 1000 + seed * 7919 % 20000, chunk = 16 + seed % 200;
    const std::uint32_t threads = 1 + std::uint32_t(seed % 4);
    PrimeQueueBuffers::check_threads(threads);
    PrimeQueueBuffers b(limit, chunk);
    auto job = rt->launch<PrimeQueue>({.max_groups = 1 + std::uint32_t(seed % 8),
                                       .threads = threads,
                                       .policy = test::adversarial(seed)},
                                      b.params());
    job.wait();
    // Per chunk: a lost chunk, or one counted twice, shows here even where a total would not.
    ASSERT_EQ(b.per_chunk.to_vector(), PrimeQueueBuffers::reference(limit, chunk))
        << "seed " << seed;
    kills += job.stats().kills;
    forked += job.stats().forked_groups;
  }
  // Loose bounds (how many turns a schedule gets depends on the machine); the per-seed check
  // above is the test, these say that the adversary did interfere.
  EXPECT_GT(kills, n / 10);
  if (forks_expected) {
    EXPECT_GT(forked, 0u) << "no schedule forked in " << 10 * n << " seeds";
  }
}

TEST(Recipes, CorrectWhileTasksTakeWorkgroups) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  JacobiBuffers jb(48, 0, 300);
  PrimeQueueBuffers pb(200000, 500);
  auto jacobi = rt->launch<Jacobi>({.max_groups = 4, .threads = 4}, jb.params());
  auto primes = rt->launch<PrimeQueue>({.max_groups = 4, .threads = 4}, pb.params());
  // Tasks borrow workgroups from both jobs while they run; their work is checked too.
  std::uint64_t task_sum = 0;
  for (int i = 0; i < 5 && !(jacobi.done() && primes.done()); ++i) {
    auto rec = rt->run(2, [&](Task& t) {
      EXPECT_EQ(t.groups(), 2u);
      if (t.stream() == nullptr) task_sum += 1;  // CPU backend: runs here, on this thread
    });
    EXPECT_GE(rec.gather_ms(), 0.0);
  }
  jacobi.wait();
  primes.wait();
  const auto [plate, iterations] = JacobiBuffers::reference(48, 0, 300);
  EXPECT_EQ(*jb.iterations, iterations);
  EXPECT_EQ(jb.result(), plate);
  EXPECT_EQ(pb.per_chunk.to_vector(), PrimeQueueBuffers::reference(200000, 500));
  if (rt->backend() == Backend::cpu) {
    EXPECT_GT(task_sum, 0u);
  }
}

// The persistent GEMM (tensor cores on the GPU) equals the exact product under adversarial
// schedules, over several passes; a stop flag ends a long run early with whole tiles only.
TEST(PersistentGemmRecipe, AdversarialSchedulesGiveTheExactProduct) {
  auto rt = test::make_runtime(8);
  const std::uint64_t n = std::max<std::uint64_t>(6, recipe_seeds() / 2);
  std::uint64_t kills = 0, resumed = 0;
  for (std::uint64_t seed = 1; seed <= n; ++seed) {
    const std::uint32_t m = 128 * (1 + std::uint32_t(seed % 3)),
                        cols = 128 * (1 + std::uint32_t(seed % 2));
    const std::uint32_t k = 32 * (1 + std::uint32_t(seed % 6)),
                        passes = 1 + std::uint32_t(seed % 3);
    const std::uint32_t threads = test::kOnGpu ? 256 : 1 + std::uint32_t(seed % 4);
    PersistentGemmBuffers::check_threads(threads, test::kOnGpu);
    // Offers inside tiles every 1 or 2 K-steps (or only between tiles), with as few as one
    // parking slot: workgroups leave mid-tile and others finish their tiles.
    PersistentGemmBuffers b(m, cols, k, passes, seed, 1 + std::uint32_t(seed % 4),
                            std::uint32_t(seed % 3));
    b.a.to_device();
    b.b.to_device();
    auto job = rt->launch<PersistentGemm>({.max_groups = 1 + std::uint32_t(seed % 8),
                                           .threads = threads,
                                           .policy = test::adversarial(seed)},
                                          b.params());
    job.wait();
    ASSERT_EQ(*b.done, b.tiles() * passes) << "seed " << seed;
    ASSERT_EQ(b.c.to_vector(), b.reference_rows(0, m)) << "seed " << seed;
    kills += job.stats().kills;
    resumed += *b.resumed;
  }
  EXPECT_GT(kills, 0u);
  EXPECT_GT(resumed, 0u);  // some tiles were finished by another workgroup than began them

  // Stopped: the job ends early, and every tile it counted is whole.
  PersistentGemmBuffers b(256, 256, 64, 1000000, 7);
  Managed<std::uint32_t> stop;
  auto job = rt->launch<PersistentGemm>({.max_groups = 4, .threads = test::kOnGpu ? 256u : 2u},
                                        b.params(stop.get()));
  while (atomic_ref<std::uint64_t>(*b.done).load() < 8) std::this_thread::yield();
  atomic_ref<std::uint32_t>(*stop).store(1);
  job.wait();
  EXPECT_LT(*b.done, b.tiles() * 1000000);
  EXPECT_EQ(b.c.to_vector(), b.reference_rows(0, 256));
}

// Tasks take workgroups from the GEMM while its tiles are half done: the wanted workgroups park
// their partial sums at the next offer inside the tile (kill_requested), and others finish them.
TEST(PersistentGemmRecipe, TasksTakeWorkgroupsMidTileAndTheProductStaysExact) {
  auto rt = test::make_runtime(8);
  const std::uint32_t threads = test::kOnGpu ? 256u : 2u;
  // Tens of milliseconds on either backend; 32 K-steps a tile, an offer after each.
  const std::uint32_t side = test::kOnGpu ? 1024 : 256, passes = test::kOnGpu ? 100 : 8;
  PersistentGemmBuffers b(side, side, 1024, passes, 3, test::kOnGpu ? 2048 : 16, 1);
  b.a.to_device();
  b.b.to_device();
  auto job = rt->launch<PersistentGemm>({.threads = threads}, b.params());  // the whole device
  // Tasks apart, so that the job regrows (forks mid-tile) before the next one takes them back;
  // until a tile was parked and resumed (a task may also find workgroups between tiles, or
  // not yet started on a loaded machine).
  const auto apart = std::chrono::microseconds(test::kOnGpu ? 1000 : 10000);
  std::uint32_t tasks = 0;
  while (!job.done() && tasks < 100 && atomic_ref<std::uint64_t>(*b.resumed).load() == 0) {
    std::this_thread::sleep_for(apart);
    rt->run(2, [](Task&) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
    ++tasks;
  }
  job.wait();
  ASSERT_EQ(*b.done, b.tiles() * passes);
  EXPECT_EQ(b.c.to_vector(), b.reference_rows(0, side));
  EXPECT_GT(job.stats().kills, 0u);
  EXPECT_GT(*b.resumed, 0u);  // a tile begun by one workgroup was finished by another
}

// Whole-device tasks under the default (hybrid) policy suspend the GEMM declared restartable:
// its workgroup 0 parks its tile and leaves too (KernelTraits::restartable), and the job
// restarts at its beginning after each task, resuming the parked tiles. The product stays exact.
TEST(PersistentGemmRecipe, WholeDeviceTasksSuspendTheRestartableGemmAndTheProductStaysExact) {
  auto rt = test::make_runtime(8);
  const std::uint32_t threads = test::kOnGpu ? 256u : 2u;
  const std::uint32_t side = test::kOnGpu ? 1024 : 256, passes = test::kOnGpu ? 400 : 8;
  PersistentGemmBuffers b(side, side, 1024, passes, 9, test::kOnGpu ? 2048 : 16, 1);
  b.a.to_device();
  b.b.to_device();
  auto job = rt->launch<RestartablePersistentGemm>({.threads = threads}, b.params());
  const auto apart = std::chrono::microseconds(test::kOnGpu ? 500 : 2000);
  std::uint32_t tasks = 0;
  while (!job.done() && (tasks < 3 || job.stats().suspends == 0) && tasks < 40) {
    std::this_thread::sleep_for(apart);
    rt->run_fraction(1.0,
                     [](Task&) { std::this_thread::sleep_for(std::chrono::microseconds(300)); });
    ++tasks;
  }
  job.wait();
  ASSERT_EQ(*b.done, b.tiles() * passes);
  EXPECT_EQ(b.c.to_vector(), b.reference_rows(0, side));
  EXPECT_GT(job.stats().suspends, 0u) << "no task suspended the job whole";
}

#if COOP_CUDA_COMPILER
// The plain kernel made interruptible (the checkpoint-exit-relaunch baseline of the co-location
// benchmark): stopped again and again at random moments, its tiles in progress parked and
// resumed by the next launch, it still computes the exact product.
TEST(PersistentGemmRecipe, InterruptedAndRelaunchedKernelGivesTheExactProduct) {
  auto rt = test::make_runtime(8);  // managed memory as the GPU tests have it
  PersistentGemmBuffers b(512, 512, 1024, 3, 5, 64, 1);
  b.a.to_device();
  b.b.to_device();
  Managed<std::uint32_t> stop;
  PersistentGemm::Params p = b.params(stop.get());
  p.park_on_stop = true;
  std::mt19937_64 rng(17);
  std::uint32_t launches = 0;
  while (atomic_ref<std::uint64_t>(*b.done).load() < p.total) {
    ASSERT_LT(launches, 100000u);
    atomic_ref<std::uint32_t>(*stop).store(0);
    persistent_gemm_plain<><<<8, 256>>>(p);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400));
    atomic_ref<std::uint32_t>(*stop).store(1);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ++launches;
  }
  EXPECT_EQ(*b.done, p.total);
  EXPECT_EQ(b.c.to_vector(), b.reference_rows(0, 512));
  EXPECT_GT(*b.resumed, 0u);
}
#endif

// The tile order (groups of PersistentGemm::kGroupRows rows of tiles, column by column) visits
// every tile of C once, whole groups or not, and the first row of tiles within the claims the
// demo's check counts on.
TEST(PersistentGemmRecipe, TileOrderVisitsEveryTileOnce) {
  for (std::uint32_t tiles_m : {1u, 3u, 15u, 16u, 17u, 40u})
    for (std::uint32_t tiles_n : {1u, 5u, 16u}) {
      PersistentGemm::Params p{};
      p.m = tiles_m * PersistentGemm::kTile;
      p.n = tiles_n * PersistentGemm::kTile;
      std::vector<int> seen(std::size_t(tiles_m) * tiles_n, 0);
      std::uint64_t last_of_first_row = 0;
      for (std::uint64_t t = 0; t < seen.size(); ++t) {
        const PersistentGemm::Place at = PersistentGemm::place(p, t);
        ASSERT_EQ(at.row0 % PersistentGemm::kTile, 0u);
        ASSERT_EQ(at.col0 % PersistentGemm::kTile, 0u);
        ASSERT_LT(at.row0, p.m);
        ASSERT_LT(at.col0, p.n);
        ++seen[std::size_t(at.row0 / PersistentGemm::kTile) * tiles_n +
               at.col0 / PersistentGemm::kTile];
        if (at.row0 == 0) last_of_first_row = t;
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), std::ptrdiff_t(seen.size()))
          << tiles_m << " x " << tiles_n << " tiles";
      PersistentGemmBuffers b(p.m, p.n, 32, 1);
      EXPECT_LE(last_of_first_row + 1, b.claims_through_first_row());
    }
}

TEST(PersistentGemmRecipe, RejectsShapesItCannotTile) {
  EXPECT_THROW(PersistentGemmBuffers(100, 128, 32, 1), std::invalid_argument);
  EXPECT_THROW(PersistentGemmBuffers(128, 128, 33, 1), std::invalid_argument);
  EXPECT_THROW(PersistentGemmBuffers(128, 128, 32, 0), std::invalid_argument);
  EXPECT_THROW(PersistentGemmBuffers::check_threads(128, true), std::invalid_argument);
  EXPECT_NO_THROW(PersistentGemmBuffers::check_threads(3, false));
  // Its launch bound (KernelTraits::max_threads), the same on every backend.
  auto rt = test::make_runtime(4);
  PersistentGemmBuffers b(128, 128, 32, 1);
  test::expect_invalid(
      [&] { rt->launch<PersistentGemm>({.max_groups = 1, .threads = 512}, b.params()); },
      "the kernel declares at most 256 threads per workgroup (KernelTraits::max_threads), got "
      "512");
}
