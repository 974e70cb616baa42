// Co-location on one GPU: a long-running persistent GEMM (examples/kernels/persistent_gemm.hpp,
// tensor cores) in the background and a Poisson stream of inference-like requests (four cuBLAS
// GEMMs, each followed by an elementwise kernel) in the foreground, under the mechanisms a user
// would pick: stream priority only (the GEMM as a plain persistent kernel, the requests on the
// highest-priority stream), checkpoint-exit-relaunch (the GEMM stopped for each request, its
// tiles in progress parked and resumed by the next launch), green contexts (static SM splits
// through the driver API), and coop (the GEMM as a cooperative job, each request a task asking
// for half or nearly all of the device; the job offers inside tiles too, parking partial sums;
// served one at a time, or submitted as they arrive through the asynchronous API; coop-mixed
// asks for the whole device and for half of it in turn, so that each request for half finds the
// job grown back by a join grid).
// Latency is measured from each request's arrival (queueing included); the background's
// throughput is tiles per second as a fraction of the plain kernel alone on the whole device.
// Both sides' results are checked after each run, off the measured loop. `--only processes`
// runs the two sides as two processes instead: time slicing, and MPS with the background limited
// to 50 % or 75 % of the SMs (an MPS daemon with a private pipe directory, started and stopped
// by this run).
//
// A run that stops making progress for --stall-seconds prints where it stopped and the
// scheduler's and the job's state, and exits with status 3, rather than hang until an outer
// limit kills it without a word. --forms runs only the named mechanisms (the GEMM alone and the
// requests alone always run).
//
// usage: coop_bench_colocate [--json FILE] [--seconds S] [--gemm MxNxK] [--loads 0.1,0.3,0.6]
//                            [--offer-steps S] [--only gemm|colocate|processes]
//                            [--forms NAME,NAME] [--stall-seconds S] [--request-graph]
//
// --request-graph launches each request's kernels as one CUDA graph (captured once) instead of
// one by one, for every in-process mechanism but the green contexts (the graph belongs to the
// primary context).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "coop/bench/gemm_background.cuh"
#include "coop/bench/poisson.hpp"
#include "coop/bench/processes.hpp"
#include "coop/bench/task_steps.hpp"
#include "coop/bench/watchdog.hpp"
#include "coop/cuda/green.hpp"
#include "gpu_setup.hpp"
#include "kernels/persistent_gemm.hpp"

using namespace coop;
using bench::DeviceGemm;
using bench::Latencies;
using bench::plain_grid;
using bench::PlainBackground;
using bench::poisson;
using examples::PersistentGemm;
using json = nlohmann::json;
using clk = std::chrono::steady_clock;
using micro::Stat;

namespace {

double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

// ------------------------------------------------------------------ the requests

__global__ void squash(float* x, std::size_t count) {
  // ReLU, then mod 3: keeps the activations small integers, so every layer's sums are exact and
  // the result does not depend on how cuBLAS orders them (it may pick other kernels on fewer SMs).
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = fmodf(fmaxf(x[i], 0.f), 3.f);
}

struct Request {
  static constexpr int kBatch = 512, kHidden = 2048, kLayers = 4;
  /// What one request in flight owns: its activations, a cuBLAS handle bound to its stream, and
  /// the events around its kernels (their span on the GPU, launch gaps included, host steps
  /// before the first and after the last left out). Requests submitted as they arrive
  /// (poisson_submitted) are in flight together, one slot each.
  struct Slot {
    float* h[2] = {};
    cublasHandle_t handle = nullptr;
    cudaEvent_t began = nullptr, ended = nullptr;
    cudaGraphExec_t graph = nullptr;  // the request's kernels as one CUDA graph (as_graph)
    bool used = false;
  };
  /// Launch each request's kernels as one CUDA graph (captured once per slot, at its first
  /// request) instead of one by one: no host launch between them.
  bool as_graph = false;
  float* x = nullptr;
  float* w[kLayers] = {};
  std::vector<Slot> slots;
  std::vector<float> hx, hw[kLayers];

  explicit Request(int slot_count = 1) : slots(std::size_t(std::max(slot_count, 1))) {
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<int> d(-1, 1);
    hx.resize(std::size_t(kBatch) * kHidden);
    for (auto& v : hx) v = float(d(rng));
    CK(cudaMalloc(&x, hx.size() * 4));
    CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    for (int l = 0; l < kLayers; ++l) {
      hw[l].resize(std::size_t(kHidden) * kHidden);
      for (auto& v : hw[l]) v = float(d(rng));
      CK(cudaMalloc(&w[l], hw[l].size() * 4));
      CK(cudaMemcpy(w[l], hw[l].data(), hw[l].size() * 4, cudaMemcpyHostToDevice));
    }
    for (Slot& s : slots) {
      for (auto& p : s.h) CK(cudaMalloc(&p, hx.size() * 4));
      check_blas(cublasCreate(&s.handle), "creating the cuBLAS handle");
      CK(cudaEventCreate(&s.began));
      CK(cudaEventCreate(&s.ended));
    }
  }
  ~Request() {
    for (Slot& s : slots) {
      if (s.graph) cudaGraphExecDestroy(s.graph);
      cudaEventDestroy(s.began);
      cudaEventDestroy(s.ended);
      cublasDestroy(s.handle);
      for (auto* p : s.h) cudaFree(p);
    }
    cudaFree(x);
    for (auto* p : w) cudaFree(p);
  }
  int slot_count() const { return int(slots.size()); }
  /// Enqueues one request on `s` (row-major H' = squash(H W), as column-major H'^T = W^T H^T),
  /// in `slot`.
  void enqueue(cudaStream_t s, int slot = 0) {
    Slot& o = slots.at(std::size_t(slot));
    o.used = true;
    CK(cudaEventRecord(o.began, s));
    if (!as_graph) {
      enqueue_kernels(o, s);
    } else {
      if (!o.graph) {
        cudaStream_t capture = nullptr;
        CK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
        CK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
        enqueue_kernels(o, capture);
        cudaGraph_t g = nullptr;
        CK(cudaStreamEndCapture(capture, &g));
        CK(cudaGraphInstantiate(&o.graph, g, 0));
        CK(cudaGraphDestroy(g));
        CK(cudaStreamDestroy(capture));
      }
      CK(cudaGraphLaunch(o.graph, s));
    }
    CK(cudaEventRecord(o.ended, s));
  }
  void enqueue_kernels(Slot& o, cudaStream_t s) {
    check_blas(cublasSetStream(o.handle, s), "setting the request's stream");
    const float one = 1, zero = 0;
    const float* in = x;
    for (int l = 0; l < kLayers; ++l) {
      float* out = o.h[l % 2];
      check_blas(cublasSgemm(o.handle, CUBLAS_OP_N, CUBLAS_OP_N, kHidden, kBatch, kHidden, &one,
                             w[l], kHidden, in, kHidden, &zero, out, kHidden),
                 "a request's GEMM");
      squash<<<256, 256, 0, s>>>(out, std::size_t(kBatch) * kHidden);
      in = out;
    }
  }
  /// The span on the GPU (ms) of the last request in `slot`, once it is done.
  double gpu_ms(int slot = 0) const {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, slots.at(std::size_t(slot)).began,
                            slots.at(std::size_t(slot)).ended));
    return ms;
  }
  void run(cudaStream_t s) {
    enqueue(s);
    CK(cudaStreamSynchronize(s));
  }
  /// Every used slot's last output, first and last rows, against a serial forward pass.
  bool check() {
    if (reference.empty()) reference = forward_rows();
    for (const Slot& o : slots) {
      if (!o.used) continue;
      const float* out = o.h[(kLayers - 1) % 2];
      std::size_t next = 0;
      for (int r : {0, kBatch - 1}) {
        std::vector<float> got(kHidden);
        CK(cudaMemcpy(got.data(), out + std::size_t(r) * kHidden, kHidden * 4,
                      cudaMemcpyDeviceToHost));
        for (int j = 0; j < kHidden; ++j)
          if (reference[next++] != got[j]) return false;
      }
    }
    return true;
  }

 private:
  std::vector<float> reference;  // the first and last output rows, computed on the host
  std::vector<float> forward_rows() const {
    std::vector<float> rows;
    for (int r : {0, kBatch - 1}) {
      std::vector<double> act(hx.begin() + std::size_t(r) * kHidden,
                              hx.begin() + std::size_t(r + 1) * kHidden);
      for (int l = 0; l < kLayers; ++l) {
        std::vector<double> next(kHidden, 0.0);
        for (int i = 0; i < kHidden; ++i)
          for (int j = 0; j < kHidden; ++j) next[j] += act[i] * hw[l][std::size_t(i) * kHidden + j];
        for (auto& v : next) v = std::fmod(std::max(v, 0.0), 3.0);
        act = next;
      }
      for (double v : act) rows.push_back(float(v));
    }
    return rows;
  }
};

// ------------------------------------------------------------------ green contexts

/// Two green contexts (coop::cuda::GreenSplit): `part` SMs for the requests, the rest for the
/// background, each with a stream.
struct GreenStreams {
  coop::cuda::GreenSplit split;
  cudaStream_t part = nullptr, rest = nullptr;
  GreenStreams(unsigned want, int request_priority) : split(0, want) {
    part = coop::cuda::green_stream(split.part(), request_priority, "a green stream");
    rest = coop::cuda::green_stream(split.rest(), 0, "a green stream");
  }
  ~GreenStreams() {
    cudaStreamDestroy(part);
    cudaStreamDestroy(rest);
  }
};

// ------------------------------------------------------------------ one co-location run

/// Every latency, rounded to the microsecond (for CDFs).
json samples_json(const std::vector<double>& ms) {
  json a = json::array();
  for (double x : ms) a.push_back(std::round(x * 1e3) / 1e3);
  return a;
}

/// An environment variable's value as the run saw it, or `unset`.
std::string env_or(const char* name, const char* unset) {
  const char* v = std::getenv(name);
  return v && *v ? v : unset;
}

json lat_json(std::vector<double> v) {
  const bench::Percentiles p(std::move(v));
  return {{"p50", p.median()},
          {"p99", p.at(0.99)},
          {"p999", p.at(0.999)},
          {"max", p.max()},
          {"n", p.n()}};
}

struct Options {
  std::string json_path, only;
  double seconds = 2;
  std::uint32_t m = 8192, n = 8192, k = 2048;
  std::vector<double> loads{0.1, 0.3, 0.6};
  std::string command;
  // A child process of `--only processes` (internal options).
  std::string role;                       // "alone" | "background" | "requests"
  std::int64_t start_ns = 0, end_ns = 0;  // steady-clock window shared by the two children
  double load = 0, alone_ms = 0, slo_ms = 0;
  std::uint64_t seed = 1;
  std::uint32_t offer_steps = examples::PersistentGemmBuffers::kDefaultOfferSteps;
  std::unordered_set<std::string> forms;  // empty: every mechanism
  double stall_s = 0;                     // 0: 30 s more than a window
  bool request_graph = false;             // each request's kernels as one CUDA graph
  bool runs(const std::string& mechanism) const { return forms.empty() || forms.count(mechanism); }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--json") {
      o.json_path = value();
    } else if (a == "--only") {
      o.only = value();
      if (o.only != "gemm" && o.only != "colocate" && o.only != "processes")
        throw std::invalid_argument("--only takes gemm, colocate or processes");
    } else if (a == "--seconds") {
      o.seconds = std::stod(value());
      if (!(o.seconds > 0)) throw std::invalid_argument("--seconds must be positive");
    } else if (a == "--gemm") {
      const std::string v = value();
      if (std::sscanf(v.c_str(), "%ux%ux%u", &o.m, &o.n, &o.k) != 3)
        throw std::invalid_argument("--gemm takes MxNxK, e.g. 8192x8192x2048");
    } else if (a == "--loads") {
      o.loads.clear();
      std::stringstream ss(value());
      for (std::string x; std::getline(ss, x, ',');) {
        o.loads.push_back(std::stod(x));
        if (!(o.loads.back() > 0 && o.loads.back() < 1))
          throw std::invalid_argument("--loads are fractions in (0, 1)");
      }
    } else if (a == "--role") {
      o.role = value();
    } else if (a == "--window") {
      if (std::sscanf(value().c_str(), "%ld,%ld", &o.start_ns, &o.end_ns) != 2)
        throw std::invalid_argument("--window takes START_NS,END_NS");
    } else if (a == "--load") {
      o.load = std::stod(value());
    } else if (a == "--alone-ms") {
      o.alone_ms = std::stod(value());
    } else if (a == "--slo-ms") {
      o.slo_ms = std::stod(value());
    } else if (a == "--seed") {
      o.seed = std::stoull(value());
    } else if (a == "--offer-steps") {
      o.offer_steps = std::uint32_t(std::stoul(value()));
    } else if (a == "--forms") {
      std::stringstream ss(value());
      for (std::string x; std::getline(ss, x, ',');) o.forms.insert(x);
    } else if (a == "--request-graph") {
      o.request_graph = true;
    } else if (a == "--stall-seconds") {
      o.stall_s = std::stod(value());
      if (!(o.stall_s > 0)) throw std::invalid_argument("--stall-seconds must be positive");
    } else {
      throw std::invalid_argument(
          "usage: coop_bench_colocate [--json FILE] [--seconds S] [--gemm MxNxK] "
          "[--loads 0.1,0.3,0.6] [--offer-steps S] [--only gemm|colocate|processes] "
          "[--forms NAME,NAME] [--stall-seconds S] [--request-graph]");
    }
  }
  if (o.stall_s == 0) o.stall_s = o.seconds + 30;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  return o;
}

/// The requests' kernels on the GPU (Request::gpu_ms), beside what the mechanism leaves running.
void print_gpu_span(const std::vector<double>& spans) {
  const bench::Percentiles p(spans);
  std::printf("  %-22s           the request's kernels on the GPU p50 %.3f p99 %.3f ms\n", "",
              p.median(), p.at(0.99));
}

/// The job's M over time, [ms since its first point, M], at most 4,000 points.
json m_timeline(const JobStats& st) {
  json a = json::array();
  for (const auto& pt : st.timeline) {
    if (a.size() == 4000) break;
    a.push_back({std::round((pt.t_ms - st.timeline.front().t_ms) * 1e3) / 1e3, pt.active});
  }
  return a;
}

// ------------------------------------------------------------------ several processes

// `--only processes`: the background and the requests in two processes, as users share a GPU
// between programs: time slicing (the driver switches between the two contexts) and MPS with
// the background limited to a share of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE). The parent
// makes no CUDA context; each child prints one JSON line.

double slo_share(const std::vector<double>& ms, double slo_ms) {
  std::size_t met = 0;
  for (double x : ms) met += x <= slo_ms;
  return ms.empty() ? 0.0 : double(met) / double(ms.size());
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now().time_since_epoch())
      .count();
}

void sleep_until_ns(std::int64_t ns) {
  std::this_thread::sleep_until(clk::time_point(std::chrono::nanoseconds(ns)));
}

int visible_sms() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}

json run_role(const Options& o) {
  int least = 0, greatest = 0;
  CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                  o.role == "background" ? least : greatest));
  json out = {{"role", o.role}, {"sms", visible_sms()}};
  if (o.role == "alone" || o.role == "background") {
    DeviceGemm g(o.m, o.n, o.k);
    const int grid = plain_grid(visible_sms());
    if (o.role == "alone") {
      Request req;
      req.run(s);
      std::vector<double> alone;
      for (int r = 0; r < 300; ++r) {
        const auto t0 = clk::now();
        req.run(s);
        alone.push_back(ms_since(t0));
      }
      if (!req.check()) throw std::runtime_error("the request's output is wrong (alone)");
      out["alone_ms"] = lat_json(alone);
    }
    PlainBackground bg(g, s, grid);
    const std::int64_t start = o.role == "alone" ? steady_ns() + 50'000'000 : o.start_ns;
    const std::int64_t end = o.role == "alone" ? start + std::int64_t(o.seconds * 1e9) : o.end_ns;
    sleep_until_ns(start);
    const std::uint64_t d0 = g.done();
    sleep_until_ns(end);
    const std::uint64_t d1 = g.done();
    bg.finish();
    out["tiles_per_s"] = double(d1 - d0) / (double(end - start) / 1e9);
    out["grid"] = grid;
  } else if (o.role == "requests") {
    Request req;
    req.run(s);
    sleep_until_ns(o.start_ns);
    const Latencies l = poisson(o.load, o.alone_ms, double(o.end_ns - o.start_ns) / 1e9, o.seed,
                                [&] { req.run(s); });
    if (!req.check()) throw std::runtime_error("the request's output is wrong");
    out["latency_ms"] = lat_json(l.ms);
    out["samples_ms"] = samples_json(l.ms);
    out["slo_attainment"] = slo_share(l.ms, o.slo_ms);
    out["request_busy_fraction"] = l.span_ms > 0 ? l.busy_ms / l.span_ms : 0.0;
    out["span_ms"] = l.span_ms;
  } else {
    throw std::invalid_argument("--role takes alone, background or requests");
  }
  CK(cudaStreamDestroy(s));
  return out;
}

json run_processes(const Options& o) {
  const std::string exe = bench::self_exe();
  char shape[64];
  std::snprintf(shape, sizeof shape, " --gemm %ux%ux%u", o.m, o.n, o.k);
  std::printf("co-location between processes (time slicing, MPS)\n");
  const json alone =
      bench::ChildProcess(exe + shape + " --role alone --seconds " + std::to_string(o.seconds))
          .result();
  const double e_ms = alone["alone_ms"]["p50"], alone_p99 = alone["alone_ms"]["p99"];
  const double slo_ms = 1.2 * alone_p99 + 0.060, plain_rate = alone["tiles_per_s"];
  std::printf("request alone p50 %.3f ms p99 %.3f ms; background alone %.0f tiles/s\n", e_ms,
              alone_p99, plain_rate);
  json rows = json::array();
  std::uint64_t seed = 1;  // as the in-process run: the same arrivals at each load
  struct Mode {
    std::string name;
    int background_percent;  // 0: no MPS (time slicing)
  };
  for (double load : o.loads) {
    const std::uint64_t load_seed = seed++;  // the arrivals of the in-process run at this load
    for (const Mode& m :
         {Mode{"time-slicing", 0}, Mode{"mps-background-50", 50}, Mode{"mps-background-75", 75}}) {
      try {
        std::unique_ptr<bench::MpsDaemon> mps;
        std::string env;
        if (m.background_percent) {
          mps = std::make_unique<bench::MpsDaemon>();
          env = mps->env();
        }
        const std::int64_t start = steady_ns() + 3'000'000'000;  // both started and warm by then
        const std::int64_t end = start + std::int64_t(o.seconds * 1e9);
        const std::string window = " --window " + std::to_string(start) + "," + std::to_string(end);
        const std::string limit =
            m.background_percent
                ? "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + std::to_string(m.background_percent) + " "
                : "";
        bench::ChildProcess bg(env + limit + exe + shape + " --role background" + window);
        char args[256];
        std::snprintf(args, sizeof args,
                      " --role requests --load %g --alone-ms %g --slo-ms %g --seed %lu", load, e_ms,
                      slo_ms, static_cast<unsigned long>(load_seed));
        bench::ChildProcess rq(env + exe + shape + args + window);
        const json r = rq.result(), b = bg.result();
        const double rate = b["tiles_per_s"];
        json row = {{"mechanism", m.name},
                    {"load", load},
                    {"latency_ms", r["latency_ms"]},
                    {"p99_over_alone_p99", r["latency_ms"]["p99"].get<double>() / alone_p99},
                    {"slo_attainment", r["slo_attainment"]},
                    {"request_busy_fraction", r["request_busy_fraction"]},
                    {"span_ms", r["span_ms"]},
                    {"background_fraction_of_alone", rate / plain_rate},
                    {"background_sms", b["sms"]},
                    {"samples_ms", r["samples_ms"]}};
        std::printf(
            "  %-22s load %.1f: request p50 %8.3f p99 %8.3f p99.9 %8.3f ms, SLO %5.1f%%, "
            "background %.3f of alone (%d SMs visible)\n",
            m.name.c_str(), load, r["latency_ms"]["p50"].get<double>(),
            r["latency_ms"]["p99"].get<double>(), r["latency_ms"]["p999"].get<double>(),
            100.0 * r["slo_attainment"].get<double>(), rate / plain_rate, b["sms"].get<int>());
        rows.push_back(row);
      } catch (const std::exception& e) {
        std::printf("  %-22s load %.1f: %s\n", m.name.c_str(), load, e.what());
        rows.push_back({{"mechanism", m.name}, {"load", load}, {"error", e.what()}});
      }
    }
  }
  return {{"command", o.command},
          {"date", micro::utc_date()},
          {"gemm", {{"m", o.m}, {"n", o.n}, {"k", o.k}}},
          {"request", {{"alone_ms", alone["alone_ms"]}, {"slo_ms", slo_ms}}},
          {"background_alone_tiles_per_s", plain_rate},
          {"rows", rows}};
}
}  // namespace

int main(int argc, char** argv) {
  return micro::run_main([&] {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows through a pipe
    const Options o = parse(argc, argv);
    if (!o.role.empty()) {
      std::printf("%s\n", run_role(o).dump().c_str());
      return 0;
    }
    if (o.only == "processes") {
      const json out = run_processes(o);
      if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(2) << "\n";
      return 0;
    }
    micro::GpuSetup gpu;
    Runtime& rt = gpu.rt;
    const int sms = gpu.prop.multiProcessorCount;
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t high = nullptr, low = nullptr;
    CK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
    CK(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
    json out = {{"device", gpu.prop.name},
                {"sms", sms},
                {"date", gpu.date},
                {"command", o.command},
                {"gemm", {{"m", o.m}, {"n", o.n}, {"k", o.k}}}};
    std::printf("coop co-location on %s (%d SMs), %s\n", gpu.prop.name, sms, gpu.date.c_str());
    bench::Watchdog watch(
        o.stall_s, [&] { return rt.describe(); }, stderr, 3);
    DeviceGemm g(o.m, o.n, o.k);
    g.offer_steps = o.offer_steps;
    const std::uint64_t forever = 1u << 30;  // passes: the runs end by the stop flag

    // The background alone on the whole device: tiles per second over a window, both forms.
    auto plain_on = [&](cudaStream_t s, int grid) {
      examples::persistent_gemm_plain<><<<grid, 256, 0, s>>>(g.arm(forever));
      CK(cudaGetLastError());
    };
    auto window_rate = [&](const std::function<void()>& during) {
      watch.progress("a window of the background's rate");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past the first tiles
      const std::uint64_t d0 = g.done();
      const auto t0 = clk::now();
      during();
      const double ms = ms_since(t0);
      return double(g.done() - d0) / (ms / 1e3);
    };
    auto sleep_for = [](double seconds) {
      return [seconds] { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); };
    };
    auto finish_plain = [&](cudaStream_t s) {
      g.request_stop();
      CK(cudaStreamSynchronize(s));
      if (!g.check()) throw std::runtime_error("the background GEMM's product is wrong");
    };
    // Ids by SM: a request's blocks get the SMs the GEMM's top workgroups leave whole.
    auto start_coop = [&] {
      const LaunchConfig cfg{.threads = 256, .ids_by_sm = true};
      return rt.launch<PersistentGemm>(cfg, g.arm(forever));
    };
    auto finish_coop = [&](Job& job) {
      watch.progress("ending the cooperative GEMM");
      g.request_stop();
      job.wait();
      if (!g.check()) throw std::runtime_error("the cooperative GEMM's product is wrong");
    };

    const int full_grid = plain_grid(sms);
    std::printf("the GEMM alone: plain kernel (grid %d), cooperative job, plain again, cuBLAS...\n",
                full_grid);
    // One plain launch, forever: the kernel's own rate, without a relaunch's tail.
    auto single_plain_rate = [&] {
      plain_on(low, full_grid);
      const double rate = window_rate(sleep_for(o.seconds));
      finish_plain(low);
      return rate;
    };
    const double single_rate_before = single_plain_rate();
    double plain_rate = 0;  // one launch per product, back to back: the background alone
    {
      PlainBackground bg(g, low, full_grid);
      plain_rate = window_rate(sleep_for(o.seconds));
      bg.finish();
    }
    Job probe = start_coop();
    const std::uint32_t coop_n = probe.max_groups();
    const double coop_rate = window_rate(sleep_for(o.seconds));
    finish_coop(probe);
    double coop_rate_between_tiles = coop_rate;  // offers only between tiles
    if (o.offer_steps) {
      g.offer_steps = 0;
      Job between = start_coop();
      coop_rate_between_tiles = window_rate(sleep_for(o.seconds));
      finish_coop(between);
      g.offer_steps = o.offer_steps;
    }
    // The plain kernel again after the cooperative runs: the ratios are against the mean of the
    // two, so a clock that drifts over the run does not pass for the primitives' cost.
    const double single_rate_after = single_plain_rate();
    const double single_rate = (single_rate_before + single_rate_after) / 2;
    // cuBLAS on the same shape (TF32 tensor cores), for scale.
    double cublas_tflops = 0;
    {
      cublasHandle_t h;
      check_blas(cublasCreate(&h), "cuBLAS");
      check_blas(cublasSetStream(h, low), "cuBLAS stream");
      const float one = 1, zero = 0;
      auto gemm = [&] {
        check_blas(
            cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(o.n), int(o.m), int(o.k), &one, g.b,
                         CUDA_R_32F, int(o.n), g.a, CUDA_R_32F, int(o.k), &zero, g.c, CUDA_R_32F,
                         int(o.n), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
            "cuBLAS GEMM");
      };
      gemm();
      CK(cudaStreamSynchronize(low));
      const int reps = 10;
      const auto t0 = clk::now();
      for (int r = 0; r < reps; ++r) gemm();
      CK(cudaStreamSynchronize(low));
      cublas_tflops = 2.0 * o.m * o.n * o.k * reps / (ms_since(t0) / 1e3) / 1e12;
      cublasDestroy(h);
    }
    const double plain_tflops = single_rate * g.tile_flops() / 1e12;
    const double relaunched_tflops = plain_rate * g.tile_flops() / 1e12;
    const double coop_tflops = coop_rate * g.tile_flops() / 1e12;
    const double between_tflops = coop_rate_between_tiles * g.tile_flops() / 1e12;
    std::printf("plain kernel before / after the cooperative runs: %.1f / %.1f TFLOP/s\n",
                single_rate_before * g.tile_flops() / 1e12,
                single_rate_after * g.tile_flops() / 1e12);
    std::printf(
        "persistent GEMM %ux%ux%u alone: plain %.1f TFLOP/s (grid %d), cooperative %.1f "
        "(N %u, offers every %u K-steps: %.3f of plain; between tiles only: %.1f, %.3f), "
        "cuBLAS TF32 %.1f; one tile %.1f us per workgroup\n",
        o.m, o.n, o.k, plain_tflops, full_grid, coop_tflops, coop_n, o.offer_steps,
        coop_tflops / plain_tflops, between_tflops, between_tflops / plain_tflops, cublas_tflops,
        1e6 / (single_rate / full_grid));
    std::printf(
        "  relaunched once per product (%.1f ms each): %.1f TFLOP/s, the background alone\n",
        g.tiles() / plain_rate * 1e3, relaunched_tflops);
    out["gemm"].update({{"plain_tflops", plain_tflops},
                        {"plain_tflops_before", single_rate_before * g.tile_flops() / 1e12},
                        {"plain_tflops_after", single_rate_after * g.tile_flops() / 1e12},
                        {"plain_grid", full_grid},
                        {"cooperative_tflops", coop_tflops},
                        {"cooperative_groups", coop_n},
                        {"cooperative_over_plain", coop_tflops / plain_tflops},
                        {"offer_steps", o.offer_steps},
                        {"offer_interval_us", 1e6 / (single_rate / full_grid) * o.offer_steps *
                                                  PersistentGemm::kStep / o.k},
                        {"cooperative_between_tiles_tflops", between_tflops},
                        {"cooperative_between_tiles_over_plain", between_tflops / plain_tflops},
                        {"cublas_tf32_tflops", cublas_tflops},
                        {"relaunched_tflops", relaunched_tflops},
                        {"product_ms", g.tiles() / plain_rate * 1e3},
                        {"tile_us_per_workgroup", 1e6 / (single_rate / full_grid)}});
    if (o.only == "gemm") {
      if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(2) << "\n";
      return 0;
    }

    // The request alone (whole device, idle). Sixteen slots, for the forms that submit requests
    // as they arrive (a queue deeper than that waits to submit); each slot warmed once.
    Request req(16);
    req.as_graph = o.request_graph;
    for (int slot = 0; slot < req.slot_count(); ++slot) req.enqueue(high, slot);
    CK(cudaStreamSynchronize(high));
    std::vector<double> alone, alone_gpu;
    for (int r = 0; r < 300; ++r) {
      const auto t0 = clk::now();
      req.run(high);
      alone.push_back(ms_since(t0));
      alone_gpu.push_back(req.gpu_ms());
    }
    if (!req.check()) throw std::runtime_error("the request's output is wrong (alone)");
    print_gpu_span(alone_gpu);
    const bench::Percentiles alone_p(alone);
    const double e_ms = alone_p.median(), alone_p99 = alone_p.at(0.99);
    const double slo_ms = 1.2 * alone_p99 + 0.060;
    std::printf("request alone: p50 %.3f ms, p99 %.3f ms; SLO bound 1.2 x p99 + 60 us = %.3f ms\n",
                e_ms, alone_p99, slo_ms);
    out["request"] = {{"layers", Request::kLayers},
                      {"batch", Request::kBatch},
                      {"cuda_graph", req.as_graph},
                      {"hidden", Request::kHidden},
                      {"alone_ms", lat_json(alone)},
                      {"alone_gpu_ms", lat_json(alone_gpu)},
                      {"slo_ms", slo_ms}};

    std::string no_green;
    const bool green = coop::cuda::green_contexts_available(&no_green);
    json rows = json::array();
    std::uint64_t seed = 1;
    auto record = [&](const std::string& mech, double load, const Latencies& l, double rate,
                      json extra) {
      const bench::Percentiles p(l.ms);
      std::size_t met = 0;
      for (double x : l.ms) met += x <= slo_ms;
      json row = {{"mechanism", mech},
                  {"load", load},
                  {"latency_ms", lat_json(l.ms)},
                  {"p99_over_alone_p99", p.at(0.99) / alone_p99},
                  {"slo_attainment", l.ms.empty() ? 0.0 : double(met) / double(l.ms.size())},
                  {"request_busy_fraction", l.span_ms > 0 ? l.busy_ms / l.span_ms : 0.0},
                  {"span_ms", l.span_ms},
                  {"background_fraction_of_alone", rate / plain_rate}};
      row["samples_ms"] = samples_json(l.ms);
      row.update(extra);
      std::printf(
          "  %-22s load %.1f: request p50 %8.3f p99 %8.3f p99.9 %8.3f ms (%6.1fx alone p99), "
          "SLO %5.1f%%, background %.3f of alone\n",
          mech.c_str(), load, p.median(), p.at(0.99), p.at(0.999), p.at(0.99) / alone_p99,
          100.0 * row["slo_attainment"].get<double>(), rate / plain_rate);
      std::fflush(stdout);
      rows.push_back(row);
    };

    for (double load : o.loads) {
      // One arrival sequence per load, the same for every mechanism.
      const std::uint64_t load_seed = seed++;
      // The floor: the same request stream on an idle device (queueing behind earlier requests
      // is all it adds to the request alone).
      if (o.runs("requests-only")) {
        Latencies l;
        std::vector<double> spans;
        l = poisson(load, e_ms, o.seconds, load_seed, [&] {
          req.run(high);
          spans.push_back(req.gpu_ms());
        });
        if (!req.check()) throw std::runtime_error("the request's output is wrong");
        record("requests-only", load, l, 0.0, {{"request_gpu_ms", lat_json(spans)}});
        print_gpu_span(spans);
      }
      // The floor of the -queued forms below: the same stream submitted as each request
      // arrives, in arrival order on one stream (the device runs them back to back), and
      // waited for on another thread.
      if (o.runs("requests-only-queued")) {
        std::vector<double> spans;
        const Latencies l = bench::poisson_submitted(
            load, e_ms, o.seconds, load_seed, std::size_t(req.slot_count()),
            [&](std::size_t i) {
              const int slot = int(i % std::size_t(req.slot_count()));
              req.enqueue(high, slot);
              return slot;
            },
            [&](std::size_t, int slot) {
              CK(cudaEventSynchronize(req.slots[std::size_t(slot)].ended));
              spans.push_back(req.gpu_ms(slot));
            });
        if (!req.check()) throw std::runtime_error("the request's output is wrong");
        record("requests-only-queued", load, l, 0.0,
               {{"request_gpu_ms", lat_json(spans)}, {"submitted_at_arrival", true}});
        print_gpu_span(spans);
      }
      // Stream priority only: the plain persistent GEMM on the low-priority stream.
      if (o.runs("stream-priority")) {
        PlainBackground bg(g, low, full_grid);
        Latencies l;
        const double rate = window_rate(
            [&] { l = poisson(load, e_ms, o.seconds, load_seed, [&] { req.run(high); }); });
        bg.finish();
        if (!req.check()) throw std::runtime_error("the request's output is wrong");
        record("stream-priority", load, l, rate, json::object());
      }
      // Checkpoint, exit, relaunch: the GEMM stopped for each request (tiles parked at the next
      // checkpoint), the request on the idle device, the GEMM launched again.
      if (o.offer_steps && o.runs("interrupt-relaunch")) {
        bench::InterruptibleBackground bg(g, low, full_grid, forever);
        Latencies l;
        std::vector<double> spans;
        const double rate = window_rate([&] {
          l = poisson(load, e_ms, o.seconds, load_seed, [&] {
            bg.interrupt();
            req.run(high);
            spans.push_back(req.gpu_ms());
            bg.resume();
          });
        });
        bg.finish();
        if (!req.check()) throw std::runtime_error("the request's output is wrong");
        record("interrupt-relaunch", load, l, rate,
               {{"request_gpu_ms", lat_json(spans)},
                {"offer_steps", o.offer_steps},
                {"launches", bg.launches()},
                {"tiles_resumed", g.resumed()}});
        print_gpu_span(spans);
      }
      // Green contexts: a static split, requests on `part` SMs, the GEMM on the rest.
      for (unsigned part : {16u, 32u, 64u}) {
        const std::string mech = "green-ctx-" + std::to_string(part);
        if (!o.runs(mech)) continue;
        if (!green || o.request_graph) {
          rows.push_back({{"mechanism", mech},
                          {"load", load},
                          {"error", o.request_graph ? "--request-graph: the graph is the primary "
                                                      "context's"
                                                    : no_green}});
          continue;
        }
        try {
          GreenStreams split(part, greatest);
          auto rest = split.rest;
          auto part_stream = split.part;
          req.run(part_stream);  // warm: cuBLAS on this context
          PlainBackground bg(g, rest, plain_grid(int(split.split.rest_sms())));
          Latencies l;
          const double rate = window_rate([&] {
            l = poisson(load, e_ms, o.seconds, load_seed, [&] { req.run(part_stream); });
          });
          bg.finish();
          if (!req.check()) throw std::runtime_error("the request's output is wrong");
          record(mech, load, l, rate,
                 {{"request_sms", split.split.part_sms()},
                  {"background_sms", split.split.rest_sms()}});
        } catch (const std::exception& e) {
          std::printf("  %-22s load %.1f: %s\n", mech.c_str(), load, e.what());
          rows.push_back({{"mechanism", mech}, {"load", load}, {"error", e.what()}});
        }
      }
      // coop: the GEMM as a cooperative job, each request a task for half or nearly all of it;
      // the whole-device form also with offers only between tiles (what bounds the wait).
      // coop-whole-at-request enqueues the request's kernels at once, behind the release the
      // leaving workgroups write (TaskLaunch::at_request), not after the host sees them leave.
      // coop-whole-no-pause keeps the job's workgroup 0 computing beside the request (the
      // policy's ",no-pause"), the others pause it while the request runs.
      // The -queued forms submit each request as it arrives (Runtime::submit_fraction, as a
      // serving system uses the asynchronous API) and wait for them in order on another thread:
      // a request that arrives while another runs waits in the scheduler, and takes the
      // workgroups the one before returns without the job growing and shrinking in between.
      // The others serve one request at a time, blocking, as the other mechanisms do.
      struct CoopForm {
        const char* name;
        double share;
        std::uint32_t offer_steps;
        TaskLaunch launch = TaskLaunch::after_gather;
        bool pause_kept = true;
        bool queued = false;
        /// Every other request for the whole device, the others for `share`: a job taken down
        /// to workgroup 0 grows back by a join grid before each request for a share of it.
        bool mixed = false;
      };
      std::vector<CoopForm> forms = {
          {"coop-half", 0.5, o.offer_steps},
          {"coop-whole", 1.0, o.offer_steps},
          {"coop-whole-no-pause", 1.0, o.offer_steps, TaskLaunch::after_gather, false},
          {"coop-whole-at-request", 1.0, o.offer_steps, TaskLaunch::at_request},
          {"coop-whole-queued", 1.0, o.offer_steps, TaskLaunch::after_gather, true, true},
          {"coop-whole-queued-at-request", 1.0, o.offer_steps, TaskLaunch::at_request, true, true}};
      if (o.offer_steps) forms.push_back({"coop-whole-between-tiles", 1.0, 0});
      forms.push_back(
          {"coop-mixed", 0.5, o.offer_steps, TaskLaunch::after_gather, true, false, true});
      const PreemptionPolicy policy = rt.preemption();
      for (const CoopForm& f : forms) {
        if (!o.runs(f.name)) continue;
        PreemptionPolicy form_policy = policy;
        form_policy.pause_kept = f.pause_kept;
        rt.set_preemption(form_policy);
        g.offer_steps = f.offer_steps;
        Job job = start_coop();
        const double whole = 1.0 - 1.0 / double(job.max_groups());
        const double fraction = f.share == 1.0 ? whole : f.share;
        Latencies l;
        std::vector<double> gathers, runs, spans;
        bench::TaskSteps host;
        std::size_t submitted = 0;
        auto submit = [&](int slot) {
          const bool for_whole = f.mixed && submitted++ % 2 == 0;
          return rt.submit_fraction(
              for_whole ? whole : fraction,
              [&req, slot](Task& t) { req.enqueue(t.stream(), slot); }, 1, f.launch);
        };
        auto finished = [&](int slot, double called, const TaskHandle& h) {
          const TaskRecord r = h.record();
          host.add(called, r, rt.now_ms());
          gathers.push_back(r.gather_ms());
          runs.push_back(r.run_ms());  // the request beside what the job kept
          spans.push_back(req.gpu_ms(slot));
        };
        const double rate = window_rate([&] {
          if (!f.queued) {
            l = poisson(load, e_ms, o.seconds, load_seed, [&] {
              watch.progress(f.name);
              const double called = rt.now_ms();
              finished(0, called, submit(0));
            });
            return;
          }
          std::vector<double> called(std::size_t(req.slot_count()));
          l = bench::poisson_submitted(
              load, e_ms, o.seconds, load_seed, called.size(),
              [&](std::size_t i) {
                const int slot = int(i % called.size());
                called[std::size_t(slot)] = rt.now_ms();
                return submit(slot);
              },
              [&](std::size_t i, const TaskHandle& h) {
                watch.progress(f.name);
                const int slot = int(i % called.size());
                finished(slot, called[std::size_t(slot)], h);
              });
        });
        const JobStats st = job.stats();
        finish_coop(job);
        if (!req.check()) throw std::runtime_error("the request's output is wrong");
        json by_size;
        if (f.mixed) {  // the requests for the whole device, then those for a share
          std::vector<double> sized[2];
          for (std::size_t i = 0; i < l.ms.size(); ++i) sized[i % 2].push_back(l.ms[i]);
          by_size = {{"whole_ms", lat_json(sized[0])}, {"share_ms", lat_json(sized[1])}};
          std::printf("  %-22s whole-device requests p99 %.3f ms, half-device p99 %.3f ms\n",
                      f.name, bench::Percentiles(sized[0]).at(0.99),
                      bench::Percentiles(sized[1]).at(0.99));
        }
        record(f.name, load, l, rate,
               {{"fraction", fraction},
                {"every_other_request_whole", f.mixed},
                {"latency_by_size_ms", by_size},
                {"join_pack_wait_ns", env_or("COOP_CUDA_JOIN_PACK_WAIT_NS", "default")},
                {"submitted_at_arrival", f.queued},
                {"task_launch", task_launch_name(f.launch)},
                {"preemption", form_policy.name()},
                {"groups", job.max_groups()},
                {"offer_steps", f.offer_steps},
                {"gather_ms", lat_json(gathers)},
                {"task_run_ms", lat_json(runs)},
                {"request_gpu_ms", lat_json(spans)},
                {"host_steps_ms",
                 {{"call_to_request", lat_json(host.call_to_request)},
                  {"grant_to_work", lat_json(host.grant_to_work)},
                  {"work_to_return", lat_json(host.work_to_return)}}},
                {"kills", st.kills},
                {"forked_groups", st.forked_groups},
                {"tiles_resumed", g.resumed()},
                {"m_timeline", m_timeline(st)}});
        const bench::Percentiles gp(gathers), rp(runs), hb(host.call_to_request),
            hg(host.grant_to_work), ha(host.work_to_return);
        std::printf(
            "  %-22s           gather p50 %.3f p99 %.3f ms, the request's kernels p50 %.3f "
            "p99 %.3f ms\n",
            "", gp.median(), gp.at(0.99), rp.median(), rp.at(0.99));
        std::printf(
            "  %-22s           host p50: call to request %.3f, grant to work %.3f, work to "
            "return %.3f ms\n",
            "", hb.median(), hg.median(), ha.median());
        print_gpu_span(spans);
      }
      rt.set_preemption(policy);
      g.offer_steps = o.offer_steps;
    }
    out["rows"] = rows;
    out["background_alone_tiles_per_s"] = plain_rate;
    if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(2) << "\n";
    CK(cudaStreamDestroy(high));
    CK(cudaStreamDestroy(low));
    return 0;
  });
}
