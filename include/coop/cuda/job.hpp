// CUDA backend, host side: a job's device memory, event mailbox and grids, and the device
// service that handles the events every job's kernel sends (join launches, membership
// reports, the end of the job). Plain C++ over the CUDA runtime API; the kernel templates are
// in coop/cuda/backend.cuh.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coop/cuda/buffers.hpp"
#include "coop/cuda/device.hpp"
#include "coop/cuda/state.hpp"
#include "coop/detail/scheduler.hpp"
#include "coop/job.hpp"
#include "coop/policy.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace coop::cuda {

/// Capacity units per streaming multiprocessor: a block of a kernel with occupancy `occ`
/// blocks/SM costs ceil(kUnitsPerSM / occ). 10080 is divisible by 1-10, 12, 14-16, 18, 20, 21,
/// 24, 28, 30 and 32, so those occupancies are exact.
inline constexpr std::uint32_t kUnitsPerSM = 10080;

/// Throws std::runtime_error naming `what` if `rc` (a cudaError_t) is not cudaSuccess.
void check(int rc, const char* what);

class JobCore;
class DeviceService;

/// Blocks per SM that a job of `threads`-thread blocks may use, from the kernel's occupancy:
/// one fewer when a block's warps are not a multiple of four. Measured on the H200
/// (coop_probe_residency, test_cuda_runtime; docs/cuda-backend.md): with 64-thread blocks at
/// full occupancy, the place a returning block freed took no other block, not even one of the
/// same kernel, until the whole grid ended, so joining workgroups and tasks waited for the job.
int shareable_occupancy(int occupancy, int threads);

/// Checks a launch on this device for a kernel with `occupancy` blocks/SM at cfg.threads and
/// returns N; throws std::invalid_argument with the reason when it cannot run.
std::uint32_t checked_groups(const DeviceService& dev, const LaunchConfig& cfg, int occupancy);

/// One CUDA device as the runtime drives it: its streams and the service thread.
class DeviceService {
 public:
  explicit DeviceService(int device);
  ~DeviceService();
  DeviceService(const DeviceService&) = delete;
  DeviceService& operator=(const DeviceService&) = delete;

  int device() const { return info_.index; }
  const DeviceInfo& info() const { return info_; }
  /// The stream tasks run on (highest priority).
  CUstream_st* task_stream() const { return task_stream_; }
  /// A non-blocking stream for small host -> device control copies.
  CUstream_st* control_stream() const { return control_stream_; }
  /// Where jobs and interruptible kernels take their buffers and give them back.
  const std::shared_ptr<BufferCache>& buffers() const { return buffers_; }
  void add(std::shared_ptr<JobCore> job);
  /// Blocks until every job has finished or is suspended (used when the runtime closes).
  void drain();

 private:
  void loop();
  DeviceInfo info_;
  CUstream_st* task_stream_ = nullptr;
  CUstream_st* control_stream_ = nullptr;
  std::shared_ptr<BufferCache> buffers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<JobCore>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

/// A cooperative kernel running on a CUDA device (the kernel-independent part).
class JobCore : public coop::detail::JobControl,
                public coop::detail::JobImpl,
                protected coop::detail::JobLifecycle,
                public std::enable_shared_from_this<JobCore> {
 public:
  JobCore(DeviceService& dev, coop::detail::Scheduler& sched, const LaunchConfig& cfg,
          const KernelTraits& traits, std::uint32_t n, std::uint32_t cost,
          std::uint32_t transmit_bytes);
  ~JobCore() override;

  // JobControl
  std::uint32_t reported_active() const override { return reported_.load(); }
  void set_target(std::uint32_t target) override;
  Preemption preemption() const override;
  void preempt() override;
  void unpreempt() override;
  void restart(std::uint32_t m) override;
  void cancel(bool on_device) override;
  std::string describe() const override;

  // JobImpl
  void wait() override;
  bool done() const override;
  JobStats stats() const override;
  std::uint32_t max_groups() const override { return n_; }
  coop::detail::Membership membership() const override;
  void set_cap(std::uint32_t cap) override;
  bool suspend() override;
  std::uint32_t resume(std::uint32_t m) override;
  bool cancel() override;

  /// Service thread: handles the events that are ready; returns false once the job is over
  /// (finished or suspended) and needs no more polling.
  bool service();
  /// service(), turning a CUDA error into the job's failure.
  bool service_or_fail();

  std::uint32_t cost() const { return cost_; }
  std::uint32_t threads() const { return cfg_.threads; }

 protected:
  /// Starts M0 workgroups at resume point `site` with `transmit` (a cooperative launch).
  void start(std::uint32_t m0, int site, const void* transmit);
  /// Launches `count` blocks for ids [first, first+count) resuming at `site`.
  virtual int launch_grid(std::uint32_t first, std::uint32_t count, int site, const void* transmit,
                          CUstream_st* stream, bool cooperative) = 0;
  cuda::detail::DeviceState* state() const { return state_; }
  cuda::detail::Mailbox* mailbox() const { return mailbox_dev_; }
  std::uint32_t ring_slots() const { return ring_slots_; }
  std::uint32_t channel_flags() const { return flags_; }
  DeviceService& device() { return dev_; }

 private:
  CUstream_st* idle_stream();
  const cuda::detail::EventHeader* event(std::uint32_t index) const;
  void handle(const cuda::detail::EventHeader& e);
  void finish(bool suspended);
  void fail(const std::string& what);
  std::string describe_error() const;
  void check_streams();
  void write_control(std::uint32_t* field, std::uint32_t value);
  /// A copy of the job's channel from the device (its counters: kills, forks, barriers ...).
  void read_channel(coop::detail::Channel& out) const;

  DeviceService& dev_;
  coop::detail::Scheduler& sched_;
  LaunchConfig cfg_;
  std::uint32_t n_, cost_, transmit_bytes_, stride_, ring_slots_, flags_ = 0;
  // Buffers from the device's cache (freeing them would wait for the other jobs' kernels).
  CachedBuffer state_buffer_, mailbox_buffer_, staging_buffer_;
  cuda::detail::DeviceState* state_ = nullptr;  // device memory
  unsigned char* mailbox_host_ = nullptr;       // pinned, mapped
  cuda::detail::Mailbox* mailbox_dev_ = nullptr;
  std::uint32_t* control_staging_ = nullptr;  // pinned: target, suspend, abort values
  std::vector<CUstream_st*> streams_;
  std::uint32_t consumed_ = 0;
  std::uint32_t polls_ = 0;

  std::atomic<std::uint32_t> reported_{0};
  std::atomic<std::uint32_t> target_{0};
  std::atomic<bool> user_suspend_{false};  ///< the suspension under way is the user's
  bool running_ = false;                   ///< service thread only
  int resume_site_ = 0;
  std::vector<unsigned char> resume_transmit_;
};

}  // namespace coop::cuda
