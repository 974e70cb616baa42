#include "coop/cuda/job.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "coop/cuda/memops.hpp"
#include "coop/cuda/streams.hpp"
#include "coop/memory.hpp"

namespace coop::cuda {

using cuda::detail::DeviceState;
using cuda::detail::ErrorCode;
using cuda::detail::EventHeader;
using cuda::detail::EventKind;
using cuda::detail::Mailbox;

// ---------------------------------------------------------------- JobCore

namespace {

// COOP_CUDA_JOIN_PACK_WAIT_NS, read at each launch (tests and comparisons set it per job).
std::uint32_t join_pack_wait_from_environment() {
  constexpr std::uint32_t kDefault = 50'000;
  const char* v = std::getenv("COOP_CUDA_JOIN_PACK_WAIT_NS");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  errno = 0;
  const unsigned long long ns = std::strtoull(v, &end, 10);
  if (*end != '\0' || errno != 0 || ns > 1'000'000'000ull || v[0] == '-')
    throw std::invalid_argument(std::string("COOP_CUDA_JOIN_PACK_WAIT_NS must be a number of ns "
                                            "in [0, 1000000000], got '") +
                                v + "'");
  return std::uint32_t(ns);
}

}  // namespace

JobCore::JobCore(DeviceService& dev, coop::detail::Scheduler& sched, const LaunchConfig& cfg,
                 const KernelTraits& traits, std::uint32_t n, std::uint32_t cost,
                 std::uint32_t transmit_bytes)
    : JobState(sched, cfg, n),
      dev_(dev),
      cost_(cost),
      transmit_bytes_(transmit_bytes),
      stride_(cuda::detail::event_stride(transmit_bytes)),
      // Unconsumed spawn records are bounded by N (each holds a workgroup that has not started);
      // kill reports are not, so the ring wraps and a block waits for space only then.
      ring_slots_(2 * n + 256),
      join_pack_wait_ns_(join_pack_wait_from_environment()) {
  using Kind = BufferCache::Kind;
  const std::size_t state_bytes = sizeof(DeviceState) + sizeof(std::uint32_t) * n;
  state_copy_buffer_ =
      CachedBuffer(dev.buffers(), Kind::pinned_host, state_bytes, "allocating a job state copy");
  state_copy_ = state_copy_buffer_.as<DeviceState>();
  std::memset(static_cast<void*>(state_copy_), 0, state_bytes);
  *state_copy_ = DeviceState{};
  state_copy_->release_ring = dev.release_ring().device_words();
  coop::detail::init_channel(state_copy_->channel, cfg, traits, n);
  flags_ = state_copy_->channel.flags;
  state_buffer_ = CachedBuffer(dev.buffers(), Kind::device, state_bytes, "allocating job state");
  state_ = state_buffer_.as<DeviceState>();
  // The whole state, zeros included, by one copy from pinned memory on the control stream: a
  // cudaMemset (a kernel, perhaps loaded lazily) or a copy from pageable memory was seen to wait
  // for another job's persistent kernel, and this job never started.
  write_state(state_bytes);
  const std::size_t mailbox_bytes =
      cuda::detail::ring_offset() + std::size_t(ring_slots_) * stride_;
  mailbox_buffer_ =
      CachedBuffer(dev.buffers(), Kind::mapped_host, mailbox_bytes, "allocating the event mailbox");
  mailbox_host_ = mailbox_buffer_.as<unsigned char>();
  std::memset(mailbox_host_, 0, mailbox_bytes);
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mailbox_dev_), mailbox_host_, 0),
        "mapping the event mailbox");
  control_mirror_ = CachedBuffer(dev.buffers(), Kind::pinned_host, sizeof(DeviceState),
                                 "allocating control staging");
}

JobCore::~JobCore() {
  // A set_target_after copy behind a task still writes into the state: it must have run before
  // the buffer changes hands (this waits for that task's work, if it has not ended).
  if (grown_) {
    cudaEventSynchronize(grown_);
    cudaEventDestroy(grown_);
  }
  // The job's grids have returned (it finished or is suspended); their last blocks may still be
  // leaving, and the buffers must not change hands before they have.
  for (auto* s : streams_) {
    cudaStreamSynchronize(s);
    destroy_stream(s);
  }
  // The buffers go back to the cache as the members are destroyed.
}

void JobCore::write_control(std::uint32_t* field, std::uint32_t value) {
  std::lock_guard lock(control_mu_);
  pending_.push_back({field, value, false});
  flush_control();
}

void JobCore::flush_control() {
  if (pending_.empty()) return;
  std::vector<ValueWrite> writes;
  writes.swap(pending_);
  if (enqueue_writes(dev_.control_stream(), writes)) return;
  // Without the driver's memory operations: copies from a pinned mirror of the state, one word
  // per field, so that a copy still queued reads the latest value (what the device should see
  // anyway).
  for (const ValueWrite& w : writes) {
    unsigned char* staged =
        control_mirror_.as<unsigned char>() +
        (static_cast<unsigned char*>(w.address) - reinterpret_cast<unsigned char*>(state_));
    if (w.wide)
      __atomic_store_n(reinterpret_cast<std::uint64_t*>(staged), w.value, __ATOMIC_RELEASE);
    else
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(staged), std::uint32_t(w.value),
                       __ATOMIC_RELEASE);
    check(cudaMemcpyAsync(w.address, staged, w.wide ? 8 : 4, cudaMemcpyHostToDevice,
                          dev_.control_stream()),
          "sending a scheduler decision to the device");
  }
}

std::uint32_t JobCore::arm_release(std::uint64_t slot_value) {
  std::lock_guard lock(control_mu_);
  const std::uint32_t slot = release_next_++ % cuda::detail::kReleaseSlots;
  stage_release_slot(slot, slot_value);
  return slot;
}

void JobCore::disarm_release(std::uint32_t slot, std::uint32_t value) {
  std::lock_guard lock(control_mu_);
  if (std::uint32_t(release_armed_[slot]) != value) return;  // armed again since
  stage_release_slot(slot, 0);
  try {
    flush_control();
  } catch (const std::exception&) {
    // Best effort: a late device release writes a value nobody waits for any more.
  }
}

void JobCore::stage_release_slot(std::uint32_t slot, std::uint64_t slot_value) {
  // The slot, then the mask of armed slots: a kill that reads the mask first sees the slot as
  // it was or as it is now, and either is safe.
  release_armed_[slot] = slot_value;
  std::uint32_t armed = 0;
  for (std::uint32_t i = 0; i < cuda::detail::kReleaseSlots; ++i)
    if (release_armed_[i] != 0) armed |= 1u << i;
  pending_.push_back({&state_->release[slot], slot_value, true});
  pending_.push_back({&state_->release_armed, armed, false});
}

void JobCore::stage_request(bool suspend) {
  suspend_requested_ = suspend;
  const std::uint32_t word = coop::detail::request_word(target_.load(), suspend);
  mirror_request(word);
  pending_.push_back({&state_->channel.request, word, false});
}

std::uint32_t* JobCore::request_mirror() const {
  static_assert(offsetof(DeviceState, channel) == 0, "the channel opens the device state");
  return &control_mirror_.as<DeviceState>()->channel.request;
}

void JobCore::mirror_request(std::uint32_t word) {
  __atomic_store_n(request_mirror(), word, __ATOMIC_RELEASE);
  if (!grow_pending_) return;
  if (cudaEventQuery(grown_) == cudaErrorNotReady)
    resend_.store(true);  // the copy may read the old word and land after this write
  else
    grow_pending_ = false;
}

namespace {
bool stream_regrow_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("COOP_CUDA_STREAM_REGROW");
    return !(v && std::string(v) == "0");
  }();
  return on;
}
}  // namespace

bool JobCore::set_target_after(std::uint32_t target, CUstream_st* stream) {
  if (!stream_regrow_enabled()) return false;
  // A runtime thread that waits for the task may not have made the job's device current; the
  // copy and the event must be on the stream's device.
  if (cudaSetDevice(dev_.info().index) != cudaSuccess) return false;
  std::lock_guard lock(control_mu_);
  if (grow_pending_ && cudaEventQuery(grown_) == cudaErrorNotReady) return false;
  grow_pending_ = false;
  if (!grown_ && cudaEventCreateWithFlags(&grown_, cudaEventDisableTiming) != cudaSuccess) {
    grown_ = nullptr;
    return false;
  }
  // What was queued before goes first, on the control stream, with the word again if a write
  // raced the last such copy and the service thread has not sent it yet.
  if (resend_.exchange(false))
    pending_.push_back({&state_->channel.request, *request_mirror(), false});
  flush_control();
  const std::uint32_t before = target_.load();
  target_.store(coop::detail::device_target(target, n_, false, flags_));
  mirror_request(coop::detail::request_word(target_.load(), suspend_requested_));
  // A copy, not a stream write of the value: it reads the mirror when it runs.
  if (cudaMemcpyAsync(&state_->channel.request, request_mirror(), sizeof(std::uint32_t),
                      cudaMemcpyHostToDevice, stream) != cudaSuccess) {
    target_.store(before);
    mirror_request(coop::detail::request_word(before, suspend_requested_));
    return false;
  }
  // Recorded after the copy: without it the next set_target_after would not know the copy ran.
  // A failure here is the context's, which the job's streams report.
  if (cudaEventRecord(grown_, stream) == cudaSuccess) grow_pending_ = true;
  return true;
}

void JobCore::resend_request() {
  std::lock_guard lock(control_mu_);
  if (grow_pending_ && cudaEventQuery(grown_) == cudaErrorNotReady) return;
  grow_pending_ = false;
  resend_.store(false);
  pending_.push_back({&state_->channel.request, *request_mirror(), false});
  flush_control();
}

void JobCore::set_target(std::uint32_t target, bool pause_kept) {
  // In one batch with the release slots armed for it just before (Scheduler::set_target).
  std::lock_guard lock(control_mu_);
  target_.store(coop::detail::device_target(target, n_, pause_kept, flags_));
  stage_request(suspend_requested_);
  flush_control();
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

std::pair<CUstream_st*, cuda::detail::PackSlot*> JobCore::idle_stream() {
  std::size_t i = 0;
  while (i < streams_.size() && cudaStreamQuery(streams_[i]) != cudaSuccess) ++i;
  if (i == streams_.size()) streams_.push_back(dev_.create_stream(false, "creating a job stream"));
  // The grid that last used this stream's slot has ended (the stream is idle), and its last
  // block emptied the slot.
  const bool packs = join_pack_wait_ns_ != 0 && i < cuda::detail::kJoinPackSlots;
  return {streams_[i], packs ? &state_->join_pack[i] : nullptr};
}

bool JobCore::ids_by_sm(const LaunchConfig& cfg) {
  // -1: as the job asks; 0 or 1: for every job (comparisons).
  static const int forced = [] {
    const char* v = std::getenv("COOP_CUDA_IDS_BY_SM");
    if (!v || !*v) return -1;
    return std::string(v) == "0" ? 0 : 1;
  }();
  return forced < 0 ? cfg.ids_by_sm : forced == 1;
}

void JobCore::start(std::uint32_t m0, int site, const void* transmit) {
  // No block of the job runs now: the channel can be rewritten from here.
  {
    std::lock_guard lock(state_copy_mu_);
    copy_state(sizeof(DeviceState));
    DeviceState& host = *state_copy_;
    coop::detail::reset_channel(host.channel, m0);
    std::lock_guard control(control_mu_);
    suspend_requested_ = false;
    host.channel.request = coop::detail::request_word(target_.load(), false);
    host.channel.abort = 0;
    if (cancelled()) {
      // Cancelled while a restart was on its way: the blocks leave at their first chance.
      host.channel.request = coop::detail::request_word(0, true);
      host.channel.abort = 1;
    }
    mirror_request(host.channel.request);
    host.outstanding = m0;
    // The start grid's blocks count themselves by SM (pack_ids); join grids find their
    // slots empty (a run that ended in a fault may have left one half used).
    host.start_pack = cuda::detail::PackSlot{};
    for (auto& p : host.join_pack) p = cuda::detail::PackSlot{};
    write_state(sizeof(DeviceState));
  }
  reported_.store(m0);
  running_ = true;
  record_start(m0);
  run_counted_ = true;
  coop::detail::device_run_started();
  try {
    check(launch_grid(0, m0, site, transmit, idle_stream().first, true, nullptr),
          "launching the cooperative kernel (cudaLaunchCooperativeKernel)");
  } catch (...) {
    if (run_counted_.exchange(false)) coop::detail::device_run_ended();
    throw;
  }
}

const EventHeader* JobCore::event(std::uint32_t index) const {
  return reinterpret_cast<const EventHeader*>(mailbox_host_ + cuda::detail::ring_offset() +
                                              std::size_t(index % ring_slots_) * stride_);
}

bool JobCore::service() {
  for (;;) {
    const EventHeader* e = event(consumed_);
    const std::uint64_t word =
        __atomic_load_n(reinterpret_cast<const std::uint64_t*>(e), __ATOMIC_ACQUIRE);
    if (std::uint32_t(word) != consumed_ + 1) break;
    const std::uint32_t tag = std::uint32_t(word >> 32);
    const EventKind kind = cuda::detail::tag_kind(tag);
    // Ordered after the word by the acquire load: written before it (events with fields).
    const EventHeader h = *e;
    std::vector<unsigned char> payload;
    if (kind == EventKind::spawn || kind == EventKind::suspended) {
      payload.resize(transmit_bytes_);
      if (transmit_bytes_)
        std::memcpy(payload.data(), reinterpret_cast<const unsigned char*>(e) + sizeof(EventHeader),
                    transmit_bytes_);
    }
    ++consumed_;
    __atomic_store_n(&reinterpret_cast<Mailbox*>(mailbox_host_)->consumed, consumed_,
                     __ATOMIC_RELEASE);
    std::int64_t delta = 0;
    if (kind == EventKind::spawn) {
      const auto [stream, pack] = idle_stream();
      int rc = launch_grid(h.first, h.count, h.site, payload.data(), stream, false, pack);
      if (rc != cudaSuccess) {
        fail(std::string("launching ") + std::to_string(h.count) +
             " joining workgroups: " + cudaGetErrorString(cudaError_t(rc)));
        // Their slots in `outstanding` will never be returned: end the job from here.
        finish(false);
        return false;
      }
      delta = h.count;
    } else if (kind == EventKind::membership) {
      delta = -std::int64_t(cuda::detail::tag_value(tag));
    } else if (kind == EventKind::suspended) {
      resume_site_ = h.site;
      resume_transmit_ = std::move(payload);
    } else if (kind == EventKind::done) {
      finish(cuda::detail::tag_value(tag) != 0);
      return false;
    }
    if (delta != 0) {
      std::uint32_t m = std::uint32_t(std::int64_t(reported_.load()) + delta);
      reported_.store(m);
      record_membership(m);
    }
  }
  if (resend_.load(std::memory_order_relaxed)) resend_request();
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
    case ErrorCode::loop_misuse:
      return "coop::for_each at line " + std::to_string(e.b) + " (workgroup " +
             std::to_string(e.a) +
             "): the loop cursor belongs to a later loop (two loops on one cursor without a "
             "global or resizing barrier between them, an epoch that did not increase) or the "
             "range is invalid (end > 2^39 or end < begin)";
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
  if (run_counted_.exchange(false)) coop::detail::device_run_ended();  // no kernel of it runs
  std::unique_lock lock(mu_);
  running_ = false;
  end_run(lock, suspended, reported_.load(), err);
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

void JobCore::write_state(std::size_t bytes) {
  cudaStream_t ctl = dev_.control_stream();
  check(cudaMemcpyAsync(state_, state_copy_, bytes, cudaMemcpyHostToDevice, ctl),
        "writing job state");
  check(cudaStreamSynchronize(ctl), "writing job state");
}

void JobCore::copy_state(std::size_t bytes) const {
  // Through pinned memory: a copy into pageable memory (a stack variable) is staged by the
  // driver and was seen to wait for the persistent job itself, never returning while it ran.
  cudaStream_t ctl = dev_.control_stream();
  check(cudaMemcpyAsync(state_copy_, state_, bytes, cudaMemcpyDeviceToHost, ctl),
        "reading the job's state");
  check(cudaStreamSynchronize(ctl), "reading the job's state");
}

void JobCore::read_channel(coop::detail::Channel& out) const {
  static_assert(offsetof(DeviceState, channel) == 0, "the channel opens the device state");
  std::lock_guard lock(state_copy_mu_);
  copy_state(sizeof(coop::detail::Channel));
  out = state_copy_->channel;
}

void JobCore::take_counters(JobStats& s) const {
  coop::detail::Channel counters;
  read_channel(counters);
  coop::detail::take_counters(s, counters);
}

void JobCore::abort_on_device() {
  // Kill requests for all (offer_kill then sees the abort), a suspension at the next resizing
  // barrier, and the abort every protocol wait polls.
  std::lock_guard lock(control_mu_);
  target_.store(0);
  stage_request(true);
  pending_.push_back({&state_->channel.abort, 1, false});
  flush_control();
}

std::string JobCore::describe() const {
  DeviceState host{};
  try {
    std::lock_guard lock(state_copy_mu_);
    copy_state(sizeof(host));
    host = *state_copy_;
  } catch (const std::exception&) {
    return "device state unreadable";
  }
  const auto& ch = host.channel;
  const std::uint64_t w = ch.membership, r = ch.release;
  std::string s =
      "device: M " + std::to_string(coop::detail::active_of(w)) + ", barrier parity " +
      std::to_string(coop::detail::parity_of(w)) + " arrivals " +
      std::to_string(coop::detail::barrier_arrivals(w)) + ", leaving " +
      std::to_string(coop::detail::leaving_of(w)) + "; decisions " +
      std::to_string(coop::detail::decisions_of(w)) + ", last release threshold " +
      std::to_string((r >> 32) & 0xffff) + " M " + std::to_string(r >> 48) + "; target " +
      std::to_string(coop::detail::target_of(ch.request)) + ", suspend " +
      std::to_string(coop::detail::suspend_of(ch.request)) + ", abort " + std::to_string(ch.abort) +
      ", returned " + std::to_string(ch.finished) + ", blocks outstanding " +
      std::to_string(host.outstanding) + ", events " + std::to_string(host.next_event) +
      " posted / " +
      std::to_string(__atomic_load_n(&reinterpret_cast<const Mailbox*>(mailbox_host_)->consumed,
                                     __ATOMIC_ACQUIRE)) +
      " handled; barriers " + std::to_string(ch.barriers) + ", kills " + std::to_string(ch.kills) +
      ", forked " + std::to_string(ch.forked_groups);
  return s;
}

void JobCore::require_suspendable() const {
  if (cfg_.mode == Mode::persistent)
    throw std::logic_error(
        "a Mode::persistent job is a plain persistent kernel on the GPU: it cannot suspend");
}

void JobCore::request_suspend(bool on) {
  std::lock_guard lock(control_mu_);
  stage_request(on);
  flush_control();
}

void JobCore::relaunch(std::uint32_t m) {
  start(m, resume_site_, resume_transmit_.empty() ? nullptr : resume_transmit_.data());
  dev_.add(shared_from_this());
}

}  // namespace coop::cuda
