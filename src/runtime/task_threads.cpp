#include "task_threads.hpp"

#include <chrono>

#include "coop/detail/spin.hpp"

namespace coop::detail {

TaskThreads::~TaskThreads() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queued_.store(1, std::memory_order_release);  // ends a spin at once
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskThreads::post(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  queue_.push_back(std::move(fn));
  queued_.store(queue_.size(), std::memory_order_release);
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
    // One idle thread spins for a while before it sleeps: submit() posts a task right after its
    // request, and a sleeping thread took 15-25 us to wake (H200, coop_bench_gpu --only
    // stages), as long as the gather it should overlap; a serving loop's next request mostly
    // comes within the spin.
    if (queue_.empty() && !spinner_ && !stop_) {
      spinner_ = true;
      lock.unlock();
      spin_for(std::chrono::milliseconds(2),
               [&] { return queued_.load(std::memory_order_acquire) != 0; });
      lock.lock();
      spinner_ = false;
    }
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, nothing left
    auto fn = std::move(queue_.front());
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace coop::detail
