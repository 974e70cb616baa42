// `coop demo`: a cooperative kernel shares the device with a periodic high-priority task.
#include "demo.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "coop/bench/host_matmul.hpp"
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

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double at = p * double(v.size() - 1);
  std::size_t lo = std::size_t(at);
  std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - double(lo));
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

void print_timeline(const JobStats& s, std::uint32_t n) {
  std::printf("M over time (%zu changes):\n", s.timeline.size() - 1);
  const int rows = 20;
  double t0 = s.start_ms, t1 = std::max(s.end_ms, t0 + 1e-3);
  std::size_t k = 0;
  std::uint32_t m = s.timeline.empty() ? 0 : s.timeline[0].active;
  for (int r = 0; r < rows; ++r) {
    double t = t0 + (t1 - t0) * (r + 1) / rows;
    std::uint32_t lo = m, hi = m;
    while (k < s.timeline.size() && s.timeline[k].t_ms <= t) {
      m = s.timeline[k++].active;
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
    const std::uint32_t width = 60;  // bar columns for M = N
    std::uint32_t bar = std::uint32_t((std::uint64_t(hi) * width + n - 1) / std::max(n, 1u));
    std::printf("  %8.2f ms |%-*s| M %u..%u\n", t - t0, int(width), std::string(bar, '#').c_str(),
                lo, hi);
  }
}

}  // namespace

int run_demo(const DemoOptions& o) {
  RuntimeOptions ro;
  ro.cpu_slots = o.slots;
  ro.backend = parse_backend(o.backend);
#if !COOP_DEMO_GPU
  // This build's demo kernels were compiled for the CPU only.
  if (ro.backend == RuntimeOptions::Select::automatic) ro.backend = RuntimeOptions::Select::cpu;
#endif
  Runtime rt(ro);
  const bool gpu = rt.backend() == Backend::cuda;
  LaunchConfig cfg;
  cfg.max_groups = o.groups;
  cfg.threads = o.threads ? o.threads : (gpu ? 256 : 32);
  cfg.policy = Policy::parse(o.policy);
  cfg.barrier = parse_barrier(o.barrier);
  const std::uint32_t task_size = o.task_size ? o.task_size : (gpu ? 2048 : 96);
  // The task's kernels are loaded before the persistent kernel starts (lazy loading would
  // otherwise wait for it), and the product is checked once.
  Matmul mm(task_size);
  if (gpu) {
    rt.run_fraction(1.0, [&](Task& t) { mm.run(t); });
    if (!mm.check()) throw std::runtime_error("the task's matmul is wrong before the demo starts");
  }

  std::function<bool()> check;
  Job job;
  examples::CsrGraph graph;
  std::unique_ptr<examples::BfsBuffers> bfs;
  std::unique_ptr<examples::TaskQueueBuffers> queue;
  std::uint64_t total = 0;
  if (o.kernel == "bfs") {
    graph = examples::random_graph(o.size ? o.size : (gpu ? 4'000'000 : 200'000), 1, o.seed);
    bfs = std::make_unique<examples::BfsBuffers>(graph, 0);
    job = rt.launch<examples::FrontierBfs>(cfg, bfs->params());
    check = [&] { return bfs->level.to_vector() == examples::reference_bfs(graph, 0); };
  } else if (o.kernel == "queue") {
    total = o.size ? o.size : (gpu ? 4'000'000'000ull : 40'000'000);
    queue = std::make_unique<examples::TaskQueueBuffers>(cfg.max_groups ? cfg.max_groups : 64,
                                                         total, 20000, 64);
    job = rt.launch<examples::TaskQueue>(cfg, queue->params());
    check = [&] { return *queue->sum == examples::TaskQueueBuffers::reference(total); };
  } else {
    throw std::invalid_argument("--kernel must be bfs or queue, got '" + o.kernel + "'");
  }

  const std::uint32_t task_groups =
      o.task_groups ? o.task_groups : std::max(1u, job.max_groups() / 2);
  if (!o.json)
    std::printf(
        "coop demo on %s: kernel %s, N=%u, %u threads/workgroup, policy %s, %s barrier\n"
        "high-priority task: %ux%u matmul (%s) on %s every %.1f ms\n",
        rt.device_name().c_str(), o.kernel.c_str(), job.max_groups(), cfg.threads,
        cfg.policy.name().c_str(), o.barrier.c_str(), task_size, task_size,
        gpu ? "cuBLAS SGEMM" : "host threads",
        gpu ? "the whole GPU but workgroup 0"
            : (std::to_string(task_groups) + " workgroups").c_str(),
        o.period_ms);

  // The periodic high-priority task, until the cooperative kernel finishes.
  bool task_ok = true;
  std::vector<TaskRecord> records;
  auto period = std::chrono::duration<double, std::milli>(o.period_ms);
  auto next = std::chrono::steady_clock::now();
  auto task = [&](Task& t) {
    std::fill(mm.c.begin(), mm.c.end(), 0.0f);
    mm.run(t);
  };
  while (!job.done()) {
    // On a GPU the task is a cuBLAS call whose blocks need whole SMs: it asks for the device.
    records.push_back(gpu ? rt.run_fraction(1.0, task, /*priority=*/1)
                          : rt.run(task_groups, task, /*priority=*/1));
    task_ok = task_ok && mm.check();  // after the task: the device is back with the job
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
    std::this_thread::sleep_until(next);
  }
  job.wait();
  const bool result_ok = check();
  JobStats s = job.stats();

  std::vector<double> gathers, runs;
  for (auto& r : records) {
    gathers.push_back(r.gather_ms());
    runs.push_back(r.run_ms());
  }
  const bool ok = result_ok && task_ok;
  if (o.json) {
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
    j["tasks"] = records.size();
    j["gather_ms"] = {
        {"median", percentile(gathers, 0.5)},
        {"p99", percentile(gathers, 0.99)},
        {"max", gathers.empty() ? 0 : *std::max_element(gathers.begin(), gathers.end())}};
    j["task_run_ms_median"] = percentile(runs, 0.5);
    nlohmann::json tl = nlohmann::json::array();
    for (auto& p : s.timeline) tl.push_back({{"t_ms", p.t_ms - s.start_ms}, {"M", p.active}});
    j["timeline"] = tl;
    j["result_ok"] = result_ok;
    j["task_ok"] = task_ok;
    std::cout << j.dump(2) << "\n";
  } else {
    print_timeline(s, s.max_groups);
    std::printf(
        "kernel: %.2f ms, %llu kills, %llu workgroups forked, %llu resizes, %llu barriers\n",
        s.elapsed_ms(), (unsigned long long)s.kills, (unsigned long long)s.forked_groups,
        (unsigned long long)s.resizes, (unsigned long long)s.barriers);
    std::printf(
        "tasks: %zu runs of %u workgroups each; gather median %.3f ms, p99 %.3f ms; run median "
        "%.3f ms\n",
        records.size(), task_groups, percentile(gathers, 0.5), percentile(gathers, 0.99),
        percentile(runs, 0.5));
    std::printf("result check (vs sequential reference): %s; task results: %s\n",
                result_ok ? "OK" : "WRONG", task_ok ? "OK" : "WRONG");
  }
  return ok ? 0 : 1;
}

}  // namespace coop::cli
