#include "task_threads.hpp"

namespace coop::detail {

TaskThreads::~TaskThreads() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskThreads::post(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  queue_.push_back(std::move(fn));
  if (idle_ >= queue_.size()) {
    lock.unlock();
    cv_.notify_one();
    return;
  }
  threads_.emplace_back([this] { loop(); });
}

void TaskThreads::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, nothing left
    auto fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace coop::detail
