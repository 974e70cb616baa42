// The multitasking experiment (Fig. 5 responsiveness, Fig. 6 throughput and period, Table 3
// kernel-level preemption, and the baselines): an app runs back to back while high-priority
// tasks are released periodically.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "config.hpp"
#include "coop/bench/percentiles.hpp"
#include "kernel_clock.hpp"
#include "runner.hpp"

namespace coop::bench {

/// How the tasks of one unit are released and run.
struct TaskPlan {
  double period = 0;
  bool scheduled = false;     ///< through the scheduler (the cooperative form) or directly
  bool whole_device = false;  ///< k = N: run_fraction(1)
  bool library = false;       ///< cuBLAS picks its own grid: run_fraction(k / N)
  std::uint32_t k = 1, n = 1;
};

struct TaskSample {
  double release, gather, run, end, wall_response;
  /// How long the app's run had run when the task was released and when its work began
  /// (kernel ms; -1 between runs): where in the app each gather fell.
  double into_run, start_into_run;
};

/// The app's runs beside the tasks.
struct AppRuns {
  std::vector<double> ms;
  JobStats first_stats;
  std::vector<TaskSample> tasks;
};

namespace {

/// A thread that releases a task every period of kernel time (or as soon as the previous one
/// ends, when it overran) until stopped.
class TaskReleaser {
 public:
  TaskReleaser(Runtime& rt, TaskWork& work, KernelClock& clock, const TaskPlan& plan)
      : rt_(rt), work_(work), clock_(clock), plan_(plan), thread_([this] { loop(); }) {}
  ~TaskReleaser() { stop(); }
  TaskReleaser(const TaskReleaser&) = delete;
  TaskReleaser& operator=(const TaskReleaser&) = delete;

  /// Stops releasing and waits for the task in flight.
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool failed() const { return failed_; }
  /// After stop(): why a task failed, and the tasks that ran.
  const std::string& error() const { return error_; }
  const std::vector<TaskSample>& samples() const { return samples_; }

 private:
  void loop() {
    try {
      double release = 0;
      while (!done_) {
        while (!done_ && !clock_.due(release))
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (done_) break;
        const TaskSample s = run_one(release);
        samples_.push_back(s);
        // A task that overran its period delays the next one (kernel time: the app's own
        // progress is what a missed period costs).
        release = std::max(release + plan_.period, s.end);
      }
    } catch (const std::exception& e) {
      error_ = e.what();
      failed_ = true;
    }
  }

  TaskSample run_one(double release) {
    const auto released = clk::now();
    TaskSample s{release, 0, 0, 0, 0, clock_.into_span(), -1};
    if (!plan_.scheduled) {
      work_.run_direct(plan_.k);
      s.run = ms_between(released, clk::now());
    } else {
      auto body = [&](Task& t) {
        s.start_into_run = clock_.into_span();
        work_.run(t, t.groups());
      };
      // A library call (cuBLAS) picks its own grid: it gets the capacity of k workgroups
      // (run_fraction); our matmul runs on exactly the k workgroups it gets (run).
      const TaskRecord r =
          plan_.whole_device || plan_.library
              ? rt_.run_fraction(plan_.whole_device ? 1.0 : double(plan_.k) / plan_.n, body)
              : rt_.run(plan_.k, body);
      s.gather = r.gather_ms();
      s.run = r.run_ms();
    }
    s.wall_response = ms_between(released, clk::now());
    s.end = clock_.now();
    return s;
  }

  Runtime& rt_;
  TaskWork& work_;
  KernelClock& clock_;
  const TaskPlan plan_;
  std::atomic<bool> done_{false}, failed_{false};
  std::string error_;
  std::vector<TaskSample> samples_;
  std::thread thread_;  // last: starts once everything it reads is made
};

/// Per task: gather, run and response times, periods met, and the period it could have been
/// scheduled at.
json task_statistics(const std::vector<TaskSample>& samples, double period) {
  std::vector<double> gather, run, response, achieved, into_run, start_into_run;
  std::uint32_t met = 0;
  for (const TaskSample& s : samples) {
    gather.push_back(s.gather);
    into_run.push_back(s.into_run);
    start_into_run.push_back(s.start_into_run);
    run.push_back(s.run);
    response.push_back(s.wall_response);
    if (s.wall_response <= period) ++met;
    // P, or its release-to-end time when it overran (wall clock, the time a frame would have
    // taken).
    achieved.push_back(std::max(period, s.wall_response));
  }
  return {{"tasks", samples.size()},
          {"periods_met", met},
          {"met_fraction", samples.empty() ? 0.0 : double(met) / double(samples.size())},
          {"achieved_period_ms", summarize(achieved)},
          {"gather_ms", summarize(gather)},
          {"task_run_ms", summarize(run)},
          {"response_ms", summarize(response)},
          {"samples",
           {{"gather_ms", gather},
            {"task_run_ms", run},
            {"response_ms", response},
            {"request_into_run_ms", into_run},
            {"task_start_into_run_ms", start_into_run}}}};
}

}  // namespace

// Fig. 5 / Fig. 6 / Table 3: the app runs back to back (enough runs to span `min_periods`
// periods of kernel time) while a task is released every period; the app's slowdown against
// its alone time, and per task the gather and run times and whether it finished within its
// period.
json Runner::State::multitasking(const Unit& u) {
  const std::string pair = u.params["pair"];
  const json& variant = u.params["variant"];
  const json& w = u.params["workload"];
  const double period = w["period_ms"], gpu_ms = w["gpu_ms"];
  const apps::Form form = apps::parse_form(variant.value("form", "cooperative"));
  apps::RunConfig cfg{.form = form,
                      .policy = Policy::generous(),
                      .shared_carveout = carveout_of(variant),
                      .yield_in_phases = variant.value("yield_in_phases", false)};
  if (!u.params["barrier"].is_null())
    cfg.barrier = u.params["barrier"] == "plain" ? ResizeBarrier::plain : ResizeBarrier::query;
  apps::Input& in = input(pair);
  TaskWork& work = task(variant.value("task", "matmul"), gpu_ms);
  PreemptionScope preemption(rt, PreemptionPolicy::parse(variant.value("policy", "cooperative")));

  const std::string alone_key =
      pair + "/" + apps::form_name(form) + "/" + u.params["barrier"].dump() + "/" +
      std::to_string(cfg.shared_carveout) + (cfg.yield_in_phases ? "/yield" : "");
  std::string validation;
  const Alone& alone = alone_run(alone_key, in, cfg, validation);
  // N: the app's workgroups (the task's full grid for the non-cooperative forms).
  TaskPlan plan{.period = period, .scheduled = form == apps::Form::cooperative};
  plan.n = plan.scheduled ? alone.groups : work.full_grid();
  const std::string gspec = u.params["groups"];
  plan.k = resolve_groups(gspec, plan.n);
  plan.whole_device = gspec == "N";
  plan.library = variant.value("task", "matmul") == "cublas";
  const double min_periods = u.params["min_periods"];
  const AppRuns runs =
      run_beside_tasks(in, cfg, work, plan, min_periods * period, alone_key, validation);

  json out = task_statistics(runs.tasks, period);
  out["samples"]["app_run_ms"] = runs.ms;
  double app_ms = 0;
  for (double x : runs.ms) app_ms += x;
  const double per_run = app_ms / double(runs.ms.size());
  out.update(json{{"pair", pair},
                  {"app", in.app},
                  {"variant", variant["name"]},
                  {"policy", variant.value("policy", "none")},
                  {"form", apps::form_name(form)},
                  {"yield_in_phases", cfg.yield_in_phases},
                  {"task", work.describe()},
                  {"workload", w["name"]},
                  {"period_ms", period},
                  {"gpu_ms", gpu_ms},
                  {"model_slowdown", period / (period - gpu_ms)},
                  {"groups_spec", gspec},
                  {"groups", plan.k},
                  {"N", plan.n},
                  {"barrier", u.params["barrier"]},
                  {"runs", runs.ms.size()},
                  {"alone_ms", alone.ms},
                  {"app_ms", per_run},
                  {"slowdown", per_run / alone.ms},
                  {"app_run_ms", summarize(runs.ms)},
                  {"clock", "kernel time"},
                  {"validation", validation}});
  if (form != apps::Form::multi_launch) {
    out["job"] = to_json(runs.first_stats);
    out["timeline"] = timeline(runs.first_stats);
  }
  return out;
}

// The app alone, in this form (and barrier), once per process: a warm-up run (validated), then
// the median of three. A launch of a second or more (the colocate config's long kernels) is its
// own warm-up, its first-launch costs being milliseconds, and timed once: three more would spend
// half a minute per form for a spread of a fraction of a percent.
const Runner::State::Alone& Runner::State::alone_run(const std::string& key, const apps::Input& in,
                                                     const apps::RunConfig& cfg,
                                                     std::string& validation, Runtime* on) {
  Alone& alone = alone_runs[key];
  if (alone.ms != 0) return alone;
  Runtime& runtime = on ? *on : rt;
  apps::Result first = apps::run(runtime, in, cfg);
  validation = validate_once(key, in, first);
  if (first.ms >= 1000) {
    alone.ms = first.ms;
    alone.groups = first.stats.max_groups;
    return alone;
  }
  std::vector<double> t;
  for (int r = 0; r < 3; ++r) {
    apps::Result res = apps::run(runtime, in, cfg);
    t.push_back(res.ms);
    alone.groups = res.stats.max_groups;
  }
  alone.ms = median(t);
  return alone;
}

// Runs the app back to back until `span_ms` of kernel time has passed (at least once) while
// a TaskReleaser releases tasks; throws when a run or a task fails or the task's product is
// wrong.
AppRuns Runner::State::run_beside_tasks(const apps::Input& in, apps::RunConfig cfg, TaskWork& work,
                                        const TaskPlan& plan, double span_ms,
                                        const std::string& alone_key, std::string& validation) {
  KernelClock kclock;
  cfg.on_kernel = [&](bool on) { kclock.set(on); };
  AppRuns runs;
  std::string error;
  TaskReleaser releaser(rt, work, kclock, plan);
  try {
    while (!releaser.failed() && (runs.ms.empty() || kclock.now() < span_ms)) {
      apps::Result res = apps::run(rt, in, cfg);
      runs.ms.push_back(res.ms);
      if (runs.ms.size() == 1) {
        runs.first_stats = res.stats;
        if (validation.empty()) validation = validate_once(alone_key + "/tasks", in, res);
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  releaser.stop();
  if (!error.empty()) throw std::runtime_error(error);
  if (releaser.failed()) throw std::runtime_error("task: " + releaser.error());
  if (!work.check()) throw std::runtime_error("the task's product is wrong");
  runs.tasks = releaser.samples();
  return runs;
}

}  // namespace coop::bench
