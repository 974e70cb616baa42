// A run that must never hang (coop stress, the co-location benchmark) marks each step it makes;
// a watchdog ends it when no mark came for a while, with what it was doing and the runtime's
// state, instead of leaving it to an outer time limit that kills it without a word.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace coop::bench {

/// No progress() for `stall_seconds` (0: never watched): prints the last step and `state()` (for
/// example Runtime::describe) to `log` and exits the process with `exit_code`. `state` may need a
/// lock the stalled thread holds, so it runs on a thread of its own and gets 5 s; the process
/// exits either way (the stalled threads cannot be joined).
class Watchdog {
 public:
  Watchdog(double stall_seconds, std::function<std::string()> state, std::FILE* log, int exit_code)
      : state_(std::move(state)),
        log_(log),
        exit_code_(exit_code),
        stall_(std::chrono::duration_cast<clock::duration>(
            std::chrono::duration<double>(stall_seconds))) {
    if (stall_seconds > 0) thread_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// A step was made. `where` must outlive the watchdog (a string literal: kept by pointer).
  void progress(const char* where) {
    where_.store(where);
    marks_.fetch_add(1);
  }

 private:
  using clock = std::chrono::steady_clock;
  void watch() {
    std::unique_lock lock(mu_);
    std::uint64_t seen = marks_.load();
    auto last = clock::now();
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return done_; })) {
      if (const std::uint64_t m = marks_.load(); m != seen) {
        seen = m;
        last = clock::now();
        continue;
      }
      if (clock::now() - last <= stall_) continue;
      std::fprintf(log_, "STALL: no progress for %g s at \"%s\" (step %llu); runtime state:\n",
                   std::chrono::duration<double>(stall_).count(), where_.load(),
                   static_cast<unsigned long long>(seen));
      std::fflush(log_);
      auto printed = std::make_shared<std::atomic<bool>>(false);
      std::thread([this, printed] {
        const std::string s = state_();
        std::fprintf(log_, "%s\n", s.c_str());
        std::fflush(log_);
        printed->store(true);
      }).detach();
      lock.unlock();
      for (int i = 0; i < 50 && !printed->load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!printed->load())
        std::fprintf(log_, "(no state within 5 s: the stalled thread holds the runtime's lock)\n");
      std::fflush(log_);
      std::_Exit(exit_code_);
    }
  }
  const std::function<std::string()> state_;
  std::FILE* const log_;
  const int exit_code_;
  const clock::duration stall_;
  std::atomic<const char*> where_{"start"};
  std::atomic<std::uint64_t> marks_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace coop::bench
