#include "coop/cuda/release.hpp"

#include <cuda_runtime_api.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "coop/cuda/check.hpp"
#include "coop/cuda/job.hpp"
#include "coop/cuda/memops.hpp"
#include "coop/cuda/state.hpp"

namespace coop::cuda {

ReleaseRing::ReleaseRing(const std::shared_ptr<BufferCache>& buffers)
    : buffer_(buffers, BufferCache::Kind::mapped_host,
              detail::kReleaseRingWords * sizeof(std::uint32_t), "allocating the release ring") {
  host_ = buffer_.as<std::uint32_t>();
  // A buffer from the cache may hold an earlier ring's values, which this one hands out again.
  std::memset(host_, 0, detail::kReleaseRingWords * sizeof(std::uint32_t));
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0),
        "mapping the release ring");
}

ReleaseWord ReleaseRing::next() {
  std::lock_guard lock(mu_);
  ReleaseWord w{next_index_, next_value_};
  next_index_ = (next_index_ + 1) % detail::kReleaseRingWords;
  if (++next_value_ == 0) next_value_ = 1;  // 0 marks an empty slot
  return w;
}

void ReleaseRing::release(ReleaseWord w) {
  __atomic_store_n(&host_[w.index], w.value, __ATOMIC_RELEASE);
}

void ReleaseRing::enqueue_wait(CUstream_st* s, ReleaseWord w) const {
  enqueue_wait_equal(s, device_ + w.index, w.value);
}

TaskGate::~TaskGate() { open(); }

void TaskGate::arm(coop::detail::JobControl& job, std::uint32_t m_at_most) noexcept {
  try {
    auto* core = dynamic_cast<JobCore*>(&job);
    std::shared_ptr<JobCore> owner = core ? core->weak_from_this().lock() : nullptr;
    if (!owner) return;  // an interruptible kernel: the host releases the task
    const ReleaseWord w = ring_.next();
    const std::uint32_t slot =
        owner->arm_release(detail::release_slot(w.value, w.index, m_at_most));
    armed_.push_back({std::move(owner), slot, w});
  } catch (...) {
    // Not armed: the host releases the task when the scheduler grants it.
  }
}

void TaskGate::enqueue_waits(CUstream_st* s, bool granted) {
  if (granted) return;  // its capacity is free: nothing to wait for
  if (armed_.empty()) host_only_.push_back(ring_.next());
  for (const Armed& a : armed_) ring_.enqueue_wait(s, a.word);
  for (const ReleaseWord& w : host_only_) ring_.enqueue_wait(s, w);
}

void TaskGate::open() {
  if (open_) return;
  open_ = true;
  for (const Armed& a : armed_) {
    ring_.release(a.word);
    a.job->disarm_release(a.slot, a.word.value);
  }
  for (const ReleaseWord& w : host_only_) ring_.release(w);
}

}  // namespace coop::cuda
