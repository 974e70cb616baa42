#include "coop/cuda/job.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "coop/cuda/streams.hpp"

namespace coop::cuda {

using cuda::detail::DeviceState;
using cuda::detail::ErrorCode;
using cuda::detail::EventHeader;
using cuda::detail::EventKind;
using cuda::detail::Mailbox;

void check(int rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error while ") + what + ": " +
                           cudaGetErrorName(cudaError_t(rc)) + " (" +
                           cudaGetErrorString(cudaError_t(rc)) + ")");
}

int shareable_occupancy(int occupancy, int threads) {
  // An SM schedules warps on four partitions; a block of fewer warps than that (or a count
  // that is not a multiple of it) leaves the partitions unevenly full, and on the H200 a
  // returning block's place then did not take a new block of the same shape while the rest of
  // the grid ran (64-thread blocks at 32 and at 24 per SM). One block per SM of slack lets a
  // joining workgroup or a task start.
  const int warps = (threads + 31) / 32;
  return warps % 4 != 0 && occupancy > 1 ? occupancy - 1 : occupancy;
}

std::uint32_t checked_groups(const DeviceService& dev, const LaunchConfig& cfg, int occupancy) {
  if (cfg.threads == 0 || cfg.threads > 1024)
    throw std::invalid_argument("threads per workgroup must be in [1, 1024], got " +
                                std::to_string(cfg.threads));
  if (occupancy <= 0)
    throw std::invalid_argument("the kernel cannot be resident with " +
                                std::to_string(cfg.threads) +
                                " threads per block (registers or shared memory exceed an SM)");
  const std::uint64_t resident = std::uint64_t(occupancy) * dev.info().multiprocessors;
  const std::uint64_t limit = std::min<std::uint64_t>(resident, kMaxGroupsLimit);
  std::uint64_t n = cfg.max_groups ? cfg.max_groups : limit;
  if (n > limit)
    throw std::invalid_argument(
        "max_groups " + std::to_string(n) + " exceeds the " + std::to_string(limit) +
        " blocks of this kernel that can be co-resident on " + dev.info().name + " at " +
        std::to_string(cfg.threads) + " threads (" + std::to_string(occupancy) + " per SM x " +
        std::to_string(dev.info().multiprocessors) +
        " SMs): a cooperative kernel's workgroups must all fit");
  if (cfg.policy.kind == Policy::Kind::cap && (cfg.policy.cap == 0 || cfg.policy.cap > n))
    throw std::invalid_argument("cap policy needs a cap in [1, N=" + std::to_string(n) + "]");
  return std::uint32_t(n);
}

// ---------------------------------------------------------------- DeviceService

namespace {
std::atomic<int> g_live_streams{0};
}

CUstream_st* create_stream(bool high, const char* what) {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "reading stream priorities");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high ? greatest : least), what);
  g_live_streams.fetch_add(1);
  return s;
}

void destroy_stream(CUstream_st* s) {
  if (!s) return;
  cudaStreamDestroy(s);
  g_live_streams.fetch_sub(1);
}

int live_streams() { return g_live_streams.load(); }

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

// ---------------------------------------------------------------- JobCore

JobCore::JobCore(DeviceService& dev, coop::detail::Scheduler& sched, const LaunchConfig& cfg,
                 const KernelTraits& traits, std::uint32_t n, std::uint32_t cost,
                 std::uint32_t transmit_bytes)
    : dev_(dev),
      sched_(sched),
      cfg_(cfg),
      n_(n),
      cost_(cost),
      transmit_bytes_(transmit_bytes),
      stride_(cuda::detail::event_stride(transmit_bytes)),
      // Unconsumed spawn records are bounded by N (each holds a workgroup that has not started);
      // kill reports are not, so the ring wraps and a block waits for space only then.
      ring_slots_(2 * n + 256) {
  DeviceState host{};
  coop::detail::init_channel(host.channel, cfg, traits, n);
  flags_ = host.channel.flags;
  const std::size_t state_bytes = sizeof(DeviceState) + sizeof(std::uint32_t) * n;
  using Kind = BufferCache::Kind;
  state_buffer_ = CachedBuffer(dev.buffers(), Kind::device, state_bytes, "allocating job state");
  state_ = state_buffer_.as<DeviceState>();
  check(cudaMemset(state_, 0, state_bytes), "clearing job state");
  check(cudaMemcpy(state_, &host, sizeof(host), cudaMemcpyHostToDevice), "writing job state");
  const std::size_t mailbox_bytes =
      cuda::detail::ring_offset() + std::size_t(ring_slots_) * stride_;
  mailbox_buffer_ =
      CachedBuffer(dev.buffers(), Kind::mapped_host, mailbox_bytes, "allocating the event mailbox");
  mailbox_host_ = mailbox_buffer_.as<unsigned char>();
  std::memset(mailbox_host_, 0, mailbox_bytes);
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mailbox_dev_), mailbox_host_, 0),
        "mapping the event mailbox");
  staging_buffer_ = CachedBuffer(dev.buffers(), Kind::pinned_host, 4 * sizeof(std::uint32_t),
                                 "allocating control staging");
  control_staging_ = staging_buffer_.as<std::uint32_t>();
  stats_.max_groups = n;
}

JobCore::~JobCore() {
  // A job dropped while suspended is still registered (a finished one is not, and after a
  // runtime shutdown every job has finished: the scheduler may be gone then).
  bool registered = false;
  {
    std::lock_guard lock(mu_);
    registered = !finished_;
  }
  if (registered) sched_.job_finished(this);
  // The job's grids have returned (it finished or is suspended); their last blocks may still be
  // leaving, and the buffers must not change hands before they have.
  for (auto* s : streams_) {
    cudaStreamSynchronize(s);
    destroy_stream(s);
  }
  // The buffers go back to the cache as the members are destroyed.
}

void JobCore::write_control(std::uint32_t* field, std::uint32_t value) {
  // One staging word per field: a copy still queued reads the latest value, which is what the
  // device should see anyway.
  std::size_t slot = field == &state_->channel.target    ? 0
                     : field == &state_->channel.suspend ? 1
                                                         : 2;
  __atomic_store_n(&control_staging_[slot], value, __ATOMIC_RELEASE);
  check(cudaMemcpyAsync(field, &control_staging_[slot], sizeof(std::uint32_t),
                        cudaMemcpyHostToDevice, dev_.control_stream()),
        "sending a scheduler decision to the device");
}

void JobCore::set_target(std::uint32_t target) {
  target_.store(target);
  write_control(&state_->channel.target, target);
}

coop::detail::Membership JobCore::membership() const {
  coop::detail::Membership m;
  m.active = reported_.load();
  std::uint32_t t = target_.load();
  std::uint32_t floor = std::max(t, 1u);
  m.kill_wanted = m.active > floor ? m.active - floor : 0;
  std::uint32_t top = std::min(t, n_);
  m.fork_granted = top > m.active ? top - m.active : 0;
  return m;
}

CUstream_st* JobCore::idle_stream() {
  for (auto* s : streams_)
    if (cudaStreamQuery(s) == cudaSuccess) return s;
  streams_.push_back(create_stream(false, "creating a job stream"));
  return streams_.back();
}

void JobCore::start(std::uint32_t m0, int site, const void* transmit) {
  // No block of the job runs now: the channel can be rewritten from here.
  cudaStream_t ctl = dev_.control_stream();
  DeviceState host{};
  check(cudaMemcpyAsync(&host, state_, sizeof(host), cudaMemcpyDeviceToHost, ctl),
        "reading job state");
  check(cudaStreamSynchronize(ctl), "reading job state");
  coop::detail::reset_channel(host.channel, m0);
  host.channel.target = target_.load();
  host.channel.abort = 0;
  if (cancelled_.load()) {
    // Cancelled while a restart was on its way: the blocks leave at their first chance.
    host.channel.target = 0;
    host.channel.suspend = 1;
    host.channel.abort = 1;
  }
  host.outstanding = m0;
  check(cudaMemcpyAsync(state_, &host, sizeof(host), cudaMemcpyHostToDevice, ctl),
        "writing job state");
  check(cudaStreamSynchronize(ctl), "writing job state");
  reported_.store(m0);
  running_ = true;
  record_start(m0, sched_.now_ms());
  check(launch_grid(0, m0, site, transmit, idle_stream(), true),
        "launching the cooperative kernel (cudaLaunchCooperativeKernel)");
}

const EventHeader* JobCore::event(std::uint32_t index) const {
  return reinterpret_cast<const EventHeader*>(mailbox_host_ + cuda::detail::ring_offset() +
                                              std::size_t(index % ring_slots_) * stride_);
}

bool JobCore::service() {
  for (;;) {
    const EventHeader* e = event(consumed_);
    if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != consumed_ + 1) break;
    EventHeader h = *e;
    std::vector<unsigned char> payload(transmit_bytes_);
    if (transmit_bytes_)
      std::memcpy(payload.data(), reinterpret_cast<const unsigned char*>(e) + sizeof(EventHeader),
                  transmit_bytes_);
    ++consumed_;
    __atomic_store_n(&reinterpret_cast<Mailbox*>(mailbox_host_)->consumed, consumed_,
                     __ATOMIC_RELEASE);
    if (h.kind == EventKind::spawn) {
      int rc = launch_grid(h.first, h.count, h.site, payload.data(), idle_stream(), false);
      if (rc != cudaSuccess) {
        fail(std::string("launching ") + std::to_string(h.count) +
             " joining workgroups: " + cudaGetErrorString(cudaError_t(rc)));
        // Their slots in `outstanding` will never be returned: end the job from here.
        finish(false);
        return false;
      }
    } else if (h.kind == EventKind::suspended) {
      resume_site_ = h.site;
      resume_transmit_ = payload;
    } else if (h.kind == EventKind::done) {
      finish(h.first != 0);
      return false;
    }
    if (h.delta != 0) {
      std::uint32_t m = std::uint32_t(std::int64_t(reported_.load()) + h.delta);
      reported_.store(m);
      record_membership(m, sched_.now_ms());
      sched_.membership_changed(this);
    }
  }
  if ((++polls_ & 0x3fff) == 0) check_streams();
  return running_;
}

void JobCore::check_streams() {
  for (auto* s : streams_) {
    cudaError_t rc = cudaStreamQuery(s);
    if (rc == cudaSuccess || rc == cudaErrorNotReady) continue;
    fail(std::string("the kernel failed: ") + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) +
         ")");
    finish(false);
    return;
  }
}

std::string JobCore::describe_error() const {
  const auto& e = reinterpret_cast<const Mailbox*>(mailbox_host_)->error;
  if (__atomic_load_n(&e.set, __ATOMIC_ACQUIRE) == 0) return {};
  switch (e.code) {
    case ErrorCode::barrier_unreachable:
      return "global barrier at line " + std::to_string(e.a) +
             " can never complete: " + std::to_string(e.b) + " of " + std::to_string(e.c) +
             " workgroups arrived and " + std::to_string(e.d) +
             " returned from the kernel without reaching it (kernel-level barriers must be "
             "reached by every workgroup)";
    case ErrorCode::invariant:
      return "cooperative-kernel invariant violated: fork beyond max_groups (N)";
    case ErrorCode::unknown_resume_point:
      return "workgroup " + std::to_string(e.a) + " was started at resume point line " +
             std::to_string(e.b) +
             ", which the kernel's COOP_BEGIN switch does not contain (is the resume point "
             "inside a nested switch statement?)";
    case ErrorCode::none:
      break;
  }
  return "device error " + std::to_string(int(e.code));
}

void JobCore::finish(bool suspended) {
  std::string err;
  for (auto* s : streams_) {
    cudaError_t rc = cudaStreamSynchronize(s);
    if (rc != cudaSuccess && err.empty())
      err = std::string("the kernel failed: ") + cudaGetErrorName(rc) + " (" +
            cudaGetErrorString(rc) + ")";
  }
  if (err.empty()) err = describe_error();
  coop::detail::Channel counters;
  bool have_counters = true;
  try {
    read_channel(counters);  // the device may not be reachable when stats() is called later
  } catch (const std::exception&) {
    have_counters = false;  // after a device fault the counters are lost; the error says why
  }
  std::unique_lock lock(mu_);
  if (!err.empty() && error_.empty() && !cancelled_.load()) error_ = err;
  running_ = false;
  if (have_counters) coop::detail::take_counters(stats_, counters);
  if (suspended && error_.empty() && !cancelled_.load()) {
    // A preemption is the scheduler's business: wait() goes on waiting through it.
    if (user_suspend_.load()) suspended_ = true;
    lock.unlock();
    sched_.job_suspended(this, !user_suspend_.load());
    lock.lock();
  } else {
    finished_ = true;
    stats_.end_ms = sched_.now_ms();
    stats_.final_groups = reported_.load();
    lock.unlock();
    sched_.job_finished(this);
    lock.lock();
  }
  cv_.notify_all();
}

void JobCore::fail(const std::string& what) {
  set_error(what);
  try {
    write_control(&state_->channel.abort, 1);
  } catch (const std::exception&) {
    // The context is gone (a fault): no block runs any more to read the flag.
  }
}

bool JobCore::service_or_fail() {
  try {
    return service();
  } catch (const std::exception& e) {
    // A CUDA call failed under the job (after a device fault every call does): end the job
    // with the error instead of letting it escape the service thread.
    fail(std::string("the job's service failed: ") + e.what());
    finish(false);
    return false;
  }
}

void JobCore::wait() {
  std::unique_lock lock(mu_);
  if (suspended_) throw std::logic_error("wait() on a suspended job: resume it first");
  cv_.wait(lock, [&] { return finished_; });
  throw_if_failed_locked();
}

bool JobCore::done() const {
  std::lock_guard lock(mu_);
  return finished_;
}

void JobCore::read_channel(coop::detail::Channel& out) const {
  cudaStream_t ctl = dev_.control_stream();
  check(cudaMemcpyAsync(&out, &state_->channel, sizeof(out), cudaMemcpyDeviceToHost, ctl),
        "reading job statistics");
  check(cudaStreamSynchronize(ctl), "reading job statistics");
}

JobStats JobCore::stats() const {
  {
    std::lock_guard lock(mu_);
    if (finished_) return stats_;  // counters read when it finished
  }
  coop::detail::Channel counters;
  read_channel(counters);
  std::lock_guard lock(mu_);
  JobStats s = stats_;
  coop::detail::take_counters(s, counters);
  return s;
}

void JobCore::set_cap(std::uint32_t cap) { set_cap_with(sched_, this, cap); }

bool JobCore::cancel() { return cancel_with(sched_, this); }

void JobCore::cancel(bool on_device) {
  cancelled_.store(true);
  if (!on_device) {
    finish_cancelled(sched_.now_ms());
    return;
  }
  // Kill requests for all (offer_kill then sees the abort), a suspension at the next resizing
  // barrier, and the abort every protocol wait polls.
  target_.store(0);
  write_control(&state_->channel.target, 0);
  write_control(&state_->channel.suspend, 1);
  write_control(&state_->channel.abort, 1);
}

std::string JobCore::describe() const {
  DeviceState host{};
  cudaStream_t ctl = dev_.control_stream();
  if (cudaMemcpyAsync(&host, state_, sizeof(host), cudaMemcpyDeviceToHost, ctl) != cudaSuccess ||
      cudaStreamSynchronize(ctl) != cudaSuccess)
    return "device state unreadable";
  const auto& ch = host.channel;
  const std::uint64_t w = ch.membership, r = ch.release;
  std::string s =
      "device: M " + std::to_string(coop::detail::active_of(w)) + ", arrivals " +
      std::to_string(coop::detail::arrived_of(w)) + ", leaving " +
      std::to_string(coop::detail::leaving_of(w)) + "; release generation " +
      std::to_string(r & 0xffff) + " base " + std::to_string((r >> 16) & 0xffff) + " threshold " +
      std::to_string((r >> 32) & 0xffff) + " M " + std::to_string(r >> 48) + "; target " +
      std::to_string(ch.target) + ", suspend " + std::to_string(ch.suspend) + ", abort " +
      std::to_string(ch.abort) + ", returned " + std::to_string(ch.finished) +
      ", blocks outstanding " + std::to_string(host.outstanding) + ", events " +
      std::to_string(host.next_event) + " posted / " +
      std::to_string(__atomic_load_n(&reinterpret_cast<const Mailbox*>(mailbox_host_)->consumed,
                                     __ATOMIC_ACQUIRE)) +
      " handled; barriers " + std::to_string(ch.barriers) + ", kills " + std::to_string(ch.kills) +
      ", forked " + std::to_string(ch.forked_groups);
  return s;
}

bool JobCore::suspend() {
  if (cfg_.mode == Mode::persistent)
    throw std::logic_error(
        "a Mode::persistent job is a plain persistent kernel on the GPU: it cannot suspend");
  return suspend_with([&] {
    user_suspend_.store(true);
    write_control(&state_->channel.suspend, 1);
  });
}

coop::detail::JobControl::Preemption JobCore::preemption() const {
  return cfg_.mode == Mode::cooperative ? Preemption::suspend : Preemption::none;
}

void JobCore::preempt() { write_control(&state_->channel.suspend, 1); }

void JobCore::unpreempt() { write_control(&state_->channel.suspend, 0); }

void JobCore::restart(std::uint32_t m) {
  start(m, resume_site_, resume_transmit_.empty() ? nullptr : resume_transmit_.data());
  dev_.add(shared_from_this());
}

std::uint32_t JobCore::resume(std::uint32_t m) {
  require_suspended();
  user_suspend_.store(false);
  std::uint32_t m0 = sched_.resume(this, m == 0 ? n_ : m);
  start(m0, resume_site_, resume_transmit_.empty() ? nullptr : resume_transmit_.data());
  dev_.add(shared_from_this());
  return m0;
}

}  // namespace coop::cuda
