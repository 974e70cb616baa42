// Why the CPU backend runs a workgroup's threads as fibers: the cost of one workgroup barrier
// with T fibers on one OS thread vs T OS threads with std::barrier. Prints medians of 5 runs.
#include <barrier>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "coop/bench/percentiles.hpp"
#include "coop/cpu/fiber.hpp"

namespace {
using clk = std::chrono::steady_clock;

double fibers_ns(unsigned threads, unsigned rounds) {
  coop::cpu::FiberTeam team(threads, coop::cpu::FiberTeam::default_stack_bytes());
  struct Arg {
    coop::cpu::FiberTeam* team;
    unsigned threads, rounds, arrived = 0, generation = 0;
  } arg{&team, threads, rounds};
  auto t0 = clk::now();
  team.run(
      [](void* p, unsigned) {
        auto* a = static_cast<Arg*>(p);
        for (unsigned r = 0; r < a->rounds; ++r) {
          if (++a->arrived == a->threads) {
            a->arrived = 0;
            ++a->generation;
            continue;
          }
          unsigned g = a->generation;
          while (a->generation == g) a->team->yield();
        }
      },
      &arg);
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / rounds;
}

double os_threads_ns(unsigned threads, unsigned rounds) {
  std::barrier sync(threads);
  std::vector<std::thread> pool;
  auto t0 = clk::now();
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back([&] {
      for (unsigned r = 0; r < rounds; ++r) sync.arrive_and_wait();
    });
  for (auto& t : pool) t.join();
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / rounds;
}

}  // namespace

int main() {
  std::printf("workgroup barrier cost, ns per barrier (median of 5; %u hardware threads)\n",
              std::thread::hardware_concurrency());
  std::printf("%8s %14s %14s %8s\n", "threads", "fibers", "os-threads", "ratio");
  for (unsigned t : {4u, 16u, 64u, 256u}) {
    unsigned rounds = 20000 / t + 100;
    std::vector<double> f, o;
    for (int i = 0; i < 5; ++i) {
      f.push_back(fibers_ns(t, rounds));
      o.push_back(os_threads_ns(t, rounds));
    }
    double mf = coop::bench::median(f), mo = coop::bench::median(o);
    std::printf("%8u %14.0f %14.0f %8.1f\n", t, mf, mo, mo / mf);
  }
}
