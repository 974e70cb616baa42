#include "coop/cuda/device_service.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "coop/cuda/check.hpp"
#include "coop/cuda/job.hpp"
#include "coop/cuda/streams.hpp"

namespace coop::cuda {

DeviceService::DeviceService(int device) {
  check(cudaSetDevice(device), "selecting the device");
  info_ = describe(device);
  task_stream_ = create_stream(true, "creating the task stream");
  control_stream_ = create_stream(true, "creating the control stream");
  buffers_ = std::make_shared<BufferCache>(device);
  buffers_->set_fence(control_stream_);
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
  destroy_stream(task_stream_);
  destroy_stream(control_stream_);
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
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace coop::cuda
