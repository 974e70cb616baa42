// Compiled by nvcc when the CUDA backend is built (the task kernels run on the GPU then), by
// the host compiler otherwise (tasks run on the CPU backend's workgroup threads).
#include "coop/bench/experiments.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "coop/apps/apps.hpp"
#include "coop/bench/host_matmul.hpp"
#include "coop/coop.hpp"
#include "coop/graph/generate.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#define COOP_BENCH_GPU 1
#else
#define COOP_BENCH_GPU 0
#endif

namespace coop::bench {

namespace {

using clk = std::chrono::steady_clock;

double ms_between(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / double(v.size()));
}

// ------------------------------------------------------------------ configurations

const char* const kPaperConfig = R"({
  "name": "paper",
  "pairs": [
    {"name": "color/ecology", "app": "color", "input": "ecology", "priority": "id"},
    {"name": "color/g3_circuit", "app": "color", "input": "g3_circuit", "priority": "id"},
    {"name": "mis/ecology", "app": "mis", "input": "ecology", "priority": "id"},
    {"name": "mis/g3_circuit", "app": "mis", "input": "g3_circuit", "priority": "id"},
    {"name": "p-sssp/usa-ny", "app": "p-sssp", "input": "usa-ny"},
    {"name": "bfs/usa-w", "app": "bfs", "input": "usa-w"},
    {"name": "bfs/rmat22", "app": "bfs", "input": "rmat22"},
    {"name": "l-sssp/usa-nw", "app": "l-sssp", "input": "usa-nw"},
    {"name": "l-sssp/rmat20", "app": "l-sssp", "input": "rmat20"},
    {"name": "octree", "app": "octree", "particles": 1048576},
    {"name": "game", "app": "game", "depth": 8},
    {"name": "bc/1k-128k", "app": "bc", "input": "1k-128k", "in_geomean": false}
  ],
  "overhead": {"pairs": "all", "reps": 5},
  "multitasking": {
    "pairs": "all-in-geomean",
    "workloads": [
      {"name": "light", "period_ms": 70, "gpu_ms": 3},
      {"name": "medium", "period_ms": 40, "gpu_ms": 3},
      {"name": "heavy", "period_ms": 40, "gpu_ms": 10}
    ],
    "min_periods": 10,
    "variants": [
      {"name": "cooperative", "task": "matmul", "policy": "cooperative",
       "groups": ["1", "N/4", "N/2", "N-1"], "barriers": ["plain", "query"]},
      {"name": "cublas", "task": "cublas", "policy": "cooperative",
       "groups": ["N/2", "N-1"], "barriers": ["query"]},
      {"name": "kernel-level", "task": "matmul", "policy": "kernel", "groups": ["N"],
       "barriers": ["query"]},
      {"name": "hybrid", "task": "matmul", "policy": "hybrid:0.5", "groups": ["N/4", "N"],
       "barriers": ["query"]},
      {"name": "priority-only", "task": "matmul", "form": "standalone", "groups": ["N"]},
      {"name": "multi-launch", "task": "matmul", "form": "multi-launch", "groups": ["N"]}
    ]
  }
})";

const char* const kQuickConfig = R"({
  "name": "quick",
  "pairs": [
    {"name": "bfs/road", "app": "bfs", "input": "road:3000"},
    {"name": "color/grid", "app": "color", "input": "grid:40x40"},
    {"name": "octree", "app": "octree", "particles": 8192},
    {"name": "game", "app": "game", "depth": 4}
  ],
  "overhead": {"pairs": "all", "reps": 3},
  "multitasking": {
    "pairs": ["bfs/road", "octree"],
    "workloads": [{"name": "heavy", "period_ms": 40, "gpu_ms": 10}],
    "min_periods": 4,
    "variants": [
      {"name": "cooperative", "task": "matmul", "policy": "cooperative",
       "groups": ["1", "N/2"], "barriers": ["plain", "query"]},
      {"name": "kernel-level", "task": "matmul", "policy": "kernel", "groups": ["N"],
       "barriers": ["query"]}
    ]
  }
})";

// ------------------------------------------------------------------ planning

std::string need_string(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_string())
    throw std::invalid_argument(where + ": '" + field + "' must be a string");
  return j[field].get<std::string>();
}

double need_number(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_number() || j[field].get<double>() <= 0)
    throw std::invalid_argument(where + ": '" + field + "' must be a positive number");
  return j[field].get<double>();
}

const json& find_pair(const json& config, const std::string& name) {
  for (const json& p : config["pairs"])
    if (p.value("name", "") == name) return p;
  throw std::invalid_argument("no pair named '" + name + "' in the configuration's pairs");
}

// "all", "all-in-geomean" or a list of names.
std::vector<std::string> select_pairs(const json& config, const json& which,
                                      const std::string& where) {
  std::vector<std::string> names;
  if (which.is_string()) {
    const std::string w = which.get<std::string>();
    if (w != "all" && w != "all-in-geomean")
      throw std::invalid_argument(where +
                                  ": 'pairs' must be \"all\", \"all-in-geomean\" or a list");
    for (const json& p : config["pairs"])
      if (w == "all" || p.value("in_geomean", true)) names.push_back(p["name"]);
  } else if (which.is_array()) {
    for (const json& n : which) names.push_back(find_pair(config, n.get<std::string>())["name"]);
  } else {
    throw std::invalid_argument(where + ": 'pairs' must be \"all\", \"all-in-geomean\" or a list");
  }
  return names;
}

// A task's workgroups from "1", "N/4", "N/2", "N-1" or "N" (the whole device).
std::uint32_t resolve_groups(const std::string& spec, std::uint32_t n) {
  if (spec == "N") return n;
  if (spec == "N-1") return std::max(1u, n - 1);
  if (spec == "N/2") return std::max(1u, n / 2);
  if (spec == "N/4") return std::max(1u, n / 4);
  if (spec == "1") return 1;
  throw std::invalid_argument("groups must be 1, N/4, N/2, N-1 or N, got '" + spec + "'");
}

}  // namespace

std::vector<std::string> builtin_config_names() { return {"paper", "quick"}; }

json builtin_config(const std::string& name) {
  if (name == "paper") return json::parse(kPaperConfig);
  if (name == "quick") return json::parse(kQuickConfig);
  throw std::invalid_argument("no built-in configuration '" + name + "' (paper, quick)");
}

namespace {
/// An experiment's optional "shared_carveout" (LaunchConfig::shared_carveout of the app's job).
int carveout_of(const json& o) {
  return o.value("shared_carveout", LaunchConfig{}.shared_carveout);
}
void check_carveout(const json& o, const std::string& where) {
  if (!o.contains("shared_carveout")) return;
  const json& c = o["shared_carveout"];
  if (!c.is_number_integer() || c.get<int>() < -1 || c.get<int>() > 100)
    throw std::invalid_argument(where + ": 'shared_carveout' must be -1 or a percentage 0-100");
}
}  // namespace

std::vector<Unit> plan(const json& config) {
  if (!config.is_object() || !config.contains("pairs") || !config["pairs"].is_array())
    throw std::invalid_argument("configuration: 'pairs' must be a list");
  std::set<std::string> names;
  for (const json& p : config["pairs"]) {
    const std::string name = need_string(p, "name", "a pair");
    const std::string app = need_string(p, "app", "pair " + name);
    apps::check_app(app);
    if (apps::is_graph_app(app)) need_string(p, "input", "pair " + name);
    if (!names.insert(name).second)
      throw std::invalid_argument("pair '" + name + "' is named twice");
  }
  for (auto it = config.begin(); it != config.end(); ++it)
    if (it.key() != "name" && it.key() != "pairs" && it.key() != "overhead" &&
        it.key() != "multitasking")
      throw std::invalid_argument("configuration: unknown experiment '" + it.key() +
                                  "' (overhead, multitasking)");
  std::vector<Unit> units;
  if (config.contains("overhead")) {
    const json& o = config["overhead"];
    const int reps = o.value("reps", 5);
    if (reps < 1) throw std::invalid_argument("overhead: 'reps' must be at least 1");
    check_carveout(o, "overhead");
    for (const std::string& pair : select_pairs(config, o.value("pairs", json("all")), "overhead"))
      units.push_back(
          {"overhead/" + pair, "overhead", {{"pair", pair}, {"reps", reps}}, double(reps) * 3});
  }
  if (config.contains("multitasking")) {
    const json& m = config["multitasking"];
    const auto pairs = select_pairs(config, m.value("pairs", json("all")), "multitasking");
    if (!m.contains("workloads") || !m["workloads"].is_array() || !m.contains("variants") ||
        !m["variants"].is_array())
      throw std::invalid_argument("multitasking: 'workloads' and 'variants' must be lists");
    const double min_periods = m.value("min_periods", 10.0);
    for (const json& v : m["variants"]) {
      const std::string vname = need_string(v, "name", "a multitasking variant");
      const std::string where = "multitasking variant " + vname;
      const std::string task = v.value("task", "matmul");
      if (task != "matmul" && task != "cublas")
        throw std::invalid_argument(where + ": 'task' must be matmul or cublas");
      const apps::Form form = apps::parse_form(v.value("form", "cooperative"));
      PreemptionPolicy::parse(v.value("policy", "cooperative"));
      check_carveout(v, where);
      const json groups = v.value("groups", json::array({"N/2"}));
      for (const json& g : groups) resolve_groups(g.get<std::string>(), 4);
      for (const json& w : m["workloads"]) {
        const std::string wname = need_string(w, "name", "a workload");
        const double period = need_number(w, "period_ms", "workload " + wname);
        need_number(w, "gpu_ms", "workload " + wname);
        for (const std::string& pair : pairs) {
          const std::string app = find_pair(config, pair)["app"];
          if (form == apps::Form::multi_launch && !apps::has_multi_launch(app)) continue;
          // The barrier variant matters only for cooperative graph apps.
          json barriers = json::array({nullptr});
          if (form == apps::Form::cooperative && apps::is_graph_app(app))
            barriers = v.value("barriers", json::array({"query"}));
          for (const json& g : groups)
            for (const json& b : barriers) {
              std::string key =
                  "multitasking/" + vname + "/" + pair + "/" + wname + "/k=" + g.get<std::string>();
              if (!b.is_null()) key += "/" + b.get<std::string>();
              units.push_back({key,
                               "multitasking",
                               {{"pair", pair},
                                {"variant", v},
                                {"workload", w},
                                {"groups", g},
                                {"barrier", b},
                                {"min_periods", min_periods}},
                               period * min_periods / 100.0 + 1});
            }
        }
      }
    }
  }
  return units;
}

// ------------------------------------------------------------------ the tasks

namespace {

#if COOP_BENCH_GPU
#define BENCH_CK(call, what)                                                        \
  do {                                                                              \
    cudaError_t rc_ = (call);                                                       \
    if (rc_ != cudaSuccess)                                                         \
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc_)); \
  } while (0)

// The graphics stand-in: a tiled single-precision matmul over a grid of any size (tiles
// strided over the blocks), repeated `products` times so that one task takes E.
constexpr std::uint32_t kTile = 16;
__global__ void __launch_bounds__(256)
    task_matmul(const float* a, const float* b, float* c, std::uint32_t n, std::uint32_t products) {
  __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];
  const std::uint32_t tiles = n / kTile, tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (std::uint32_t p = 0; p < products; ++p)
    for (std::uint32_t t = blockIdx.x; t < tiles * tiles; t += gridDim.x) {
      const std::uint32_t row = (t / tiles) * kTile + ty, col = (t % tiles) * kTile + tx;
      float s = 0;
      for (std::uint32_t k0 = 0; k0 < n; k0 += kTile) {
        as[ty][tx] = a[row * n + k0 + tx];
        bs[ty][tx] = b[(k0 + ty) * n + col];
        __syncthreads();
        for (std::uint32_t k = 0; k < kTile; ++k) s += as[ty][k] * bs[k][tx];
        __syncthreads();
      }
      c[row * n + col] = s;
    }
}
#endif

/// One kind of high-priority task, sized by calibration to take E ms on the whole device.
class TaskWork {
 public:
  TaskWork(Runtime& rt, std::string kind, double gpu_ms)
      : kind_(std::move(kind)),
        gpu_(rt.backend() == Backend::cuda),
        m_(gpu_ ? (kind_ == "cublas" ? 2048 : 1024) : 64) {
    if (kind_ == "cublas" && !gpu_)
      throw std::invalid_argument("cublas tasks need the CUDA backend");
    full_ = gpu_ ? 0 : std::max(1u, std::thread::hardware_concurrency());
#if COOP_BENCH_GPU
    if (gpu_) {
      const std::size_t bytes = m_.a.size() * sizeof(float);
      BENCH_CK(cudaMalloc(&da_, bytes), "allocating the task's matrices");
      BENCH_CK(cudaMalloc(&db_, bytes), "allocating the task's matrices");
      BENCH_CK(cudaMalloc(&dc_, bytes), "allocating the task's matrices");
      BENCH_CK(cudaMemcpy(da_, m_.a.data(), bytes, cudaMemcpyHostToDevice), "copying A");
      BENCH_CK(cudaMemcpy(db_, m_.b.data(), bytes, cudaMemcpyHostToDevice), "copying B");
      int least = 0, greatest = 0, occ = 0, dev = 0;
      BENCH_CK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities");
      BENCH_CK(cudaStreamCreateWithPriority(&high_, cudaStreamNonBlocking, greatest),
               "creating the high-priority stream");
      BENCH_CK(cudaGetDevice(&dev), "reading the device");
      cudaDeviceProp prop{};
      BENCH_CK(cudaGetDeviceProperties(&prop, dev), "reading the device");
      BENCH_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, task_matmul, 256, 0),
               "task occupancy");
      full_ = std::uint32_t(occ * prop.multiProcessorCount);
      if (kind_ == "cublas" && cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("cublasCreate failed");
    }
#endif
    // Calibration: products per task so that one task on the whole (idle) device takes E. The
    // first call pays for loading (cuBLAS picks and loads its kernels then), so it is not
    // timed, and the estimate is refined from the median of a few timed tasks.
    products_ = 1;
    time_direct(full_);
    for (int round = 0; round < 3; ++round) {
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) t.push_back(time_direct(full_));
      alone_ms_ = median(t);
      const double per_product = std::max(alone_ms_ / products_, 1e-4);
      products_ = std::max(1u, std::uint32_t(std::lround(gpu_ms / per_product)));
    }
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) t.push_back(time_direct(full_));
    alone_ms_ = median(t);
    if (!check()) throw std::runtime_error(kind_ + " task: wrong product in calibration");
  }
  ~TaskWork() {
#if COOP_BENCH_GPU
    if (handle_) cublasDestroy(handle_);
    if (high_) cudaStreamDestroy(high_);
    cudaFree(da_);
    cudaFree(db_);
    cudaFree(dc_);
#endif
  }
  TaskWork(const TaskWork&) = delete;
  TaskWork& operator=(const TaskWork&) = delete;

  /// Runs one task inside a scheduler task (on its stream or its workgroup threads).
  void run([[maybe_unused]] Task& t, std::uint32_t groups) {
#if COOP_BENCH_GPU
    if (gpu_) {
      launch(t.stream(), groups);
      BENCH_CK(cudaStreamSynchronize(t.stream()), "running the task");
      return;
    }
#endif
    m_.run_threads(groups, products_);
  }
  /// Runs one task outside the scheduler on a high-priority stream (the no-cooperation
  /// baselines): it starts when the device has room.
  void run_direct(std::uint32_t groups) {
#if COOP_BENCH_GPU
    if (gpu_) {
      launch(high_, groups);
      BENCH_CK(cudaStreamSynchronize(high_), "running the task");
      return;
    }
#endif
    m_.run_threads(groups, products_);
  }
  /// Compares sampled entries of the last product with a serial one.
  bool check() {
#if COOP_BENCH_GPU
    if (gpu_)
      BENCH_CK(cudaMemcpy(m_.c.data(), dc_, m_.c.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "reading the task's product");
#endif
    return m_.check();
  }
  json describe() const {
    return {{"kind", kind_},
            {"n", m_.n},
            {"products", products_},
            {"full_grid", full_},
            {"alone_ms", alone_ms_}};
  }
  std::uint32_t full_grid() const { return full_; }

 private:
  double time_direct(std::uint32_t groups) {
    const auto t0 = clk::now();
    run_direct(groups);
    return ms_between(t0, clk::now());
  }
#if COOP_BENCH_GPU
  void launch(cudaStream_t s, std::uint32_t groups) {
    if (kind_ == "cublas") {
      // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first.
      cublasSetStream(handle_, s);
      const float one = 1, zero = 0;
      const int m = int(m_.n);
      for (std::uint32_t p = 0; p < products_; ++p)
        if (cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, db_, m, da_, m, &zero,
                        dc_, m) != CUBLAS_STATUS_SUCCESS)
          throw std::runtime_error("cublasSgemm failed");
      return;
    }
    task_matmul<<<std::max(1u, groups), 256, 0, s>>>(da_, db_, dc_, m_.n, products_);
    BENCH_CK(cudaGetLastError(), "launching the task");
  }
  float *da_ = nullptr, *db_ = nullptr, *dc_ = nullptr;
  cudaStream_t high_ = nullptr;
  cublasHandle_t handle_ = nullptr;
#endif
  std::string kind_;
  bool gpu_ = false;
  examples::HostMatmul m_;  ///< the matrices (and the product, on the CPU backend)
  std::uint32_t products_ = 1, full_ = 1;
  double alone_ms_ = 0;
};

json to_json(const JobStats& s) {
  return {{"max_groups", s.max_groups}, {"kills", s.kills},       {"forks", s.forks},
          {"resizes", s.resizes},       {"barriers", s.barriers}, {"suspends", s.suspends}};
}

// M over time relative to the job's start, at most `limit` points (every k-th change, keeping
// the last).
json timeline(const JobStats& s, std::size_t limit = 400) {
  json t = json::array();
  const std::size_t step = std::max<std::size_t>(1, s.timeline.size() / limit);
  for (std::size_t i = 0; i < s.timeline.size(); i += step)
    t.push_back({s.timeline[i].t_ms - s.start_ms, s.timeline[i].active});
  if (!s.timeline.empty() && (s.timeline.size() - 1) % step)
    t.push_back({s.timeline.back().t_ms - s.start_ms, s.timeline.back().active});
  return t;
}

}  // namespace

// ------------------------------------------------------------------ the runner

struct Runner::State {
  Runtime& rt;
  json config;
  std::map<std::string, std::unique_ptr<apps::Input>> inputs;
  std::map<std::string, std::unique_ptr<TaskWork>> tasks;
  struct Alone {
    double ms = 0;
    std::uint32_t groups = 0;
  };
  std::map<std::string, Alone> alone_runs;
  std::set<std::string> validated;

  State(Runtime& r, json c) : rt(r), config(std::move(c)) {}

  apps::Input& input(const std::string& pair) {
    auto& slot = inputs[pair];
    if (slot) return *slot;
    const json& p = find_pair(config, pair);
    auto in = std::make_unique<apps::Input>();
    in->app = p["app"];
    in->priority =
        p.value("priority", "hashed") == "id" ? apps::Priority::id : apps::Priority::hashed;
    if (apps::is_graph_app(in->app))
      in->graph = std::make_shared<graph::Graph>(graph::generate(p["input"], 1).graph);
    in->particles = p.value("particles", in->particles);
    in->depth = p.value("depth", in->depth);
    in->bc_sources = p.value("bc_sources", in->bc_sources);
    in->check();
    slot = std::move(in);
    return *slot;
  }

  std::string describe_input(const json& p, const apps::Input& in) {
    if (in.graph) return p["input"].get<std::string>();
    if (in.app == "octree") return std::to_string(in.particles) + " particles";
    return "depth " + std::to_string(in.depth);
  }

  TaskWork& task(const std::string& kind, double gpu_ms) {
    const std::string key = kind + "/" + std::to_string(gpu_ms);
    auto& slot = tasks[key];
    if (!slot) slot = std::make_unique<TaskWork>(rt, kind, gpu_ms);
    return *slot;
  }

  // Validates one run per (pair, what) and process: the tests check every form under
  // adversarial schedules; this guards the benchmark's own runs.
  std::string validate_once(const std::string& what, const apps::Input& in, const apps::Result& r) {
    if (!validated.insert(what).second) return "checked earlier in this run";
    apps::Validation v = apps::validate(in, r);
    if (!v.ok) throw std::runtime_error(what + ": wrong result: " + v.detail);
    return "ok: " + v.detail;
  }

  json overhead(const Unit& u);
  json multitasking(const Unit& u);
};

Runner::Runner(Runtime& rt, json config) : s_(std::make_unique<State>(rt, std::move(config))) {}
Runner::~Runner() = default;

json Runner::run(const Unit& u) {
  if (u.experiment == "overhead") return s_->overhead(u);
  if (u.experiment == "multitasking") return s_->multitasking(u);
  throw std::invalid_argument("unknown experiment '" + u.experiment + "'");
}

// Table 2: the cooperative kernel with a scheduler that never resizes, against the same
// kernel standalone (a plain persistent kernel with the platform's grid barrier) and the
// multi-launch form, on the same grid, forms interleaved.
json Runner::State::overhead(const Unit& u) {
  const std::string pair = u.params["pair"];
  const int reps = u.params["reps"];
  const json& p = find_pair(config, pair);
  apps::Input& in = input(pair);
  std::vector<apps::Form> forms{apps::Form::cooperative, apps::Form::standalone};
  if (apps::has_multi_launch(in.app)) forms.push_back(apps::Form::multi_launch);
  std::map<apps::Form, std::string> checked;
  std::uint32_t groups = 0;
  const int carveout = carveout_of(config["overhead"]);
  for (apps::Form f : forms) {  // warm-up, validation, and the grid both persistent forms fit
    apps::Result r =
        apps::run(rt, in, {.form = f, .policy = Policy::fixed(), .shared_carveout = carveout});
    checked[f] = validate_once(pair + " " + apps::form_name(f), in, r);
    if (f != apps::Form::multi_launch)
      groups = groups ? std::min(groups, r.stats.max_groups) : r.stats.max_groups;
  }
  std::map<apps::Form, std::vector<double>> times;
  for (int rep = 0; rep < reps; ++rep)
    for (apps::Form f : forms)
      times[f].push_back(
          apps::run(
              rt, in,
              {.form = f, .policy = Policy::fixed(), .groups = groups, .shared_carveout = carveout})
              .ms);
  json out{{"pair", pair},
           {"app", in.app},
           {"input", describe_input(p, in)},
           {"groups", groups},
           {"in_geomean", p.value("in_geomean", true)}};
  if (in.graph) {
    out["vertices"] = in.graph->n();
    out["arcs"] = in.graph->m();
  }
  for (apps::Form f : forms) {
    json s = summarize(times[f]);
    s["samples"] = times[f];
    s["validation"] = checked[f];
    out["forms"][apps::form_name(f)] = s;
  }
  const double standalone = out["forms"]["standalone"]["median"];
  out["cooperative_over_standalone"] =
      out["forms"]["cooperative"]["median"].get<double>() / standalone;
  if (out["forms"].contains("multi-launch"))
    out["multi_launch_over_standalone"] =
        out["forms"]["multi-launch"]["median"].get<double>() / standalone;
  return out;
}

// Fig. 5 / Fig. 6 / Table 3: the app runs back to back (enough runs to span `min_periods`
// periods) while a task is released every period (or as soon as the previous one ends, when it
// overran); the app's slowdown against its alone time, and per task the gather and run times
// and whether it finished within its period.
json Runner::State::multitasking(const Unit& u) {
  const std::string pair = u.params["pair"];
  const json& variant = u.params["variant"];
  const json& w = u.params["workload"];
  const double period = w["period_ms"], gpu_ms = w["gpu_ms"];
  const apps::Form form = apps::parse_form(variant.value("form", "cooperative"));
  const bool scheduled = form == apps::Form::cooperative;
  apps::RunConfig cfg{
      .form = form, .policy = Policy::generous(), .shared_carveout = carveout_of(variant)};
  if (!u.params["barrier"].is_null())
    cfg.barrier = u.params["barrier"] == "plain" ? ResizeBarrier::plain : ResizeBarrier::query;
  apps::Input& in = input(pair);
  TaskWork& work = task(variant.value("task", "matmul"), gpu_ms);

  const PreemptionPolicy saved = rt.preemption();
  struct Restore {
    Runtime& rt;
    PreemptionPolicy p;
    ~Restore() { rt.set_preemption(p); }
  } restore{rt, saved};
  rt.set_preemption(PreemptionPolicy::parse(variant.value("policy", "cooperative")));

  // The app alone, in this form (and barrier), once per process.
  const std::string alone_key = pair + "/" + apps::form_name(form) + "/" +
                                u.params["barrier"].dump() + "/" +
                                std::to_string(cfg.shared_carveout);
  Alone& alone = alone_runs[alone_key];
  std::string validation;
  if (alone.ms == 0) {
    apps::Result first = apps::run(rt, in, cfg);  // warm-up
    validation = validate_once(alone_key, in, first);
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      apps::Result res = apps::run(rt, in, cfg);
      t.push_back(res.ms);
      alone.groups = res.stats.max_groups;
    }
    alone.ms = median(t);
  }
  // N: the app's workgroups (the task's full grid for the non-cooperative forms).
  const std::uint32_t n = scheduled ? alone.groups : work.full_grid();
  const std::string gspec = u.params["groups"];
  const std::uint32_t k = resolve_groups(gspec, n);
  const bool whole_device = gspec == "N";
  const bool library = variant.value("task", "matmul") == "cublas";
  const double min_periods = u.params["min_periods"];
  // The apps here run for milliseconds, and each run also prepares its buffers and reads its
  // results back on the host. The paper's cooperative kernel ran for a long time: to stand in
  // for it, tasks are released on a clock of *kernel time* (advancing only while an app run's
  // kernels are running), so the runs act as one long kernel with the host work between them
  // cut out. Runs go on until min_periods periods of kernel time have passed.
  const double span_ms = min_periods * period;
  struct KernelClock {
    std::mutex mu;
    double banked = 0;  ///< kernel time of finished spans
    bool running = false;
    clk::time_point since;
    double now() {
      std::lock_guard lock(mu);
      return banked + (running ? ms_between(since, clk::now()) : 0);
    }
    /// Whether an app run's kernels are running and `release` is reached: a task arrives while
    /// the cooperative kernel runs, as in the paper, never between runs (where it would find
    /// the device empty and the next run would start beside it).
    bool due(double release) {
      std::lock_guard lock(mu);
      return running && banked + ms_between(since, clk::now()) >= release;
    }
    void set(bool on) {
      std::lock_guard lock(mu);
      if (on == running) return;
      if (running) banked += ms_between(since, clk::now());
      since = clk::now();
      running = on;
    }
  } kclock;
  cfg.on_kernel = [&](bool on) { kclock.set(on); };

  struct Sample {
    double release, gather, run, end, wall_response;
  };
  std::vector<Sample> samples;
  std::atomic<bool> done{false};
  std::string task_error;
  std::thread releaser([&] {
    try {
      double release = 0;
      while (!done) {
        while (!done && !kclock.due(release))
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (done) break;
        const auto released = clk::now();
        Sample s{release, 0, 0, 0, 0};
        if (!scheduled) {
          work.run_direct(k);
          s.run = ms_between(released, clk::now());
        } else {
          auto body = [&](Task& t) { work.run(t, t.groups()); };
          // A library call (cuBLAS) picks its own grid: it gets the capacity of k workgroups
          // (run_fraction); our matmul runs on exactly the k workgroups it gets (run).
          const TaskRecord r = whole_device || library
                                   ? rt.run_fraction(whole_device ? 1.0 : double(k) / n, body)
                                   : rt.run(k, body);
          s.gather = r.gather_ms();
          s.run = r.run_ms();
        }
        s.wall_response = ms_between(released, clk::now());
        s.end = kclock.now();
        samples.push_back(s);
        // A task that overran its period delays the next one (kernel time: the app's own
        // progress is what a missed period costs).
        release = std::max(release + period, s.end);
      }
    } catch (const std::exception& e) {
      task_error = e.what();
    }
  });
  JobStats first_stats;
  std::string error;
  std::vector<double> run_ms;
  try {
    while (task_error.empty() && (run_ms.empty() || kclock.now() < span_ms)) {
      apps::Result res = apps::run(rt, in, cfg);
      run_ms.push_back(res.ms);
      if (run_ms.size() == 1) {
        first_stats = res.stats;
        if (validation.empty()) validation = validate_once(alone_key + "/tasks", in, res);
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  done = true;
  releaser.join();
  if (!error.empty()) throw std::runtime_error(error);
  if (!task_error.empty()) throw std::runtime_error("task: " + task_error);
  if (!work.check()) throw std::runtime_error("the task's product is wrong");

  std::vector<double> gather, run, response, achieved;
  std::uint32_t met = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    gather.push_back(s.gather);
    run.push_back(s.run);
    response.push_back(s.wall_response);
    if (s.wall_response <= period) ++met;
    // The period this task could have been scheduled at: P, or its release-to-end time when it
    // overran (wall clock, the time a frame would have taken).
    achieved.push_back(std::max(period, s.wall_response));
  }
  const std::size_t runs = run_ms.size();
  double app_ms = 0;
  for (double x : run_ms) app_ms += x;
  const double per_run = app_ms / runs;
  json out{{"pair", pair},
           {"app", in.app},
           {"variant", variant["name"]},
           {"policy", variant.value("policy", "none")},
           {"form", apps::form_name(form)},
           {"task", work.describe()},
           {"workload", w["name"]},
           {"period_ms", period},
           {"gpu_ms", gpu_ms},
           {"model_slowdown", period / (period - gpu_ms)},
           {"groups_spec", gspec},
           {"groups", k},
           {"N", n},
           {"barrier", u.params["barrier"]},
           {"runs", runs},
           {"alone_ms", alone.ms},
           {"app_ms", per_run},
           {"slowdown", per_run / alone.ms},
           {"tasks", samples.size()},
           {"periods_met", met},
           {"met_fraction", samples.empty() ? 0.0 : double(met) / double(samples.size())},
           {"achieved_period_ms", summarize(achieved)},
           {"gather_ms", summarize(gather)},
           {"task_run_ms", summarize(run)},
           {"response_ms", summarize(response)},
           {"app_run_ms", summarize(run_ms)},
           {"samples",
            {{"gather_ms", gather},
             {"task_run_ms", run},
             {"response_ms", response},
             {"app_run_ms", run_ms}}},
           {"clock", "kernel time"},
           {"validation", validation}};
  if (form != apps::Form::multi_launch) {
    out["job"] = to_json(first_stats);
    out["timeline"] = timeline(first_stats);
  }
  return out;
}

void print_summary(std::FILE* f, const std::vector<json>& results) {
  std::vector<double> coop, multi;
  double worst = 0;
  std::string worst_pair;
  for (const json& r : results) {
    if (r.contains("error") || r.value("experiment", "") != "overhead" ||
        !r.value("in_geomean", true))
      continue;
    const double c = r["cooperative_over_standalone"];
    coop.push_back(c);
    if (c > worst) worst = c, worst_pair = r["pair"];
    if (r.contains("multi_launch_over_standalone"))
      multi.push_back(r["multi_launch_over_standalone"]);
  }
  if (!coop.empty())
    std::fprintf(f,
                 "Table 2: cooperative / standalone over %zu pairs: geomean %.3f, max %.3f (%s); "
                 "paper 1.07 / 1.23. Multi-launch / standalone geomean %.3f over %zu pairs.\n",
                 coop.size(), geomean(coop), worst, worst_pair.c_str(), geomean(multi),
                 multi.size());
  // Per workload and variant: the median slowdown and period over pairs, per groups request.
  std::map<std::string, std::vector<double>> slow, met;
  std::map<std::string, double> model;
  for (const json& r : results) {
    if (r.contains("error") || r.value("experiment", "") != "multitasking") continue;
    const std::string key = r["workload"].get<std::string>() + " " +
                            r["variant"].get<std::string>() + " " +
                            r["groups_spec"].get<std::string>();
    slow[key].push_back(r["slowdown"]);
    met[key].push_back(r["met_fraction"]);
    model[key] = r["model_slowdown"];
  }
  for (auto& [key, v] : slow)
    std::fprintf(f,
                 "%-40s median slowdown %.3f (model %.3f), periods met %.1f%% (median, %zu runs)\n",
                 key.c_str(), median(v), model[key], 100 * median(met[key]), v.size());
}

}  // namespace coop::bench
