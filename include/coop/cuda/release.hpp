// Tasks enqueued at their request (TaskLaunch::at_request): the task's stream waits on a word of
// the device's release ring, pinned and mapped host memory, and the jobs the scheduler shrinks
// for the task write that word from the device as soon as they are small enough (the block that
// brings M there; see cuda::detail::release_slot). The host writes it too when it grants the
// task, so a missed device write only costs time. Plain C++ over the CUDA runtime API.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "coop/cuda/buffers.hpp"
#include "coop/detail/scheduler.hpp"

struct CUstream_st;

namespace coop::cuda {

class JobCore;

/// One word of the ring and the value that releases the stream waiting on it.
struct ReleaseWord {
  std::uint32_t index = 0, value = 0;
};

/// The device's release ring: kReleaseRingWords words, handed out in turn with values that are
/// never reused (a late device write to a word handed out again cannot match its new value).
class ReleaseRing {
 public:
  explicit ReleaseRing(const std::shared_ptr<BufferCache>& buffers);
  ReleaseWord next();
  /// From the host: the stream waiting on `w` goes on.
  void release(ReleaseWord w);
  /// Enqueues on `s` a wait until `w` is released (cuStreamWaitValue32).
  void enqueue_wait(CUstream_st* s, ReleaseWord w) const;
  /// The ring as kernels address it (DeviceState::release_ring).
  std::uint32_t* device_words() const { return device_; }

 private:
  CachedBuffer buffer_;
  std::uint32_t* host_ = nullptr;
  std::uint32_t* device_ = nullptr;
  std::mutex mu_;
  std::uint32_t next_index_ = 0, next_value_ = 1;
};

/// The release words of one task enqueued at its request. The scheduler arms the jobs it
/// shrinks for the task (arm); the runtime enqueues the waits before the task's work
/// (enqueue_waits) and opens the gate when the scheduler grants the task or gives up (open).
class TaskGate final : public coop::detail::ReleaseGate {
 public:
  explicit TaskGate(ReleaseRing& ring) : ring_(ring) {}
  ~TaskGate() override;
  void arm(coop::detail::JobControl& job, std::uint32_t m_at_most) noexcept override;
  /// Enqueues the waits on `s`: none when the task is `granted` already, else one per armed job,
  /// or, when nothing was armed, one word that only the host releases.
  void enqueue_waits(CUstream_st* s, bool granted);
  /// Releases every word and disarms the jobs' slots still holding them. Idempotent.
  void open();

 private:
  struct Armed {
    std::shared_ptr<JobCore> job;
    std::uint32_t slot;
    ReleaseWord word;
  };
  ReleaseRing& ring_;
  std::vector<Armed> armed_;
  std::vector<ReleaseWord> host_only_;
  bool open_ = false;
};

}  // namespace coop::cuda
