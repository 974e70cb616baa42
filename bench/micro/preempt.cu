// GPU benchmarks of interruptible kernels and preemption (issue 5):
//   interrupt  -- an interruptible kernel vs the same loops as a plain kernel, at time budgets of
//                 0.1, 1, 10 and 50 ms per launch (and one unlimited launch), for a fine
//                 checkpoint (every ~16 dependent FMAs) and a coarse one (~256);
//   relaunch   -- the cost of one relaunch (tiny grid, one checkpoint per launch);
//   workload   -- the paper's periodic graphics workloads (light 70/3, medium 40/3, heavy 40/10 ms
//                 of period/GPU work): a cooperative kernel's slowdown and the task's met periods
//                 under cooperative gathering, kernel-level suspension and the hybrid, and an
//                 interruptible kernel preempted whole, next to the model P/(P-D);
//   threshold  -- the heavy workload's task at fractions of the device, cooperative vs kernel
//                 (the measurement the hybrid threshold is chosen from).
// Medians with spread; ratios against baselines measured in the same run. --json FILE.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coop/coop.hpp"
#include "coop/interruptible.hpp"
#include "coop/memory.hpp"
#include "cuda_check.hpp"
#include "gpu_setup.hpp"
#include "micro_common.hpp"

using namespace coop;
using json = nlohmann::json;
using clk = std::chrono::steady_clock;

namespace {

using micro::Stat;
using micro::stat;
using micro::to_json;
double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

COOP_HD float work(float x, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) x = x * 0.999f + 0.5f;
  return x;
}

// ---------------------------------------------------------------- interruptible vs plain

struct IterWork {
  struct Args {
    float* out;
    std::uint32_t iters, per_checkpoint;
  };
  struct Locals {
    std::uint32_t i;
    float x;
  };
  template <class Ic>
  COOP_HD COOP_INLINE void operator()(Ic& ic, const Args& a, Locals& l) const {
    COOP_INTERRUPTIBLE_BEGIN(ic);
    l.x = float(ic.global_id() % 97);
    for (l.i = 0; l.i < a.iters; ++l.i) {
      COOP_CHECKPOINT(ic);
      l.x = work(l.x, a.per_checkpoint);
    }
    a.out[ic.global_id()] = l.x;
    COOP_INTERRUPTIBLE_END(ic);
  }
};

__global__ void plain_iter_work(IterWork::Args a) {
  const std::uint64_t gid = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float x = float(gid % 97);
  for (std::uint32_t i = 0; i < a.iters; ++i) x = work(x, a.per_checkpoint);
  a.out[gid] = x;
}

json bench_interrupt(Runtime& rt, int reps) {
  const std::uint32_t threads = 256;
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, plain_iter_work, threads, 0));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const std::uint32_t blocks = std::uint32_t(occ * prop.multiProcessorCount);
  float* out = nullptr;
  CK(cudaMalloc(&out, std::size_t(blocks) * threads * sizeof(float)));
  std::vector<float> want(std::size_t(blocks) * threads), got(want.size());
  json rows = json::array();
  Interruptible<IterWork> k(rt);
  for (std::uint32_t per : {16u, 256u, 1024u}) {
    // About 50-100 ms of plain work.
    const std::uint32_t iters = 200u * 1000u * 1000u / (per * 4u) / 10u;
    IterWork::Args a{out, iters, per};
    k.args = a;
    std::vector<double> plain;
    for (int r = 0; r < reps + 1; ++r) {
      auto t0 = clk::now();
      plain_iter_work<<<blocks, threads>>>(a);
      CK(cudaDeviceSynchronize());
      if (r) plain.push_back(ms_since(t0));
    }
    CK(cudaMemcpy(want.data(), out, want.size() * sizeof(float), cudaMemcpyDeviceToHost));
    Stat p = stat(plain);
    // Wall time between a thread's checkpoints with the device full.
    const double us_per_checkpoint = p.median * 1000.0 / iters;
    std::printf("interruptible, %u FMAs (%.2f us) per checkpoint: plain kernel %.2f ms\n", per,
                us_per_checkpoint, p.median);
    for (double budget : {0.1, 1.0, 10.0, 50.0, 1e6}) {
      std::vector<double> t;
      std::uint32_t launches = 0;
      double longest = 0;
      for (int r = 0; r < reps + 1; ++r) {
        CK(cudaMemset(out, 0, want.size() * sizeof(float)));
        auto t0 = clk::now();
        InterruptProgress pr = k.launch(blocks, threads, {.slice_ms = budget});
        if (r) t.push_back(ms_since(t0));
        launches = pr.launches;
        longest = pr.longest_launch_ms;
      }
      CK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
      const bool equal = std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0;
      Stat s = stat(t);
      std::printf(
          "  budget %8.1f ms: %8.2f ms (%.2f..%.2f), %5u launches, longest %.2f ms, %.3fx "
          "plain%s\n",
          budget, s.median, s.min, s.max, launches, longest, s.median / p.median,
          equal ? "" : "  RESULT DIFFERS");
      rows.push_back({{"fmas_per_checkpoint", per},
                      {"us_per_checkpoint", us_per_checkpoint},
                      {"budget_ms", budget >= 1e6 ? json(nullptr) : json(budget)},
                      {"interruptible_ms", to_json(s)},
                      {"plain_ms", to_json(p)},
                      {"ratio", s.median / p.median},
                      {"launches", launches},
                      {"longest_launch_ms", longest},
                      {"result_equals_plain", equal}});
    }
  }
  // Relaunch cost: one block, one checkpoint per launch, nothing else to do.
  IterWork::Args tiny{out, 2000, 1};
  k.args = tiny;
  std::vector<double> per_launch;
  for (int r = 0; r < 5; ++r) {
    auto t0 = clk::now();
    InterruptProgress pr = k.launch(1, 32, {.checkpoints = 1});
    per_launch.push_back(ms_since(t0) * 1000.0 / pr.launches);
  }
  Stat rl = stat(per_launch);
  std::printf("relaunch: %.2f us per launch (%.2f..%.2f)\n", rl.median, rl.min, rl.max);
  CK(cudaFree(out));
  return {{"blocks", blocks}, {"threads", threads}, {"rows", rows}, {"relaunch_us", to_json(rl)}};
}

// ---------------------------------------------------------------- periodic workloads

// The cooperative kernel: rounds of grid-stride work separated by resizing barriers (a
// level-synchronous app's shape), checked by per-item counts.
struct Rounds {
  struct Params {
    float* data;
    std::uint32_t items, rounds, per_item;
  };
  struct Transmit {
    std::uint32_t round;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    while (t.round < p.rounds) {
      for (std::uint64_t i = ctx.global_id(); i < p.items; i += ctx.global_size())
        p.data[i] = work(p.data[i], p.per_item);
      ++t.round;
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

// The graphics stand-in: a full-device kernel of `per_thread` dependent FMAs per thread.
__global__ void frame(float* out, std::uint32_t per_thread) {
  const std::uint64_t gid = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  out[gid] = work(float(gid & 63), per_thread);
}

struct Frame {
  std::uint32_t blocks = 0, per_thread = 0;
  float* out = nullptr;
  void launch(cudaStream_t s, double fraction) const {
    frame<<<std::max(1u, std::uint32_t(blocks * fraction)), 256, 0, s>>>(out, per_thread);
  }
};

/// Sizes the frame kernel to take `ms` on the whole (idle) device.
Frame calibrate(double ms) {
  Frame f;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, frame, 256, 0));
  f.blocks = std::uint32_t(occ * prop.multiProcessorCount);
  CK(cudaMalloc(&f.out, std::size_t(f.blocks) * 256 * sizeof(float)));
  f.per_thread = 1u << 14;
  for (int it = 0; it < 6; ++it) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      auto t0 = clk::now();
      f.launch(nullptr, 1.0);
      CK(cudaDeviceSynchronize());
      t.push_back(ms_since(t0));
    }
    double got = stat(t).median;
    f.per_thread = std::max(1u, std::uint32_t(double(f.per_thread) * ms / got));
  }
  return f;
}

struct Workload {
  const char* name;
  double period_ms, gpu_ms;
};

/// Runs `body` (which starts the cooperative or interruptible work and returns when it is done)
/// while a task of `fraction` of the device fires every period; returns the timing.
json periodic(Runtime& rt, const Frame& f, const Workload& w, double fraction,
              const std::function<void()>& body, double alone_ms) {
  std::atomic<bool> done{false};
  std::vector<double> lateness, gather, response;
  std::uint32_t met = 0, periods = 0;
  auto t0 = clk::now();
  std::thread tasks([&] {
    for (std::uint32_t i = 0; !done; ++i) {
      const double release = i * w.period_ms;
      while (!done && ms_since(t0) < release)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (done) break;
      TaskRecord r = rt.run_fraction(
          fraction, [&](Task& t) { f.launch(t.stream(), fraction); }, 1);
      const double end = ms_since(t0);
      ++periods;
      if (end <= release + w.period_ms) ++met;
      gather.push_back(r.gather_ms());
      response.push_back(end - release);
    }
  });
  // Stops and joins the task thread on every way out (a failed CUDA call throws).
  struct StopTasks {
    std::atomic<bool>& done;
    std::thread& thread;
    ~StopTasks() {
      done = true;
      if (thread.joinable()) thread.join();
    }
  } stop_tasks{done, tasks};
  auto j0 = clk::now();
  body();
  const double job_ms = ms_since(j0);
  done = true;
  tasks.join();
  const double model = w.period_ms / (w.period_ms - w.gpu_ms);
  json out{{"job_ms", job_ms},        {"slowdown", job_ms / alone_ms},
           {"model_slowdown", model}, {"periods", periods},
           {"periods_met", met},      {"met_fraction", periods ? double(met) / periods : 0.0}};
  if (!gather.empty()) {
    out["gather_ms"] = to_json(stat(gather));
    out["response_ms"] = to_json(stat(response));
  }
  return out;
}

// The workloads' cooperative kernel (Rounds over 2^22 items), calibrated to ~2 s alone.
struct RoundsJob {
  static constexpr std::uint32_t kThreads = 256, kItems = 1u << 22, kPerItem = 64;

  explicit RoundsJob(Runtime& runtime) : rt(runtime) {
    CK(cudaMalloc(&data, kItems * sizeof(float)));
    run();  // warm-up
    rounds = std::max(10u, std::uint32_t(rounds * 2000.0 / run().first));
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) t.push_back(run().first);
    alone_ms = stat(t).median;
    std::printf("cooperative kernel alone: %.1f ms (%u rounds of %u items)\n", alone_ms, rounds,
                kItems);
  }
  ~RoundsJob() { cudaFree(data); }
  RoundsJob(const RoundsJob&) = delete;
  RoundsJob& operator=(const RoundsJob&) = delete;

  /// One run: its time and its job's counters.
  std::pair<double, JobStats> run() {
    CK(cudaMemset(data, 0, kItems * sizeof(float)));
    auto t0 = clk::now();
    Job job = rt.launch<Rounds>({.threads = kThreads}, {data, kItems, rounds, kPerItem}, {0});
    job.wait();
    return {ms_since(t0), job.stats()};
  }

  Runtime& rt;
  float* data = nullptr;
  std::uint32_t rounds = 200;
  double alone_ms = 0;
};

// The interruptible kernel of the same size, calibrated to ~2 s alone.
struct InterruptibleJob {
  explicit InterruptibleJob(Runtime& rt) : kernel(rt) {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, plain_iter_work, RoundsJob::kThreads,
                                                     0));
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    blocks = std::uint32_t(occ * prop.multiProcessorCount);
    CK(cudaMalloc(&out, std::size_t(blocks) * RoundsJob::kThreads * sizeof(float)));
    kernel.args = {out, 1u << 14, 256};
    run(1000);
    kernel.args.iters = std::max(10u, std::uint32_t(kernel.args.iters * 2000.0 / run(1000)));
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) t.push_back(run(1000));
    alone_ms = stat(t).median;
    std::printf("interruptible kernel alone: %.1f ms\n", alone_ms);
  }
  ~InterruptibleJob() { cudaFree(out); }
  InterruptibleJob(const InterruptibleJob&) = delete;
  InterruptibleJob& operator=(const InterruptibleJob&) = delete;

  /// One run in slices of `slice_ms`: its time.
  double run(double slice_ms) {
    auto t0 = clk::now();
    kernel.launch(blocks, RoundsJob::kThreads, {.slice_ms = slice_ms});
    return ms_since(t0);
  }

  Interruptible<IterWork> kernel;
  float* out = nullptr;
  std::uint32_t blocks = 0;
  double alone_ms = 0;
};

// One workload: the cooperative kernel under each preemption mode (the hybrid at the
// runtime's threshold `hybrid`), then the interruptible kernel preempted whole.
json one_workload(Runtime& rt, const Frame& f, const Workload& w, RoundsJob& job,
                  InterruptibleJob& ik, const PreemptionPolicy& hybrid) {
  json wl{{"period_ms", w.period_ms},
          {"gpu_ms", w.gpu_ms},
          {"model_slowdown", w.period_ms / (w.period_ms - w.gpu_ms)}};
  for (const char* mode : {"cooperative", "kernel", "hybrid"}) {
    PreemptionPolicy p = PreemptionPolicy::parse(mode);
    if (std::string(mode) == "hybrid") p.suspend_above = hybrid.suspend_above;
    rt.set_preemption(p);
    JobStats st;
    json r = periodic(
        rt, f, w, 1.0, [&] { st = job.run().second; }, job.alone_ms);
    r["suspends"] = st.suspends;
    r["kills"] = st.kills;
    std::printf("%-6s %-11s slowdown %.3f (model %.3f), periods met %u/%u, gather median %.3f ms\n",
                w.name, p.name().c_str(), r["slowdown"].get<double>(),
                r["model_slowdown"].get<double>(), r["periods_met"].get<unsigned>(),
                r["periods"].get<unsigned>(),
                r.contains("gather_ms") ? r["gather_ms"]["median"].get<double>() : 0.0);
    wl[p.name()] = r;
  }
  for (double slice : {1.0, 5.0}) {
    json r = periodic(
        rt, f, w, 1.0, [&] { ik.run(slice); }, ik.alone_ms);
    std::printf("%-6s interruptible (slice %.0f ms) slowdown %.3f, periods met %u/%u\n", w.name,
                slice, r["slowdown"].get<double>(), r["periods_met"].get<unsigned>(),
                r["periods"].get<unsigned>());
    wl["interruptible_slice_" + std::to_string(int(slice)) + "ms"] = r;
  }
  return wl;
}

// The workload's task at fractions of the device, cooperative vs kernel-level (what the
// hybrid threshold is chosen from).
json threshold_sweep(Runtime& rt, const Frame& f, const Workload& w, RoundsJob& job) {
  json sw = json::array();
  for (double frac : {0.125, 0.25, 0.5, 0.75}) {
    for (const char* mode : {"cooperative", "kernel"}) {
      rt.set_preemption(PreemptionPolicy::parse(mode));
      json r = periodic(
          rt, f, w, frac, [&] { job.run(); }, job.alone_ms);
      r["fraction"] = frac;
      r["mode"] = mode;
      std::printf("threshold sweep: fraction %.3f %-11s slowdown %.3f, met %u/%u\n", frac, mode,
                  r["slowdown"].get<double>(), r["periods_met"].get<unsigned>(),
                  r["periods"].get<unsigned>());
      sw.push_back(r);
    }
  }
  return sw;
}

json bench_workloads(Runtime& rt, bool sweep) {
  RoundsJob job(rt);
  InterruptibleJob ik(rt);
  json out{{"cooperative_alone_ms", job.alone_ms},
           {"interruptible_alone_ms", ik.alone_ms},
           {"rounds", job.rounds}};
  const Workload loads[] = {{"light", 70, 3}, {"medium", 40, 3}, {"heavy", 40, 10}};
  const PreemptionPolicy saved = rt.preemption();
  for (const Workload& w : loads) {
    Frame f = calibrate(w.gpu_ms);
    out[w.name] = one_workload(rt, f, w, job, ik, saved);
    if (sweep && std::string(w.name) == "heavy")
      out["threshold_sweep"] = threshold_sweep(rt, f, w, job);
    CK(cudaFree(f.out));
  }
  rt.set_preemption(saved);
  return out;
}

int run(int argc, char** argv) {
  const auto o = micro::parse_options(argc, argv, "interrupt|workload|threshold");
  if (!o) return 2;
  micro::GpuSetup gpu;
  Runtime& rt = gpu.rt;
  std::printf("coop preemption benchmarks on %s (%d SMs), %s, hybrid threshold %s\n", gpu.prop.name,
              gpu.prop.multiProcessorCount, gpu.date.c_str(), rt.preemption().name().c_str());
  cudaFuncAttributes attr{};
  CK(cudaFuncGetAttributes(&attr, frame));  // loaded before persistent work (lazy loading)
  CK(cudaFuncGetAttributes(&attr, plain_iter_work));
  json j = gpu.header(*o);
  if (o->runs("interrupt")) j["interrupt"] = bench_interrupt(rt, o->reps);
  if (o->runs("workload") || o->runs("threshold"))
    j["workloads"] = bench_workloads(rt, o->runs("threshold"));
  if (!o->json_path.empty()) std::ofstream(o->json_path) << j.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return coop::micro::run_main([&] { return run(argc, argv); });
}
