// Where an interruptible kernel's checkpoint cost comes from: the same loop of dependent FMAs
// (a checkpoint every 16 to 1024 of them) hand-written with each candidate structure, timed
// against the plain loop with the device full (docs/interruptible.md has the conclusions).
//
//   coop_bench_checkpoint_variants        (prints one line per structure and granularity)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cuda_check.hpp"
#include "micro_common.hpp"

__device__ __forceinline__ float work(float x, unsigned n) {
  for (unsigned i = 0; i < n; ++i) x = x * 0.999f + 0.5f;
  return x;
}
__device__ __forceinline__ uint64_t gt() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Budget {
  uint64_t deadline, next_poll, poll, last;
  uint32_t skip, stride, count, limit;
};
__device__ __forceinline__ bool expired_full(Budget& b, const volatile unsigned* stop) {
  if (b.limit) return ++b.count >= b.limit;
  if (b.skip != 0) {
    --b.skip;
    return false;
  }
  const uint64_t t = gt();
  if (t >= b.deadline) return true;
  if (t >= b.next_poll) {
    if (*stop) return true;
    b.next_poll = t + b.poll;
  }
  const uint64_t dt = t - b.last;
  b.last = t;
  if (dt < b.poll / 8 && b.stride < 4096)
    b.stride *= 2;
  else if (dt > b.poll / 2 && b.stride > 1)
    b.stride /= 2;
  b.skip = b.stride - 1;
  return false;
}
__device__ __forceinline__ bool expired_fixed(Budget& b, const volatile unsigned* stop) {
  if (b.skip != 0) {
    --b.skip;
    return false;
  }
  b.skip = 63;
  const uint64_t t = gt();
  return t >= b.deadline || *stop;
}
struct Soft {
  uint64_t soft, deadline, poll;
  uint32_t count, limit;
};
__device__ __forceinline__ bool soft_slow(Soft& b, uint64_t t, const volatile unsigned* stop) {
  if (b.limit) return ++b.count >= b.limit;
  if (t >= b.deadline || *stop) return true;
  b.soft = min(b.deadline, t + b.poll);
  return false;
}
__device__ __noinline__ bool soft_slow_ni(Soft& b, uint64_t t, const volatile unsigned* stop) {
  return soft_slow(b, t, stop);
}
// always read the clock
__device__ __forceinline__ bool expired_clock(Budget& b, const volatile unsigned*) {
  return gt() >= b.deadline;
}

struct Args {
  float* out;
  unsigned iters, per;
  int* points;
  unsigned* li;
  float* lx;
  unsigned* stop;
  Budget b;
  Soft s;
};

__global__ void plain(Args a) {
  uint64_t g = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float x = float(g % 97);
  for (unsigned i = 0; i < a.iters; ++i) x = work(x, a.per);
  a.out[g] = x;
}

// 1: switch into the loop (the current macros), full budget.
// 2: switch into the loop, check that is never true (param).
// 3: no switch (reducible), full budget.
// 4: switch into loop, fixed stride-64 budget.
// 5: switch into loop, clock every checkpoint.
// 6: reducible resume: switch to the loop head, a flag skips the checkpoint.
// The `out` label is used only by the switch variants.
#pragma nv_diag_suppress 177
template <int V>
__global__ void ik(Args a) {
  uint64_t g = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int point = a.points[g];
  Budget b = a.b;
  Soft sb = a.s;
  unsigned i = 0;
  float x = 0;
  if (point) {
    i = a.li[g];
    x = a.lx[g];
  }
  bool stopped = false;
  auto check = [&]() -> bool {
    if constexpr (V == 1 || V == 3 || V == 6) return expired_full(b, a.stop);
    if constexpr (V == 2) return b.limit == 12345;
    if constexpr (V == 4) return expired_fixed(b, a.stop);
    if constexpr (V == 5) return expired_clock(b, a.stop);
    if constexpr (V == 7) {
      const uint64_t t = gt();
      if (t < sb.soft) return false;
      return soft_slow(sb, t, a.stop);
    }
    if constexpr (V == 8) {
      const uint64_t t = gt();
      if (t < sb.soft) return false;
      return soft_slow_ni(sb, t, a.stop);
    }
    return false;
  };
  if constexpr (V == 3) {
    x = float(g % 97);
    for (i = 0; i < a.iters; ++i) {
      if (check()) {
        stopped = true;
        point = 7;
        break;
      }
      x = work(x, a.per);
    }
  } else if constexpr (V == 6) {
    bool resume = point == 7;
    if (!resume) {
      x = float(g % 97);
      i = 0;
    }
    for (; i < a.iters; ++i) {
      if (!resume) {
        if (check()) {
          stopped = true;
          point = 7;
          break;
        }
      }
      resume = false;
      x = work(x, a.per);
    }
  } else {
    switch (point) {
      default:
        return;
      case 0:
        x = float(g % 97);
        for (i = 0; i < a.iters; ++i) {
          if (check()) {
            stopped = true;
            point = 7;
            goto out;
          }
          [[fallthrough]];
          case 7:
            x = work(x, a.per);
        }
    }
  }
out:
  if (stopped) {
    a.li[g] = i;
    a.lx[g] = x;
    a.points[g] = point;
    return;
  }
  a.out[g] = x;
  a.points[g] = -1;
}

typedef void (*KFn)(Args);
namespace {
int run() {
  const unsigned threads = 256, blocks = 132 * 8;
  const size_t n = size_t(blocks) * threads;
  Args a{};
  CK(cudaMalloc(&a.out, n * 4));
  CK(cudaMalloc(&a.points, n * 4));
  CK(cudaMalloc(&a.li, n * 4));
  CK(cudaMalloc(&a.lx, n * 4));
  CK(cudaMalloc(&a.stop, 4));
  CK(cudaMemset(a.stop, 0, 4));
  KFn fns[] = {plain, ik<1>, ik<2>, ik<3>, ik<4>, ik<5>, ik<6>, ik<7>, ik<7>, ik<8>, ik<7>};
  const char* names[] = {"plain",
                         "switch+budget(current)",
                         "switch+never",
                         "noswitch+budget",
                         "switch+fixed64",
                         "switch+clock-every",
                         "reducible-resume+budget",
                         "soft-inline poll10us",
                         "soft-inline poll100us",
                         "soft-noinline poll10us",
                         "soft-inline count1e9"};
  for (int v = 0; v < 11; ++v) {
    cudaFuncAttributes at{};
    CK(cudaFuncGetAttributes(&at, fns[v]));
    printf("%-26s regs %d\n", names[v], at.numRegs);
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (unsigned per : {16u, 64u, 256u, 1024u}) {
    a.per = per;
    a.iters = 200u * 1000u * 1000u / (per * 4u) / 10u;
    double base = 0;
    for (int v = 0; v < 11; ++v) {
      std::vector<double> t;
      for (int r = 0; r < 6; ++r) {
        CK(cudaMemset(a.points, 0, n * 4));
        a.b = Budget{~0ull >> 1, 0, 10000, 0, 0, 1, 0, 0};
        a.s = Soft{0, ~0ull >> 1, v == 8 ? 100000ull : 10000ull, 0, v == 10 ? 1000000000u : 0u};
        cudaEventRecord(e0);
        fns[v]<<<blocks, threads>>>(a);
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r) t.push_back(ms);
      }
      const coop::bench::Percentiles times(std::move(t));
      const double med = times.median();
      if (v == 0) base = med;
      printf("per %3u %-26s %8.3f ms (%.3f..%.3f) %.3fx\n", per, names[v], med, times.min(),
             times.max(), med / base);
    }
  }
  CK(cudaGetLastError());
  return 0;
}
}  // namespace

int main() { return coop::micro::run_main(run); }
