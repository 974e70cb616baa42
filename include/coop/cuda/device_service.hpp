// One CUDA device as the runtime drives it: its task and control streams, its buffer cache, and
// the service thread that handles the events every running job's kernel sends (join launches,
// membership reports, the end of a run).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "coop/cuda/buffers.hpp"
#include "coop/cuda/device.hpp"
#include "coop/cuda/release.hpp"

struct CUstream_st;    // cudaStream_t is CUstream_st*
struct CUgreenCtx_st;  // CUgreenCtx is CUgreenCtx_st*

namespace coop::cuda {

class JobCore;

class DeviceService {
 public:
  /// `green`: every stream (jobs, tasks, control) runs on that green context's SMs, and
  /// info().multiprocessors counts those.
  explicit DeviceService(int device, CUgreenCtx_st* green = nullptr);
  ~DeviceService();
  DeviceService(const DeviceService&) = delete;
  DeviceService& operator=(const DeviceService&) = delete;

  int device() const { return info_.index; }
  const DeviceInfo& info() const { return info_; }
  /// A highest-priority stream for one task, its own while it runs: tasks that run at the same
  /// time (Runtime::submit) do not queue behind each other's kernels or wait for each other's
  /// at their end. Give it back with release_task_stream.
  CUstream_st* acquire_task_stream();
  void release_task_stream(CUstream_st* s);
  /// A stream on the device's SMs (or the green context's) at the highest priority or the
  /// lowest; destroy it with destroy_stream (coop/cuda/streams.hpp).
  CUstream_st* create_stream(bool high, const char* what) const;
  /// A non-blocking stream for small host -> device control copies.
  CUstream_st* control_stream() const { return control_stream_; }
  /// Where jobs and interruptible kernels take their buffers and give them back.
  const std::shared_ptr<BufferCache>& buffers() const { return buffers_; }
  /// Where tasks enqueued at their request wait to be released (coop/cuda/release.hpp).
  ReleaseRing& release_ring() { return *release_ring_; }
  /// Serves `job`'s events until its run ends (it finished or is suspended).
  void add(std::shared_ptr<JobCore> job);
  /// Blocks until every job has finished or is suspended (used when the runtime closes).
  void drain();

 private:
  void loop();
  DeviceInfo info_;
  CUgreenCtx_st* green_ = nullptr;
  std::mutex streams_mu_;
  std::vector<CUstream_st*> task_streams_;  // idle ones; created when none is idle
  std::vector<CUstream_st*> all_task_streams_;
  CUstream_st* control_stream_ = nullptr;
  std::shared_ptr<BufferCache> buffers_;
  std::unique_ptr<ReleaseRing> release_ring_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<JobCore>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace coop::cuda
