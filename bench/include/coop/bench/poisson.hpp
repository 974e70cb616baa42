// A Poisson stream of requests served first come first served, for the co-location benchmark
// and `coop demo`: latency counts from each request's arrival, queueing included.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace coop::bench {

struct Latencies {
  std::vector<double> ms;  ///< each request's arrival to its completion
  double busy_ms = 0;      ///< the requests' service time
  double span_ms = 0;  ///< first arrival to last completion (past the window when a queue built)
};

/// The arrival times: Poisson at `load` (the fraction of the device's time requests would take
/// alone: rate = load / alone_ms) for `seconds` from construction, the same for every seed.
class PoissonArrivals {
 public:
  using clock = std::chrono::steady_clock;
  PoissonArrivals(double load, double alone_ms, double seconds, std::uint64_t seed)
      : rng_(seed), gap_(load / alone_ms), end_ms_(seconds * 1e3), t0_(clock::now()) {
    arrive_ms_ = gap_(rng_);
  }
  /// Waits for the next arrival (sleeps to ~100 us before it, then spins, so that the request
  /// starts on time; returns at once when it is past) and returns its time; false past the end.
  bool next(clock::time_point& at) {
    if (arrive_ms_ >= end_ms_) return false;
    at = t0_ + std::chrono::duration_cast<clock::duration>(ms(arrive_ms_));
    if (at - clock::now() > std::chrono::microseconds(200))
      std::this_thread::sleep_for(at - clock::now() - std::chrono::microseconds(100));
    while (clock::now() < at) {
    }
    arrive_ms_ += gap_(rng_);
    return true;
  }
  double since_start_ms() const { return ms(clock::now() - t0_).count(); }

 private:
  using ms = std::chrono::duration<double, std::milli>;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;  // per ms
  double end_ms_, arrive_ms_ = 0;
  clock::time_point t0_;
};

/// Poisson arrivals (PoissonArrivals) for `seconds`; each request is served by `serve`
/// (blocking), one at a time in arrival order; `served` (if set) is told each latency as it is
/// known.
inline Latencies poisson(double load, double alone_ms, double seconds, std::uint64_t seed,
                         const std::function<void()>& serve,
                         const std::function<void(double)>& served = {}) {
  using clk = PoissonArrivals::clock;
  using ms = std::chrono::duration<double, std::milli>;
  PoissonArrivals arrivals(load, alone_ms, seconds, seed);
  Latencies out;
  for (clk::time_point at; arrivals.next(at);) {
    const auto start = clk::now();
    serve();
    const auto end = clk::now();
    out.ms.push_back(ms(end - at).count());
    out.busy_ms += ms(end - start).count();
    if (served) served(out.ms.back());
  }
  out.span_ms = arrivals.since_start_ms();
  return out;
}

/// The same arrivals for a server that does not block on a request, as a serving system uses
/// an asynchronous API: `submit(i)` is called at request i's arrival and returns a handle;
/// a second thread calls `finish(i, handle)`, which waits for the request, in arrival order.
/// A request's latency runs from its arrival to the end of its finish(); its service time from
/// its arrival or the previous request's completion, whichever is later (as poisson() counts
/// a queue served one at a time). At most `in_flight` requests are submitted and not finished:
/// past that the next submission waits (its latency still counts from its arrival).
template <class Submit, class Finish>
Latencies poisson_submitted(double load, double alone_ms, double seconds, std::uint64_t seed,
                            std::size_t in_flight, Submit submit, Finish finish) {
  using clk = PoissonArrivals::clock;
  using ms = std::chrono::duration<double, std::milli>;
  using Handle = decltype(submit(std::size_t{}));
  struct Pending {
    std::size_t index;
    clk::time_point at;
    Handle handle;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Pending> pending;
  std::size_t outstanding = 0;  // submitted, not finished
  bool arrivals_over = false;
  Latencies out;
  std::exception_ptr submit_error, finish_error;  // the first of each; every request is finished
  std::thread finisher([&] {
    clk::time_point last_end{};
    for (;;) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !pending.empty() || arrivals_over; });
      if (pending.empty()) return;
      Pending p = std::move(pending.front());
      pending.pop_front();
      lock.unlock();
      try {
        finish(p.index, p.handle);
      } catch (...) {
        if (!finish_error) finish_error = std::current_exception();
      }
      const auto end = clk::now();
      lock.lock();
      out.ms.push_back(ms(end - p.at).count());
      out.busy_ms += ms(end - std::max(p.at, last_end)).count();
      last_end = end;
      --outstanding;
      cv.notify_all();
    }
  });
  PoissonArrivals arrivals(load, alone_ms, seconds, seed);
  std::size_t index = 0;
  try {
    for (clk::time_point at; arrivals.next(at); ++index) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return outstanding < std::max<std::size_t>(in_flight, 1); });
        ++outstanding;
      }
      Handle h = submit(index);
      std::lock_guard lock(mu);
      pending.push_back({index, at, std::move(h)});
      cv.notify_all();
    }
  } catch (...) {
    submit_error = std::current_exception();
  }
  {
    std::lock_guard lock(mu);
    arrivals_over = true;
    cv.notify_all();
  }
  finisher.join();
  if (submit_error) std::rethrow_exception(submit_error);
  if (finish_error) std::rethrow_exception(finish_error);
  out.span_ms = arrivals.since_start_ms();
  return out;
}

}  // namespace coop::bench
