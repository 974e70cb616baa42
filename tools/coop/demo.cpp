// `coop demo`: a cooperative kernel shares the device with a periodic high-priority task.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "coop/bench/host_matmul.hpp"
#include "coop/bench/percentiles.hpp"
#include "coop/coop.hpp"
#include "kernels/frontier_bfs.hpp"
#include "kernels/task_queue.hpp"
#include "options.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#define COOP_DEMO_GPU 1
#else
#define COOP_DEMO_GPU 0
#endif

namespace coop::cli {
namespace {

struct DemoOptions {
  std::string kernel = "bfs";  ///< bfs | queue
  std::string policy = "generous";
  std::string barrier = "query";  ///< query | plain
  std::string backend = "auto";   ///< auto | cpu | cuda
  std::uint32_t groups = 0;       ///< N (0 = as many as can be co-resident)
  std::uint32_t threads = 0;      ///< per workgroup (0 = 32 on the CPU, 256 on a GPU)
  std::uint32_t slots = 8;        ///< CPU backend capacity
  std::uint32_t size = 0;         ///< vertices (bfs) or elements (queue); 0 = default
  std::uint64_t seed = 1;
  double period_ms = 5;           ///< high-priority task period
  std::uint32_t task_groups = 0;  ///< workgroups per task (0 = N/2)
  std::uint32_t task_size = 0;    ///< task matmul size (0 = 96 on the CPU, 2048 on a GPU)
  bool json = false;
};

using bench::percentile;

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

void add_demo_options(CLI::App& app, DemoOptions& d) {
  app.add_option("--kernel", d.kernel, "bfs (frontier BFS) | queue (work stealing)")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) {
        if (s != "bfs" && s != "queue")
          throw std::invalid_argument("expected bfs or queue, got '" + s + "'");
      }));
  add_job_shape(app, d.policy, d.barrier, d.groups);
  add_backend(app, d.backend);
  app.add_option("--threads", d.threads, "threads per workgroup (0 = 32 CPU, 256 GPU)")
      ->capture_default_str();
  add_slots(app, d.slots);
  app.add_option("--size", d.size, "vertices (bfs) or elements (queue); 0 = default")
      ->capture_default_str();
  app.add_option("--seed", d.seed, "graph seed")->capture_default_str();
  app.add_option("--period-ms", d.period_ms, "task period")
      ->capture_default_str()
      ->check(positive());
  app.add_option("--task-groups", d.task_groups,
                 "CPU: workgroups per task (0 = N/2; at most the device's capacity)")
      ->capture_default_str();
  app.add_option("--task-size", d.task_size, "task matmul size (0 = 96 CPU, 2048 GPU)")
      ->capture_default_str();
  add_json_flag(app, d.json);
}

class Demo : public Subcommand {
 public:
  const char* name() const override { return "demo"; }
  const char* description() const override {
    return "run an example cooperative kernel while a high-priority task fires periodically";
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
#if !COOP_DEMO_GPU
  // This build's demo kernels were compiled for the CPU only.
  if (ro.backend == RuntimeOptions::Select::automatic) ro.backend = RuntimeOptions::Select::cpu;
#endif
  Runtime rt(ro);
  const bool gpu = rt.backend() == Backend::cuda;
  // On the CPU a task gathers --task-groups slots: more than the device holds can never run.
  if (!gpu && o.task_groups > rt.capacity())
    throw usage_error("--task-groups " + std::to_string(o.task_groups) +
                      ": a task can have at most " + std::to_string(rt.capacity()) +
                      " workgroups here (the CPU backend's slots; see --slots)");
  LaunchConfig cfg;
  cfg.max_groups = o.groups;
  cfg.threads = o.threads ? o.threads : (gpu ? 256 : 32);
  cfg.policy = parse_policy(o.policy);
  cfg.barrier = parse_barrier(o.barrier);
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
