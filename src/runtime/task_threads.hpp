// The threads that wait for and run submitted tasks (Runtime::submit), so that the caller's
// thread is not blocked. A thread is reused when one is idle and started when none is: tasks in
// flight never wait for each other's threads. One idle thread spins for up to 2 ms before it
// sleeps, so that a task posted then starts without a wake-up.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace coop::detail {

class TaskThreads {
 public:
  TaskThreads() = default;
  ~TaskThreads();  // joins the threads; every posted function has returned by then
  TaskThreads(const TaskThreads&) = delete;
  TaskThreads& operator=(const TaskThreads&) = delete;
  /// Runs `fn` on one of the threads (it must not throw).
  void post(std::function<void()> fn);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  std::atomic<std::size_t> queued_{0};  ///< queue_.size(), for the spinning thread
  unsigned idle_ = 0;
  bool spinner_ = false;  ///< an idle thread spins (at most one does)
  bool stop_ = false;
};

}  // namespace coop::detail
