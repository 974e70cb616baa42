// CUDA backend of interruptible kernels: one ordinary kernel launch per slice, the budget read
// from %globaltimer, the stop request in device memory (read every kPollNs), and the
// launch's totals handed to the host by its last block. Included by coop/interruptible.hpp when
// compiled by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "coop/cuda/job.hpp"
#include "coop/cuda/streams.hpp"
#include "coop/interruptible.hpp"

namespace coop::cuda {

namespace detail {

/// Device-memory control words of one interruptible kernel.
struct IkControl {
  unsigned long long start;     ///< %globaltimer at the running launch's first block (0 = none)
  unsigned long long finished;  ///< complete threads counted by the running launch's blocks
  unsigned long long misuse_thread;  ///< first misusing thread + 1 (0 = none)
  unsigned int exited;               ///< blocks of the running launch that are done
  unsigned int misuse;               ///< kMisuse* bits
  int misuse_point;
  unsigned int stop;  ///< launches numbered <= stop stop at their next poll
};

/// Written by a launch's last block into pinned host memory: the launch's totals.
struct IkReport {
  unsigned long long finished;
  unsigned long long misuse_thread;
  unsigned int misuse;
  int misuse_point;
  unsigned int launch;
};

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace detail

/// The context of one GPU thread of an interruptible kernel.
template <class K>
class IkCtx {
 public:
  __device__ IkCtx(const detail::IkControl* ctl, std::uint32_t launch, int point,
                   const coop::detail::ThreadBudget& budget, ik_shared_t<K>& shared)
      : ctl_(ctl), launch_(launch), point_(point), budget_(budget), shared_(shared) {}

  __device__ int resume_point() const { return point_; }
  __device__ std::uint32_t group_id() const { return blockIdx.x; }
  __device__ std::uint32_t num_groups() const { return gridDim.x; }
  __device__ std::uint32_t local_id() const { return threadIdx.x; }
  __device__ std::uint32_t local_size() const { return blockDim.x; }
  __device__ std::uint64_t global_id() const {
    return std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  }
  __device__ std::uint64_t global_size() const { return std::uint64_t(gridDim.x) * blockDim.x; }
  __device__ ik_shared_t<K>& shared() { return shared_; }
  __device__ void barrier(int = 0) { __syncthreads(); }

  __device__ bool checkpoint(int line) {
    now_ = detail::global_timer_ns();
    return budget_.due(now_) && pause_at(line, false);
  }
  __device__ bool workgroup_checkpoint(int line) {
    now_ = detail::global_timer_ns();
    return __syncthreads_or(budget_.due(now_)) && pause_at(line, true);
  }
  __device__ void complete() { complete_ = true; }
  __device__ void unknown_resume_point() { unknown_ = true; }

  __device__ bool paused() const { return paused_; }
  /// After a due checkpoint: true when the thread stops there (the whole workgroup decides
  /// together at a workgroup checkpoint).
  __device__ bool settle() {
    paused_ = false;
    bool stop =
        budget_.stop(now_, [&] { return *(volatile const unsigned*)&ctl_->stop >= launch_; });
    if (workgroup_) stop = __syncthreads_or(stop);
    interrupted_ = stop;
    return stop;
  }

  __device__ bool interrupted() const { return interrupted_; }
  __device__ bool completed() const { return complete_; }
  __device__ bool unknown() const { return unknown_; }
  __device__ int point() const { return point_; }

 private:
  __device__ bool pause_at(int line, bool workgroup) {
    point_ = line;
    paused_ = true;
    workgroup_ = workgroup;
    return true;
  }

  const detail::IkControl* ctl_;
  std::uint32_t launch_;
  int point_;
  coop::detail::ThreadBudget budget_;
  ik_shared_t<K>& shared_;
  std::uint64_t now_ = 0;
  bool complete_ = false, interrupted_ = false, unknown_ = false, paused_ = false,
       workgroup_ = false;
};

/// One launch (slice) of interruptible kernel K.
template <class K>
__global__ void interruptible_kernel(typename K::Args args, std::int32_t* points,
                                     typename K::Locals* locals, detail::IkControl* ctl,
                                     detail::IkReport* report, std::uint32_t launch,
                                     coop::detail::ThreadBudget budget) {
  __shared__ std::uint64_t deadline;
  __shared__ alignas(16) unsigned char shared_raw[sizeof(ik_shared_t<K>)];
  if (threadIdx.x == 0) {
    // The budget counts from the launch's first block, so blocks that start late (a grid
    // larger than the device) do not extend the launch; each still makes one step of progress.
    const unsigned long long now = detail::global_timer_ns();
    const unsigned long long first = atomicCAS(&ctl->start, 0ull, now);
    deadline = (first ? first : now) + budget.deadline;
  }
  __syncthreads();
  budget.deadline = deadline;
  budget.soft = 0;  // the first checkpoint reads the stop request

  const std::uint64_t gid = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int32_t point = points[gid];
  unsigned misuse = 0;
  if (point != coop::detail::kThreadComplete) {
    typename K::Locals l{};
    if (point != 0) l = locals[gid];
    IkCtx<K> ic(ctl, launch, point, budget, *reinterpret_cast<ik_shared_t<K>*>(shared_raw));
    coop::detail::run_thread<K>(ic, args, l);
    if (ic.interrupted()) {
      locals[gid] = l;
      point = ic.point();
    } else {
      if (ic.unknown())
        misuse = coop::detail::kMisuseUnknownPoint;
      else if (!ic.completed())
        misuse = coop::detail::kMisuseNoCompletion;
      point = coop::detail::kThreadComplete;
    }
    points[gid] = point;
    if (misuse && atomicCAS(&ctl->misuse_thread, 0ull, gid + 1) == 0) {
      ctl->misuse_point = ic.point();
      atomicOr(&ctl->misuse, misuse);
    }
  }
  // The launch's totals: one atomic per block, and the last block reports to the host.
  const int done = __syncthreads_count(point == coop::detail::kThreadComplete);
  if (threadIdx.x == 0) {
    if (done) atomicAdd(&ctl->finished, (unsigned long long)done);
    __threadfence();
    if (atomicAdd(&ctl->exited, 1u) == gridDim.x - 1) {
      __threadfence();
      report->finished = atomicExch(&ctl->finished, 0ull);
      report->misuse = atomicExch(&ctl->misuse, 0u);
      report->misuse_thread = atomicExch(&ctl->misuse_thread, 0ull);
      report->misuse_point = ctl->misuse_point;
      ctl->start = 0;
      ctl->exited = 0;
      __threadfence_system();
      *(volatile unsigned*)&report->launch = launch;
    }
  }
}

/// Runs launches of interruptible kernel K on one CUDA device.
template <class K>
class IkRunner final : public coop::detail::SliceRunner {
  using Args = typename K::Args;
  using Locals = typename K::Locals;

 public:
  IkRunner(const Args& args, DeviceService& dev) : args_(args), dev_(dev) {
    check(cudaSetDevice(dev.device()), "selecting the device");
    // Load the kernel now: with lazy loading, its first launch while a persistent kernel runs
    // could wait for that kernel to end.
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, interruptible_kernel<K>),
          "loading the interruptible kernel");
    stream_ = dev.create_stream(false, "creating the interruptible kernel's stream");
    // Buffers from the device's cache: freeing them would wait for the jobs' kernels.
    using Kind = BufferCache::Kind;
    ctl_buffer_ = CachedBuffer(dev.buffers(), Kind::device, sizeof(detail::IkControl),
                               "allocating interruptible-kernel control");
    ctl_ = ctl_buffer_.as<detail::IkControl>();
    // On its own stream: the legacy stream's cudaMemset may wait for a running persistent job.
    check(cudaMemsetAsync(ctl_, 0, sizeof(detail::IkControl), stream_),
          "clearing interruptible-kernel control");
    check(cudaStreamSynchronize(stream_), "clearing interruptible-kernel control");
    report_buffer_ = CachedBuffer(dev.buffers(), Kind::mapped_host, sizeof(detail::IkReport),
                                  "allocating the launch report");
    report_ = report_buffer_.as<detail::IkReport>();
    *report_ = {};
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&report_dev_), report_, 0),
          "mapping the launch report");
    staging_buffer_ =
        CachedBuffer(dev.buffers(), Kind::pinned_host, sizeof(unsigned), "allocating stop staging");
    stop_staging_ = staging_buffer_.as<unsigned>();
  }
  ~IkRunner() override {
    // No launch is under way here; the buffers go back to the cache after this.
    cudaStreamSynchronize(stream_);
    destroy_stream(stream_);
  }
  IkRunner(const IkRunner&) = delete;
  IkRunner& operator=(const IkRunner&) = delete;

  void prepare(std::uint32_t blocks, std::uint32_t threads, bool fresh) override {
    if (blocks > 0x7fffffffu)
      throw std::invalid_argument("at most 2^31-1 blocks per launch, got " +
                                  std::to_string(blocks));
    if (occupancy(threads) <= 0)
      throw std::invalid_argument("the interruptible kernel cannot run with " +
                                  std::to_string(threads) + " threads per block on " +
                                  dev_.info().name + " (registers or shared memory exceed an SM)");
    const std::size_t total = std::size_t(blocks) * threads;
    if (!fresh && (blocks != blocks_ || threads != threads_))
      throw std::invalid_argument("resume needs the grid of the interrupted launch (" +
                                  std::to_string(blocks_) + " x " + std::to_string(threads_) +
                                  " threads)");
    if (total != allocated_) {
      points_buffer_.reset();
      locals_buffer_.reset();
      allocated_ = 0;
      using Kind = BufferCache::Kind;
      points_buffer_ = CachedBuffer(dev_.buffers(), Kind::device, total * sizeof(std::int32_t),
                                    "allocating thread statuses");
      locals_buffer_ = CachedBuffer(dev_.buffers(), Kind::device, total * sizeof(Locals),
                                    "allocating thread locals");
      points_ = points_buffer_.as<std::int32_t>();
      locals_ = locals_buffer_.as<Locals>();
      allocated_ = total;
    }
    if (fresh)
      check(cudaMemsetAsync(points_, 0, total * sizeof(std::int32_t), stream_),
            "clearing thread statuses");
    blocks_ = blocks;
    threads_ = threads;
  }

  coop::detail::SliceSummary run(std::uint64_t budget_ns, std::uint32_t checkpoints) override {
    const std::uint32_t launch = launch_.load() + 1;
    launch_.store(launch);
    coop::detail::ThreadBudget b;
    b.deadline = budget_ns;  // relative here; the kernel adds the launch's start
    b.poll = coop::detail::kPollNs;
    b.limit = checkpoints;
    interruptible_kernel<K>
        <<<blocks_, threads_, 0, stream_>>>(args_, points_, locals_, ctl_, report_dev_, launch, b);
    check(cudaGetLastError(), "launching the interruptible kernel");
    check(cudaStreamSynchronize(stream_), "running the interruptible kernel");
    const volatile detail::IkReport& r = *report_;
    if (r.launch != launch)
      throw std::runtime_error("interruptible kernel: launch " + std::to_string(launch) +
                               " ended without its report");
    coop::detail::SliceSummary s;
    s.finished = r.finished;
    s.misuse = r.misuse;
    s.misuse_thread = r.misuse_thread ? r.misuse_thread - 1 : 0;
    s.misuse_point = r.misuse_point;
    return s;
  }

  void stop_current() override {
    // The running launch, or the next one if none runs (see InterruptibleJob::preempt).
    const unsigned value = launch_.load() + 1;
    __atomic_store_n(stop_staging_, value, __ATOMIC_RELEASE);
    check(cudaMemcpyAsync(&ctl_->stop, stop_staging_, sizeof(unsigned), cudaMemcpyHostToDevice,
                          dev_.control_stream()),
          "sending a stop request to the interruptible kernel");
  }

  std::uint32_t resident_groups(std::uint32_t threads) const override {
    return std::uint32_t(occupancy(threads)) * std::uint32_t(dev_.info().multiprocessors);
  }
  std::uint32_t group_cost(std::uint32_t threads) const override {
    const int occ = occupancy(threads);
    return occ > 0 ? (kUnitsPerSM + std::uint32_t(occ) - 1) / std::uint32_t(occ) : kUnitsPerSM;
  }
  bool has_watchdog() const override { return dev_.info().exec_timeout; }

 private:
  int occupancy(std::uint32_t threads) const {
    int occ = 0;
    if (threads == 0 || threads > 1024) return 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, interruptible_kernel<K>, int(threads),
                                                        0),
          "computing the interruptible kernel's occupancy");
    return occ;
  }

  const Args& args_;
  DeviceService& dev_;
  cudaStream_t stream_ = nullptr;
  std::int32_t* points_ = nullptr;
  Locals* locals_ = nullptr;
  std::size_t allocated_ = 0;
  std::uint32_t blocks_ = 0, threads_ = 0;
  detail::IkControl* ctl_ = nullptr;
  detail::IkReport* report_ = nullptr;
  detail::IkReport* report_dev_ = nullptr;
  unsigned* stop_staging_ = nullptr;
  CachedBuffer points_buffer_, locals_buffer_, ctl_buffer_, report_buffer_, staging_buffer_;
  std::atomic<std::uint32_t> launch_{0};
};

}  // namespace coop::cuda
