// The atomics abstraction the protocol layer is written against: std::atomic_ref on the host
// compiler, cuda::atomic_ref (device scope) under nvcc, so the CPU backend runs exactly the
// protocol code that the GPU runs.
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
  /// Strong CAS; on failure `expected` receives the current value.
  COOP_HD bool cas(T& expected, T desired, order o = order::acq_rel) {
    return ref_.compare_exchange_strong(expected, desired, to_std(o), to_std(order::acquire));
  }

 private:
  atomic_ref_impl<T> ref_;
};

/// An acquire fence at device scope: orders the relaxed loads before it with everything after.
COOP_HD inline void fence_acquire() {
#if COOP_CUDA_COMPILER
  ::cuda::atomic_thread_fence(::cuda::std::memory_order_acquire, ::cuda::thread_scope_device);
#else
  ::std::atomic_thread_fence(::std::memory_order_acquire);
#endif
}

}  // namespace coop::detail

namespace coop {
/// Atomic access for kernel code, the same on every backend (device scope on the GPU).
template <class T>
using atomic_ref = detail::atomic<T>;
using memory_order = detail::order;
}  // namespace coop
