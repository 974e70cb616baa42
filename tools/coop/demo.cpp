// `coop demo`: a long-running GEMM shares the device with a stream of requests, first without
// coordination and then with coop (the co-location story, the default); or an example
// cooperative kernel beside a periodic high-priority task (`--kernel bfs|queue`).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "coop/bench/host_matmul.hpp"
#include "coop/bench/percentiles.hpp"
#include "coop/bench/poisson.hpp"
#include "coop/coop.hpp"
#include "kernels/frontier_bfs.hpp"
#include "kernels/persistent_gemm.hpp"
#include "kernels/task_queue.hpp"
#include "options.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "coop/bench/gemm_background.cuh"
#define COOP_DEMO_GPU 1
#else
#define COOP_DEMO_GPU 0
#endif

namespace coop::cli {
namespace {

struct DemoOptions {
  std::string kernel;  ///< bfs | queue: the periodic-task demo; empty: the co-location story
  double seconds = 4;  ///< co-location: seconds per half
  double load = 0.3;   ///< co-location: the requests' share of the device's time
  std::string policy = "generous";
  std::string barrier = "query";  ///< query | plain
  std::string backend = "auto";   ///< auto | cpu | cuda
  std::uint32_t groups = 0;       ///< N (0 = as many as can be co-resident)
  std::uint32_t threads = 0;      ///< per workgroup (0 = 32 on the CPU, 256 on a GPU)
  std::uint32_t slots = 8;        ///< CPU backend capacity
  std::uint32_t size = 0;         ///< vertices (bfs) or elements (queue); 0 = default
  std::uint64_t seed = 1;
  double period_ms = 5;                    ///< high-priority task period
  std::uint32_t task_groups = 0;           ///< workgroups per task (0 = N/2)
  std::uint32_t task_size = 0;             ///< task matmul size (0 = 96 on the CPU, 2048 on a GPU)
  std::string task_launch = "at_request";  ///< at_request | after_gather (GPU)
  bool json = false;
};

using bench::percentile;

// What the demo's tasks use: the CPU backend always launches a task after the gather.
TaskLaunch effective_task_launch(const Runtime& rt) {
  return rt.backend() == Backend::cuda ? rt.task_launch() : TaskLaunch::after_gather;
}

// The high-priority task's work: a float matmul, split over the task's workgroups on the CPU
// backend (one host thread each), a cuBLAS SGEMM on the task's stream on a GPU; checked against
// a serial product (small integers: the float sums are exact).
struct Matmul : examples::HostMatmul {
  explicit Matmul(std::uint32_t size) : HostMatmul(size) {}
  void run(Task& t) {
#if COOP_DEMO_GPU
    if (t.backend() == Backend::cuda) return run_gpu(t.stream());
#endif
    run_threads(t.groups());
  }
#if COOP_DEMO_GPU
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first.
  void run_gpu(cudaStream_t stream) {
    if (!handle) {
      if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate");
      const std::size_t bytes = std::size_t(n) * n * sizeof(float);
      cudaMalloc(&da, bytes);
      cudaMalloc(&db, bytes);
      cudaMalloc(&dc, bytes);
      cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
      cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
    }
    cublasSetStream(handle, stream);
    const float one = 1, zero = 0;
    const int m = int(n);
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, db, m, da, m, &zero, dc, m) !=
        CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasSgemm failed");
    cudaMemcpyAsync(c.data(), dc, std::size_t(n) * n * sizeof(float), cudaMemcpyDeviceToHost,
                    stream);
    cudaStreamSynchronize(stream);
  }
  ~Matmul() {
    if (handle) {
      cublasDestroy(handle);
      cudaFree(da);
      cudaFree(db);
      cudaFree(dc);
    }
  }
  cublasHandle_t handle = nullptr;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
#endif
};

// M in one row of the display: its time-weighted mean over the row's interval and the least and
// most it was there. The mean tells the rows apart; the interval's maximum alone looked alike.
struct RowM {
  double mean = 0;
  std::uint32_t lo = 0, hi = 0;
};

std::vector<RowM> rows_of_m(const JobStats& s, int rows) {
  std::vector<RowM> out;
  const double t0 = s.start_ms, t1 = std::max(s.end_ms, t0 + 1e-3);
  std::size_t k = 0;
  std::uint32_t m = s.timeline.empty() ? 0 : s.timeline[0].active;
  for (int r = 0; r < rows; ++r) {
    const double a = t0 + (t1 - t0) * r / rows, b = t0 + (t1 - t0) * (r + 1) / rows;
    RowM row{0, m, m};
    double area = 0, at = a;
    for (; k < s.timeline.size() && s.timeline[k].t_ms <= b; ++k) {
      const double t = std::max(a, s.timeline[k].t_ms);
      area += double(m) * (t - at);
      at = t;
      m = s.timeline[k].active;
      row.lo = std::min(row.lo, m);
      row.hi = std::max(row.hi, m);
    }
    area += double(m) * (b - at);
    row.mean = area / (b - a);
    out.push_back(row);
  }
  return out;
}

void print_timeline(const JobStats& s, std::uint32_t n) {
  std::printf(
      "M over time (%zu changes; per twentieth of the run: bar and first number = M's "
      "time-weighted mean, then min..max):\n",
      s.timeline.empty() ? 0 : s.timeline.size() - 1);
  const int rows = 20;
  const double span = std::max(s.end_ms - s.start_ms, 1e-3);
  const std::vector<RowM> ms = rows_of_m(s, rows);
  for (int r = 0; r < rows; ++r) {
    const std::uint32_t width = 60;  // bar columns for M = N
    const auto bar = std::uint32_t(std::lround(ms[r].mean * width / std::max(n, 1u)));
    std::printf("  %8.2f ms |%-*s| M %5.1f  %u..%u\n", span * (r + 1) / rows, int(width),
                std::string(std::min(bar, width), '#').c_str(), ms[r].mean, ms[r].lo, ms[r].hi);
  }
}

// The cooperative kernel and its buffers. The job is the last member so that it is destroyed
// (it waits for or cancels the kernel) before the buffers the kernel reads.
struct DemoKernel {
  examples::CsrGraph graph;
  std::unique_ptr<examples::BfsBuffers> bfs;
  std::unique_ptr<examples::TaskQueueBuffers> queue;
  std::function<bool()> check;
  Job job;
};

void launch_kernel(Runtime& rt, const LaunchConfig& cfg, const DemoOptions& o, bool gpu,
                   DemoKernel& k) {
  if (o.kernel == "bfs") {
    k.graph = examples::random_graph(o.size ? o.size : (gpu ? 4'000'000 : 200'000), 1, o.seed);
    k.bfs = std::make_unique<examples::BfsBuffers>(k.graph, 0);
    k.job = rt.launch<examples::FrontierBfs>(cfg, k.bfs->params());
    k.check = [&k] { return k.bfs->level.to_vector() == examples::reference_bfs(k.graph, 0); };
  } else {
    const std::uint64_t total = o.size ? o.size : (gpu ? 4'000'000'000ull : 40'000'000);
    k.queue = std::make_unique<examples::TaskQueueBuffers>(cfg.max_groups ? cfg.max_groups : 64,
                                                           total, 20000, 64);
    k.job = rt.launch<examples::TaskQueue>(cfg, k.queue->params());
    k.check = [&k, total] { return *k.queue->sum == examples::TaskQueueBuffers::reference(total); };
  }
}

// The periodic high-priority task, until the cooperative kernel finishes; whether every task's
// product was right. On an error the job is cancelled before it unwinds.
bool run_tasks(Runtime& rt, Job& job, Matmul& mm, bool gpu, std::uint32_t task_groups,
               double period_ms, std::vector<TaskRecord>& records) {
  bool task_ok = true;
  const auto period = std::chrono::duration<double, std::milli>(period_ms);
  auto next = std::chrono::steady_clock::now();
  auto task = [&](Task& t) {
    std::fill(mm.c.begin(), mm.c.end(), 0.0f);
    mm.run(t);
  };
  try {
    while (!job.done()) {
      // On a GPU the task is a cuBLAS call whose blocks need whole SMs: it asks for the device.
      records.push_back(gpu ? rt.run_fraction(1.0, task, /*priority=*/1)
                            : rt.run(task_groups, task, /*priority=*/1));
      task_ok = task_ok && mm.check();  // after the task: the device is back with the job
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
      std::this_thread::sleep_until(next);
    }
  } catch (...) {
    job.cancel();
    throw;
  }
  return task_ok;
}

struct DemoOutcome {
  JobStats stats;
  std::vector<TaskRecord> records;
  std::uint32_t task_groups = 0;
  bool result_ok = false, task_ok = false;
};

void print_json(const Runtime& rt, const DemoOptions& o, const LaunchConfig& cfg,
                const DemoOutcome& d) {
  std::vector<double> gathers, runs;
  for (auto& r : d.records) {
    gathers.push_back(r.gather_ms());
    runs.push_back(r.run_ms());
  }
  const JobStats& s = d.stats;
  nlohmann::json j;
  j["device"] = rt.device_name();
  j["backend"] = backend_name(rt.backend());
  j["task_launch"] = task_launch_name(effective_task_launch(rt));
  j["kernel"] = o.kernel;
  j["policy"] = cfg.policy.name();
  j["max_groups"] = s.max_groups;
  j["elapsed_ms"] = s.elapsed_ms();
  j["kills"] = s.kills;
  j["forked_groups"] = s.forked_groups;
  j["resizes"] = s.resizes;
  j["barriers"] = s.barriers;
  j["tasks"] = d.records.size();
  j["task_groups"] = d.task_groups;
  j["gather_ms"] = {
      {"median", percentile(gathers, 0.5)},
      {"p99", percentile(gathers, 0.99)},
      {"max", gathers.empty() ? 0 : *std::max_element(gathers.begin(), gathers.end())}};
  j["task_run_ms_median"] = percentile(runs, 0.5);
  nlohmann::json tl = nlohmann::json::array();
  for (auto& p : s.timeline) tl.push_back({{"t_ms", p.t_ms - s.start_ms}, {"M", p.active}});
  j["timeline"] = tl;
  j["result_ok"] = d.result_ok;
  j["task_ok"] = d.task_ok;
  std::cout << j.dump(2) << "\n";
}

void print_text(const DemoOutcome& d) {
  std::vector<double> gathers, runs;
  for (auto& r : d.records) {
    gathers.push_back(r.gather_ms());
    runs.push_back(r.run_ms());
  }
  const JobStats& s = d.stats;
  print_timeline(s, s.max_groups);
  std::printf("kernel: %.2f ms, %llu kills, %llu workgroups forked, %llu resizes, %llu barriers\n",
              s.elapsed_ms(), (unsigned long long)s.kills, (unsigned long long)s.forked_groups,
              (unsigned long long)s.resizes, (unsigned long long)s.barriers);
  std::printf(
      "tasks: %zu runs of %u workgroups each; gather median %.3f ms, p99 %.3f ms; run median "
      "%.3f ms\n",
      d.records.size(), d.task_groups, percentile(gathers, 0.5), percentile(gathers, 0.99),
      percentile(runs, 0.5));
  std::printf("result check (vs sequential reference): %s; task results: %s\n",
              d.result_ok ? "OK" : "WRONG", d.task_ok ? "OK" : "WRONG");
}

// ---------------------------------------------------------------- the co-location story

// One half of the story: a long-running GEMM in the background while Poisson requests arrive.
struct StoryHalf {
  std::string name;
  bench::Latencies lat;
  double tiles_per_s = 0;
  std::uint32_t groups = 0;
  bool background_ok = false, requests_ok = false;
};

// The background as the story drives it: progress, M, and the end (stop, wait, check).
struct StoryBackground {
  std::function<std::uint64_t()> done;
  std::function<std::uint32_t()> active;
  std::uint32_t groups = 0;
  std::function<bool()> finish;
};

// A live line while a half runs: the phase, M as a bar, requests served and their median so
// far, the background's rate. On a terminal the line is redrawn; otherwise one line a second.
class LiveLine {
 public:
  LiveLine(const std::string& name, double seconds, StoryBackground& bg, bool quiet)
      : name_(name), seconds_(seconds), bg_(bg), quiet_(quiet), tty_(isatty(1) != 0) {
    if (!quiet_) thread_ = std::thread([this] { loop(); });
  }
  void served(double ms) {
    std::lock_guard lock(mu_);
    lat_.push_back(ms);
  }
  ~LiveLine() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t last_done = bg_.done();
    auto last = t0;
    int tick = 0;
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      const auto now = std::chrono::steady_clock::now();
      const std::uint64_t d = bg_.done();
      const double rate = double(d - last_done) / std::chrono::duration<double>(now - last).count();
      last_done = d;
      last = now;
      const std::uint32_t m = bg_.active(), width = 24;
      const auto bar = std::min<std::uint32_t>(
          width, std::uint32_t(std::lround(double(m) * width / std::max(bg_.groups, 1u))));
      std::size_t n;
      double p50;
      {
        std::lock_guard lock(mu_);
        n = lat_.size();
        p50 = bench::percentile(lat_, 0.5);
      }
      const double t = std::chrono::duration<double>(now - t0).count();
      if (!tty_ && ++tick % 4 != 0) continue;
      std::printf(
          "%s%-16s %4.1f/%.0f s  M |%-*s| %4u/%-4u  requests %4zu (p50 %8.3f ms)  background %7.0f "
          "tiles/s%s",
          tty_ ? "\r" : "", name_.c_str(), std::min(t, seconds_), seconds_, int(width),
          std::string(bar, '#').c_str(), m, bg_.groups, n, p50, rate, tty_ ? "" : "\n");
      std::fflush(stdout);
    }
    if (tty_) std::printf("\n");
  }
  std::string name_;
  double seconds_;
  StoryBackground& bg_;
  bool quiet_, tty_;
  std::mutex mu_;
  std::vector<double> lat_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Runs one half: Poisson requests served by `serve` for o.seconds beside `bg`.
StoryHalf run_half(const std::string& name, const DemoOptions& o, double alone_ms,
                   StoryBackground bg, Matmul& mm, const std::function<void()>& serve) {
  StoryHalf h;
  h.name = name;
  h.groups = bg.groups;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // past the first tiles
  const std::uint64_t d0 = bg.done();
  const auto t0 = std::chrono::steady_clock::now();
  {
    LiveLine live(name, o.seconds, bg, o.json);
    h.lat = bench::poisson(o.load, alone_ms, o.seconds, o.seed, serve,
                           [&](double ms) { live.served(ms); });
  }
  h.tiles_per_s = double(bg.done() - d0) /
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  h.background_ok = bg.finish();
  h.requests_ok = mm.check();  // the last request's product, off the measured loop
  return h;
}

int run_story(Runtime& rt, const DemoOptions& o, LaunchConfig cfg) {
  const bool gpu = rt.backend() == Backend::cuda;
  const std::uint32_t side =
      (std::max<std::uint32_t>(o.size ? o.size : (gpu ? 8192 : 512), 128) + 127) / 128 * 128;
  const std::uint32_t depth = gpu ? 2048 : 64;
  const std::uint64_t forever = 1u << 30;  // passes: the halves end by the stop flag
  // On the CPU a request is sixteen tiles' work (a tile is where the job offers), as on the GPU
  // it is many offer intervals: smaller, the gather and the threads' start would be most of it.
  const std::uint32_t task_size = o.task_size ? o.task_size : (gpu ? 2048 : 256);
  Matmul mm(task_size);
  std::vector<StoryHalf> halves;
  double alone_ms = 0;
  std::string request_desc, background_desc;
  auto time_alone = [&](const std::function<void()>& one) {
    one();  // loads what it needs
    std::vector<double> t;
    for (int r = 0; r < 15; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      one();
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return bench::percentile(t, 0.5);
  };
  // What the two halves are, before they run.
  auto announce = [&](const char* first, const char* how, const char* caveat) {
    if (o.json) return;
    std::printf(
        "coop demo on %s: a %s in the background; requests (%s, %.2f ms alone) arrive as a "
        "Poisson stream at %.0f %% of the device's time, served one at a time.\n"
        "%.0f s of %s (%s), then %.0f s of coop (each request a task that takes workgroups from "
        "the background job at their next offer and gives them back at its end).%s\n\n",
        rt.device_name().c_str(), background_desc.c_str(), request_desc.c_str(), alone_ms,
        100 * o.load, o.seconds, first, how, o.seconds, caveat);
    std::fflush(stdout);
  };
  if (gpu) {
#if COOP_DEMO_GPU
    int least = 0, greatest = 0;
    cuda::check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities");
    cudaStream_t high = nullptr, low = nullptr;
    cuda::check(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest), "a stream");
    cuda::check(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least), "a stream");
    bench::DeviceGemm g(side, side, depth);
    alone_ms = time_alone([&] { mm.run_gpu(high); });
    rt.run_fraction(1.0, [&](Task& t) { mm.run(t); });  // the task path loaded, before any job
    int sms = 0;
    cuda::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SMs");
    const int grid = bench::plain_grid(sms);
    request_desc = std::to_string(task_size) + "^2 cuBLAS SGEMM + copy back";
    background_desc = "persistent TF32 GEMM " + std::to_string(side) + "x" + std::to_string(side) +
                      "x" + std::to_string(depth);
    announce("stream priority",
             "the GEMM as a plain persistent kernel, relaunched per product; the requests on the "
             "highest-priority stream, whose kernels wait for its blocks to end",
             "");
    {
      bench::PlainBackground bg(g, low, grid);
      StoryBackground b{[&] { return g.done(); }, [&] { return std::uint32_t(grid); },
                        std::uint32_t(grid),
                        [&] {
                          try {
                            bg.finish();
                            return true;
                          } catch (const std::exception&) {
                            return false;
                          }
                        }};
      halves.push_back(run_half("stream priority", o, alone_ms, b, mm, [&] { mm.run_gpu(high); }));
    }
    {
      Job job = rt.launch<examples::PersistentGemm>({.threads = 256}, g.arm(forever));
      StoryBackground b{[&] { return g.done(); }, [&] { return job.active_groups(); },
                        job.max_groups(),
                        [&] {
                          g.request_stop();
                          job.wait();
                          return g.check();
                        }};
      halves.push_back(run_half("coop", o, alone_ms, b, mm, [&] {
        rt.run_fraction(
            1.0, [&](Task& t) { mm.run(t); }, /*priority=*/1);
      }));
    }
    cudaStreamDestroy(high);
    cudaStreamDestroy(low);
#endif
  } else {
    // A request takes the whole device but the job's workgroup 0 (which a job keeps, paused while
    // the task runs), as on the GPU.
    const std::uint32_t task_groups =
        o.task_groups ? o.task_groups : std::max(1u, rt.capacity() - 1);
    alone_ms = time_alone([&] { mm.run_threads(task_groups); });
    request_desc =
        std::to_string(task_size) + "^2 matmul on " + std::to_string(task_groups) + " threads";
    background_desc = "tiled GEMM " + std::to_string(side) + "x" + std::to_string(side) + "x" +
                      std::to_string(depth) + " on " + std::to_string(rt.capacity()) +
                      " workgroups";
    announce("no coordination", "the requests on threads of their own beside the GEMM's workgroups",
             "\nOn the CPU backend the operating system time-slices the request's threads with the "
             "GEMM's, so in the first half they share the cores evenly; coop gives the request the "
             "workgroups' slots instead (M falls while it runs). On a GPU the first half is stream "
             "priority, whose requests wait for the running kernel's blocks to end.");
    for (bool coordinated : {false, true}) {
      examples::PersistentGemmBuffers b(side, side, depth, std::uint32_t(forever), o.seed,
                                        2 * rt.capacity());
      Managed<std::uint32_t> stop;
      LaunchConfig c = cfg;
      if (!coordinated) c.policy = Policy::fixed();  // it keeps its workgroups: no coordination
      Job job = rt.launch<examples::PersistentGemm>(c, b.params(stop.get()));
      StoryBackground bg{[&] { return atomic_ref<std::uint64_t>(*b.done).load(); },
                         [&] { return job.active_groups(); }, job.max_groups(),
                         [&] {
                           atomic_ref<std::uint32_t>(*stop).store(1);
                           job.wait();
                           // Rows whose tiles certainly ran (claimed in order, all finished).
                           if (*b.done < b.claims_through_first_row()) return false;
                           std::vector<float> row(b.c.begin(), b.c.begin() + side);
                           return row == b.reference_rows(0, 1);
                         }};
      halves.push_back(run_half(coordinated ? "coop" : "no coordination", o, alone_ms, bg, mm,
                                coordinated
                                    ? std::function<void()>([&] {
                                        rt.run(
                                            task_groups, [&](Task& t) { mm.run(t); }, 1);
                                      })
                                    : std::function<void()>([&] { mm.run_threads(task_groups); })));
    }
  }
  bool ok = true;
  for (auto& h : halves) ok = ok && h.background_ok && h.requests_ok;
  if (o.json) {
    nlohmann::json j;
    j["story"] = "colocate";
    j["device"] = rt.device_name();
    j["backend"] = backend_name(rt.backend());
    j["background"] = background_desc;
    j["request"] = request_desc;
    j["request_alone_ms"] = alone_ms;
    j["load"] = o.load;
    j["task_launch"] = task_launch_name(effective_task_launch(rt));
    for (auto& h : halves)
      j["halves"].push_back(
          {{"name", h.name},
           {"requests", h.lat.ms.size()},
           {"latency_ms",
            {{"p50", percentile(h.lat.ms, 0.5)},
             {"p99", percentile(h.lat.ms, 0.99)},
             {"max",
              h.lat.ms.empty() ? 0.0 : *std::max_element(h.lat.ms.begin(), h.lat.ms.end())}}},
           {"background_tiles_per_s", h.tiles_per_s},
           {"background_ok", h.background_ok},
           {"requests_ok", h.requests_ok}});
    j["result_ok"] = ok;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("\n%-16s | %9s %9s %9s | %8s | %s\n", "", "p50 ms", "p99 ms", "max ms", "requests",
                "background (tiles/s, share of the first half)");
    for (auto& h : halves) {
      const double mx = h.lat.ms.empty() ? 0 : *std::max_element(h.lat.ms.begin(), h.lat.ms.end());
      std::printf("%-16s | %9.3f %9.3f %9.3f | %8zu | %.0f (%.2f)\n", h.name.c_str(),
                  percentile(h.lat.ms, 0.5), percentile(h.lat.ms, 0.99), mx, h.lat.ms.size(),
                  h.tiles_per_s, h.tiles_per_s / std::max(halves[0].tiles_per_s, 1e-9));
    }
    std::printf("request alone: %.3f ms; checks (background product, requests' product): %s\n",
                alone_ms, ok ? "OK" : "WRONG");
  }
  return ok ? exit_ok : exit_failed;
}

void add_demo_options(CLI::App& app, DemoOptions& d) {
  app.add_option("--kernel", d.kernel,
                 "bfs (frontier BFS) | queue (work stealing): an example cooperative kernel "
                 "beside a periodic task, instead of the co-location story")
      ->check(parses_with([](const std::string& s) {
        if (s != "bfs" && s != "queue")
          throw std::invalid_argument("expected bfs or queue, got '" + s + "'");
      }));
  add_job_shape(app, d.policy, d.barrier, d.groups);
  add_backend(app, d.backend);
  app.add_option("--threads", d.threads, "threads per workgroup (0 = 32 CPU, 256 GPU)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  add_slots(app, d.slots);
  app.add_option("--size", d.size, "vertices (bfs) or elements (queue); 0 = default")
      ->capture_default_str();
  app.add_option("--seed", d.seed, "graph seed")->capture_default_str();
  app.add_option("--period-ms", d.period_ms, "task period")
      ->capture_default_str()
      ->check(positive());
  app.add_option("--task-groups", d.task_groups,
                 "CPU: workgroups per task (0: all but one in the co-location story, N/2 with "
                 "--kernel; at most the device's capacity)")
      ->capture_default_str();
  app.add_option("--task-size", d.task_size,
                 "task matmul size (0: 2048 on a GPU; on the CPU 256 in the co-location story, 96 "
                 "with --kernel)")
      ->capture_default_str();
  app.add_option("--seconds", d.seconds, "co-location: seconds per half")
      ->capture_default_str()
      ->check(positive());
  app.add_option("--load", d.load, "co-location: the requests' share of the device's time")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 0.95));
  app.add_option("--task-launch", d.task_launch,
                 "GPU: when a task's kernels are enqueued: at_request (behind a release the job "
                 "writes from the device as its workgroups leave) or after_gather (once the host "
                 "has seen them leave)")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) { (void)parse_task_launch(s); }));
  add_json_flag(app, d.json);
}

class Demo : public Subcommand {
 public:
  const char* name() const override { return "demo"; }
  const char* description() const override {
    return "a long-running GEMM beside a stream of requests, without and with coop (--kernel: an "
           "example kernel beside a periodic task)";
  }
  void add_options(CLI::App& app) override { add_demo_options(app, o_); }
  int run() override;

 private:
  DemoOptions o_;
};

int Demo::run() {
  const DemoOptions& o = o_;
  RuntimeOptions ro;
  ro.cpu_slots = o.slots;
  ro.backend = parse_backend(o.backend);
  ro.task_launch = parse_task_launch(o.task_launch);
#if !COOP_DEMO_GPU
  // This build's demo kernels were compiled for the CPU only.
  if (ro.backend == RuntimeOptions::Select::automatic) ro.backend = RuntimeOptions::Select::cpu;
#endif
  Runtime rt(ro);
  const bool gpu = rt.backend() == Backend::cuda;
  // On the CPU a task gathers --task-groups slots, and the demo's job keeps its workgroup 0's:
  // a task of every slot could never run.
  if (!gpu && rt.capacity() < 2)
    throw usage_error("--slots " + std::to_string(rt.capacity()) +
                      ": the demo needs at least 2 (the job keeps one, a task takes the others)");
  if (!gpu && o.task_groups >= rt.capacity())
    throw usage_error("--task-groups " + std::to_string(o.task_groups) +
                      ": a task can have at most " + std::to_string(rt.capacity() - 1) +
                      " workgroups here (the CPU backend's slots but the one the demo's job keeps; "
                      "see --slots)");
  LaunchConfig cfg;
  cfg.max_groups = o.groups;
  cfg.threads = o.threads ? o.threads : (gpu ? 256 : 32);
  cfg.policy = parse_policy(o.policy);
  cfg.barrier = parse_barrier(o.barrier);
  if (o.kernel.empty()) return run_story(rt, o, cfg);
  const std::uint32_t task_size = o.task_size ? o.task_size : (gpu ? 2048 : 96);
  // The task's kernels are loaded before the persistent kernel starts (lazy loading would
  // otherwise wait for it), and the product is checked once.
  Matmul mm(task_size);
  if (gpu) {
    rt.run_fraction(1.0, [&](Task& t) { mm.run(t); });
    if (!mm.check()) throw std::runtime_error("the task's matmul is wrong before the demo starts");
  }
  DemoKernel k;
  launch_kernel(rt, cfg, o, gpu, k);
  DemoOutcome d;
  d.task_groups = o.task_groups ? o.task_groups : std::max(1u, k.job.max_groups() / 2);
  if (!o.json)
    std::printf(
        "coop demo on %s: kernel %s, N=%u, %u threads/workgroup, policy %s, %s barrier\n"
        "high-priority task: %ux%u matmul (%s) on %s every %.1f ms\n",
        rt.device_name().c_str(), o.kernel.c_str(), k.job.max_groups(), cfg.threads,
        cfg.policy.name().c_str(), o.barrier.c_str(), task_size, task_size,
        gpu ? "cuBLAS SGEMM" : "host threads",
        gpu ? "the whole GPU but workgroup 0"
            : (std::to_string(d.task_groups) + " workgroups").c_str(),
        o.period_ms);
  d.task_ok = run_tasks(rt, k.job, mm, gpu, d.task_groups, o.period_ms, d.records);
  k.job.wait();
  d.result_ok = k.check();
  d.stats = k.job.stats();
  if (o.json)
    print_json(rt, o, cfg, d);
  else
    print_text(d);
  return d.result_ok && d.task_ok ? exit_ok : exit_failed;
}

}  // namespace

std::unique_ptr<Subcommand> demo_command() { return std::make_unique<Demo>(); }

}  // namespace coop::cli
