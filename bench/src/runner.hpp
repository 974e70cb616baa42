// What a Runner keeps between units (inputs, calibrated tasks, alone timings, the runs already
// validated) and the experiments, each in its own file (overhead.cpp, multitasking.cpp,
// colocate.cpp).
// Internal to coop::bench.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coop/apps/apps.hpp"
#include "coop/bench/experiments.hpp"
#include "tasks.hpp"

namespace coop::bench {

// The multitasking experiment's pieces (multitasking.cpp).
struct TaskPlan;
struct AppRuns;

struct Runner::State {
  Runtime& rt;
  json config;
  std::map<std::string, std::unique_ptr<apps::Input>> inputs;
  std::map<std::string, std::unique_ptr<TaskWork>> tasks;
  /// An app's time alone in one form (and barrier, carveout), measured once per process.
  struct Alone {
    double ms = 0;
    std::uint32_t groups = 0;
  };
  std::map<std::string, Alone> alone_runs;
  std::set<std::string> validated;
  /// A request's times alone on the idle device, per task kind and length (colocate).
  std::map<std::string, std::vector<double>> request_alone_ms;
  std::string child_exe;  ///< runs the other processes of a process background

  State(Runtime& r, json c, std::string exe = {})
      : rt(r), config(std::move(c)), child_exe(std::move(exe)) {}

  /// The pair's input, made on first use; a graph app's graph read from `graph_file` (coop's
  /// binary cache, as another process of this run wrote it) rather than generated, when given.
  apps::Input& input(const std::string& pair, const std::string& graph_file = {});
  /// What the pair runs on, for the results: the graph's name, the particles or the depth.
  static std::string describe_input(const json& pair, const apps::Input& in);
  /// A calibrated task of this kind and length, made on first use.
  TaskWork& task(const std::string& kind, double gpu_ms);
  /// Validates one run per (pair, what) and process: the tests check every form under
  /// adversarial schedules; this guards the benchmark's own runs. Throws on a wrong result.
  std::string validate_once(const std::string& what, const apps::Input& in, const apps::Result& r);

  json overhead(const Unit& u);
  json multitasking(const Unit& u);
  json colocate(const Unit& u);

 private:
  /// On `on` (a runtime of a green context) instead of rt when given.
  const Alone& alone_run(const std::string& key, const apps::Input& in, const apps::RunConfig& cfg,
                         std::string& validation, Runtime* on = nullptr);
  const std::vector<double>& request_alone(const std::string& key, TaskWork& work);
  AppRuns run_beside_tasks(const apps::Input& in, apps::RunConfig cfg, TaskWork& work,
                           const TaskPlan& plan, double span_ms, const std::string& alone_key,
                           std::string& validation);
};

/// The runtime's preemption policy for one unit, restored when it ends.
class PreemptionScope {
 public:
  PreemptionScope(Runtime& rt, const PreemptionPolicy& policy) : rt_(rt), saved_(rt.preemption()) {
    rt_.set_preemption(policy);
  }
  ~PreemptionScope() { rt_.set_preemption(saved_); }
  PreemptionScope(const PreemptionScope&) = delete;
  PreemptionScope& operator=(const PreemptionScope&) = delete;

 private:
  Runtime& rt_;
  PreemptionPolicy saved_;
};

/// A job's counters as JSON.
json to_json(const JobStats& s);
/// M over time relative to the job's start, at most `limit` points.
json timeline(const JobStats& s, std::size_t limit = 400);

}  // namespace coop::bench
