// CUDA backend, kernel side: the kernel context of one GPU thread, the Env through which
// thread 0 of a block runs the shared protocol, the __global__ wrapper every workgroup runs in,
// and the typed job that launches it. Include from .cu files (nvcc); coop/runtime.hpp does so
// automatically when compiled by nvcc with the CUDA backend built.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "coop/cuda/job.hpp"
#include "coop/cuda/state.hpp"
#include "coop/detail/launch_checks.hpp"
#include "coop/detail/protocol.hpp"
#include "coop/kernel.hpp"

namespace coop::cuda {

namespace detail {

using coop::detail::Channel;
using coop::detail::order;
using coop::detail::WaitKind;
template <class T>
using dev_atomic = coop::detail::atomic<T>;

/// Everything a block of kernel K needs, passed by value as the kernel's parameter.
template <class K>
struct LaunchArgs {
  DeviceState* state;
  Mailbox* mailbox;            ///< device view of the pinned host mailbox
  std::uint32_t* incarnation;  ///< per id, for the adversarial generator
  std::uint32_t ring_slots;
  std::uint32_t stride;
  std::uint32_t first;  ///< id of block 0 of this grid
  std::int32_t site;    ///< resume point
  std::uint32_t flags;  ///< the channel's flags (fixed at launch)
  /// Ids by SM (placed_kernel): where this grid's blocks count themselves, and how long a
  /// counted block waits for the others, in ns (0: for all of them, a co-resident start grid).
  PackSlot* pack;
  std::uint32_t pack_wait_ns;
  params_t<K> params;
  transmit_t<K> transmit;
};

enum BlockFlags : std::uint32_t { block_killed = 1, block_aborted = 2 };

template <class K>
struct BlockState {
  std::uint64_t result;  ///< thread 0's answer to a workgroup-level primitive
  std::uint32_t flags;
  std::uint32_t barriers;  ///< workgroup 0: barriers not yet added to the channel's count
  shared_t<K> shared;
};

__device__ inline void store_system(std::uint32_t* p, std::uint32_t v) {
  ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_system>(*p).store(
      v, ::cuda::std::memory_order_release);
}

/// Claims the next record of the event ring (waiting for space only after a wrap).
template <class K>
__device__ unsigned char* claim_event(const LaunchArgs<K>& a, std::uint32_t& idx) {
  idx = atomicAdd(&a.state->next_event, 1u);
  if (idx >= a.ring_slots) {
    // After a wrap: wait until the host has consumed the record this one replaces (rare; the
    // only read of host memory a block ever makes).
    volatile std::uint32_t* consumed = &a.mailbox->consumed;
    while (idx - *consumed >= a.ring_slots) __nanosleep(1000);
  }
  return reinterpret_cast<unsigned char*>(a.mailbox) + ring_offset() +
         std::uint64_t(idx % a.ring_slots) * a.stride;
}

/// Sends an event that is its tag alone (a membership change, the end of the job): one 8-byte
/// store, no fence (see EventHeader).
template <class K>
__device__ void post_word(const LaunchArgs<K>& a, std::uint32_t tag) {
  std::uint32_t idx = 0;
  unsigned char* slot = claim_event(a, idx);
  ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_system>(
      *reinterpret_cast<std::uint64_t*>(slot))
      .store(event_word(idx + 1, tag), ::cuda::std::memory_order_relaxed);
}

/// Sends one event with its fields (and `payload`) to the host: the record first, the word with
/// its sequence number last.
template <class K>
__device__ void post_event(const LaunchArgs<K>& a, EventKind kind, std::uint32_t first,
                           std::uint32_t count, std::int32_t site, const transmit_t<K>* payload) {
  std::uint32_t idx = 0;
  unsigned char* slot = claim_event(a, idx);
  auto* h = reinterpret_cast<volatile EventHeader*>(slot);
  h->first = first;
  h->count = count;
  h->site = site;
  if (payload && sizeof(transmit_t<K>) > 0 && !std::is_empty_v<transmit_t<K>>) {
    const unsigned char* src = reinterpret_cast<const unsigned char*>(payload);
    volatile unsigned char* dst = slot + sizeof(EventHeader);
    for (std::uint32_t i = 0; i < sizeof(transmit_t<K>); ++i) dst[i] = src[i];
  }
  // The release store alone orders the record before the word; the fence also pushes the
  // record out to host memory. These events start workgroups (spawn) or end a run (suspended),
  // not on the way of a leaving block.
  __threadfence_system();
  ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_system>(
      *reinterpret_cast<std::uint64_t*>(slot))
      .store(event_word(idx + 1, event_tag(kind)), ::cuda::std::memory_order_release);
}

/// Records the job's first error for the host and asks every block to stop.
template <class K>
__device__ void report_error(const LaunchArgs<K>& a, ErrorCode code, std::int64_t x,
                             std::int64_t y = 0, std::int64_t z = 0, std::int64_t w = 0) {
  if (atomicCAS(&a.state->error_claimed, 0u, 1u) == 0u) {
    volatile ErrorRecord* e = &a.mailbox->error;
    e->code = code;
    e->a = x;
    e->b = y;
    e->c = z;
    e->d = w;
    __threadfence_system();
    store_system(const_cast<std::uint32_t*>(&e->set), 1);
  }
  dev_atomic<std::uint32_t>(a.state->channel.abort).store(1);
}

/// Thread 0's bookkeeping when its block leaves the kernel (returned, killed or aborted).
template <class K>
__device__ void block_exit(const LaunchArgs<K>& a, bool finished_normally) {
  if (finished_normally) dev_atomic<std::uint32_t>(a.state->channel.finished).fetch_add(1);
  if (dev_atomic<std::uint32_t>(a.state->outstanding).fetch_sub(1) == 1) {
    // The last workgroup of the job: nothing can spawn any more.
    std::uint32_t suspended = dev_atomic<std::uint32_t>(a.state->channel.suspended).load();
    post_word(a, event_tag(EventKind::done, suspended != 0 ? 1u : 0u));
  }
}

/// Thread 0 of a block that must stop now (the job failed): leaves, and the block's other
/// threads leave when they see the aborted flag after the workgroup barrier they wait at. (A
/// flag, not a reserved result value: any value can be broadcast.)
template <class K>
[[noreturn]] __device__ void abort_block(const LaunchArgs<K>& a, BlockState<K>& bs) {
  bs.flags |= block_aborted;
  block_exit(a, false);
  __threadfence_block();
  asm volatile("exit;");
  __builtin_unreachable();
}

/// A workgroup's id in launch order (first + blockIdx.x): a value the compiler recomputes from
/// the launch's parameters wherever it is used, so it holds no register.
struct LaunchOrderId {
  std::uint32_t value;
  __device__ std::uint32_t get() const { return value; }
};
/// A workgroup's id by SM (pack_ids), read from shared memory at every use: held in a register
/// for the whole kernel, an id the compiler cannot recompute cost some kernels an occupancy step.
struct PlacedId {
  const std::uint32_t* at;
  __device__ std::uint32_t get() const { return *static_cast<const volatile std::uint32_t*>(at); }
};

/// The protocol's view of the GPU for one block (used by its thread 0 only).
template <class K, class Id>
class Env {
 public:
  __device__ Env(const LaunchArgs<K>& a, BlockState<K>& bs, Id id, const transmit_t<K>* t0)
      : a_(a), bs_(bs), id_(id), t0_(t0) {}

  __device__ void begin_wait() { spins_ = 0; }
  __device__ void relax(WaitKind kind, int) {
    // Paused (the protocol checks the abort): sleep between polls, leaving the SM's issue slots
    // to the task's blocks beside this one; a poll every half microsecond wakes it promptly.
    if (kind == WaitKind::paused) {
      __nanosleep(512);
      return;
    }
    // Spin on the L2 first (a barrier or batch exit usually completes within microseconds),
    // then back off so that long waits leave the memory system to the workgroups that work.
    ++spins_;
    if (spins_ > 4096) __nanosleep(spins_ < 65536 ? 64 : 1000);
    if ((spins_ & 1023) == 0 &&
        dev_atomic<std::uint32_t>(a_.state->channel.abort).load(order::relaxed) != 0)
      abort_block(a_, bs_);
  }
  __device__ void spawn(std::uint32_t first, std::uint32_t count, int site) {
    // Counted before the grid exists, so the job cannot look finished in between.
    dev_atomic<std::uint32_t>(a_.state->outstanding).fetch_add(count);
    post_event<K>(a_, EventKind::spawn, first, count, site, t0_);
  }
  __device__ void suspend(int site) { post_event<K>(a_, EventKind::suspended, 0, 0, site, t0_); }
  __device__ std::uint64_t random() {
    if (!seeded_) {
      std::uint32_t inc = atomicAdd(&a_.incarnation[id_.get()], 1u);
      state_ = coop::detail::mix64(a_.state->channel.seed ^
                                   coop::detail::mix64(std::uint64_t(id_.get()) << 32 ^ inc));
      seeded_ = true;
    }
    return coop::detail::mix64(state_++);
  }
  __device__ void on_membership(std::uint32_t before, std::uint32_t after) {
    // Growth is reported by the spawn events; shrinking here.
    if (after >= before) return;
    release_tasks(after);
    post_word(a_, event_tag(EventKind::membership, before - after));
  }
  // Tasks enqueued at their request that M <= `m` gives enough: their stream goes on now.
  // Not inlined, one slot at a time: the kill path it sits on must not raise the register
  // count of every kernel (unrolled, its loads would all be in flight at once).
  __device__ __noinline__ void release_tasks(std::uint32_t m) {
    DeviceState* st = a_.state;
    // Only the armed slots: a kill that no task waits for costs one load.
    for (std::uint32_t armed = dev_atomic<std::uint32_t>(st->release_armed).load(order::relaxed);
         armed != 0; armed &= armed - 1) {
      const std::uint32_t i = std::uint32_t(__ffs(int(armed)) - 1);
      const std::uint64_t s = dev_atomic<std::uint64_t>(st->release[i]).load(order::relaxed);
      // Relaxed: the task's stream orders nothing of the job's after this word, and a release
      // at system scope would hold the leaving block for a round trip to host memory.
      if (s != 0 && m <= std::uint32_t(s >> 48))
        ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_system>(
            st->release_ring[(s >> 32) & 0xffffu])
            .store(std::uint32_t(s), ::cuda::std::memory_order_relaxed);
    }
  }
  __device__ void barrier_unreachable(int site, std::uint32_t arrived, std::uint32_t active,
                                      std::uint32_t finished) {
    report_error(a_, ErrorCode::barrier_unreachable, site, arrived, active, finished);
    abort_block(a_, bs_);
  }
  __device__ void invariant_failed(const char*) {
    report_error(a_, ErrorCode::invariant, 0);
    abort_block(a_, bs_);
  }
  __device__ void abort() { abort_block(a_, bs_); }

 private:
  const LaunchArgs<K>& a_;
  BlockState<K>& bs_;
  Id id_;
  const transmit_t<K>* t0_;
  std::uint32_t spins_ = 0;
  bool seeded_ = false;
  std::uint64_t state_ = 0;
};

/// The kernel context of one GPU thread (see include/coop/kernel.hpp). `Fresh`: the block
/// starts at resume point 0 (the launch grid), known at compile time, so the kernel's resume
/// switch folds away and its loops stay reducible for the optimiser; joining grids start
/// anywhere.
template <class K, bool Fresh, class Id>
class Ctx {
 public:
  __device__ Ctx(const LaunchArgs<K>& a, BlockState<K>& bs, Id id, Env<K, Id>& env)
      : a_(a), bs_(bs), id_(id), env_(env) {
    // Only thread 0 polls; the others keep a view whose votes are always no (M 0x3fff, the
    // request's target 0x3fff: neither a kill nor a fork).
    view_word_ = coop::kMaxGroupsLimit;
    view_request_ = coop::kMaxGroupsLimit;
    prefetch();
  }

  __device__ std::uint32_t group_id() const { return id_.get(); }
  // M as the last barrier left it, while no primitive of this workgroup has run since: the
  // grid-stride loops between two barriers then agree on it without a load per call.
  __device__ std::uint32_t num_groups() const {
    if (m_seen_) return m_seen_;
    return coop::detail::active_of(dev_atomic<std::uint64_t>(a_.state->channel.membership).load());
  }
  __device__ std::uint32_t max_groups() const { return a_.state->channel.max_groups; }
  __device__ std::uint32_t local_id() const { return threadIdx.x; }
  __device__ std::uint32_t local_size() const { return blockDim.x; }
  __device__ std::uint64_t global_id() const {
    return std::uint64_t(id_.get()) * blockDim.x + threadIdx.x;
  }
  __device__ std::uint64_t global_size() const { return std::uint64_t(num_groups()) * blockDim.x; }
  __device__ int resume_point() const { return Fresh ? 0 : a_.site; }
  __device__ shared_t<K>& shared() { return bs_.shared; }

  __device__ void barrier(int = 0) { __syncthreads(); }
  // offer_kill and request_fork with nothing to do are the hot path. Thread 0 keeps the
  // membership word and the target as loaded at its previous call, and one barrier votes on
  // whether it must run the protocol (which reads fresh values). The next loads are issued
  // after the vote, so their latency hides behind the kernel's own work, and only by thread 0:
  // every workgroup polls the same two lines, and 256 threads' loads would make them hot. A
  // request is seen at most one interval late, which the model allows: offer_kill may always
  // decline.
  //
  // The vote needs no thread test (the other threads' view never votes yes) and tests one
  // flag: a job that never resizes may vote yes only once cancelled (target 0), and the
  // protocol then declines. (Predicated loads instead of the branch in prefetch, or a pointer
  // to the polled target chosen by the flags, cost the phased apps 6 registers and an
  // occupancy step.)
  //
  // Their protocol runs out of line (decide<true>). Inlined, it competed for registers with the
  // kernel's loop around it: the persistent GEMM, at its 128-register bound with its
  // accumulators live across its offers, spilled (80 bytes in the placed form), and the
  // yielding app forms took up to 40 registers more (bc 110 against 70, bfs 84 against 59: 2
  // against 4 workgroups of 256 threads per SM). Out of line, only a call that runs the
  // protocol saves and restores what it clobbers. A light kernel may take a few more (the
  // call's ~40): the game search declares launch bounds to keep its 32.
  __device__ bool offer_kill(int site = 0) { return offer_kill_fresh(site, false); }
  // coop::for_each's offer after a long chunk. With `fresh` (read on thread 0 only), thread 0
  // reloads the request word as it finishes its part of the chunk and the vote waits for it,
  // instead of voting on the word it loaded as the chunk began: a request that reached the
  // device during the chunk is seen at its end, not one chunk later. The wait is thread 0's
  // alone, while its workgroup's slower warps finish. (Skipping the loads after the vote when
  // they were fresh cost the yielding p-sssp 4 registers and an occupancy step.)
  __device__ bool offer_kill_fresh(int site, bool fresh) {
    m_seen_ = 0;
    if (fresh && threadIdx.x == 0)
      view_request_ = dev_atomic<std::uint32_t>(a_.state->channel.request).load(order::relaxed);
    const bool any = __syncthreads_or(
        (coop::detail::target_of(view_request_) < coop::detail::active_of(view_word_)) ||
        (a_.flags & coop::detail::flag_adversarial) != 0);
    prefetch();
    if (!any) return false;
    return decide<true>(
               [&] {
                 auto p = protocol();
                 if (p.offer_kill(id_.get(), site)) return 1u;
                 return p.pause_at_offer(site) ? 1u : 0u;
               },
               true) != 0;
  }
  // The same vote as an idle offer_kill, on the values thread 0 loaded at its last check.
  __device__ bool kill_requested() {
    m_seen_ = 0;
    const bool maybe = threadIdx.x == 0 &&
                       coop::detail::kill_wanted(id_.get(), view_word_,
                                                 coop::detail::target_of(view_request_), a_.flags);
    const bool any = __syncthreads_or(maybe);
    prefetch();
    return any;
  }
  // kill_requested's and request_fork's checks on one vote, which is also the workgroup's
  // barrier: a kernel that polls where it synchronises its workgroup anyway (a tiled loop's
  // barrier) pays no barrier for the poll, only thread 0's test and its next loads. The answer
  // is broadcast only when there is one.
  __device__ coop::Polled poll_barrier(int = 0) {
    m_seen_ = 0;
    std::uint32_t bits = 0;
    if (threadIdx.x == 0) {
      const std::uint32_t target = coop::detail::target_of(view_request_);
      bits = coop::detail::polled_bits(
          coop::detail::kill_wanted(id_.get(), view_word_, target, a_.flags),
          coop::detail::fork_wanted(view_word_, target, a_.flags));
    }
    const bool any = __syncthreads_or(bits != 0);
    prefetch();
    if (!any) return {};
    return coop::detail::polled_of(broadcast(bits));
  }
  __device__ std::uint32_t request_fork(int site = 0) {
    if (a_.flags & (coop::detail::flag_no_resize | coop::detail::flag_no_grow)) return 0;
    m_seen_ = 0;
    const bool maybe = threadIdx.x == 0 && ((a_.flags & coop::detail::flag_adversarial) ||
                                            coop::detail::target_of(view_request_) >
                                                coop::detail::active_of(view_word_));
    const bool any = __syncthreads_or(maybe);
    prefetch();
    if (!any) return 0;
    return std::uint32_t(
        decide<true>([&] { return protocol().request_fork(id_.get(), site); }, false));
  }
  __device__ void global_barrier(int site = 0) {
    seen(collective([&] { return barrier_on_view(false, site, {}); }, false));
  }
  __device__ bool resizing_barrier(int site = 0) {
    // Workgroup 0 loads the request word as it reaches the barrier, before the workgroup
    // barrier, whose wait hides the load that its decision whether to hold the barrier needs (M
    // and the parity come from its view: only kills and forks change them between barriers,
    // and those refresh it). Its view's request, loaded at its last primitive, would save the
    // load but live across the kernel's phase: 6-8 more registers in the phased apps.
    coop::detail::ChannelView request{view_word_, 0};
    if (threadIdx.x == 0 && id_.get() == 0) request.request = protocol().request();
    return seen(collective([&] { return barrier_on_view(true, site, request); }, true));
  }
  /// Thread 0 of a block leaving the kernel: adds the barriers it counted to the channel's.
  __device__ void leave() {
    if (threadIdx.x == 0) protocol().flush_barrier_count(bs_.barriers);
  }
  // Fresh loads, kept as thread 0's view: an offer right after a query that saw the request
  // votes on the same words, so a wanted workgroup leaves there rather than one offer later
  // (Semantics.QueryReturnsOutstandingRequest).
  __device__ std::uint32_t query(int = 0) {
    return std::uint32_t(collective(
        [&] {
          load_view();
          return coop::detail::wanted_back(view_word_, coop::detail::target_of(view_request_),
                                           a_.flags);
        },
        false));
  }
  template <class T>
  __device__ T broadcast(const T& value, int = 0) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>);
    std::uint64_t bits = 0;
    if (threadIdx.x == 0) std::memcpy(&bits, &value, sizeof(T));
    std::uint64_t r = collective([&] { return bits; }, false);
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
  }
  /// Misuse of a workgroup-level primitive found by thread 0 (coop::for_each's cursor checks):
  /// the job fails with a report naming the site, and every block stops.
  __device__ void report_misuse(int site, const char*) {
    report_error(a_, ErrorCode::loop_misuse, id_.get(), site);
    abort_block(a_, bs_);
  }
  /// One step of a spin-wait in kernel code.
  __device__ void pause() { __nanosleep(100); }
  __device__ void unknown_resume_point() {
    if (threadIdx.x == 0) {
      report_error(a_, ErrorCode::unknown_resume_point, id_.get(), a_.site);
      bs_.flags |= block_aborted;
    }
    __syncthreads();
  }

 private:
  __device__ coop::detail::Protocol<Env<K, Id>> protocol() const {
    return coop::detail::Protocol<Env<K, Id>>(a_.state->channel, env_, a_.flags);
  }
  // Thread 0's view for the next vote. The raw words are kept: any arithmetic on a loaded
  // value here would wait for the load. Two predicated loads from the state's one pointer
  // rather than loads under a branch (the other threads keep their view, whose votes are always
  // no). ptxas may branch around them again, as it does in the idle-offer benchmark's loop, whose
  // cost did not change; but the persistent GEMM came out 0.9 % faster this way (0.954 of its
  // plain twin against 0.945, H200, results/2026-11-28-predicated-poll/), an effect on its code
  // generation. With two pointers its unplaced form spilled.
  __device__ void prefetch() {
    static_assert(offsetof(DeviceState, channel) == 0 &&
                  offsetof(coop::detail::Channel, membership) == 0);
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\t"
        "@p ld.relaxed.gpu.u64 %0, [%3];\n\t"
        "@p ld.relaxed.gpu.u32 %1, [%3+%4];\n\t}"
        : "+l"(view_word_), "+r"(view_request_)
        : "r"(threadIdx.x), "l"(a_.state), "n"(offsetof(coop::detail::Channel, request)));
  }
  __device__ void load_view() {
    view_word_ = dev_atomic<std::uint64_t>(a_.state->channel.membership).load(order::relaxed);
    view_request_ = dev_atomic<std::uint32_t>(a_.state->channel.request).load(order::relaxed);
  }
  // Thread 0 at a barrier: `view` holds workgroup 0's request at a resizing barrier; the
  // barrier refreshes the offer vote's view while it fills.
  __device__ std::uint64_t barrier_on_view(bool resizing, int site,
                                           coop::detail::ChannelView view) {
    const std::uint32_t m = protocol().barrier(id_.get(), resizing, site, &view, &bs_.barriers);
    // M as the barrier left it (a resize changed it); the parity stays the next barrier's.
    view_word_ = m != 0 ? (view.membership & ~0x3fffull) | m : view.membership;
    view_request_ = view.request;
    return coop::detail::barrier_result(m);
  }
  // A workgroup-level primitive: every thread arrives, thread 0 runs the protocol, all threads
  // get its answer.
  template <class F>
  __device__ std::uint64_t collective(F&& thread0, bool may_leave) {
    __syncthreads();
    return decide(thread0, may_leave);
  }
  // The second half, once every thread has arrived. `OutOfLine`: thread 0 calls the protocol
  // rather than inlining it (offer_kill and request_fork, which kernels call inside their loops).
  template <bool OutOfLine = false, class F>
  __device__ std::uint64_t decide(F&& thread0, bool may_leave) {
    if (threadIdx.x == 0) {
      env_.begin_wait();
      std::uint64_t r;
      if constexpr (OutOfLine)
        r = call_out_of_line(thread0);
      else
        r = thread0();
      bs_.result = r;
      if (may_leave && (r & 1)) bs_.flags |= block_killed;
    }
    __syncthreads();
    if (bs_.flags & block_aborted) asm volatile("exit;");
    return bs_.result;
  }

  template <class F>
  static __device__ __noinline__ std::uint64_t call_out_of_line(F& f) {
    return f();
  }

  __device__ bool seen(std::uint64_t result) {
    m_seen_ = std::uint32_t(result >> 1);
    return (result & 1) != 0;
  }

  const LaunchArgs<K>& a_;
  BlockState<K>& bs_;
  Id id_;
  Env<K, Id>& env_;
  std::uint32_t m_seen_ = 0;        ///< M from the last barrier (0: not known, read it)
  std::uint64_t view_word_ = 0;     ///< thread 0's view for the offer vote: the membership word
  std::uint32_t view_request_ = 0;  ///< ... and the request word
};

/// Ids by SM (placed_kernel): the blocks of SM 0 take the lowest ids of the grid, then those of
/// SM 1, and so on, so that the top ids (the ones offer_kill removes first) fill whole SMs. A
/// task's blocks then run on SMs of their own: a block placed beside running blocks of a
/// compute-bound kernel is starved by their warps (on an H100 a 5 us block took 0.66-31 ms
/// beside five of them per SM, `coop_bench_gpu --only beside`), and the job's forked blocks,
/// which take the top ids, share SMs only with each other. The grid's ids are
/// [first, first + gridDim.x). Each block counts itself on its SM and waits for the others: all
/// of them for a start grid (cooperative, so resident), at most `wait_ns` for a join grid, whose
/// blocks may wait for SMs a task still holds. Then the first block to have waited that long
/// closes the count: the blocks counted by then take their ids by SM, the others the ids above
/// theirs in the order they arrive. Either way every id is taken once. Thread 0 writes the id to
/// `id`. One copy per kernel type K: a copy shared by two kernels of one translation unit takes
/// `id` as a pointer, which the compiler had specialised away for a single caller, and the two
/// persistent GEMM kernels of one file then ran 5 % slower (results/2026-11-28-colocation-stall/).
template <class K>
__device__ __noinline__ void pack_ids(PackSlot* p, std::uint32_t first, std::uint32_t wait_ns,
                                      std::uint32_t& id) {
  __shared__ std::uint32_t sm, slot, below, last;
  if (threadIdx.x == 0) {
    below = 0;
    last = 0;
    const std::uint32_t arrival = atomicAdd(&p->arrived, 1u);
    if (arrival & kPackClosed) {
      sm = kMaxSms;  // late: the next id above the counted blocks'
      slot = arrival & ~kPackClosed;
    } else {
      std::uint32_t s;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
      sm = s < kMaxSms ? s : kMaxSms - 1;
      slot = atomicAdd(&p->blocks_on_sm[sm], 1u);
      dev_atomic<std::uint32_t>(p->registered).fetch_add(1, order::release);
      std::uint64_t since = 0;
      for (;;) {
        const std::uint32_t counted = dev_atomic<std::uint32_t>(p->registered).load(order::acquire);
        const std::uint32_t closed = dev_atomic<std::uint32_t>(p->closed_at).load(order::acquire);
        if (counted == gridDim.x || (closed != 0 && counted == closed - 1)) break;
        if (wait_ns != 0 && closed == 0) {
          std::uint64_t now;
          asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
          if (since == 0) since = now;
          if (now - since > wait_ns) {
            // Close the count: blocks that arrive from now on are late.
            const std::uint32_t before = atomicOr(&p->arrived, kPackClosed);
            if (!(before & kPackClosed))
              dev_atomic<std::uint32_t>(p->closed_at).store(before + 1, order::release);
            continue;
          }
        }
        __nanosleep(100);
      }
    }
  }
  __syncthreads();
  const std::uint32_t on = sm;
  if (on < kMaxSms) {
    std::uint32_t sum = 0;
    for (std::uint32_t i = threadIdx.x; i < on; i += blockDim.x)
      sum += dev_atomic<std::uint32_t>(p->blocks_on_sm[i]).load(order::relaxed);  // not L1's
    if (sum) atomicAdd(&below, sum);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    id = first + below + slot;
    // A join grid's slot serves the next grid on its stream: its last block empties it.
    if (wait_ns != 0 &&
        dev_atomic<std::uint32_t>(p->taken).fetch_add(1, order::acq_rel) == gridDim.x - 1)
      last = 1;
  }
  __syncthreads();
  if (last) {
    for (std::uint32_t i = threadIdx.x; i < kMaxSms; i += blockDim.x)
      dev_atomic<std::uint32_t>(p->blocks_on_sm[i]).store(0, order::relaxed);
    if (threadIdx.x == 0) {
      dev_atomic<std::uint32_t>(p->arrived).store(0, order::relaxed);
      dev_atomic<std::uint32_t>(p->registered).store(0, order::relaxed);
      dev_atomic<std::uint32_t>(p->closed_at).store(0, order::relaxed);
      dev_atomic<std::uint32_t>(p->taken).store(0, order::relaxed);
    }
  }
}

/// Every block of every grid of a job of kernel K runs this (from the __global__ functions
/// below: with or without the kernel's launch bounds; `ByPlace`: a start grid whose ids go by
/// SM, otherwise ids in launch order).
template <class K, bool ByPlace>
__device__ __forceinline__ void run_block(const LaunchArgs<K>& a) {
  __shared__ alignas(16) unsigned char raw[sizeof(BlockState<K>)];
  BlockState<K>& bs = *reinterpret_cast<BlockState<K>*>(raw);
  // Shared state starts zeroed, as on the CPU backend.
  for (std::uint32_t i = threadIdx.x; i < sizeof(BlockState<K>); i += blockDim.x) raw[i] = 0;
  __syncthreads();
  using Id = std::conditional_t<ByPlace, PlacedId, LaunchOrderId>;
  Id id;
  if constexpr (ByPlace) {
    __shared__ std::uint32_t placed_id;
    pack_ids<K>(a.pack, a.first, a.pack_wait_ns, placed_id);
    __syncthreads();
    id = Id{&placed_id};
  } else {
    id = Id{a.first + blockIdx.x};
  }
  transmit_t<K> t = a.transmit;
  Env<K, Id> env(a, bs, id, &t);
  if (a.site == 0) {
    Ctx<K, true, Id> ctx(a, bs, id, env);
    K{}(ctx, a.params, t);
    ctx.leave();
  } else {
    Ctx<K, false, Id> ctx(a, bs, id, env);
    K{}(ctx, a.params, t);
    ctx.leave();
  }
  __syncthreads();
  if (threadIdx.x == 0) block_exit(a, (bs.flags & (block_killed | block_aborted)) == 0);
}

template <class K>
__global__ void kernel(const __grid_constant__ LaunchArgs<K> a) {
  run_block<K, false>(a);
}
template <class K>
__global__ void placed_kernel(const __grid_constant__ LaunchArgs<K> a) {
  run_block<K, true>(a);
}
/// K's launch bounds (KernelTraits::max_threads, min_groups_per_sm).
template <class K>
inline constexpr unsigned max_threads_of = coop::detail::traits_of<K>().max_threads;
template <class K>
inline constexpr unsigned min_groups_of = coop::detail::traits_of<K>().min_groups_per_sm;
template <class K>
__global__ void __launch_bounds__(max_threads_of<K>, min_groups_of<K>)
    bounded_kernel(const __grid_constant__ LaunchArgs<K> a) {
  run_block<K, false>(a);
}
template <class K>
__global__ void __launch_bounds__(max_threads_of<K>, min_groups_of<K>)
    bounded_placed_kernel(const __grid_constant__ LaunchArgs<K> a) {
  run_block<K, true>(a);
}

/// Mode::persistent: the kernel context of a plain persistent kernel, the baseline cooperative
/// kernels are compared with. The grid is fixed at launch (a cooperative launch of M0 blocks),
/// offer_kill and request_fork do nothing, and both global barriers are CUDA's grid barrier.
template <class K>
class PlainCtx {
 public:
  __device__ PlainCtx(BlockState<K>& bs, std::uint32_t* barriers) : bs_(bs), barriers_(barriers) {}

  __device__ std::uint32_t group_id() const { return blockIdx.x; }
  __device__ std::uint32_t num_groups() const { return gridDim.x; }
  __device__ std::uint32_t max_groups() const { return gridDim.x; }
  __device__ std::uint32_t local_id() const { return threadIdx.x; }
  __device__ std::uint32_t local_size() const { return blockDim.x; }
  __device__ std::uint64_t global_id() const {
    return std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  }
  __device__ std::uint64_t global_size() const { return std::uint64_t(gridDim.x) * blockDim.x; }
  __device__ int resume_point() const { return 0; }
  __device__ shared_t<K>& shared() { return bs_.shared; }

  __device__ void barrier(int = 0) { __syncthreads(); }
  __device__ bool offer_kill(int = 0) { return false; }
  __device__ bool kill_requested() { return false; }
  __device__ coop::Polled poll_barrier(int = 0) {
    __syncthreads();
    return {};
  }
  __device__ std::uint32_t request_fork(int = 0) { return 0; }
  __device__ void global_barrier(int = 0) {
    cooperative_groups::this_grid().sync();
    // Counted for the job's statistics by one thread (a fire-and-forget reduction).
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(barriers_, 1u);
  }
  __device__ bool resizing_barrier(int = 0) {
    global_barrier();
    return false;
  }
  __device__ std::uint32_t query(int = 0) { return 0; }
  template <class T>
  __device__ T broadcast(const T& value, int = 0) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>);
    __syncthreads();
    if (threadIdx.x == 0) std::memcpy(&bs_.result, &value, sizeof(T));
    __syncthreads();
    T out;
    std::memcpy(&out, &bs_.result, sizeof(T));
    return out;
  }
  __device__ void pause() { __nanosleep(100); }
  __device__ void unknown_resume_point() {}  // every block starts at resume point 0

 private:
  BlockState<K>& bs_;
  std::uint32_t* barriers_;
};

/// Every block of a Mode::persistent job of kernel K runs this (one cooperative grid).
template <class K>
__device__ __forceinline__ void run_plain_block(const LaunchArgs<K>& a) {
  __shared__ alignas(16) unsigned char raw[sizeof(BlockState<K>)];
  BlockState<K>& bs = *reinterpret_cast<BlockState<K>*>(raw);
  for (std::uint32_t i = threadIdx.x; i < sizeof(BlockState<K>); i += blockDim.x) raw[i] = 0;
  __syncthreads();
  transmit_t<K> t = a.transmit;
  PlainCtx<K> ctx(bs, &a.state->channel.barriers);
  K{}(ctx, a.params, t);
  __syncthreads();
  if (threadIdx.x == 0) block_exit(a, true);
}

template <class K>
__global__ void plain_kernel(const __grid_constant__ LaunchArgs<K> a) {
  run_plain_block<K>(a);
}
template <class K>
__global__ void __launch_bounds__(max_threads_of<K>, min_groups_of<K>)
    bounded_plain_kernel(const __grid_constant__ LaunchArgs<K> a) {
  run_plain_block<K>(a);
}

/// The __global__ function a job of K runs: the cooperative or the plain persistent kernel,
/// with K's launch bounds when it declares them; `by_place`: the cooperative kernel whose ids
/// go by SM.
template <class K>
const void* kernel_function(Mode mode, bool by_place = false) {
  if constexpr (max_threads_of<K> != 0) {
    if (mode == Mode::persistent) return reinterpret_cast<const void*>(&bounded_plain_kernel<K>);
    return by_place ? reinterpret_cast<const void*>(&bounded_placed_kernel<K>)
                    : reinterpret_cast<const void*>(&bounded_kernel<K>);
  } else {
    if (mode == Mode::persistent) return reinterpret_cast<const void*>(&plain_kernel<K>);
    return by_place ? reinterpret_cast<const void*>(&placed_kernel<K>)
                    : reinterpret_cast<const void*>(&kernel<K>);
  }
}

/// Blocks per SM of the __global__ function `fn` at `threads` per block (0: it cannot run),
/// with the shared memory carveout set (the attribute belongs to the function: set every time,
/// or the last launch's value stays). Loads the function's module, which must happen before any
/// persistent work runs (lazy loading would otherwise wait for that work to end).
inline int function_occupancy(const void* fn, int threads, int shared_carveout) {
  cudaFuncAttributes attr{};
  check(cudaFuncGetAttributes(&attr, fn), "loading the cooperative kernel");
  check_shared_carveout(shared_carveout);
  check(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, shared_carveout),
        "setting the kernel's shared memory carveout");
  if (threads > attr.maxThreadsPerBlock)
    throw std::invalid_argument("the kernel cannot run with " + std::to_string(threads) +
                                " threads per block: at most " +
                                std::to_string(attr.maxThreadsPerBlock) + " with its " +
                                std::to_string(attr.numRegs) + " registers per thread");
  int occ = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, threads, 0),
        "querying the kernel's occupancy");
  return occ;
}

/// The function a job's start grids run, and its join grids when they have a slot to count
/// themselves in (JobCore::join_pack): with `ids_by_sm` (LaunchConfig::ids_by_sm) the one whose
/// ids go by SM, unless its occupancy is lower than the launch-order kernel's (its id costs a
/// register, for some kernels an occupancy step).
template <class K>
const void* start_function(const LaunchConfig& cfg, bool ids_by_sm) {
  const void* in_order = kernel_function<K>(cfg.mode);
  if (cfg.mode == Mode::persistent || !ids_by_sm) return in_order;
  const void* by_place = kernel_function<K>(cfg.mode, true);
  const int threads = int(cfg.threads);
  return function_occupancy(by_place, threads, cfg.shared_carveout) >=
                 function_occupancy(in_order, threads, cfg.shared_carveout)
             ? by_place
             : in_order;
}

}  // namespace detail

/// A running cooperative kernel of type K on a CUDA device.
template <class K>
class Job final : public JobCore {
 public:
  Job(DeviceService& dev, coop::detail::Scheduler& sched, const LaunchConfig& cfg, std::uint32_t n,
      std::uint32_t cost, const params_t<K>& params)
      : JobCore(dev, sched, cfg, coop::detail::traits_of<K>(), n, cost,
                std::is_empty_v<transmit_t<K>> ? 0 : sizeof(transmit_t<K>)),
        function_(detail::kernel_function<K>(cfg.mode)),
        start_function_(detail::start_function<K>(cfg, ids_by_sm(cfg))),
        params_(params) {}

  void launch(std::uint32_t m0, const transmit_t<K>& t) { start(m0, 0, &t); }

 protected:
  int launch_grid(std::uint32_t first, std::uint32_t count, int site, const void* transmit,
                  CUstream_st* stream, bool cooperative, detail::PackSlot* join_pack) override {
    // Ids by SM: start grids always when the job asks (start_function_ is placed_kernel then),
    // join grids when they have a slot to count themselves in.
    const bool placed = start_function_ != function_ && (cooperative || join_pack);
    detail::LaunchArgs<K> a{state(),
                            mailbox(),
                            reinterpret_cast<std::uint32_t*>(state() + 1),
                            ring_slots(),
                            event_stride(),
                            first,
                            site,
                            channel_flags(),
                            cooperative ? &state()->start_pack : join_pack,
                            cooperative ? 0u : join_pack_wait_ns(),
                            params_,
                            {}};
    if (transmit && !std::is_empty_v<transmit_t<K>>)
      std::memcpy(static_cast<void*>(&a.transmit), transmit, sizeof(transmit_t<K>));
    void* args[] = {&a};
    if (cooperative)
      return int(cudaLaunchCooperativeKernel(start_function_, dim3(count), dim3(threads()), args, 0,
                                             stream));
    return int(cudaLaunchKernel(placed ? start_function_ : function_, dim3(count), dim3(threads()),
                                args, 0, stream));
  }

 private:
  std::uint32_t event_stride() const {
    return detail::event_stride(std::is_empty_v<transmit_t<K>> ? 0 : sizeof(transmit_t<K>));
  }
  const void* function_;        ///< grids whose ids go by launch order
  const void* start_function_;  ///< start grids, and join grids with a slot (placed_kernel or not)
  params_t<K> params_;
};

/// Occupancy of kernel K at `threads` per block: blocks per SM (0: it cannot run). Loads the
/// kernel's module, which must happen before any persistent work runs (lazy loading would
/// otherwise wait for that work to end). `mode` picks the cooperative or the plain kernel.
template <class K>
int occupancy(int threads, Mode mode = Mode::cooperative, int shared_carveout = -1) {
  return detail::function_occupancy(detail::kernel_function<K>(mode), threads, shared_carveout);
}

/// Launches cooperative kernel K on the device (used by coop::Runtime::launch).
template <class K>
coop::Job launch(DeviceService& dev, coop::detail::Scheduler& sched, const LaunchConfig& cfg,
                 const params_t<K>& params, const transmit_t<K>& transmit) {
  static_assert(std::is_trivially_copyable_v<params_t<K>>, "Params must be trivially copyable");
  static_assert(std::is_trivially_copyable_v<transmit_t<K>>, "Transmit must be trivially copyable");
  check(cudaSetDevice(dev.device()), "selecting the device");
  coop::detail::check_threads(cfg, coop::detail::traits_of<K>());
  int occ = shareable_occupancy(occupancy<K>(int(cfg.threads), cfg.mode, cfg.shared_carveout),
                                int(cfg.threads));
  std::uint32_t n = checked_groups(dev.info(), cfg, occ);
  auto job = std::make_shared<Job<K>>(dev, sched, cfg, n, kUnitsPerSM / std::uint32_t(occ), params);
  // At M = N the job holds its SMs whole (cost is rounded down; the rest is its slack).
  const auto full =
      std::uint32_t((std::uint64_t(n) * kUnitsPerSM + std::uint32_t(occ) - 1) / std::uint32_t(occ));
  std::uint32_t m0 = sched.admit(job.get(), cfg, n, job->cost(), full);
  try {
    job->launch(m0, transmit);
  } catch (...) {
    sched.job_finished(job.get());
    throw;
  }
  dev.add(job);
  return coop::Job(std::move(job));
}

}  // namespace coop::cuda
