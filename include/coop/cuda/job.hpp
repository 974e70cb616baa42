// CUDA backend, host side: the driver under the shared job core (coop::detail::JobState) for a
// job on a GPU: its device memory, event mailbox and grids, and the handling of the events its
// kernel sends (join launches, membership reports, the end of a run) on the device service's
// thread. Plain C++ over the CUDA runtime API; the kernel templates are in coop/cuda/backend.cuh.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "coop/cuda/buffers.hpp"
#include "coop/cuda/check.hpp"
#include "coop/cuda/device_service.hpp"
#include "coop/cuda/memops.hpp"
#include "coop/cuda/occupancy.hpp"
#include "coop/cuda/state.hpp"
#include "coop/detail/job_state.hpp"
#include "coop/policy.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*
struct CUevent_st;   // cudaEvent_t is CUevent_st*

namespace coop::cuda {

/// A cooperative kernel running on a CUDA device (the kernel-independent part).
class JobCore : public coop::detail::JobState, public std::enable_shared_from_this<JobCore> {
 public:
  JobCore(DeviceService& dev, coop::detail::Scheduler& sched, const LaunchConfig& cfg,
          const KernelTraits& traits, std::uint32_t n, std::uint32_t cost,
          std::uint32_t transmit_bytes);
  ~JobCore() override;

  std::uint32_t reported_active() const override { return reported_.load(); }
  void set_target(std::uint32_t target, bool pause_kept) override;
  /// The request word for `target`, copied from the pinned mirror of the request on `stream`
  /// after its work: the copy reads the mirror when it runs, so a set_target made meanwhile is
  /// what it writes. Off with COOP_CUDA_STREAM_REGROW=0.
  bool set_target_after(std::uint32_t target, CUstream_st* stream) override;
  bool restartable() const override { return (flags_ & coop::detail::flag_restartable) != 0; }
  std::string describe() const override;
  coop::detail::Membership membership() const override;

  /// Service thread: handles the events that are ready; returns false once the run is over
  /// (finished or suspended) and needs no more polling.
  bool service();
  /// service(), turning a CUDA error into the job's failure.
  bool service_or_fail();

  std::uint32_t cost() const { return cost_; }
  /// Arms a release slot with `slot_value` (cuda::detail::release_slot), in turn over the
  /// kReleaseSlots slots; returns the slot. The slot reaches the device with the job's next
  /// set_target, in the same batch of writes (the scheduler arms just before it sets a target).
  std::uint32_t arm_release(std::uint64_t slot_value);
  /// Empties `slot` if it still holds the release of `value` (the task no longer waits).
  void disarm_release(std::uint32_t slot, std::uint32_t value);

 protected:
  /// Starts M0 workgroups at resume point `site` with `transmit` (a cooperative launch).
  void start(std::uint32_t m0, int site, const void* transmit);
  /// Launches `count` blocks for ids [first, first+count) resuming at `site`: the start grid
  /// (`cooperative`) or a join grid, which numbers its blocks by SM in `join_pack` if the job's
  /// ids go by SM (nullptr: in launch order).
  virtual int launch_grid(std::uint32_t first, std::uint32_t count, int site, const void* transmit,
                          CUstream_st* stream, bool cooperative,
                          cuda::detail::PackSlot* join_pack) = 0;
  /// How long a join grid's block counted by SM waits for the others (COOP_CUDA_JOIN_PACK_WAIT_NS,
  /// default 50,000; 0 numbers join grids in launch order).
  std::uint32_t join_pack_wait_ns() const { return join_pack_wait_ns_; }
  cuda::detail::DeviceState* state() const { return state_; }
  cuda::detail::Mailbox* mailbox() const { return mailbox_dev_; }
  std::uint32_t ring_slots() const { return ring_slots_; }
  std::uint32_t channel_flags() const { return flags_; }
  /// Whether a job's start grids number their blocks by SM: LaunchConfig::ids_by_sm unless
  /// COOP_CUDA_IDS_BY_SM is 1 or 0.
  static bool ids_by_sm(const LaunchConfig& cfg);
  DeviceService& device() { return dev_; }

  void request_suspend(bool on) override;
  void relaunch(std::uint32_t m) override;
  void abort_on_device() override;
  void take_counters(JobStats& s) const override;
  void require_suspendable() const override;

 private:
  /// A stream with nothing running, and the join grids' slot that goes with it (nullptr past
  /// the first kJoinPackSlots streams, or with join packing off).
  std::pair<CUstream_st*, cuda::detail::PackSlot*> idle_stream();
  const cuda::detail::EventHeader* event(std::uint32_t index) const;
  /// The run's grids have returned: wait for their streams, then the job core's end_run.
  void finish(bool suspended);
  void fail(const std::string& what);
  std::string describe_error() const;
  void check_streams();
  /// Sends `field` = `value` to the device with whatever was queued before it (release slots).
  void write_control(std::uint32_t* field, std::uint32_t value);
  /// A copy of the job's channel from the device (its counters: kills, forks, barriers ...).
  void read_channel(coop::detail::Channel& out) const;

  DeviceService& dev_;
  std::uint32_t cost_, transmit_bytes_, stride_, ring_slots_, flags_ = 0;
  std::uint32_t join_pack_wait_ns_;
  // Buffers from the device's cache (freeing them would wait for the other jobs' kernels).
  CachedBuffer state_buffer_, mailbox_buffer_, state_copy_buffer_;
  // Pinned: a copy from the device to pageable memory can wait for the job's kernels to end.
  cuda::detail::DeviceState* state_copy_ = nullptr;
  mutable std::mutex state_copy_mu_;
  /// The pinned copy's first `bytes` into the device state, on the control stream (state_copy_mu_
  /// held, or nobody else can see the job yet).
  void write_state(std::size_t bytes);
  /// The device state's first `bytes` into the pinned copy (state_copy_mu_ held).
  void copy_state(std::size_t bytes) const;
  cuda::detail::DeviceState* state_ = nullptr;  // device memory
  unsigned char* mailbox_host_ = nullptr;       // pinned, mapped
  cuda::detail::Mailbox* mailbox_dev_ = nullptr;
  // Scheduler decisions go to the device as writes on the control stream (stream memory
  // operations), queued in pending_ and sent in order by flush_control (control_mu_ held).
  void flush_control();
  /// Queues `slot` and then the mask of armed slots (control_mu_ held).
  void stage_release_slot(std::uint32_t slot, std::uint64_t slot_value);
  /// Queues the request word for the target in target_ and `suspend` (control_mu_ held).
  void stage_request(bool suspend);
  /// The request word as the host wants it now, in pinned memory (the control mirror's).
  std::uint32_t* request_mirror() const;
  /// Sets the mirror (control_mu_ held). A set_target_after copy may still read it; if that
  /// copy could also land after this write, the word is sent again once it has run.
  void mirror_request(std::uint32_t word);
  /// Service thread: sends the request word again once a set_target_after copy has run that a
  /// later write may have raced with.
  void resend_request();
  std::mutex control_mu_;
  bool suspend_requested_ = false;  // control_mu_ held: the suspend bit the device was sent
  std::vector<ValueWrite> pending_;
  CachedBuffer control_mirror_;  // pinned, the state's layout: staging where copies stand in
  std::uint64_t release_armed_[cuda::detail::kReleaseSlots] = {};  // what each slot holds
  // set_target_after's copy: recorded after it on the task's stream; pending until it has run
  // (control_mu_ held), and whether a write made meanwhile must be sent again then.
  CUevent_st* grown_ = nullptr;
  bool grow_pending_ = false;
  std::atomic<bool> resend_{false};
  std::uint32_t release_next_ = 0;
  std::vector<CUstream_st*> streams_;
  std::uint32_t consumed_ = 0;
  std::uint32_t polls_ = 0;

  std::atomic<std::uint32_t> reported_{0};
  std::atomic<std::uint32_t> target_{0};
  std::atomic<bool> run_counted_{false};  ///< this run is in detail::device_run_started's count
  bool running_ = false;                  ///< service thread only
  int resume_site_ = 0;
  std::vector<unsigned char> resume_transmit_;
};

}  // namespace coop::cuda
