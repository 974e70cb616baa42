// A Poisson stream of requests served first come first served, for the co-location benchmark
// and `coop demo`: latency counts from each request's arrival, queueing included.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

namespace coop::bench {

struct Latencies {
  std::vector<double> ms;  ///< each request's arrival to its completion
  double busy_ms = 0;      ///< the requests' service time
  double span_ms = 0;  ///< first arrival to last completion (past the window when a queue built)
};

/// Poisson arrivals at `load` (the fraction of the device's time requests would take alone:
/// rate = load / alone_ms) for `seconds`; each request is served by `serve` (blocking), one at
/// a time in arrival order; `served` (if set) is told each latency as it is known.
inline Latencies poisson(double load, double alone_ms, double seconds, std::uint64_t seed,
                         const std::function<void()>& serve,
                         const std::function<void(double)>& served = {}) {
  using clk = std::chrono::steady_clock;
  using ms = std::chrono::duration<double, std::milli>;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(load / alone_ms);  // per ms
  Latencies out;
  const auto t0 = clk::now();
  double arrive = gap(rng);
  while (arrive < seconds * 1e3) {
    const auto at = t0 + std::chrono::duration_cast<clk::duration>(ms(arrive));
    // Sleep to ~100 us before the arrival, then spin: the request starts on time.
    if (at - clk::now() > std::chrono::microseconds(200))
      std::this_thread::sleep_for(at - clk::now() - std::chrono::microseconds(100));
    while (clk::now() < at) {
    }
    const auto start = clk::now();
    serve();
    const auto end = clk::now();
    out.ms.push_back(ms(end - at).count());
    out.busy_ms += ms(end - start).count();
    if (served) served(out.ms.back());
    arrive += gap(rng);
  }
  out.span_ms = ms(clk::now() - t0).count();
  return out;
}

}  // namespace coop::bench
