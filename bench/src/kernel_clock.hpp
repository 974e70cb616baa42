// A clock of an app's *kernel time*, shared by the experiments that run an app back to back
// beside other work (multitasking.cpp, colocate.cpp), also between processes (a background in
// one process, the requests in another: processes.cpp). Internal to coop::bench.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace coop::bench {

using clk = std::chrono::steady_clock;

inline double ms_between(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The apps run for milliseconds to seconds, and each run also prepares its buffers and reads
// its results back on the host. The paper's cooperative kernel ran for a long time: to stand in
// for it, work beside the app is released on a clock of kernel time (advancing only while an
// app run's kernels are running, apps::RunConfig::on_kernel), so the runs act as one long
// kernel with the host work between them cut out.
//
// One thread sets the clock (the app's runs); any thread, or any process that maps the same
// file, reads it without a lock (a sequence counter makes each reading consistent). The steady
// clock is the system's monotonic clock, the same in every process.
class KernelClock {
 public:
  /// A clock of this process.
  KernelClock();
  /// A clock in `file`, made (sized and zeroed) when `create`, shared by every process that
  /// maps it. Throws std::runtime_error when the file cannot be made or mapped.
  KernelClock(const std::string& file, bool create);
  ~KernelClock();
  KernelClock(const KernelClock&) = delete;
  KernelClock& operator=(const KernelClock&) = delete;

  double now() const;
  /// Whether an app run's kernels are running and `release` is reached: work arrives while the
  /// app's kernel runs, never between runs (where it would find the device empty and the next
  /// run would start beside it).
  bool due(double release) const;
  /// The writer's only call. Throws std::length_error past a million running spans.
  void set(bool on);
  bool running() const;
  /// How long the running span (an app run) has run, kernel ms; -1 between spans.
  double into_span() const;
  /// The wall-clock moment the clock read `kernel_ms` (a time it has reached).
  clk::time_point wall_at(double kernel_ms) const;
  /// The background's runs are over (set by the writer or whoever waits for it), for readers
  /// in other processes.
  void finish();
  bool finished() const;

 private:
  struct Shared;
  struct Reading {
    bool running;
    double banked;  ///< kernel time of finished spans
    clk::time_point since;
  };
  Reading read() const;
  Shared* s_ = nullptr;
};

}  // namespace coop::bench
