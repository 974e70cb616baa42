#include "coop/apps/phased.hpp"

namespace coop::apps::detail {

CpuGrid::CpuGrid(unsigned workers) : count_(workers) {
  for (unsigned w = 0; w < workers; ++w) workers_.emplace_back([this, w] { work(w); });
}

CpuGrid::~CpuGrid() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void CpuGrid::launch(std::uint64_t threads,
                     const std::function<void(std::uint64_t, std::uint64_t)>& body) {
  std::unique_lock<std::mutex> lock(mu_);
  body_ = &body;
  threads_ = threads;
  running_ = count_;
  ++generation_;
  cv_.notify_all();
  done_cv_.wait(lock, [&] { return running_ == 0; });
  body_ = nullptr;
}

void CpuGrid::work(unsigned w) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::uint64_t, std::uint64_t)>* body;
    std::uint64_t threads;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      body = body_;
      threads = threads_;
    }
    // Contiguous ranges of emulated threads per worker; each runs its grid-stride loop.
    std::uint64_t per = (threads + count_ - 1) / count_;
    for (std::uint64_t gid = w * per; gid < threads && gid < (w + 1) * per; ++gid)
      (*body)(gid, threads);
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) done_cv_.notify_one();
  }
}

}  // namespace coop::apps::detail
