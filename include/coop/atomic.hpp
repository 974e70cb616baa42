/// \file
/// The atomics abstraction the protocol layer is written against: std::atomic_ref on the host
/// compiler, cuda::atomic_ref (device scope) under nvcc, so the CPU backend runs exactly the
/// protocol code that the GPU runs.
#pragma once

#include <cstdint>

#include "coop/config.hpp"

#if COOP_CUDA_COMPILER
#include <cuda/atomic>
#else
#include <atomic>
#endif

namespace coop::detail {

enum class order { relaxed, acquire, release, acq_rel, seq_cst };

#if COOP_CUDA_COMPILER
namespace atomic_ns = ::cuda::std;
template <class T>
using atomic_ref_impl = ::cuda::atomic_ref<T, ::cuda::thread_scope_device>;
#else
namespace atomic_ns = ::std;
template <class T>
using atomic_ref_impl = ::std::atomic_ref<T>;
#endif

COOP_HD constexpr atomic_ns::memory_order to_std(order o) {
  switch (o) {
    case order::relaxed:
      return atomic_ns::memory_order_relaxed;
    case order::acquire:
      return atomic_ns::memory_order_acquire;
    case order::release:
      return atomic_ns::memory_order_release;
    case order::acq_rel:
      return atomic_ns::memory_order_acq_rel;
    case order::seq_cst:
      break;
  }
  return atomic_ns::memory_order_seq_cst;
}

/// A view of an integer in shared (host or device) memory through which every protocol access
/// goes. Loads default to acquire and stores to release: the protocol publishes data.
template <class T>
class atomic {
 public:
  COOP_HD explicit atomic(T& obj) : ref_(obj) {}
  COOP_HD T load(order o = order::acquire) const { return ref_.load(to_std(o)); }
  COOP_HD void store(T v, order o = order::release) { ref_.store(v, to_std(o)); }
  COOP_HD T fetch_add(T v, order o = order::acq_rel) { return ref_.fetch_add(v, to_std(o)); }
  COOP_HD T fetch_sub(T v, order o = order::acq_rel) { return ref_.fetch_sub(v, to_std(o)); }
  COOP_HD T fetch_or(T v, order o = order::acq_rel) { return ref_.fetch_or(v, to_std(o)); }
  COOP_HD T fetch_and(T v, order o = order::acq_rel) { return ref_.fetch_and(v, to_std(o)); }
  /// Atomic minimum / maximum; returns the previous value.
  COOP_HD T fetch_min(T v, order o = order::acq_rel) {
#if COOP_CUDA_COMPILER
    return ref_.fetch_min(v, to_std(o));
#else
    T cur = ref_.load(atomic_ns::memory_order_relaxed);
    while (v < cur &&
           !ref_.compare_exchange_weak(cur, v, to_std(o), atomic_ns::memory_order_relaxed)) {
    }
    return cur;
#endif
  }
  COOP_HD T fetch_max(T v, order o = order::acq_rel) {
#if COOP_CUDA_COMPILER
    return ref_.fetch_max(v, to_std(o));
#else
    T cur = ref_.load(atomic_ns::memory_order_relaxed);
    while (cur < v &&
           !ref_.compare_exchange_weak(cur, v, to_std(o), atomic_ns::memory_order_relaxed)) {
    }
    return cur;
#endif
  }
  COOP_HD T exchange(T v, order o = order::acq_rel) { return ref_.exchange(v, to_std(o)); }
  /// Strong CAS; on failure `expected` receives the current value.
  COOP_HD bool cas(T& expected, T desired, order o = order::acq_rel) {
    // The failure order may not be stronger than the success order (GCC checks).
    const order fail =
        (o == order::relaxed || o == order::release) ? order::relaxed : order::acquire;
    return ref_.compare_exchange_strong(expected, desired, to_std(o), to_std(fail));
  }

 private:
  atomic_ref_impl<T> ref_;
};

/// Adds `v` to `obj` (relaxed, device scope) and does not read it back. `obj` must be in global
/// memory (the protocol's channel), never in a workgroup's shared memory: on the GPU this is one
/// reduction (`red.global`) the thread does not wait for. A 64-bit add through a generic
/// address, as atomic::fetch_add makes it, is compiled to an atomic whose answer says whether it
/// must be redone in shared memory, and the thread waits for that answer even when nothing reads
/// the result (sm_90 machine code).
template <class T>
COOP_HD inline void add_to_global(T& obj, T v) {
#if COOP_DEVICE_CODE
  static_assert(sizeof(T) == 8 || sizeof(T) == 4);
  if constexpr (sizeof(T) == 8)
    asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(__cvta_generic_to_global(&obj)),
                 "l"(static_cast<unsigned long long>(v))
                 : "memory");
  else
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(&obj)),
                 "r"(static_cast<unsigned>(v))
                 : "memory");
#else
  atomic<T>(obj).fetch_add(v, order::relaxed);
#endif
}

/// A fence at device scope with order `o`.
COOP_HD inline void fence(order o) {
#if COOP_CUDA_COMPILER
  ::cuda::atomic_thread_fence(to_std(o), ::cuda::thread_scope_device);
#else
  ::std::atomic_thread_fence(to_std(o));
#endif
}
/// Acquire: orders the relaxed loads before it with everything after.
COOP_HD inline void fence_acquire() { fence(order::acquire); }
/// Release: this thread's earlier accesses before its later stores.
COOP_HD inline void fence_release() { fence(order::release); }
/// Acquire-release: what this thread read before it happens before what others read after its
/// later stores (one fence where an acquire fence and a release store take two).
COOP_HD inline void fence_acq_rel() { fence(order::acq_rel); }
/// Full: what this thread wrote is visible before what it writes next.
COOP_HD inline void fence_seq_cst() { fence(order::seq_cst); }

}  // namespace coop::detail

namespace coop {
/// Atomic access for kernel code, the same on every backend (device scope on the GPU):
/// `coop::atomic_ref<T>(x)` views an integer `x` in managed or device memory. Operations:
/// load (acquire by default), store (release), fetch_add, fetch_sub, fetch_or, fetch_and,
/// fetch_min, fetch_max, exchange (acq_rel) and cas (strong compare-and-swap), each taking an
/// optional coop::memory_order; every fetch_ returns the previous value.
template <class T>
using atomic_ref = detail::atomic<T>;
/// The memory orders atomic_ref operations take: relaxed, acquire, release, acq_rel, seq_cst.
using memory_order = detail::order;
/// Kernel code: makes this thread's earlier writes visible device-wide before its later ones
/// (e.g. before a workgroup barrier after which one thread publishes the data).
COOP_HD inline void thread_fence() { detail::fence_seq_cst(); }

/// Kernel code: a distinct slot from a shared counter, such as a worklist's length that every
/// thread pushes to. Like `atomic_ref(counter).fetch_add(1, memory_order::relaxed)`: the
/// counter grows by one per call and each call gets the value before its own step. On the GPU
/// the lanes of a warp that call it at once on the same counter share one atomic add (their
/// lowest lane adds their number and hands out consecutive slots): a counter every thread hits
/// otherwise serialises one add per lane at its line, and a thread that pushes many items in a
/// row waits that queue out each time.
COOP_HD inline std::uint32_t fetch_increment(std::uint32_t& counter) {
#if COOP_DEVICE_CODE
  const unsigned peers = __match_any_sync(
      __activemask(), static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(&counter)));
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  const int leader = __ffs(peers) - 1;
  std::uint32_t base = 0;
  if (int(lane) == leader)
    base = detail::atomic<std::uint32_t>(counter).fetch_add(std::uint32_t(__popc(peers)),
                                                            detail::order::relaxed);
  base = __shfl_sync(peers, base, leader);
  return base + std::uint32_t(__popc(peers & ((1u << lane) - 1)));
#else
  return detail::atomic<std::uint32_t>(counter).fetch_add(1, detail::order::relaxed);
#endif
}
}  // namespace coop
