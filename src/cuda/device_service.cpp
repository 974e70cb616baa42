#include "coop/cuda/device_service.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "coop/cuda/check.hpp"
#include "coop/cuda/green.hpp"
#include "coop/cuda/job.hpp"
#include "coop/cuda/streams.hpp"
#include "coop/detail/spin.hpp"

namespace coop::cuda {

DeviceService::DeviceService(int device, CUgreenCtx_st* green) : green_(green) {
  check(cudaSetDevice(device), "selecting the device");
  info_ = describe(device);
  if (green_) {
    info_.green_context = true;
    info_.multiprocessors = green_context_sms(green_);
  }
  task_streams_.push_back(create_stream(true, "creating the task stream"));
  all_task_streams_ = task_streams_;
  control_stream_ = create_stream(true, "creating the control stream");
  buffers_ = std::make_shared<BufferCache>(device);
  buffers_->set_fence(control_stream_);
  release_ring_ = std::make_unique<ReleaseRing>(buffers_);
  thread_ = std::thread([this] { loop(); });
}

DeviceService::~DeviceService() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  buffers_->set_fence(nullptr);  // jobs outliving the runtime give their buffers back later
  for (auto* s : all_task_streams_) destroy_stream(s);
  destroy_stream(control_stream_);
}

CUstream_st* DeviceService::create_stream(bool high, const char* what) const {
  return cuda::create_stream(high, what, green_);
}

CUstream_st* DeviceService::acquire_task_stream() {
  // The task's work may run on a thread of the runtime's that never used CUDA: make the device
  // current there (libraries such as cuBLAS and PyTorch expect a current context).
  check(cudaSetDevice(info_.index), "selecting the task's device");
  std::lock_guard lock(streams_mu_);
  if (task_streams_.empty()) {
    CUstream_st* s = create_stream(true, "creating a task stream");
    all_task_streams_.push_back(s);
    return s;
  }
  CUstream_st* s = task_streams_.back();
  task_streams_.pop_back();
  return s;
}

void DeviceService::release_task_stream(CUstream_st* s) {
  std::lock_guard lock(streams_mu_);
  task_streams_.push_back(s);
}

void DeviceService::add(std::shared_ptr<JobCore> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void DeviceService::drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return jobs_.empty(); });
}

void DeviceService::loop() {
  cudaSetDevice(info_.index);
  std::vector<std::shared_ptr<JobCore>> jobs;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_ and nothing left
      jobs = jobs_;
    }
    // Spin while jobs run: the latency of a join launch or a kill report is this loop's.
    for (auto& j : jobs) {
      if (j->service_or_fail()) continue;
      std::lock_guard lock(mu_);
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), j));
      cv_.notify_all();
    }
    jobs.clear();
    coop::detail::cpu_relax();
  }
}

}  // namespace coop::cuda
