/// \file
/// Compiler and target detection shared by every coop header.
#pragma once

#include <chrono>
#include <cstdint>

/// \def COOP_CUDA_COMPILER
/// 1 when nvcc compiles this translation unit (a .cu file), else 0.
/// \def COOP_HD
/// Marks a function for both sides (`__host__ __device__` under nvcc, nothing otherwise): a
/// kernel's operator() and every function it calls.
/// \def COOP_DEVICE_FN
/// `__device__` under nvcc, nothing otherwise.
/// \def COOP_INLINE
/// Forces inlining on both compilers.
/// \def COOP_NOINLINE
/// Keeps a function out of line on both compilers (a rare path whose registers should not count
/// against the loop that calls it).
/// \def COOP_UNROLL
/// Unrolls the loop that follows in device code (host compilers decide themselves).
/// \def COOP_DEVICE_CODE
/// 1 only in nvcc's device pass (code that runs on the GPU), else 0.
/// \def COOP_HOST_BODY
/// The body of a host-only function that kernel templates may name (its device version traps).
#if defined(__CUDACC__)
#define COOP_CUDA_COMPILER 1
#define COOP_HD __host__ __device__
#define COOP_DEVICE_FN __device__
#define COOP_INLINE __forceinline__
#define COOP_NOINLINE __noinline__
#if defined(__CUDA_ARCH__)
#define COOP_UNROLL _Pragma("unroll")
#else
#define COOP_UNROLL
#endif
#else
#define COOP_CUDA_COMPILER 0
#define COOP_HD
#define COOP_DEVICE_FN
#define COOP_INLINE inline __attribute__((always_inline))
#define COOP_NOINLINE __attribute__((noinline))
#define COOP_UNROLL
#endif

// True only in the device pass of nvcc (code that runs on the GPU).
#if defined(__CUDA_ARCH__)
#define COOP_DEVICE_CODE 1
#else
#define COOP_DEVICE_CODE 0
#endif

// The body of a host-only function that kernel templates (compiled for both sides by nvcc) may
// name, such as the CPU backend's kernel context: the device pass never runs it.
#if COOP_DEVICE_CODE
#define COOP_HOST_BODY(...) __trap();
#else
#define COOP_HOST_BODY(...) __VA_ARGS__
#endif

/// coop's public API: kernels (coop/kernel.hpp), the runtime that launches them as jobs and runs
/// tasks beside them (coop/runtime.hpp), and what both sides share (memory, atomics, records).
namespace coop {
/// Largest supported max_groups (N): membership counts are packed into 14-bit fields (a GPU
/// holds a few thousand workgroups at most).
inline constexpr unsigned kMaxGroupsLimit = 16383;

namespace detail {
/// Nanoseconds on a monotonic clock: `%globaltimer` on the GPU, steady_clock on the host.
COOP_HD inline std::uint64_t now_ns() {
#if COOP_DEVICE_CODE
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
#endif
}
}  // namespace detail
}  // namespace coop
