// Level-synchronous applications written once, run in three forms.
//
// A phased app is a type A with
//   struct Params { ... };                    // device pointers and sizes
//   struct State  { ... };                    // per-round values every thread agrees on
//   static constexpr std::uint32_t kPhases;   // global barriers per round
//   COOP_HD static std::uint64_t items(std::uint32_t k, const Params&, const State&);
//                                             // the items of phase k: 0 .. items-1
//   COOP_HD static void once(std::uint32_t k, const Params&, const State&);
//                                             // one thread's once-per-phase action
//   COOP_HD static void visit(std::uint32_t k, const Params&, const State&,
//                             std::uint64_t first, std::uint64_t end, std::uint64_t stride);
//                                             // items first, first + stride, ... below end
//   COOP_HD static bool advance(const Params&, State&);  // after a round: go on?
//   static constexpr bool kEvenItems = true;  // optional: every phase sweeps many cheap items of
//                                             // even cost (the yielding form's loop then claims
//                                             // coop::share_grain items at least)
//
// Phase k of a round may read what earlier phases wrote (a global barrier separates them);
// `once` runs in one thread per phase, concurrently with the phase's visits (it must not touch
// what they touch: it clears a counter or flag of another round); advance runs in every thread
// after the round's last barrier, reads what the round computed and moves the State on
// identically everywhere. Every item is visited exactly once per phase, by some thread, in any
// order and grouping. The three forms:
//   Phased<A> under Mode::cooperative  -- the cooperative kernel: a grid-stride loop per phase,
//                                         every barrier a resizing barrier, the State (plus the
//                                         phase) transmitted; Phased<A, true> runs each phase as
//                                         a coop::for_each loop instead (items claimed in
//                                         chunks, an offer to leave every few microseconds);
//   Phased<A> under Mode::persistent   -- the standalone persistent kernel: a grid-stride loop
//                                         per phase (on the GPU: CUDA's grid barrier, the same
//                                         grid);
//   multi_launch<A>                    -- one kernel launch per phase (a grid-stride loop),
//                                         State read back by the host after each round (what
//                                         users write without persistent kernels).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coop/apps/common.hpp"
#include "coop/for_each.hpp"
#include "coop/kernel.hpp"
#include "coop/runtime.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include <cuda_runtime.h>

#include "coop/cuda/job.hpp"
#endif

namespace coop::apps {

namespace detail {
/// Whether phased app A declares kEvenItems (its phases' items are many, cheap and even).
template <class A>
inline constexpr bool even_items = requires {
  requires A::kEvenItems;
};
/// Whether Ctx is a plain persistent kernel's context (the GPU's Mode::persistent), which runs
/// the grid-stride baseline without the cooperative loop compiled in.
template <class Ctx>
inline constexpr bool plain_context = false;
#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
template <class K>
inline constexpr bool plain_context<coop::cuda::detail::PlainCtx<K>> = true;
#endif
}  // namespace detail

/// The launch parameters and transmitted state of phased app A's persistent kernels.
template <class A>
struct PhasedState {
  struct Params {
    typename A::Params app;
    LoopCursor* cursor;  ///< the phases' loop cursor (one per run; YieldInPhases only)
    /// Mode::persistent on the CPU backend: a grid-stride loop per phase, the baseline.
    bool grid_stride;
    /// Runs of the app in this kernel (RunConfig::runs_per_kernel); after each but the last
    /// the kernel copies `restore` back and starts again from `initial`.
    std::uint32_t runs_per_kernel = 1;
    RunRestore restore{};
    typename A::State initial{};
    RunEnd run_end{};  ///< ends the launch after an earlier run when the host asks (RunStop)
  };
  struct Transmit {
    typename A::State state{};
    std::uint32_t phase = 0;  ///< the phase the next round of work belongs to
    std::uint32_t epoch = 0;  ///< the cursor's epoch: phases so far
    std::uint32_t runs = 0;   ///< runs of the app finished (RunConfig::runs_per_kernel)
  };
};

/// The persistent kernel of phased app A. `YieldInPhases`: the cooperative form runs each
/// phase as a coop::for_each loop (workgroups may leave between chunks, inside a phase);
/// otherwise every form runs a grid-stride loop between resizing barriers (M is stable
/// between them, so the stride is too) and workgroups leave only at the barriers. The loop is
/// a separate kernel because it costs registers even where it is not taken.
template <class A, bool YieldInPhases = false>
struct Phased : PhasedState<A> {
  using Params = typename PhasedState<A>::Params;
  using Transmit = typename PhasedState<A>::Transmit;

  /// Where workgroups forked inside a phase's loop start (YieldInPhases): they skip `once`.
  static constexpr int kPhaseJoin = __LINE__;

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (;;) {
      if (ctx.global_id() == 0) A::once(t.phase, p.app, t.state);
      COOP_JOIN_POINT(kPhaseJoin);
      {
        const std::uint64_t items = A::items(t.phase, p.app, t.state);
        if constexpr (!YieldInPhases || detail::plain_context<Ctx>) {
          A::visit(t.phase, p.app, t.state, ctx.global_id(), items, ctx.global_size());
        } else {
          if (p.grid_stride) {
            A::visit(t.phase, p.app, t.state, ctx.global_id(), items, ctx.global_size());
          } else {
            // Consecutive phases use consecutive epochs, a resizing barrier between them. The
            // job regrows inside the phase (forks where the loop offers), so a phase begun while
            // a task held most of the device does not run to its end on what was left.
            const std::uint32_t grain = detail::even_items<A>
                                            ? share_grain(items, ctx.num_groups(), ctx.local_size())
                                            : ctx.local_size();
            COOP_FOR_EACH_STRIDED_JOINABLE(
                ctx, kPhaseJoin, *p.cursor, t.epoch, 0, items, grain,
                [&](std::uint64_t first, std::uint64_t end, std::uint64_t stride) {
                  A::visit(t.phase, p.app, t.state, first, end, stride);
                });
          }
        }
      }
      t.phase = t.phase + 1 == A::kPhases ? 0 : t.phase + 1;
      ++t.epoch;
      COOP_RESIZING_BARRIER(ctx);
      if (t.phase == 0 && !A::advance(p.app, t.state)) {
        if (++t.runs >= p.runs_per_kernel || p.run_end.ends_after(t.runs)) break;
        // Again from the start (RunConfig::runs_per_kernel): the buffers as they were before
        // the first run, copied back by every workgroup's stride of them between two barriers
        // (every thread has read what the run left, in advance, before the copy overwrites it,
        // and the copy is whole before the next run reads it).
        t.state = p.initial;
        COOP_RESIZING_BARRIER(ctx);
        p.run_end.poll(ctx.global_id(), t.runs);
        p.restore.copy(ctx.global_id(), ctx.global_size());
        COOP_RESIZING_BARRIER(ctx);
      }
    }
    COOP_END(ctx);
  }
};

/// What a multi-launch run did.
struct MultiLaunchStats {
  std::uint64_t rounds = 0;
  std::uint64_t launches = 0;
};

namespace detail {

/// The CPU backend's stand-in for kernel launches: a pool of worker threads that run one grid
/// (every emulated thread's grid-stride loop) per launch.
class CpuGrid {
 public:
  explicit CpuGrid(unsigned workers);
  ~CpuGrid();
  CpuGrid(const CpuGrid&) = delete;
  CpuGrid& operator=(const CpuGrid&) = delete;
  /// Runs body(gid, stride) for every gid < threads, split over the workers; returns when all
  /// are done.
  void launch(std::uint64_t threads, const std::function<void(std::uint64_t, std::uint64_t)>& body);

 private:
  void work(unsigned w);
  const unsigned count_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(std::uint64_t, std::uint64_t)>* body_ = nullptr;
  std::uint64_t threads_ = 0;
  std::uint64_t generation_ = 0;
  unsigned running_ = 0;
  bool stop_ = false;
};

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
template <class A>
__global__ void phase_kernel(const typename A::Params p, const typename A::State s, std::uint32_t k,
                             std::uint64_t items) {
  const std::uint64_t gid = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (gid == 0) A::once(k, p, s);
  A::visit(k, p, s, gid, items, std::uint64_t(gridDim.x) * blockDim.x);
}

/// One thread: the round's advance; the State and the verdict go to pinned host memory.
template <class A>
__global__ void advance_kernel(const typename A::Params p, typename A::State* s,
                               std::uint32_t* more) {
  typename A::State next = *s;
  *more = A::advance(p, next) ? 1u : 0u;
  *s = next;
}

template <class A>
MultiLaunchStats multi_launch_cuda(const typename A::Params& p, typename A::State s,
                                   std::uint32_t threads, std::uint32_t max_blocks) {
  struct Pinned {
    typename A::State state;
    std::uint32_t more;
  };
  Pinned* host = nullptr;
  cuda::check(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(Pinned), cudaHostAllocMapped),
              "allocating the multi-launch state");
  cudaStream_t stream = nullptr;
  MultiLaunchStats st;
  try {
    cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "creating the multi-launch stream");
    Pinned* dev = nullptr;
    cuda::check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0),
                "mapping the multi-launch state");
    host->state = s;
    for (;;) {
      for (std::uint32_t k = 0; k < A::kPhases; ++k) {
        const std::uint64_t items = A::items(k, p, host->state);
        std::uint64_t want = (items + threads - 1) / threads;
        std::uint32_t blocks = std::uint32_t(want < 1 ? 1 : want > max_blocks ? max_blocks : want);
        phase_kernel<A><<<blocks, threads, 0, stream>>>(p, host->state, k, items);
        ++st.launches;
      }
      advance_kernel<A><<<1, 1, 0, stream>>>(p, &dev->state, &dev->more);
      ++st.launches;
      cuda::check(cudaGetLastError(), "launching a multi-launch kernel");
      cuda::check(cudaStreamSynchronize(stream), "running a multi-launch round");
      ++st.rounds;
      if (!host->more) break;
    }
  } catch (...) {
    if (stream) cudaStreamDestroy(stream);
    cudaFreeHost(host);
    throw;
  }
  cudaStreamDestroy(stream);
  cudaFreeHost(host);
  return st;
}
#endif

}  // namespace detail

/// Runs phased app A as conventional launches: one per phase, State read back each round.
/// GPU: grids of ceil(items / threads) blocks (at most max_blocks); CPU: a worker pool.
template <class A>
MultiLaunchStats multi_launch(Runtime& rt, const typename A::Params& p, typename A::State s,
                              std::uint32_t threads, std::uint32_t max_blocks) {
  if (threads == 0 || max_blocks == 0)
    throw std::invalid_argument("multi-launch needs at least one block of one thread");
  if (rt.backend() == Backend::cuda) {
#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
    return detail::multi_launch_cuda<A>(p, s, threads, max_blocks);
#else
    throw std::logic_error("multi-launch on the GPU needs the app compiled by nvcc");
#endif
  }
  static detail::CpuGrid grid(std::max(1u, std::thread::hardware_concurrency()));
  MultiLaunchStats st;
  for (;;) {
    for (std::uint32_t k = 0; k < A::kPhases; ++k) {
      const std::uint64_t items = A::items(k, p, s);
      std::uint64_t want = (items + threads - 1) / threads;
      std::uint64_t blocks = want < 1 ? 1 : want > max_blocks ? max_blocks : want;
      grid.launch(blocks * threads, [&](std::uint64_t gid, std::uint64_t stride) {
        if (gid == 0) A::once(k, p, s);
        A::visit(k, p, s, gid, items, stride);
      });
      ++st.launches;
    }
    ++st.rounds;
    if (!A::advance(p, s)) break;
  }
  return st;
}

}  // namespace coop::apps
