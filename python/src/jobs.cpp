#include "jobs.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "coop/graph/generate.hpp"

namespace coop::python {

// ---------------------------------------------------------------- a job on its own thread

ThreadedJob::~ThreadedJob() { end_thread(); }

void ThreadedJob::end_thread() noexcept {
  if (!thread_.joinable()) return;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_; });  // a job being launched is cancelled once it runs
  }
  Job j = job();
  if (j) j.cancel();
  thread_.join();
}

void ThreadedJob::start(std::function<void(const std::function<void(const Job&)>& publish)> body) {
  thread_ = std::thread([this, body = std::move(body)] {
    std::exception_ptr error;
    try {
      body([this](const Job& j) {
        std::lock_guard lock(mu_);
        job_ = j;
        started_ = true;
        cv_.notify_all();
      });
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mu_);
    error_ = error;
    started_ = finished_ = true;
    cv_.notify_all();
  });
}

void ThreadedJob::wait_started() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return started_; });
  if (finished_ && error_) std::rethrow_exception(error_);
}

void ThreadedJob::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return finished_; });  // the thread is joined by the destructor
  if (error_) std::rethrow_exception(error_);
}

bool ThreadedJob::done() const {
  std::lock_guard lock(mu_);
  return finished_;
}

Job ThreadedJob::job() const {
  std::lock_guard lock(mu_);
  return job_;
}

bool ThreadedJob::cancel() {
  Job j = job();
  return j && j.cancel();
}

void ThreadedJob::require_finished() const {
  std::lock_guard lock(mu_);
  if (!finished_) throw std::logic_error(name_ + ": the job has not finished (wait() first)");
  if (error_) throw std::logic_error(name_ + ": the job failed or was cancelled; it has no result");
}

// ---------------------------------------------------------------- reading the parameters

const std::vector<std::string> kLaunchParams = {
    "form", "policy", "barrier", "groups", "threads", "carveout", "yield_in_phases", "ids_by_sm"};

namespace {

const char* type_name(const Value& v) {
  switch (v.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "float";
    default:
      return "str";
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string get_string(const Params& p, const std::string& key, const std::string& fallback) {
  auto it = p.find(key);
  if (it == p.end()) return fallback;
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  throw std::invalid_argument(key + ": expected a str, got " + type_name(it->second));
}

std::int64_t get_int(const Params& p, const std::string& key, std::int64_t fallback,
                     std::int64_t lo, std::int64_t hi) {
  auto it = p.find(key);
  if (it == p.end()) return fallback;
  const auto* i = std::get_if<std::int64_t>(&it->second);
  if (!i) throw std::invalid_argument(key + ": expected an int, got " + type_name(it->second));
  if (*i < lo || *i > hi)
    throw std::invalid_argument(key + ": expected " + std::to_string(lo) + ".." +
                                std::to_string(hi) + ", got " + std::to_string(*i));
  return *i;
}

bool get_bool(const Params& p, const std::string& key, bool fallback) {
  auto it = p.find(key);
  if (it == p.end()) return fallback;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  throw std::invalid_argument(key + ": expected a bool, got " + type_name(it->second));
}

void require_known(const std::string& name, const Params& p,
                   const std::vector<std::string>& known) {
  for (const auto& [key, value] : p)
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw std::invalid_argument(name + " takes no parameter '" + key + "' (it takes " +
                                  join(known) + ")");
}

apps::RunConfig run_config(const Params& p) {
  constexpr std::int64_t u32 = std::numeric_limits<std::uint32_t>::max();
  apps::RunConfig cfg;
  cfg.form = apps::parse_form(get_string(p, "form", "cooperative"));
  cfg.policy = Policy::parse(get_string(p, "policy", "generous"));
  const std::string barrier = get_string(p, "barrier", "query");
  if (barrier != "query" && barrier != "plain")
    throw std::invalid_argument("barrier: expected query or plain, got '" + barrier + "'");
  cfg.barrier = barrier == "query" ? ResizeBarrier::query : ResizeBarrier::plain;
  cfg.groups = std::uint32_t(get_int(p, "groups", 0, 0, u32));
  cfg.threads = std::uint32_t(get_int(p, "threads", 0, 0, u32));
  cfg.shared_carveout = int(get_int(p, "carveout", cfg.shared_carveout, -1, 100));
  cfg.yield_in_phases = get_bool(p, "yield_in_phases", false);
  cfg.ids_by_sm = get_bool(p, "ids_by_sm", false);
  return cfg;
}

// ---------------------------------------------------------------- the paper's apps

namespace {

const std::vector<std::string> kInputParams = {"graph",    "gen",       "gen_seed",   "source",
                                               "priority", "seed",      "bc_sources", "particles",
                                               "max_leaf", "max_depth", "moves",      "depth"};

// The app's input, as `coop run` builds it from the same options.
apps::Input read_input(const apps::AppInfo& info, const Params& p) {
  constexpr std::int64_t u32 = std::numeric_limits<std::uint32_t>::max();
  apps::Input in;
  in.app = std::string(info.name);
  in.source = std::uint32_t(get_int(p, "source", 0, 0, u32));
  const std::string priority = get_string(p, "priority", "hashed");
  if (priority != "hashed" && priority != "id")
    throw std::invalid_argument("priority: expected hashed or id, got '" + priority + "'");
  in.priority = priority == "id" ? apps::Priority::id : apps::Priority::hashed;
  in.seed = std::uint32_t(get_int(p, "seed", 1, 0, u32));
  in.bc_sources = std::uint32_t(get_int(p, "bc_sources", 0, 0, u32));
  in.particles = std::uint32_t(get_int(p, "particles", in.particles, 0, u32));
  in.max_leaf = std::uint32_t(get_int(p, "max_leaf", in.max_leaf, 0, u32));
  in.max_depth = std::uint32_t(get_int(p, "max_depth", in.max_depth, 0, u32));
  in.moves = get_string(p, "moves", "");
  in.depth = std::uint32_t(get_int(p, "depth", in.depth, 0, u32));
  const std::string file = get_string(p, "graph", ""), spec = get_string(p, "gen", "");
  if (info.needs_graph()) {
    if (file.empty() == spec.empty())
      throw std::invalid_argument(in.app + " needs exactly one of graph=FILE and gen=SPEC");
    if (!file.empty())
      in.graph = std::make_shared<graph::Graph>(graph::read_graph(file));
    else
      in.graph = std::make_shared<graph::Graph>(
          graph::generate(spec, std::uint64_t(get_int(p, "gen_seed", 1, 0, INT64_MAX))).graph);
  } else if (!file.empty() || !spec.empty()) {
    throw std::invalid_argument(in.app + " does not read a graph");
  }
  in.check();
  return in;
}

class AppJob : public ThreadedJob {
 public:
  AppJob(Runtime& rt, const apps::AppInfo& info, apps::Input in, apps::RunConfig cfg)
      : ThreadedJob(std::string(info.name)), info_(info), in_(std::move(in)) {
    apps::check_config(info, cfg);  // here, before the run's thread starts
    start([this, &rt, cfg](const std::function<void(const Job&)>& publish) mutable {
      cfg.on_job = publish;
      result_ = apps::run(rt, in_, cfg);
    });
  }

  JobResult result() const override {
    require_finished();
    JobResult out;
    switch (info_.id) {
      case apps::AppId::bc:
        out.reals = result_.centrality;
        out.rows = out.reals.size();
        out.cols = 1;
        break;
      case apps::AppId::octree:
        // One row per non-empty leaf: depth, centre x/y/z, particles (`coop run --output`).
        for (const apps::OctreeNode& c : result_.nodes)
          if (c.child == 0 && c.end > c.begin) {
            out.reals.insert(out.reals.end(),
                             {double(c.depth), c.cx, c.cy, c.cz, double(c.end - c.begin)});
            ++out.rows;
          }
        out.cols = 5;
        break;
      case apps::AppId::game:
        out.scalar = result_.game_value;
        break;
      default:
        out.ints = result_.values;
    }
    return out;
  }
  std::pair<bool, std::string> validate() const override {
    require_finished();
    const apps::Validation v = apps::validate(in_, result_);
    return {v.ok, v.detail};
  }
  std::string summary() const override {
    require_finished();
    return apps::summarize(in_, result_);
  }
  ~AppJob() override { end_thread(); }

 private:
  const apps::AppInfo& info_;
  apps::Input in_;
  apps::Result result_;
};

}  // namespace

std::vector<std::string> launchable_names() {
  std::vector<std::string> names = apps::app_names();
  for (const std::string& e : example_names()) names.push_back(e);
  return names;
}

void check_name(const std::string& name) {
  const std::vector<std::string> names = launchable_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw std::invalid_argument("unknown app or kernel '" + name + "' (known: " + join(names) +
                                ")");
}

std::vector<std::string> parameter_names(const std::string& name) {
  check_name(name);
  if (is_example(name)) return example_parameter_names(name);
  std::vector<std::string> names = kInputParams;
  names.insert(names.end(), kLaunchParams.begin(), kLaunchParams.end());
  names.push_back("runs_per_kernel");
  return names;
}

std::unique_ptr<ThreadedJob> launch(Runtime& rt, const std::string& name, const Params& params) {
  require_known(name, params, parameter_names(name));
  if (is_example(name)) return launch_example(rt, name, params);
  const apps::AppInfo& info = apps::find_app(name);
  apps::RunConfig cfg = run_config(params);
  cfg.runs_per_kernel = std::uint32_t(
      get_int(params, "runs_per_kernel", 1, 1, std::numeric_limits<std::uint32_t>::max()));
  auto job = std::make_unique<AppJob>(rt, info, read_input(info, params), cfg);
  job->wait_started();
  return job;
}

}  // namespace coop::python
