// The threads that wait for and run submitted tasks (Runtime::submit), so that the caller's
// thread is not blocked. A thread is reused when one is idle and started when none is: tasks in
// flight never wait for each other's threads.
#pragma once

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
  unsigned idle_ = 0;
  bool stop_ = false;
};

}  // namespace coop::detail
