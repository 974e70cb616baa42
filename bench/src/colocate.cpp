// The co-location experiment (`coop bench --config colocate`, docs/colocation.md): an app runs
// back to back as a long background while requests (the multitasking experiment's task kinds:
// a cuBLAS SGEMM or our matmul, sized to take E ms alone) arrive as a Poisson stream at a
// fraction of the device's time, under one mechanism per unit: no background (the request
// stream's own floor), stream priority only (the app as a plain persistent kernel), or the app
// as a cooperative job with each request a task (shrink or suspend, a share of the device,
// enqueued after the gather or at the request, or prestaged on the high-priority stream), a static
// split (green contexts), or two processes (time slicing, MPS). Arrivals run on the app's kernel
// clock (kernel_clock.hpp), so back-to-back runs stand in for one long kernel.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "config.hpp"
#include "coop/bench/percentiles.hpp"
#include "coop/bench/processes.hpp"
#include "coop/bench/task_steps.hpp"
#include "coop/graph/graph.hpp"
#ifdef COOP_HAVE_CUDA
#include "coop/cuda/green.hpp"
#include "coop/cuda/streams.hpp"
#endif
#include "kernel_clock.hpp"
#include "runner.hpp"

namespace coop::bench {

namespace {

/// What serving the requests of one unit measured.
struct Served {
  std::vector<double> latency;  ///< arrival to completion, queueing included
  std::vector<double> gather;   ///< cooperative: the task's request to its capacity free
  std::vector<double> run;      ///< cooperative: the task's work
  TaskSteps host;               ///< cooperative: the host's steps around the gather and the work
  double busy_ms = 0;           ///< the requests' service time
};

/// A thread that serves requests arriving as a Poisson process (rate load / alone_ms, in the
/// clock's time: requests arrive only while the background's kernel runs), one at a time in
/// arrival order, until stopped. A request's latency is wall time from the moment the clock
/// passed its arrival to its end: the serving thread sleeps to ~100 us before an arrival and
/// then spins, so it starts on time; a request that arrived while another was served waits
/// (between runs too) and counts that wait.
class RequestStream {
 public:
  RequestStream(KernelClock& clock, double load, double alone_ms, std::uint64_t seed,
                std::function<void(Served&)> serve)
      : clock_(clock), rng_(seed), gap_(load / alone_ms), serve_(std::move(serve)), thread_([this] {
          loop();
        }) {}
  ~RequestStream() { stop(); }
  RequestStream(const RequestStream&) = delete;
  RequestStream& operator=(const RequestStream&) = delete;

  /// Stops taking requests and waits for the one being served.
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  /// After stop().
  const Served& served() const { return served_; }

 private:
  void loop() {
    try {
      double arrival = gap_(rng_);
      while (!done_) {
        if (!wait_for(arrival)) break;
        const auto arrived = clock_.wall_at(arrival);
        const auto start = clk::now();
        serve_(served_);
        const auto end = clk::now();
        served_.latency.push_back(ms_between(arrived, end));
        served_.busy_ms += ms_between(start, end);
        arrival += gap_(rng_);
      }
    } catch (const std::exception& e) {
      error_ = e.what();
      failed_ = true;
    }
  }
  // Until the clock has reached `arrival`; false when stopped first.
  bool wait_for(double arrival) {
    while (!done_) {
      const double ahead = arrival - clock_.now();
      if (ahead <= 0) return true;           // due, also when the clock stands between runs
      if (!clock_.running() || ahead > 0.2)  // far ahead, or no arrival until the next run
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::int64_t(std::clamp(ahead - 0.1, 0.05, 1.0) * 1000)));
      else
        std::this_thread::yield();  // spin the last ~100 us (yielding to the CPU backend)
    }
    return false;
  }

  KernelClock& clock_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;
  std::function<void(Served&)> serve_;
  std::atomic<bool> done_{false}, failed_{false};
  std::string error_;
  Served served_;
  std::thread thread_;  // last: starts once everything it reads is made
};

/// summarize() with the 99.9th percentile.
json latency_json(const std::vector<double>& ms) {
  json s = summarize(ms);
  s["p999"] = percentile(ms, 0.999);
  return s;
}

const char* background_name(Mechanism::Background b) {
  switch (b) {
    case Mechanism::Background::none:
      return "none";
    case Mechanism::Background::standalone:
      return "standalone";
    case Mechanism::Background::green:
      return "green";
    case Mechanism::Background::process:
      return "process";
    case Mechanism::Background::cooperative:
      break;
  }
  return "cooperative";
}

/// A static split for one unit (the green mechanism): two green contexts, a runtime of the
/// app's own on the larger, and a stream for the requests on the other.
class StaticSplit {
 public:
  StaticSplit(const Runtime& rt, std::uint32_t request_sms) {
#ifdef COOP_HAVE_CUDA
    if (rt.backend() != Backend::cuda)
      throw std::invalid_argument("colocate: a green mechanism needs the CUDA backend");
    split_ = std::make_unique<cuda::GreenSplit>(rt.options().device, request_sms);
    RuntimeOptions o = rt.options();
    o.backend = RuntimeOptions::Select::cuda;
    o.green_context = split_->rest();
    runtime_ = std::make_unique<Runtime>(o);
    stream_ = cuda::create_stream(true, "a stream on the requests' SMs", split_->part());
#else
    (void)rt;
    (void)request_sms;
    throw std::invalid_argument("colocate: a green mechanism needs the CUDA backend");
#endif
  }
  ~StaticSplit() {
#ifdef COOP_HAVE_CUDA
    cuda::destroy_stream(stream_);
#endif
  }
  StaticSplit(const StaticSplit&) = delete;
  StaticSplit& operator=(const StaticSplit&) = delete;

  Runtime& runtime() { return *runtime_; }
  CUstream_st* requests() const { return stream_; }
  json describe() const {
#ifdef COOP_HAVE_CUDA
    return {{"request_sms", split_->part_sms()}, {"background_sms", split_->rest_sms()}};
#else
    return {};
#endif
  }

 private:
#ifdef COOP_HAVE_CUDA
  std::unique_ptr<cuda::GreenSplit> split_;  // first: the runtime and the stream live on it
#endif
  std::unique_ptr<Runtime> runtime_;
  CUstream_st* stream_ = nullptr;
};

/// When an app's back-to-back runs stop: once the kernel clock reached `seconds`, or after
/// `max_wall_ms` of wall time (short runs with much host work between them, octree: 21 ms of
/// kernel and ~1 s of copies per run on an H100, would take minutes to reach it; the unit
/// reports the kernel time it got). At least one run.
class BackToBack {
 public:
  BackToBack(double seconds, double max_wall_ms)
      : kernel_ms_(seconds * 1e3), max_wall_ms_(max_wall_ms), started_(clk::now()) {}
  bool more(const std::vector<double>& runs, const KernelClock& clock) const {
    return runs.empty() ||
           (clock.now() < kernel_ms_ && ms_between(started_, clk::now()) < max_wall_ms_);
  }

 private:
  double kernel_ms_, max_wall_ms_;
  clk::time_point started_;
};

/// Ends the background's launch after a run once the unit's wall time is up (max_seconds): a
/// launch of many runs (kernel_seconds) that a mechanism starves would otherwise hold the unit
/// until its last run, past --unit-timeout. The launch's runs say how much it did.
class WallLimit {
 public:
  WallLimit(apps::RunStop& stop, double after_ms)
      : thread_([this, &stop,
                 at = clk::now() + std::chrono::duration_cast<clk::duration>(
                                       std::chrono::duration<double, std::milli>(after_ms))] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_until(lock, at, [this] { return done_; })) stop.request();
        }) {}
  ~WallLimit() {
    {
      const std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  WallLimit(const WallLimit&) = delete;
  WallLimit& operator=(const WallLimit&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the rest is made
};

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// A process background: the app's back-to-back runs in one child process and the request
/// stream in another (both `child_exe bench-child SPEC`, Runner::child), on one kernel clock in
/// a shared file, so that requests arrive only while the app's kernels run, as in one process.
/// The request side starts first and is ready (its task warm) before the app's side starts.
/// With `mps_percent`, an MPS daemon of this unit's own serves both, the app's process limited
/// to that share of the SMs. This process waits without touching the device.
struct ProcessSides {
  Served served;
  std::vector<double> runs;
  std::uint64_t app_runs = 0;  ///< runs of the app over the launches
  double kernel_ms = 0;
  std::string validation;

  /// Throws std::invalid_argument when the mechanism cannot run here (before any work).
  static void check(const Mechanism& mech, const std::string& exe, const Runtime& rt) {
    if (exe.empty())
      throw std::invalid_argument("colocate " + mech.name +
                                  ": a process background runs the coop command (coop bench)");
    if (mech.mps_percent && rt.backend() != Backend::cuda)
      throw std::invalid_argument("colocate " + mech.name + ": MPS needs the CUDA backend");
  }

  ProcessSides(const json& config, const std::string& exe, const Runtime& rt,
               const std::string& pair, const apps::Input& in, const Mechanism& mech,
               TaskWork& work, const json& request, double load, double alone_ms,
               std::uint64_t seed, double seconds, double max_seconds,
               std::uint32_t runs_per_kernel) {
    check(mech, exe, rt);
    const TempFolder folder("coop-colocate");  // the clock, the specs, the graph
    const std::filesystem::path& dir = folder.path();
    KernelClock clock((dir / "clock").string(), true);
    const json side{{"config", config},
                    {"pair", pair},
                    {"clock", (dir / "clock").string()},
                    {"backend", backend_name(rt.backend())},
                    {"device", rt.options().device}};
    json rq = side, bg = side;
    rq.update({{"role", "requests"},
               {"request", request},
               {"products", work.describe()["products"]},
               {"load", load},
               {"alone_ms", alone_ms},
               {"seed", seed},
               // An orphan (this process stopped by --unit-timeout) gives up by itself.
               {"give_up_seconds", max_seconds + 900}});
    bg.update({{"role", "background"},
               {"seconds", seconds},
               {"max_seconds", max_seconds},
               {"runs_per_kernel", runs_per_kernel}});
    if (in.graph) {  // read back in a second, where generating it again can take a minute
      const auto file = dir / "graph.coopcsr";
      graph::write_binary(*in.graph, file.string());
      bg["graph_file"] = file.string();
    }
    auto command = [&](const char* name, const json& spec) {
      const auto file = dir / name;
      std::ofstream(file) << spec.dump() << '\n';
      return shell_quoted(exe) + " bench-child " + shell_quoted(file.string());
    };
    std::unique_ptr<MpsDaemon> mps;
    if (mech.mps_percent) mps = std::make_unique<MpsDaemon>();
    const std::string env = mps ? mps->env() : "";
    ChildProcess requests(env + command("requests.json", rq));
    if (!requests.wait_for_line("ready")) {
      requests.result();  // throws with its status and error
      throw std::runtime_error("the request process ended before it was ready");
    }
    json b, r;
    try {
      const std::string limit =
          mech.mps_percent
              ? "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + std::to_string(mech.mps_percent) + " "
              : "";
      b = ChildProcess(env + limit + command("background.json", bg)).result();
    } catch (...) {
      clock.finish();  // the request side stops waiting for arrivals
      try {
        requests.result();
      } catch (...) {  // the background's failure is the one to report
      }
      throw;
    }
    clock.finish();
    r = requests.result();
    served.latency = r["latency_ms"].get<std::vector<double>>();
    served.busy_ms = r["busy_ms"];
    runs = b["runs_ms"].get<std::vector<double>>();
    app_runs = b["app_runs"];
    kernel_ms = b["kernel_ms"];
    validation = b["validation"];
  }
};

}  // namespace

const std::vector<double>& Runner::State::request_alone(const std::string& key, TaskWork& work) {
  std::vector<double>& ms = request_alone_ms[key];
  if (!ms.empty()) return ms;
  // As many as fit in about a second, at least 50 (the tail of the request alone is the bound
  // its latency beside the background is judged by).
  const double e = std::max(work.describe()["alone_ms"].get<double>(), 1e-3);
  const int reps = std::clamp(int(1000 / e), 50, 300);
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clk::now();
    work.run_direct(work.full_grid());
    ms.push_back(ms_between(t0, clk::now()));
  }
  if (!work.check()) throw std::runtime_error("the request's product is wrong (alone)");
  return ms;
}

// One mechanism at one load: the request alone (once per process), the app alone as a plain
// persistent kernel (the background a user has without coop) and in the mechanism's form, then
// the app back to back for `seconds` of kernel time (at least one run) while requests arrive.
json Runner::State::colocate(const Unit& u) {
  const std::string pair = u.params["pair"];
  const double load = u.params["load"], seconds = u.params["seconds"];
  const Mechanism mech = parse_mechanism(u.params["mechanism"], "colocate mechanism");
  const json& request = u.params["request"];
  const std::string kind = request.value("task", "cublas");
  const double gpu_ms = request["gpu_ms"];
  if (mech.background == Mechanism::Background::process) ProcessSides::check(mech, child_exe, rt);
  apps::Input& in = input(pair);
  TaskWork& work = task(kind, gpu_ms);
  const std::vector<double>& alone = request_alone(kind + "/" + std::to_string(gpu_ms), work);
  const Percentiles alone_p(alone);
  const double alone_ms = alone_p.median(), slo_ms = 1.2 * alone_p.at(0.99) + 0.060;

  std::string validation;
  apps::RunConfig plain{.form = apps::Form::standalone, .policy = Policy::generous()};
  const int carveout = plain.shared_carveout;
  std::string plain_key = pair + "/standalone/null/" + std::to_string(carveout);
  // A long job (the section's kernel_seconds): the app runs again inside its kernel as many
  // times as fill that much of the plain kernel's time alone, so that a request never finds
  // the device between runs.
  const double single_ms = alone_run(plain_key, in, plain, validation).ms;
  const double kernel_seconds = u.params.value("kernel_seconds", 0.0);
  if (kernel_seconds > 0 && single_ms > 0) {
    plain.runs_per_kernel =
        std::uint32_t(std::max(1.0, std::ceil(kernel_seconds * 1e3 / single_ms)));
    if (plain.runs_per_kernel > 1) plain_key += "/runs-" + std::to_string(plain.runs_per_kernel);
  }
  const double plain_alone_ms =
      plain.runs_per_kernel > 1 ? alone_run(plain_key, in, plain, validation).ms : single_ms;
  apps::RunConfig cfg = plain;
  cfg.form = mech.background == Mechanism::Background::cooperative ? apps::Form::cooperative
                                                                   : apps::Form::standalone;
  cfg.yield_in_phases = mech.yield_in_phases;
  cfg.ids_by_sm = mech.ids_by_sm;
  std::string form_key =
      pair + "/" + apps::form_name(cfg.form) + "/null/" + std::to_string(carveout) +
      (mech.yield_in_phases ? "/yield" : "") + (mech.ids_by_sm ? "/ids-by-sm" : "") +
      (cfg.runs_per_kernel > 1 ? "/runs-" + std::to_string(cfg.runs_per_kernel) : std::string());
  // Green: the app on the SMs the requests leave it, in a runtime of its own.
  std::unique_ptr<StaticSplit> split;
  if (mech.background == Mechanism::Background::green) {
    split = std::make_unique<StaticSplit>(rt, mech.sms);
    form_key += "/green-" + std::to_string(mech.sms);
  }
  Runtime& app_rt = split ? split->runtime() : rt;
  const double form_alone_ms = alone_run(form_key, in, cfg, validation, &app_rt).ms;

  PreemptionScope preemption(rt, mech.policy);
  auto serve = [&](Served& s) {
    if (split) {
      work.run_on(split->requests(), work.full_grid());
      return;
    }
    if (mech.background != Mechanism::Background::cooperative) {
      work.run_direct(work.full_grid());
      return;
    }
    TaskRecord r;
    const double called = rt.now_ms();
    if (mech.prestage) {
      // Enqueued at once on the high-priority stream: the hardware places its blocks as the
      // job's workgroups leave; the task holds what was gathered until the request ends.
      work.start_direct();
      r = rt.run_fraction(mech.share, [&](Task&) { work.finish_direct(); });
    } else {
      TaskHandle h = rt.submit_fraction(
          mech.share, [&](Task& t) { work.run(t, t.groups()); }, 0, mech.launch);
      r = h.record();
    }
    s.host.add(called, r, rt.now_ms());
    s.gather.push_back(r.gather_ms());
    s.run.push_back(r.run_ms());
  };

  const auto started = clk::now();
  const double max_wall_ms = u.params.value("max_seconds", 10 * seconds) * 1e3;
  const std::uint64_t seed = u.params["seed"].get<std::uint64_t>();
  std::vector<double> runs;
  // Runs of the app over the launches: fewer than runs_per_kernel a launch when one ended early.
  std::uint64_t app_runs = 0;
  JobStats first_stats;
  Served s;
  double span_ms = 0;
  if (mech.background == Mechanism::Background::process) {
    ProcessSides sides(config, child_exe, rt, pair, in, mech, work, request, load, alone_ms, seed,
                       seconds, max_wall_ms / 1e3, cfg.runs_per_kernel);
    s = std::move(sides.served);
    runs = std::move(sides.runs);
    app_runs = sides.app_runs;
    span_ms = sides.kernel_ms;
    validation = sides.validation;
  } else {
    KernelClock kclock;
    std::string error;
    RequestStream stream(kclock, load, alone_ms, seed, serve);
    try {
      if (mech.background == Mechanism::Background::none) {
        kclock.set(true);  // no background: arrivals on the wall clock
        while (!stream.failed() && kclock.now() < seconds * 1e3)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else {
        cfg.on_kernel = [&](bool on) { kclock.set(on); };
        apps::RunStop stop;
        cfg.stop = &stop;
        const WallLimit limit(stop, max_wall_ms);
        BackToBack loop(seconds, max_wall_ms);
        while (!stream.failed() && loop.more(runs, kclock)) {
          apps::Result res = apps::run(app_rt, in, cfg);
          runs.push_back(res.ms);
          app_runs += res.runs;
          if (runs.size() == 1) {
            first_stats = res.stats;
            // Once per pair and mechanism: the run beside its requests (loads add no new path).
            validation = validate_once(form_key + "/colocate/" + mech.name, in, res);
          }
        }
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    span_ms = kclock.now();
    stream.stop();
    if (!error.empty()) throw std::runtime_error(error);
    if (stream.failed()) throw std::runtime_error("request: " + stream.error());
    s = stream.served();
  }
  if (!work.check()) throw std::runtime_error("the request's product is wrong");

  const Percentiles lat(s.latency);
  std::size_t met = 0;
  for (double x : s.latency) met += x <= slo_ms;
  double run_total = 0;
  for (double x : runs) run_total += x;
  // Time per launch of runs_per_kernel runs, from the runs done (a launch ended at the unit's
  // wall limit did fewer).
  const double run_mean = app_runs == 0 ? 0 : run_total * cfg.runs_per_kernel / double(app_runs);
  json out{{"pair", pair},
           {"app", in.app},
           {"input", describe_input(find_pair(config, pair), in)},
           {"mechanism", mech.name},
           {"background", background_name(mech.background)},
           {"load", load},
           {"seconds", seconds},
           {"kernel_seconds", span_ms / 1e3},
           {"wall_seconds", ms_between(started, clk::now()) / 1e3},
           {"task", work.describe()},
           {"request_alone_ms", latency_json(alone)},
           {"slo_ms", slo_ms},
           {"requests", s.latency.size()},
           {"latency_ms", latency_json(s.latency)},
           {"p99_over_alone_p99", lat.at(0.99) / alone_p.at(0.99)},
           {"slo_attainment", s.latency.empty() ? 0.0 : double(met) / double(s.latency.size())},
           {"request_busy_fraction", span_ms > 0 ? s.busy_ms / span_ms : 0.0},
           {"background_runs", runs.size()},
           {"background_app_runs", app_runs},
           {"runs_per_kernel", cfg.runs_per_kernel},
           {"background_single_run_ms", single_ms},
           {"background_run_ms", summarize(runs)},
           {"background_alone_ms", plain_alone_ms},
           {"background_form_alone_ms", form_alone_ms},
           // Work done per unit of time against the plain kernel alone: 0 with no background.
           {"background_fraction_of_alone", run_mean == 0 ? 0.0 : plain_alone_ms / run_mean},
           {"validation", validation},
           {"samples", {{"latency_ms", s.latency}, {"background_run_ms", runs}}}};
  if (mech.background == Mechanism::Background::cooperative) {
    out["policy"] = mech.policy.name();
    out["share"] = mech.share;
    out["prestage"] = mech.prestage;
    out["task_launch"] = task_launch_name(mech.launch);
    out["yield_in_phases"] = mech.yield_in_phases;
    out["ids_by_sm"] = mech.ids_by_sm;
    out["gather_ms"] = latency_json(s.gather);
    out["task_run_ms"] = latency_json(s.run);
    out["host_steps_ms"] = {{"call_to_request", latency_json(s.host.call_to_request)},
                            {"grant_to_work", latency_json(s.host.grant_to_work)},
                            {"work_to_return", latency_json(s.host.work_to_return)}};
    out["samples"]["gather_ms"] = s.gather;
    out["job"] = to_json(first_stats);
    out["timeline"] = timeline(first_stats);
  }
  if (split) out["split"] = split->describe();
  if (mech.background == Mechanism::Background::process) out["mps_percent"] = mech.mps_percent;
  if (in.graph) {
    out["vertices"] = in.graph->n();
    out["arcs"] = in.graph->m();
  }
  return out;
}

json Runner::child(Runtime& rt, const json& spec) {
  const std::string role = spec.at("role");
  KernelClock clock(spec.at("clock").get<std::string>(), false);
  if (role == "requests") {
    const json& request = spec.at("request");
    TaskWork work(rt, request.value("task", "cublas"), request.at("gpu_ms"),
                  spec.at("products").get<std::uint32_t>());
    std::printf("ready\n");
    std::fflush(stdout);
    const auto give_up =
        clk::now() + std::chrono::duration_cast<clk::duration>(
                         std::chrono::duration<double>(spec.at("give_up_seconds").get<double>()));
    RequestStream stream(clock, spec.at("load"), spec.at("alone_ms"), spec.at("seed"),
                         [&](Served&) { work.run_direct(work.full_grid()); });
    while (!clock.finished() && !stream.failed() && clk::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stream.stop();
    if (stream.failed()) throw std::runtime_error("request: " + stream.error());
    if (!clock.finished()) throw std::runtime_error("the background's process never finished");
    if (!work.check()) throw std::runtime_error("the request's product is wrong");
    return {{"latency_ms", stream.served().latency}, {"busy_ms", stream.served().busy_ms}};
  }
  if (role != "background") throw std::invalid_argument("bench-child: unknown role '" + role + "'");
  State state(rt, spec.at("config"));
  const std::string pair = spec.at("pair");
  apps::Input& in = state.input(pair, spec.value("graph_file", ""));
  apps::RunConfig cfg{.form = apps::Form::standalone, .policy = Policy::generous()};
  cfg.runs_per_kernel = spec.value("runs_per_kernel", 1u);
  cfg.on_kernel = [&](bool on) { clock.set(on); };
  const double max_wall_ms = spec.at("max_seconds").get<double>() * 1e3;
  apps::RunStop stop;
  cfg.stop = &stop;
  const WallLimit limit(stop, max_wall_ms);
  BackToBack loop(spec.at("seconds"), max_wall_ms);
  std::vector<double> runs;
  std::uint64_t app_runs = 0;
  std::string validation;
  try {
    while (loop.more(runs, clock)) {
      apps::Result res = apps::run(rt, in, cfg);
      runs.push_back(res.ms);
      app_runs += res.runs;
      if (runs.size() == 1) validation = state.validate_once(pair + "/process", in, res);
    }
  } catch (...) {
    clock.finish();
    throw;
  }
  clock.finish();
  return {{"runs_ms", runs},
          {"app_runs", app_runs},
          {"kernel_ms", clock.now()},
          {"validation", validation}};
}

}  // namespace coop::bench
