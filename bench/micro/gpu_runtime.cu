// GPU micro-benchmarks of the CUDA runtime (issue 3): gather time vs k and the offer interval,
// a task's life stage by stage, how fast blocks run beside a compute-bound kernel, regrow latency,
// resizing barrier vs grid.sync, idle offer_kill cost, coop::for_each's cost per phase, and
// high-priority task latency with cooperation vs stream priority alone. Prints a table and
// writes JSON (--json FILE). Every figure is a median over repetitions with its spread; ratios are
// against the baseline measured in the same run.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cuda/atomic>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coop/coop.hpp"
#include "coop/memory.hpp"
#include "cuda_check.hpp"
#include "gpu_setup.hpp"
#include "micro_common.hpp"

namespace cg = cooperative_groups;
using namespace coop;
using json = nlohmann::json;
using clk = std::chrono::steady_clock;

namespace {

// The kernels here only run on the GPU, but Runtime::launch also instantiates them for the CPU
// backend: these helpers exist on both sides.
COOP_HD std::uint64_t now_ns() {
#if COOP_DEVICE_CODE
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return std::uint64_t(clk::now().time_since_epoch().count());
#endif
}

// A fixed amount of dependent arithmetic per thread (no memory traffic): one "iteration".
COOP_HD float work(float x, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) x = x * 0.999f + 0.5f;
  return x;
}

using micro::Stat;
using micro::stat;
using micro::to_json;

// ---------------------------------------------------------------- barrier anatomy

// Where a grid barrier's time goes, in plain cooperative kernels (no runtime): CUDA's own
// algorithm written out (32- and 64-bit words), then the protocol's pieces added one at a
// time: a counter bumped by block 0 after each barrier, the arrival field armed in advance and
// re-armed by block 0 (the protocol's barrier), block 0 reading two words before arriving (a
// resizing barrier's check for requests), every block reading a word after arriving (the
// offers' view refreshed), and the orders: a fence on each side of a relaxed add and volatile
// polls (CUDA's), or a release (or acquire-release) add and acquire polls (the protocol's).
enum Anatomy : int {
  flip32,              // CUDA's grid barrier: block 0 adds 2^31 - (n - 1), the others 1
  flip64,              // the same on a 64-bit word (bit 63)
  flip32_counter,      // flip32 + block 0 bumps a counter after each barrier
  armed64,             // the field armed to 2^15 - n (bits 48-62, parity 63), block 0 re-arms it
  armed64_counter,     // armed64 + the last arriver bumps a counter (as the protocol does)
  armed64_preread,     // armed64 + block 0 reads two words before arriving
  armed32,             // armed64's algorithm on a 32-bit word (bits 16-30, parity 31)
  armed64_refresh,     // armed64 + every block loads a second word after arriving
  armed64_acq_rel,     // armed64 with an acquire-release add and acquire polls, no fence
  armed64_fence_last,  // a release add, acquire polls and an acquire fence by the last arrival
  kAnatomies
};
const char* const kAnatomyNames[] = {
    "flip32",          "flip64",  "flip32_counter",  "armed64",         "armed64_counter",
    "armed64_preread", "armed32", "armed64_refresh", "armed64_acq_rel", "armed64_fence_last"};
static_assert(std::size(kAnatomyNames) == kAnatomies);

// The variants whose arrival field is armed in advance (the others flip CUDA's way).
constexpr bool is_armed(int v) { return v != flip32 && v != flip64 && v != flip32_counter; }

template <class T, int V>
__device__ void anatomy_barrier(T* word, std::uint32_t* counter, const std::uint64_t* side) {
  constexpr int top = int(sizeof(T) * 8) - 1;
  constexpr bool armed = is_armed(V);
  constexpr bool ordered = V == armed64_acq_rel || V == armed64_fence_last;
  constexpr int field = top - 15;  // armed: the arrival field's lowest bit
  __syncthreads();
  if (threadIdx.x == 0) {
    const std::uint32_t n = gridDim.x;
    if constexpr (V == armed64_preread)
      if (blockIdx.x == 0 && (__ldcg(&side[0]) + __ldcg(&side[16])) == 12345) *counter = 0;
    T inc;
    if constexpr (armed)
      inc = T(1) << field;
    else
      inc = blockIdx.x == 0 ? (T(1) << top) - T(n - 1) : T(1);
    ::cuda::atomic_ref<T, ::cuda::thread_scope_device> ref(*word);
    T old;
    if constexpr (ordered) {
      old = ref.fetch_add(inc, V == armed64_acq_rel ? ::cuda::std::memory_order_acq_rel
                                                    : ::cuda::std::memory_order_release);
    } else {
      __threadfence();
      old = atomicAdd(word, inc);
    }
    std::uint64_t refreshed = 0;
    if constexpr (V == armed64_refresh) refreshed = __ldcg(&side[32]);
    const T parity = old >> top;
    const bool last = ((old + inc) >> top) != parity;
    if constexpr (ordered) {
      if (!last)
        while ((ref.load(::cuda::std::memory_order_acquire) >> top) == parity) {
        }
      if (V == armed64_fence_last && last)
        ::cuda::atomic_thread_fence(::cuda::std::memory_order_acquire, ::cuda::thread_scope_device);
    } else {
      if (!last)
        while ((*reinterpret_cast<volatile T*>(word) >> top) == parity) {
        }
      __threadfence();
    }
    if (refreshed == 12345) *counter = 0;
    if constexpr (V == armed64_counter)
      if (last) atomicAdd(counter, 1u);
    if constexpr (armed)
      if (blockIdx.x == 0) atomicAdd(word, T((1u << 15) - n) << field);  // re-arm
    if constexpr (V == flip32_counter)
      if (blockIdx.x == 0) atomicAdd(counter, 1u);
  }
  __syncthreads();
}

// ---------------------------------------------------------------- barrier cost

// Which barrier each round takes: the one Params::resizing names (BarrierLoop: both barriers on
// the loop's path), or always the resizing one, or always the global one. Each alone on the
// path ran 0.05-0.2 us faster than in BarrierLoop at 6 blocks per SM (H200,
// results/2026-11-29-barrier-order/), so both are reported. (The resizing barrier's code stays
// in the global one's kernel, reachable only by a resumption.)
enum class Rounds { either, resizing, global };

template <Rounds Which>
struct BarrierRounds {
  struct Params {
    std::uint32_t rounds;
    std::uint64_t* ns;  // [0] start, [1] end (workgroup 0)
    bool resizing;
  };
  struct Transmit {
    std::uint32_t r = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[0] = now_ns();
    for (; t.r < p.rounds; ++t.r) {
      if (Which == Rounds::resizing || (Which == Rounds::either && p.resizing)) {
        COOP_RESIZING_BARRIER(ctx);
      } else {
        ctx.global_barrier();
      }
    }
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[1] = now_ns();
    COOP_END(ctx);
  }
};
using BarrierLoop = BarrierRounds<Rounds::either>;

// The anatomy's armed64_acq_rel barrier (on a word of its own, armed for every workgroup) as a
// job's kernel, cooperative or plain: what the protocol's barrier costs beyond the same
// algorithm in the same setting, and what the setting costs the algorithm. A kernel of its own,
// so that BarrierLoop's code stays as the apps' barriers have it.
struct RawBarrierLoop {
  struct Params {
    std::uint32_t rounds;
    std::uint64_t* ns;  // [0] start, [1] end (workgroup 0)
    unsigned long long* word;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[0] = now_ns();
#if COOP_DEVICE_CODE
    for (std::uint32_t r = 0; r < p.rounds; ++r)
      anatomy_barrier<unsigned long long, armed64_acq_rel>(p.word, nullptr, nullptr);
#endif
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[1] = now_ns();
    COOP_END(ctx);
  }
};

__global__ void grid_sync_loop(std::uint32_t rounds, std::uint64_t* ns) {
  cg::grid_group g = cg::this_grid();
  if (g.thread_rank() == 0) ns[0] = now_ns();
  for (std::uint32_t r = 0; r < rounds; ++r) g.sync();
  if (g.thread_rank() == 0) ns[1] = now_ns();
}

json bench_barriers(Runtime& rt, int sms, int reps) {
  json out = json::array();
  const std::uint32_t threads = 256, rounds = 2000;
  // Full occupancy is the cooperative kernel's (it may hold more registers than the grid.sync
  // loop); both run at the same width.
  int occ_sync = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_sync, grid_sync_loop, threads, 0));
  const int full = std::min(occ_sync, coop::cuda::occupancy<BarrierLoop>(int(threads)));
  ManagedArray<std::uint64_t> ns(2);
  unsigned long long* raw_word = nullptr;
  CK(cudaMalloc(&raw_word, 256));
  for (int per_sm : {1, full}) {
    const std::uint32_t blocks = std::uint32_t(sms * per_sm);
    std::vector<double> sync_us, resize_us, global_us, plain_us, fixed_us, raw_us, raw_plain_us,
        single_resize_us, single_global_us;
    for (int rep = 0; rep < reps; ++rep) {
      void* args[] = {(void*)&rounds, (void*)&ns[0]};
      std::uint64_t* nsp = ns.data();
      args[1] = &nsp;
      CK(cudaLaunchCooperativeKernel((void*)grid_sync_loop, blocks, threads, args, 0, nullptr));
      CK(cudaDeviceSynchronize());
      sync_us.push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      for (bool resizing : {true, false}) {
        auto job = rt.launch<BarrierLoop>({.max_groups = blocks, .threads = threads},
                                          {rounds, ns.data(), resizing});
        job.wait();
        (resizing ? resize_us : global_us).push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      }
      // Resizing barriers of a job whose scheduler never resizes (the overhead runs' setting).
      auto fixed = rt.launch<BarrierLoop>(
          {.max_groups = blocks, .threads = threads, .policy = Policy::fixed()},
          {rounds, ns.data(), true});
      fixed.wait();
      fixed_us.push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      // The same kernel body as a plain persistent kernel (CUDA's grid barrier): what the
      // protocol costs beyond the barrier itself.
      auto plain = rt.launch<BarrierLoop>(
          {.max_groups = blocks, .threads = threads, .mode = Mode::persistent},
          {rounds, ns.data(), true});
      plain.wait();
      plain_us.push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      // Each barrier alone on the loop's path.
      auto single_resizing = rt.launch<BarrierRounds<Rounds::resizing>>(
          {.max_groups = blocks, .threads = threads}, {rounds, ns.data(), true});
      single_resizing.wait();
      single_resize_us.push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      auto single_global = rt.launch<BarrierRounds<Rounds::global>>(
          {.max_groups = blocks, .threads = threads}, {rounds, ns.data(), false});
      single_global.wait();
      single_global_us.push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      // The anatomy's barrier as a job's kernel, cooperative and plain.
      const unsigned long long armed = (1ull << 15) - blocks << 48;
      for (Mode mode : {Mode::cooperative, Mode::persistent}) {
        CK(cudaMemcpy(raw_word, &armed, sizeof armed, cudaMemcpyHostToDevice));
        auto raw = rt.launch<RawBarrierLoop>(
            {.max_groups = blocks, .threads = threads, .policy = Policy::fixed(), .mode = mode},
            {rounds, ns.data(), raw_word});
        raw.wait();
        (mode == Mode::cooperative ? raw_us : raw_plain_us)
            .push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      }
    }
    Stat s = stat(sync_us), r = stat(resize_us), g = stat(global_us), pl = stat(plain_us),
         fx = stat(fixed_us), rw = stat(raw_us), rp = stat(raw_plain_us),
         sr = stat(single_resize_us), sg = stat(single_global_us);
    std::printf(
        "barrier  %5u blocks (%2d/SM): grid.sync %.2f us | resizing %.2f us (%.2fx) | "
        "resizing, fixed policy %.2f us (%.2fx) | global %.2f us (%.2fx) | same kernel, "
        "persistent mode %.2f us (%.2fx)\n"
        "         each alone on the loop's path: resizing %.2f us (%.2fx), global %.2f us (%.2fx) "
        "| "
        "the anatomy's armed64_acq_rel as the job's kernel: cooperative %.2f us (%.2fx), "
        "plain %.2f us (%.2fx)\n",
        blocks, per_sm, s.median, r.median, r.median / s.median, fx.median, fx.median / s.median,
        g.median, g.median / s.median, pl.median, pl.median / s.median, sr.median,
        sr.median / s.median, sg.median, sg.median / s.median, rw.median, rw.median / s.median,
        rp.median, rp.median / s.median);
    out.push_back({{"blocks", blocks},
                   {"blocks_per_sm", per_sm},
                   {"threads", threads},
                   {"grid_sync_us", to_json(s)},
                   {"resizing_barrier_us", to_json(r)},
                   {"global_barrier_us", to_json(g)},
                   {"persistent_mode_us", to_json(pl)},
                   {"resizing_fixed_policy_us", to_json(fx)},
                   {"resizing_barrier_alone_us", to_json(sr)},
                   {"global_barrier_alone_us", to_json(sg)},
                   {"resizing_alone_vs_grid_sync", sr.median / s.median},
                   {"anatomy_barrier_cooperative_kernel_us", to_json(rw)},
                   {"anatomy_barrier_plain_kernel_us", to_json(rp)},
                   {"resizing_vs_grid_sync", r.median / s.median},
                   {"global_vs_grid_sync", g.median / s.median}});
  }
  CK(cudaFree(raw_word));
  return out;
}

template <class T, int V>
__global__ void anatomy_loop(std::uint32_t rounds, std::uint64_t* ns, T* word,
                             std::uint32_t* counter, const std::uint64_t* side) {
  if (blockIdx.x == 0 && threadIdx.x == 0) ns[0] = now_ns();
  for (std::uint32_t r = 0; r < rounds; ++r) anatomy_barrier<T, V>(word, counter, side);
  if (blockIdx.x == 0 && threadIdx.x == 0) ns[1] = now_ns();
}

template <class T, int V>
double time_anatomy(std::uint32_t blocks, std::uint32_t threads, std::uint32_t rounds,
                    std::uint64_t* ns, std::uint64_t* word, std::uint32_t* counter,
                    const std::uint64_t* side) {
  constexpr bool armed = is_armed(V);
  const T init = armed ? T((1u << 15) - blocks) << (int(sizeof(T) * 8) - 16) : T(0);
  CK(cudaMemcpy(word, &init, sizeof(T), cudaMemcpyHostToDevice));
  T* w = reinterpret_cast<T*>(word);
  void* args[] = {&rounds, &ns, &w, &counter, &side};
  CK(cudaLaunchCooperativeKernel((void*)anatomy_loop<T, V>, blocks, threads, args, 0, nullptr));
  CK(cudaDeviceSynchronize());
  return double(ns[1] - ns[0]) / rounds / 1e3;
}

json bench_anatomy(int sms, int reps) {
  const std::uint32_t threads = 256, rounds = 2000;
  ManagedArray<std::uint64_t> ns(2);
  std::uint64_t *word = nullptr, *side = nullptr;
  std::uint32_t* counter = nullptr;
  CK(cudaMalloc(&word, 256));
  CK(cudaMalloc(&side, 256));
  CK(cudaMalloc(&counter, 256));
  CK(cudaMemset(side, 0, 256));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, grid_sync_loop, threads, 0));
  json out = json::array();
  for (int per_sm : {1, std::min(occ, 6)}) {
    const std::uint32_t blocks = std::uint32_t(sms * per_sm);
    std::vector<double> us[kAnatomies + 1];
    for (int rep = 0; rep < reps; ++rep) {
      void* args[] = {(void*)&rounds, nullptr};
      std::uint64_t* nsp = ns.data();
      args[1] = &nsp;
      CK(cudaLaunchCooperativeKernel((void*)grid_sync_loop, blocks, threads, args, 0, nullptr));
      CK(cudaDeviceSynchronize());
      us[kAnatomies].push_back(double(ns[1] - ns[0]) / rounds / 1e3);
      std::uint64_t* n = ns.data();
      us[flip32].push_back(
          time_anatomy<std::uint32_t, flip32>(blocks, threads, rounds, n, word, counter, side));
      us[flip64].push_back(time_anatomy<unsigned long long, flip64>(blocks, threads, rounds, n,
                                                                    word, counter, side));
      us[flip32_counter].push_back(time_anatomy<std::uint32_t, flip32_counter>(
          blocks, threads, rounds, n, word, counter, side));
      us[armed64].push_back(time_anatomy<unsigned long long, armed64>(blocks, threads, rounds, n,
                                                                      word, counter, side));
      us[armed64_counter].push_back(time_anatomy<unsigned long long, armed64_counter>(
          blocks, threads, rounds, n, word, counter, side));
      us[armed64_preread].push_back(time_anatomy<unsigned long long, armed64_preread>(
          blocks, threads, rounds, n, word, counter, side));
      us[armed32].push_back(
          time_anatomy<std::uint32_t, armed32>(blocks, threads, rounds, n, word, counter, side));
      us[armed64_refresh].push_back(time_anatomy<unsigned long long, armed64_refresh>(
          blocks, threads, rounds, n, word, counter, side));
      us[armed64_acq_rel].push_back(time_anatomy<unsigned long long, armed64_acq_rel>(
          blocks, threads, rounds, n, word, counter, side));
      us[armed64_fence_last].push_back(time_anatomy<unsigned long long, armed64_fence_last>(
          blocks, threads, rounds, n, word, counter, side));
    }
    const Stat sync = stat(us[kAnatomies]);
    json row{{"blocks", blocks}, {"blocks_per_sm", per_sm}, {"grid_sync_us", to_json(sync)}};
    std::printf("barrier anatomy %4u blocks (%d/SM): grid.sync %.2f us", blocks, per_sm,
                sync.median);
    for (int v = 0; v < kAnatomies; ++v) {
      const Stat s = stat(us[v]);
      std::printf(" | %s %.2f (%.2fx)", kAnatomyNames[v], s.median, s.median / sync.median);
      row[kAnatomyNames[v]] = to_json(s);
    }
    std::printf("\n");
    out.push_back(row);
  }
  CK(cudaFree(word));
  CK(cudaFree(side));
  CK(cudaFree(counter));
  return out;
}

// ---------------------------------------------------------------- idle offer_kill

struct OfferLoop {
  struct Params {
    std::uint32_t iterations, work;
    std::uint64_t* ns;
    float* sink;
    // 0: work only, 1: + offer_kill, 2: + a workgroup barrier, 3: + a reducing one; offer_kill's
    // parts, on words of their own: 4: + thread 0 loading two words (relaxed atomics, as
    // offer_kill's poll), 5: + thread 0 taking a branch of its own without loads, 6: + thread
    // 0 loading two words through the L2 (ld.global.cg), 7: + warp 0 loading them (no
    // divergence), 8: + every thread loading them (no branch); the vote through shared memory
    // (thread 0 sets a flag, a bare workgroup barrier, every thread reads it): 9: with thread 0's
    // two loads, 10: without loads
    int mode;
    std::uint64_t* words;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[0] = now_ns();
    float x = float(ctx.local_id());
    std::uint64_t seen_word = 0;
    std::uint32_t seen_target = 0;
    (void)seen_word;
    (void)seen_target;
#if COOP_DEVICE_CODE
    __shared__ int vote;  // modes 9 and 10
    if (threadIdx.x == 0) vote = 0;
    __syncthreads();
#endif
    for (std::uint32_t i = 0; i < p.iterations; ++i) {
      x = work(x, p.work);
      if (p.mode == 1) COOP_OFFER_KILL(ctx);
      if (p.mode == 2) ctx.barrier();
#if COOP_DEVICE_CODE
      if (p.mode == 3 && __syncthreads_or(x == 12345.f)) p.sink[0] = 1;  // offer_kill's vote alone
      if (p.mode == 9 || p.mode == 10) {
        if (threadIdx.x == 0 && seen_target < (seen_word & 0x3fff)) vote = 1;
        __syncthreads();
        if (vote) p.sink[0] = 1;
        if (p.mode == 9 && threadIdx.x == 0) {
          seen_word = ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_device>(p.words[0])
                          .load(::cuda::memory_order_relaxed);
          seen_target = std::uint32_t(
              ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_device>(p.words[16])
                  .load(::cuda::memory_order_relaxed));
        }
      } else if (p.mode >= 4) {
        // Every mode keeps `maybe` false (M 7 at the target 7): only the poll's cost shows.
        const bool maybe = threadIdx.x == 0 && seen_target < (seen_word & 0x3fff);
        if (__syncthreads_or(maybe)) p.sink[0] = 1;
        auto relaxed_loads = [&] {
          seen_word = ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_device>(p.words[0])
                          .load(::cuda::memory_order_relaxed);
          seen_target = std::uint32_t(
              ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_device>(p.words[16])
                  .load(::cuda::memory_order_relaxed));
        };
        if (p.mode == 4 && threadIdx.x == 0) relaxed_loads();
        if (p.mode == 5 && threadIdx.x == 0) seen_word += 0x4000;  // M's bits stay 0
        if (p.mode == 6 && threadIdx.x == 0) {
          seen_word = __ldcg(&p.words[0]);
          seen_target = std::uint32_t(__ldcg(&p.words[16]));
        }
        if (p.mode == 7 && threadIdx.x < 32) relaxed_loads();  // warp 0 whole: no divergence
        if (p.mode == 8) relaxed_loads();                      // every thread, no branch
      }
#endif
    }
    if (x == 12345.f) p.sink[0] = x;
    ctx.global_barrier();
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[1] = now_ns();
    COOP_END(ctx);
  }
};

json bench_offer(Runtime& rt, int reps) {
  const std::uint32_t iterations = 2000;
  ManagedArray<std::uint64_t> ns(2), words(32);  // words[0] and [16]: two lines, like M and target
  words[0] = words[16] = 7;                      // M 7 at the target 7: nothing asked
  ManagedArray<float> sink(1);
  // Calibrate `work` so that one iteration takes about 10 us.
  std::uint32_t w = 2000;
  for (int pass = 0; pass < 4; ++pass) {
    auto job =
        rt.launch<OfferLoop>({.threads = 256}, {200, w, ns.data(), sink.data(), 0, words.data()});
    job.wait();
    double it_us = double(ns[1] - ns[0]) / 200 / 1e3;
    w = std::uint32_t(double(w) * 10.0 / it_us);
  }
  std::vector<double> us[11];
  for (int rep = 0; rep < reps; ++rep)
    for (int mode : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
      auto job = rt.launch<OfferLoop>({.threads = 256},
                                      {iterations, w, ns.data(), sink.data(), mode, words.data()});
      job.wait();
      us[mode].push_back(double(ns[1] - ns[0]) / iterations / 1e3);
    }
  Stat b = stat(us[0]), o = stat(us[1]), bar = stat(us[2]), red = stat(us[3]);
  // offer_kill's parts (modes 4-10): the vote with thread 0's loads, its branch alone, L2 loads,
  // warp 0's or every thread's loads, and the vote through shared memory with and without loads.
  json parts;
  for (auto [mode, name] :
       {std::pair{4, "vote_and_relaxed_loads"}, std::pair{5, "vote_and_branch"},
        std::pair{6, "vote_and_cg_loads"}, std::pair{7, "vote_and_warp0_loads"},
        std::pair{8, "vote_and_all_threads_loads"}, std::pair{9, "shared_flag_vote_and_loads"},
        std::pair{10, "shared_flag_vote"}}) {
    const Stat s = stat(us[mode]);
    const double pct = (s.median - b.median) / b.median * 100;
    std::printf("  offer_kill's parts: %-24s +%.2f%%\n", name, pct);
    parts[name] = {{"iteration_us", to_json(s)}, {"overhead_percent", pct}};
  }
  double overhead = (o.median - b.median) / b.median * 100;
  double bar_overhead = (bar.median - b.median) / b.median * 100;
  double red_overhead = (red.median - b.median) / b.median * 100;
  std::printf(
      "offer_kill (idle) in a %.2f us loop: %.3f us/iteration with it (+%.2f%%, %.3f us);"
      " one bare workgroup barrier instead: +%.2f%%; one reducing barrier "
      "(__syncthreads_or): +%.2f%%\n",
      b.median, o.median, overhead, o.median - b.median, bar_overhead, red_overhead);
  return {{"iteration_us", to_json(b)},
          {"iteration_with_offer_us", to_json(o)},
          {"iteration_with_workgroup_barrier_us", to_json(bar)},
          {"overhead_percent", overhead},
          {"workgroup_barrier_overhead_percent", bar_overhead},
          {"iteration_with_reducing_barrier_us", to_json(red)},
          {"reducing_barrier_overhead_percent", red_overhead},
          {"offer_cost_us", o.median - b.median},
          {"parts", parts},
          {"work_per_iteration", w}};
}

// ---------------------------------------------------------------- coop::for_each's cost

// A phase of n items between resizing barriers, run three ways on one grid: a grid-stride loop
// in the plain persistent kernel (CUDA's grid barrier), the same in the cooperative kernel,
// and a coop::for_each_strided loop in the cooperative kernel (chunks claimed from a cursor,
// an offer every 4 us). Each item is a load and a store, so a phase costs about what its
// loop's fixed costs are: the claims (round trips to one line that every workgroup uses at
// once), the broadcast per chunk, and the barrier.
struct LoopPhases {
  struct Params {
    std::uint32_t phases;
    std::uint64_t n;
    std::uint32_t* data;
    std::uint64_t* ns;  // [0] start, [1] end (workgroup 0)
    LoopCursor* cursor;
    bool claimed;  // coop::for_each_strided rather than a grid-stride loop
  };
  struct Transmit {
    std::uint32_t phase = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    if (t.phase == 0 && ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[0] = now_ns();
    for (; t.phase < p.phases;) {
      {
        const auto visit = [&](std::uint64_t first, std::uint64_t end, std::uint64_t stride) {
          for (std::uint64_t i = first; i < end; i += stride) p.data[i] += 1;
        };
        if (!p.claimed) {
          visit(ctx.global_id(), p.n, ctx.global_size());
        } else {
          COOP_FOR_EACH_STRIDED(ctx, *p.cursor, t.phase + 1, 0, p.n, ctx.local_size(), visit);
        }
      }
      ++t.phase;
      COOP_RESIZING_BARRIER(ctx);
    }
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[1] = now_ns();
    COOP_END(ctx);
  }
};

json bench_loop(Runtime& rt, int sms, int reps) {
  const std::uint32_t threads = 256;
  const std::uint32_t groups = std::uint32_t(sms * coop::cuda::occupancy<LoopPhases>(threads));
  const std::uint64_t largest = 8u << 20;
  ManagedArray<std::uint32_t> data(largest);
  ManagedArray<std::uint64_t> ns(2);
  json out = {{"groups", groups}, {"threads", threads}, {"rows", json::array()}};
  std::printf("coop::for_each: %u workgroups of %u threads, one load and store per item\n", groups,
              threads);
  for (std::uint64_t n : {0ull, 4096ull, 65536ull, 262144ull, 1ull << 20, 8ull << 20}) {
    const std::uint32_t phases = n >= (8u << 20) ? 200 : n >= (1u << 20) ? 500 : 2000;
    struct Form {
      const char* name;
      Mode mode;
      bool claimed;
    };
    const Form forms[] = {{"plain_grid_stride", Mode::persistent, false},
                          {"cooperative_grid_stride", Mode::cooperative, false},
                          {"cooperative_for_each", Mode::cooperative, true}};
    json row = {{"items", n}, {"phases", phases}};
    double base = 0;
    for (const Form& f : forms) {
      std::vector<double> us;
      for (int rep = 0; rep < reps; ++rep) {
        std::fill(data.data(), data.data() + n, 0u);
        Managed<LoopCursor> cursor;
        auto job = rt.launch<LoopPhases>(
            {.max_groups = groups, .threads = threads, .policy = Policy::fixed(), .mode = f.mode},
            {phases, n, data.data(), ns.data(), cursor.get(), f.claimed});
        job.wait();
        for (std::uint64_t i = 0; i < n; ++i)
          if (data[i] != phases)
            throw std::runtime_error(std::string("loop benchmark: item visited ") +
                                     std::to_string(data[i]) + " times in " +
                                     std::to_string(phases) + " phases (" + f.name + ")");
        us.push_back(double(ns[1] - ns[0]) / phases / 1e3);
      }
      const Stat st = stat(us);
      if (base == 0) base = st.median;
      std::printf("  %8llu items  %-24s %8.2f us per phase (min %.2f, max %.2f)  %.2fx plain\n",
                  (unsigned long long)n, f.name, st.median, st.min, st.max, st.median / base);
      row[f.name] = {{"us_per_phase", to_json(st)}, {"vs_plain", st.median / base}};
    }
    out["rows"].push_back(row);
  }
  return out;
}

// ---------------------------------------------------------------- gather / regrow

struct Elastic {
  struct Params {
    std::uint32_t* stop;
    std::uint32_t work;
    std::uint64_t* join_latency_ns;  // per id: last (start - fork request) of a joiner
    unsigned long long* iterations;  // workgroup 0's: the offer interval
  };
  struct Transmit {
    std::uint64_t requested_ns = 0;
    std::uint32_t origin = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    float x = float(ctx.local_id());
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load(memory_order::relaxed)) == 0) {
      x = work(x, p.work);
      if (ctx.group_id() == 0 && ctx.local_id() == 0)
        atomic_ref<unsigned long long>(*p.iterations).fetch_add(1, memory_order::relaxed);
      COOP_OFFER_KILL(ctx);
      t.requested_ns = now_ns();
      t.origin = ctx.group_id();
      COOP_REQUEST_FORK(ctx);
      if (t.origin != ctx.group_id() && ctx.local_id() == 0) {
        p.join_latency_ns[ctx.group_id()] = now_ns() - t.requested_ns;
        t.origin = ctx.group_id();
      }
    }
    if (x == 12345.f) *p.stop = 2;
    COOP_END(ctx);
  }
};

// The offer interval matters twice: a wanted workgroup sees the request at an offer and acts on
// it at its next one (the poll's loads are issued at one offer and used at the next), so the
// gather is measured at three intervals (iterations of about 0.9, 1.4 and 3.2 us on an H100).
// With ids in launch order the top ids are the blocks forked at the last regrow, the youngest
// on their SMs, whose warps wait for the older blocks' (--only beside); COOP_CUDA_IDS_BY_SM=1
// numbers the job by SM to compare.
json bench_gather(Runtime& rt, int reps) {
  ManagedArray<std::uint32_t> stop(1);
  std::uint64_t* lat = nullptr;
  CK(cudaMalloc(&lat, sizeof(std::uint64_t) * 65536));
  ManagedArray<unsigned long long> iterations(1);
  json out = json::array();
  // The offer/fork interval: the work of one iteration.
  for (const std::uint32_t work_per_iteration : {100u, 300u, 1000u}) {
    stop[0] = 0;
    iterations[0] = 0;
    auto job = rt.launch<Elastic>({.threads = 256},
                                  {stop.data(), work_per_iteration, lat, iterations.data()});
    const auto started = clk::now();
    const std::uint32_t n = job.max_groups();
    for (std::uint32_t k : {1u, n / 4, n / 2, n - 1}) {
      std::vector<double> gather_us, regrow_us, join_us;
      for (int rep = 0; rep < reps; ++rep) {
        CK(cudaMemset(lat, 0, sizeof(std::uint64_t) * n));
        TaskRecord r = rt.run(k, [](Task&) {});
        auto t_end = clk::now();
        while (job.active_groups() < n) {
          if (clk::now() - t_end > std::chrono::seconds(5)) break;
        }
        regrow_us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t_end).count());
        gather_us.push_back(r.gather_ms() * 1e3);
        // Joined blocks report fork->running; wait briefly for the last ones.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::vector<std::uint64_t> h(n);
        CK(cudaMemcpy(h.data(), lat, sizeof(std::uint64_t) * n, cudaMemcpyDeviceToHost));
        std::uint64_t worst = 0;
        for (auto v : h) worst = std::max(worst, v);
        join_us.push_back(double(worst) / 1e3);
      }
      Stat g = stat(gather_us), rg = stat(regrow_us), j = stat(join_us);
      std::printf(
          "task k=%4u of N=%u, offer work %4u: gather median %.1f us p99 %.1f | regrow (host "
          "sees M=N) %.1f us | fork->all joiners running %.1f us\n",
          k, n, work_per_iteration, g.median, g.p99, rg.median, j.median);
      out.push_back({{"k", k},
                     {"N", n},
                     {"work_per_iteration", work_per_iteration},
                     {"gather_us", to_json(g)},
                     {"regrow_host_us", to_json(rg)},
                     {"fork_to_all_running_us", to_json(j)}});
    }
    stop[0] = 1;
    job.wait();
    const double interval =
        std::chrono::duration<double, std::micro>(clk::now() - started).count() /
        double(std::max(iterations[0], 1ull));
    std::printf(
        "gather: offer work %u: workgroup 0's iterations took %.2f us each (tasks included)\n",
        work_per_iteration, interval);
    for (auto& row : out)
      if (row["work_per_iteration"] == work_per_iteration)
        row["workgroup0_iteration_us"] = interval;
  }
  CK(cudaFree(lat));
  return out;
}

// ---------------------------------------------------------------- task latency

// 1024-thread blocks: they cannot be resident beside a full-occupancy persistent kernel of
// 256-thread blocks (at most 2048 threads per SM), so without cooperation the task waits.
__global__ void __launch_bounds__(1024) small_task(float* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

json bench_task_latency(Runtime& rt, int reps) {
  cudaFuncAttributes attr{};
  CK(cudaFuncGetAttributes(&attr, small_task));  // loaded before any persistent kernel
  float* out = nullptr;
  CK(cudaMalloc(&out, 64 * 1024 * sizeof(float)));
  ManagedArray<std::uint32_t> stop(1);
  std::uint64_t* lat = nullptr;
  CK(cudaMalloc(&lat, sizeof(std::uint64_t) * 65536));
  ManagedArray<unsigned long long> iterations(1);
  const std::uint32_t k = 16;  // blocks of 1024 threads
  // With cooperation: the scheduler gathers the device (all but workgroup 0: a 1024-thread
  // block needs SMs emptied of the job's blocks), the task runs, the job regrows.
  std::vector<double> coop_us;
  {
    stop[0] = 0;
    auto job = rt.launch<Elastic>({.threads = 256}, {stop.data(), 1000, lat, iterations.data()});
    for (int rep = 0; rep < reps; ++rep) {
      auto t0 = clk::now();
      rt.run_fraction(
          1.0, [&](Task& t) { small_task<<<k, 1024, 0, t.stream()>>>(out); }, 1);
      coop_us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    stop[0] = 1;
    job.wait();
  }
  // Without: the same kernel as a plain persistent kernel; the task goes straight to a
  // high-priority stream and waits until the persistent kernel stops (after `hold_ms`).
  std::vector<double> plain_us;
  const double hold_ms = 50;
  int least = 0, greatest = 0;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t hi;
  CK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
  for (int rep = 0; rep < std::min(reps, 5); ++rep) {
    stop[0] = 0;
    auto job = rt.launch<Elastic>({.threads = 256, .mode = Mode::persistent},
                                  {stop.data(), 1000, lat, iterations.data()});
    std::jthread stopper([&] {  // joined on every way out (a failed CUDA call throws)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(hold_ms));
      atomic_ref<std::uint32_t>(stop[0]).store(1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto t0 = clk::now();
    small_task<<<k, 1024, 0, hi>>>(out);
    CK(cudaStreamSynchronize(hi));
    plain_us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
    stopper.join();
    job.wait();
  }
  CK(cudaStreamDestroy(hi));
  CK(cudaFree(out));
  CK(cudaFree(lat));
  Stat c = stat(coop_us), p = stat(plain_us);
  std::printf(
      "high-priority task (%u blocks of 1024): cooperative %.1f us (p99 %.1f) vs stream priority "
      "only %.1f us (the persistent kernel ran %.0f ms more): %.0fx faster\n",
      k, c.median, c.p99, p.median, hold_ms, p.median / c.median);
  return {{"task_blocks", k},
          {"cooperative_us", to_json(c)},
          {"stream_priority_only_us", to_json(p)},
          {"persistent_kernel_remaining_ms", hold_ms},
          {"speedup", p.median / c.median}};
}

// ---------------------------------------------------------------- a task's life, per stage

// The job of the stage breakdown: an elastic loop of short iterations that stamps (device
// clock) the first time any workgroup sees a request and the last time a killed one leaves.
struct StageJob {
  // Shared memory that lets 6 blocks fit on an SM of an H100 or H200 (228 KB) and not 7: N is
  // 6 per SM whatever the kernel's register count allows (4 registers fewer once made it 8 per
  // SM, filling the SMs' threads, and the clock probe found no place beside the job). Not for
  // the gather benchmark's kernel: forked blocks with 40 KB of static shared memory started
  // 100-170 us after the fork on an H100 instead of 20-40.
  struct Shared {
    unsigned char occupancy_pad[34 * 1024];
  };
  struct Params {
    std::uint32_t* stop;
    std::uint32_t work;
    unsigned long long* seen_ns;  // atomicMin: a workgroup saw the request (query() > 0)
    unsigned long long* out_ns;   // atomicMax: a killed workgroup left
    // [0] atomicMin: a wanted workgroup (one of the top query() ids) saw the request;
    // [1] atomicMin: the first killed workgroup left; [2] workgroup 0's iterations;
    // [3] atomicMax: a workgroup began its first iteration (the last joiner of a regrowth);
    // [4] atomicMin: the same, the first joiner; [5] atomicMin: a fork added workgroups
    unsigned long long* more;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    float x = float(ctx.local_id());
    bool first = true;        // a joiner too: it enters the loop after the fork below
    std::uint32_t added = 0;  // by this workgroup's last fork (a joiner starts after it: 0)
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load(memory_order::relaxed)) == 0) {
      if (first && ctx.local_id() == 0) {
        stamp_max(p.more + 3);
        stamp_min(p.more + 4);
      }
      first = false;
      x = work(x, p.work);
      stamp_request(ctx, p, ctx.query());
      if (ctx.offer_kill(__LINE__)) {
        if (ctx.local_id() == 0) {
          stamp_max(p.out_ns);
          stamp_min(p.more + 1);
        }
        return;
      }
      // COOP_REQUEST_FORK, keeping what the fork added (reading M instead would add a load to
      // every iteration): the forker stamps when its fork added workgroups.
      // clang-format off
      added = ctx.request_fork(__LINE__); [[fallthrough]]; case __LINE__:
        // clang-format on
        if (added > 0 && ctx.local_id() == 0) stamp_min(p.more + 5);
    }
    if (x == 12345.f) *p.stop = 2;
    COOP_END(ctx);
  }
  template <class Ctx>
  COOP_HD static void stamp_request(Ctx& ctx, const Params& p, std::uint32_t wanted) {
    if (ctx.local_id() != 0) return;
    if (wanted > 0) {
      stamp_min(p.seen_ns);
      if (ctx.group_id() + wanted >= ctx.num_groups()) stamp_min(p.more);
    }
    if (ctx.group_id() == 0) atomic_ref<unsigned long long>(p.more[2]).fetch_add(1);
  }
  COOP_HD static void stamp_min(unsigned long long* at) {
#if COOP_DEVICE_CODE
    atomicMin(at, static_cast<unsigned long long>(now_ns()));
#else
    (void)at;
#endif
  }
  COOP_HD static void stamp_max(unsigned long long* at) {
#if COOP_DEVICE_CODE
    atomicMax(at, static_cast<unsigned long long>(now_ns()));
#else
    (void)at;
#endif
  }
};

// The task: `blocks` blocks of the job's shape, each about `work` long; stamps its first block's
// start and its last block's end.
__global__ void stage_task(std::uint32_t work_n, unsigned long long* first_ns,
                           unsigned long long* last_ns, float* sink) {
  if (threadIdx.x == 0) atomicMin(first_ns, static_cast<unsigned long long>(now_ns()));
  const float x = work(float(threadIdx.x), work_n);
  if (x == 12345.f) sink[0] = x;
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(last_ns, static_cast<unsigned long long>(now_ns()));
}

// Device clock minus host clock (steady_clock ns): a kernel waits for a host flag and stamps
// the moment it sees it; the smallest difference over a few tries (a PCIe write's latency,
// about a microsecond, is its error).
__global__ void clock_probe(volatile std::uint32_t* flag, unsigned long long* seen,
                            std::uint32_t tries) {
  for (std::uint32_t i = 1; i <= tries; ++i) {
    while (*flag < i) {
    }
    seen[i - 1] = now_ns();
  }
}

// Device clock minus host clock, measured again before every row of the stages benchmark: the
// two clocks move apart by microseconds between runs, and one estimate at the start put some
// rows' requests after the device had seen them. The probe runs beside the job (one thread on
// a stream of its own; nothing here waits for the whole device or frees memory while the job
// runs, which would wait for it).
class ClockProbe {
 public:
  ClockProbe() {
    CK(cudaHostAlloc(&flag_, sizeof(std::uint32_t), cudaHostAllocMapped));
    CK(cudaHostAlloc(&seen_, sizeof(unsigned long long) * kTries, cudaHostAllocMapped));
    CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~ClockProbe() {
    cudaStreamDestroy(stream_);
    cudaFreeHost(flag_);
    cudaFreeHost(seen_);
  }
  ClockProbe(const ClockProbe&) = delete;
  ClockProbe& operator=(const ClockProbe&) = delete;
  std::int64_t offset() {
    *flag_ = 0;
    clock_probe<<<1, 1, 0, stream_>>>(flag_, seen_, kTries);
    std::vector<std::int64_t> host(kTries);
    for (std::uint32_t i = 1; i <= kTries; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      host[i - 1] = std::int64_t(clk::now().time_since_epoch().count());
      __atomic_store_n(flag_, i, __ATOMIC_RELEASE);
    }
    CK(cudaStreamSynchronize(stream_));
    std::int64_t best = INT64_MAX;
    for (std::uint32_t i = 0; i < kTries; ++i)
      best = std::min(best, std::int64_t(seen_[i]) - host[i]);
    return best;
  }

 private:
  static constexpr std::uint32_t kTries = 50;
  std::uint32_t* flag_ = nullptr;
  unsigned long long* seen_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// A task's life from the request, stage by stage, for k of N workgroups (the job has no
// resizing barrier: the whole device is N - 1 and workgroup 0), with two ways of starting its
// kernel: coop's (submit: the kernel is enqueued once the host has seen the workgroups leave) and
// pre-enqueued (the kernel goes to a high-priority stream at the request, and the hardware places
// its blocks as the job's leave; the scheduler still gathers the capacity).
json bench_stages(Runtime& rt, int reps) {
  cudaFuncAttributes attr{};
  CK(cudaFuncGetAttributes(&attr, stage_task));  // loaded before any persistent kernel
  CK(cudaFuncGetAttributes(&attr, clock_probe));
  ClockProbe probe;
  ManagedArray<std::uint32_t> stop(1);
  // seen, out, first, last, wanted seen, first out, iterations, last joiner, first joiner, fork
  constexpr int kStamps = 10;
  unsigned long long* stamps = nullptr;
  CK(cudaMalloc(&stamps, kStamps * sizeof(unsigned long long)));
  float* sink = nullptr;
  CK(cudaMalloc(&sink, sizeof(float)));
  int least = 0, greatest = 0;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t pre;
  CK(cudaStreamCreateWithPriority(&pre, cudaStreamNonBlocking, greatest));
  const std::uint32_t task_work = 2000;  // about 10 us per task block
  json runs = json::array();
  // The offer interval: about 2.4 us per iteration at 300 (all three ways of starting the
  // task), longer at 1000 (coop's default way only: what a longer interval costs, stage by stage).
  for (const std::uint32_t job_work : {300u, 1000u}) {
    CK(cudaMemset(stamps, 0, kStamps * sizeof(unsigned long long)));
    stop[0] = 0;
    auto job = rt.launch<StageJob>({.threads = 256},
                                   {stop.data(), job_work, stamps, stamps + 1, stamps + 4});
    const auto job_started = clk::now();
    const std::uint32_t n = job.max_groups();
    json out = json::array();
    // 0: launch when gathered (TaskLaunch::after_gather), 1: enqueued at the request with no gate
    // (the hardware places the blocks as the job's leave), 2: enqueued at the request behind the
    // release the leaving blocks write (TaskLaunch::at_request).
    const std::vector<int> mechanisms =
        job_work == 300 ? std::vector<int>{0, 1, 2} : std::vector<int>{0};
    for (int mechanism : mechanisms) {
      rt.set_task_launch(mechanism == 2 ? TaskLaunch::at_request : TaskLaunch::after_gather);
      for (std::uint32_t k : {1u, n / 4, n / 2, n - 1}) {
        const std::int64_t offset = probe.offset();
        std::vector<double> seen_us, out_us, record_us, host_us, first_us, done_us, regrow_us,
            wanted_us, first_out_us, joined_us, fork_us, first_joined_us;
        for (int rep = 0; rep < reps; ++rep) {
          const unsigned long long init[6] = {~0ull, 0, ~0ull, 0, ~0ull, ~0ull};
          CK(cudaMemcpy(stamps, init, sizeof init, cudaMemcpyHostToDevice));
          const unsigned long long regrowth[3] = {0, ~0ull, ~0ull};
          CK(cudaMemcpy(stamps + 7, regrowth, sizeof regrowth, cudaMemcpyHostToDevice));
          auto launch = [&](cudaStream_t s) {
            stage_task<<<k, 256, 0, s>>>(task_work, stamps + 2, stamps + 3, sink);
          };
          const auto t0 = clk::now();
          const std::int64_t t0_dev = std::int64_t(t0.time_since_epoch().count()) + offset;
          if (mechanism == 1) launch(pre);
          auto body = [&](Task& t) {
            if (mechanism == 1)
              CK(cudaStreamSynchronize(pre));
            else
              launch(t.stream());
          };
          TaskHandle h = rt.submit(k, body, 1);
          const TaskRecord r = h.record();
          const auto t_end = clk::now();
          while (job.active_groups() < n && clk::now() - t_end < std::chrono::seconds(5)) {
          }
          regrow_us.push_back(
              std::chrono::duration<double, std::micro>(clk::now() - t_end).count());
          // The last joiners' first iterations, once their blocks run.
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          unsigned long long st[kStamps];
          CK(cudaMemcpy(st, stamps, sizeof st, cudaMemcpyDeviceToHost));
          // On the device's clock: from the task's last block's end to the fork that grows the
          // job back, to its first joiner running, and to its last (k of them forked back).
          if (st[3] != 0) {
            if (st[7] != 0) joined_us.push_back(double(std::int64_t(st[7] - st[3])) / 1e3);
            if (st[8] != ~0ull)
              first_joined_us.push_back(double(std::int64_t(st[8] - st[3])) / 1e3);
            if (st[9] != ~0ull) fork_us.push_back(double(std::int64_t(st[9] - st[3])) / 1e3);
          }
          auto since = [&](unsigned long long dev) {
            return double(std::int64_t(dev) - t0_dev) / 1e3;
          };
          if (st[0] != ~0ull) seen_us.push_back(since(st[0]));
          if (st[1] != 0) out_us.push_back(since(st[1]));
          if (st[4] != ~0ull) wanted_us.push_back(since(st[4]));
          if (st[5] != ~0ull) first_out_us.push_back(since(st[5]));
          // When the service thread read the record that brought M to N - k (the job's
          // timeline, on the scheduler's clock like the task's record).
          const JobStats js = job.stats();
          for (const TimelinePoint& pt : js.timeline)
            if (pt.t_ms >= r.request_ms && pt.active <= n - k) {
              record_us.push_back((pt.t_ms - r.request_ms) * 1e3);
              break;
            }
          host_us.push_back(r.gather_ms() * 1e3);
          first_us.push_back(since(st[2]));
          done_us.push_back(since(st[3]));
        }
        const char* how = mechanism == 0   ? "coop (launch when gathered)"
                          : mechanism == 1 ? "pre-enqueued, no gate"
                                           : "coop (at request, device release)";
        Stat sn = stat(seen_us), ou = stat(out_us), rc = stat(record_us), hs = stat(host_us),
             fb = stat(first_us), dn = stat(done_us), rg = stat(regrow_us), ws = stat(wanted_us),
             fo = stat(first_out_us), jn = stat(joined_us), fk = stat(fork_us),
             fj = stat(first_joined_us);
        std::printf(
            "stages %-28s k=%4s: seen %.1f | wanted seen %.1f | first out %.1f | out %.1f | "
            "record read %.1f | host %.1f | first block %.1f (p99 %.1f) | done %.1f (p99 %.1f) | "
            "regrow %.1f us (host), task end -> fork %.1f, first joiner %.1f, last joiner "
            "running %.1f (p99 %.1f) us (device)\n",
            how, std::to_string(k).c_str(), sn.median, ws.median, fo.median, ou.median, rc.median,
            hs.median, fb.median, fb.p99, dn.median, dn.p99, rg.median, fk.median, fj.median,
            jn.median, jn.p99);
        out.push_back({{"mechanism", mechanism == 0   ? "launch_when_gathered"
                                     : mechanism == 1 ? "pre_enqueued"
                                                      : "at_request_device_release"},
                       {"k", k},
                       {"N", n},
                       {"request_to_seen_on_device_us", to_json(sn)},
                       {"request_to_workgroups_out_us", to_json(ou)},
                       {"request_to_wanted_workgroup_sees_us", to_json(ws)},
                       {"request_to_first_workgroup_out_us", to_json(fo)},
                       {"request_to_record_read_us", to_json(rc)},
                       {"request_to_host_sees_us", to_json(hs)},
                       {"request_to_first_task_block_us", to_json(fb)},
                       {"request_to_task_done_us", to_json(dn)},
                       {"task_end_to_job_regrown_us", to_json(rg)},
                       {"task_done_to_fork_device_us", to_json(fk)},
                       {"task_done_to_first_joiner_running_device_us", to_json(fj)},
                       {"task_done_to_last_joiner_running_device_us", to_json(jn)},
                       {"device_minus_host_clock_ns", offset}});
      }
    }
    rt.set_task_launch(TaskLaunch::after_gather);
    unsigned long long iterations = 0;
    CK(cudaMemcpy(&iterations, stamps + 6, sizeof iterations, cudaMemcpyDeviceToHost));
    const double job_us =
        std::chrono::duration<double, std::micro>(clk::now() - job_started).count();
    const double interval = job_us / double(std::max(iterations, 1ull));
    std::printf(
        "stages: job iteration work %u: workgroup 0 ran %llu iterations in %.0f ms: %.2f us each "
        "(tasks included)\n",
        job_work, iterations, job_us / 1e3, interval);
    stop[0] = 1;
    job.wait();
    runs.push_back(
        {{"job_iteration_work", job_work}, {"workgroup0_iteration_us", interval}, {"rows", out}});
  }
  CK(cudaStreamDestroy(pre));
  CK(cudaFree(stamps));
  CK(cudaFree(sink));
  return {{"task_block_work", task_work}, {"runs", runs}};
}

// ---------------------------------------------------------------- blocks placed beside a job

// How fast a block runs on SMs where compute-bound blocks of another kernel already run (what a
// task's blocks or a job's forked blocks meet): the resident blocks loop on dependent arithmetic
// until stopped, with a workgroup barrier after every `work_n` steps or none.
__global__ void resident_loop(const std::uint32_t* stop, std::uint32_t work_n, int sync,
                              float* sink) {
  float x = float(threadIdx.x);
  const volatile std::uint32_t* flag = stop;
  for (;;) {
    x = work(x, work_n);
    if (sync ? __syncthreads_or(*flag != 0) : (*flag != 0)) break;
  }
  if (x == 12345.f) sink[0] = x;
}

__global__ void young_block(std::uint32_t work_n, float* sink, unsigned long long* ns) {
  const std::uint64_t t0 = now_ns();
  const float x = work(float(threadIdx.x), work_n);
  if (x == 12345.f) sink[0] = x;
  __syncthreads();
  if (threadIdx.x == 0) ns[blockIdx.x] = now_ns() - t0;
}

json bench_beside(int sms, int reps) {
  const int young_blocks = sms, residents_per_sm = 5, threads = 256;
  const std::uint32_t young_work = 2000;  // about 10 us alone
  std::uint32_t* stop = nullptr;
  std::uint32_t* one = nullptr;
  float* sink = nullptr;
  unsigned long long* ns = nullptr;
  CK(cudaMalloc(&stop, sizeof(std::uint32_t)));
  CK(cudaHostAlloc(&one, sizeof(std::uint32_t), cudaHostAllocDefault));
  *one = 1;
  CK(cudaMalloc(&sink, sizeof(float)));
  CK(cudaMalloc(&ns, sizeof(unsigned long long) * young_blocks));
  int least = 0, greatest = 0;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t low, high, ctl;
  CK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  CK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CK(cudaStreamCreateWithFlags(&ctl, cudaStreamNonBlocking));
  struct Case {
    const char* name;
    bool residents;
    std::uint32_t work;
    int sync;
  };
  const Case cases[] = {{"alone", false, 0, 0},
                        {"beside a barrier every 300 steps", true, 300, 1},
                        {"beside a barrier every 1000 steps", true, 1000, 1},
                        {"beside a barrier every 3000 steps", true, 3000, 1},
                        {"beside no barrier", true, 1000, 0}};
  json out = json::array();
  for (const Case& c : cases) {
    std::vector<double> median_us, max_us;
    for (int rep = 0; rep < reps; ++rep) {
      CK(cudaMemset(stop, 0, sizeof(std::uint32_t)));
      CK(cudaDeviceSynchronize());
      if (c.residents) {
        resident_loop<<<sms * residents_per_sm, threads, 0, low>>>(stop, c.work, c.sync, sink);
        CK(cudaGetLastError());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // resident and running
      }
      young_block<<<young_blocks, threads, 0, high>>>(young_work, sink, ns);
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(high));
      CK(cudaMemcpyAsync(stop, one, sizeof(std::uint32_t), cudaMemcpyHostToDevice, ctl));
      CK(cudaDeviceSynchronize());
      std::vector<unsigned long long> h(young_blocks);
      CK(cudaMemcpy(h.data(), ns, sizeof(unsigned long long) * young_blocks,
                    cudaMemcpyDeviceToHost));
      std::vector<double> us(h.begin(), h.end());
      for (double& v : us) v /= 1e3;
      const Stat st = stat(us);
      median_us.push_back(st.median);
      max_us.push_back(*std::max_element(us.begin(), us.end()));
    }
    const Stat m = stat(median_us), x = stat(max_us);
    std::printf(
        "beside: %d blocks of %d threads, %-34s: each runs %.1f us (median over reps of "
        "the median block; slowest block %.1f us)\n",
        young_blocks, threads, c.name, m.median, x.median);
    out.push_back({{"case", c.name},
                   {"resident_blocks_per_sm", c.residents ? residents_per_sm : 0},
                   {"resident_work_between_checks", c.work},
                   {"resident_barrier", c.sync != 0},
                   {"block_run_us_median", to_json(m)},
                   {"block_run_us_slowest", to_json(x)}});
  }
  CK(cudaStreamDestroy(low));
  CK(cudaStreamDestroy(high));
  CK(cudaStreamDestroy(ctl));
  CK(cudaFree(stop));
  CK(cudaFreeHost(one));
  CK(cudaFree(sink));
  CK(cudaFree(ns));
  return {{"young_blocks", young_blocks}, {"young_work", young_work}, {"cases", out}};
}

// ---------------------------------------------------------------- host -> device control path

// One thread echoes every value it sees in device memory back to mapped host memory.
__global__ void echo(volatile std::uint32_t* word, std::uint32_t* host_echo, std::uint32_t rounds) {
  for (std::uint32_t r = 1; r <= rounds; ++r) {
    while (*word != r) {
    }
    ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_system>(*host_echo)
        .store(r, ::cuda::std::memory_order_release);
  }
}

using WriteValue32 = int (*)(cudaStream_t, unsigned long long, unsigned, unsigned);

json bench_control(int reps) {
  const std::uint32_t rounds = std::uint32_t(std::max(reps, 10) * 10);
  std::uint32_t *word = nullptr, *echo_h = nullptr, *staging = nullptr;
  CK(cudaMalloc(&word, sizeof(std::uint32_t)));
  CK(cudaMemset(word, 0, sizeof(std::uint32_t)));
  CK(cudaHostAlloc(&echo_h, sizeof(std::uint32_t), cudaHostAllocMapped));
  CK(cudaHostAlloc(&staging, sizeof(std::uint32_t), cudaHostAllocDefault));
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q));
  auto write_value = reinterpret_cast<WriteValue32>(fn);
  cudaStream_t side, ctl;
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ctl, cudaStreamNonBlocking));
  json out;
  for (int method : {0, 1}) {
    CK(cudaMemset(word, 0, sizeof(std::uint32_t)));
    CK(cudaDeviceSynchronize());
    *echo_h = 0;
    echo<<<1, 1, 0, side>>>(word, echo_h, rounds);
    std::vector<double> rtt;
    for (std::uint32_t r = 1; r <= rounds; ++r) {
      auto t0 = clk::now();
      if (method == 0) {
        *staging = r;
        CK(cudaMemcpyAsync(word, staging, sizeof r, cudaMemcpyHostToDevice, ctl));
      } else if (write_value(ctl, reinterpret_cast<unsigned long long>(word), r, 0) != 0) {
        throw std::runtime_error("cuStreamWriteValue32 failed");
      }
      while (__atomic_load_n(echo_h, __ATOMIC_ACQUIRE) != r) {
      }
      rtt.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
    }
    CK(cudaStreamSynchronize(side));
    Stat st = stat(rtt);
    std::printf(
        "control write -> device sees it -> host sees the echo, %s: median %.1f us (p99 "
        "%.1f)\n",
        method == 0 ? "cudaMemcpyAsync" : "cuStreamWriteValue32", st.median, st.p99);
    out[method == 0 ? "memcpy_async_rtt_us" : "stream_write_value_rtt_us"] = to_json(st);
  }
  CK(cudaStreamDestroy(side));
  CK(cudaStreamDestroy(ctl));
  CK(cudaFree(word));
  CK(cudaFreeHost(echo_h));
  CK(cudaFreeHost(staging));
  return out;
}

int run(int argc, char** argv) {
  const auto o = micro::parse_options(
      argc, argv, "barrier|anatomy|offer|loop|gather|stages|beside|task|control");
  if (!o) return 2;
  micro::GpuSetup gpu;
  Runtime& rt = gpu.rt;
  const int sms = gpu.prop.multiProcessorCount;
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("coop GPU micro-benchmarks on %s (%d SMs), %s\n", gpu.prop.name, sms,
              gpu.date.c_str());
  json j = gpu.header(*o);
  j["driver"] = driver;
  const int reps = o->reps;
  if (o->runs("barrier")) j["barrier"] = bench_barriers(rt, sms, std::min(reps, 10));
  if (o->runs("anatomy")) j["barrier_anatomy"] = bench_anatomy(sms, std::min(reps, 10));
  if (o->runs("offer")) j["offer_kill"] = bench_offer(rt, std::min(reps, 10));
  if (o->runs("loop")) j["for_each_loop"] = bench_loop(rt, sms, std::min(reps, 5));
  if (o->runs("gather")) j["gather"] = bench_gather(rt, reps);
  if (o->runs("stages")) j["stages"] = bench_stages(rt, reps);
  if (o->runs("beside")) j["beside"] = bench_beside(sms, std::min(reps, 20));
  if (o->runs("task")) j["task_latency"] = bench_task_latency(rt, reps);
  if (o->runs("control")) j["control_path"] = bench_control(reps);
  if (!o->json_path.empty()) std::ofstream(o->json_path) << j.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return coop::micro::run_main([&] { return run(argc, argv); });
}
