// A clock of an app's *kernel time*, shared by the experiments that run an app back to back
// beside other work (multitasking.cpp, colocate.cpp). Internal to coop::bench.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

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
class KernelClock {
 public:
  double now() {
    std::lock_guard lock(mu_);
    return banked_ + (running_ ? ms_between(since_, clk::now()) : 0);
  }
  /// Whether an app run's kernels are running and `release` is reached: work arrives while the
  /// app's kernel runs, never between runs (where it would find the device empty and the next
  /// run would start beside it).
  bool due(double release) {
    std::lock_guard lock(mu_);
    return running_ && banked_ + ms_between(since_, clk::now()) >= release;
  }
  void set(bool on) {
    std::lock_guard lock(mu_);
    if (on == running_) return;
    if (running_) banked_ += ms_between(since_, clk::now());
    since_ = clk::now();
    running_ = on;
    if (on) spans_.push_back({banked_, since_});
  }
  bool running() {
    std::lock_guard lock(mu_);
    return running_;
  }
  /// The wall-clock moment the clock read `kernel_ms` (a time it has reached).
  clk::time_point wall_at(double kernel_ms) {
    std::lock_guard lock(mu_);
    auto it = std::upper_bound(spans_.begin(), spans_.end(), kernel_ms,
                               [](double t, const Span& s) { return t < s.kernel_ms; });
    if (it == spans_.begin()) return spans_.empty() ? clk::now() : it->wall;
    --it;
    return it->wall + std::chrono::duration_cast<clk::duration>(
                          std::chrono::duration<double, std::milli>(kernel_ms - it->kernel_ms));
  }

 private:
  struct Span {
    double kernel_ms;      ///< the clock's reading when the span started
    clk::time_point wall;  ///< and the wall clock's
  };
  std::mutex mu_;
  double banked_ = 0;  ///< kernel time of finished spans
  bool running_ = false;
  clk::time_point since_;
  std::vector<Span> spans_;  ///< every running span, in order
};

}  // namespace coop::bench
