// `coop bench`: plans the configuration's units, skips those the results folder already has,
// runs the rest with a progress bar, and writes results.json and one CSV per experiment.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "coop/bench/experiments.hpp"
#include "coop/bench/harness.hpp"
#include "coop/bench/processes.hpp"
#include "coop/coop.hpp"
#include "coop_commit.hpp"
#include "options.hpp"

namespace coop::cli {

namespace fs = std::filesystem;
using bench::json;

namespace {

struct BenchOptions {
  std::string config;  ///< a built-in name or a JSON file ("" = paper on a GPU, quick on the CPU)
  std::string out;     ///< results folder ("" = coop-bench-<config name>)
  std::vector<std::string> only;     ///< experiments to run (empty = all in the config)
  std::vector<std::string> filter;   ///< run units whose key contains all of these
  std::vector<std::string> exclude;  ///< skip units whose key contains one of these
  std::string shard;                 ///< "I/N": run part I of N of the selection ("" = all)
  std::string backend = "auto";
  double unit_timeout_s = 300;  ///< record a unit that runs longer as failed and stop (0 = none)
  bool retry_failed = false;    ///< run units whose stored result is a failure again
  double max_minutes = 0;       ///< start no unit after this long (0 = no limit)
  bool fresh = false;
  bool list = false;
  bool print_config = false;
  bool json = false;
};

// Runtime::describe, unless it does not answer in time (a lock held by a stuck thread).
std::string describe_within(Runtime& rt, std::chrono::seconds limit) {
  auto answer = std::make_shared<std::promise<std::string>>();
  auto future = answer->get_future();
  std::thread([answer, &rt] {
    try {
      answer->set_value(rt.describe());
    } catch (const std::exception& e) {
      answer->set_value(std::string("describe failed: ") + e.what());
    }
  }).detach();
  if (future.wait_for(limit) != std::future_status::ready)
    return "the runtime did not describe itself within " + std::to_string(limit.count()) +
           " s (a lock held by a stuck thread?)\n";
  return future.get();
}

bool is_builtin_config(const std::string& spec) {
  const auto names = bench::builtin_config_names();
  return std::find(names.begin(), names.end(), spec) != names.end();
}

// A --config value that names no built-in configuration and no readable file.
std::invalid_argument not_a_config(const std::string& spec) {
  return std::invalid_argument("'" + spec + "' is neither a built-in configuration (" +
                               bench::builtin_config_list() + ") nor a readable file");
}

json load_config(const std::string& spec) {
  if (is_builtin_config(spec)) return bench::builtin_config(spec);
  std::ifstream in(spec);
  if (!in) throw std::invalid_argument(std::string("--config: ") + not_a_config(spec).what());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument(spec + ": not valid JSON: " + e.what());
  }
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

// "I/N" with 0 <= I < N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& s) {
  unsigned long index = 0, count = 0;
  int used = 0;
  // digits, one '/', digits: sscanf alone would take signs and spaces
  if (s.find_first_not_of("0123456789/") != std::string::npos ||
      std::sscanf(s.c_str(), "%lu/%lu%n", &index, &count, &used) != 2 || used != int(s.size()) ||
      count == 0 || index >= count)
    throw std::invalid_argument("'" + s + "' is not I/N with 0 <= I < N (e.g. 0/4)");
  return {index, count};
}

// The configuration's units that --only, --filter, --exclude and --shard keep.
std::vector<bench::Unit> select_units(const json& config, const BenchOptions& o) {
  std::vector<bench::Unit> units = bench::plan(config);
  std::erase_if(units, [&](const bench::Unit& u) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), u.experiment) == o.only.end())
      return true;
    for (const std::string& x : o.exclude)
      if (u.key.find(x) != std::string::npos) return true;
    if (o.filter.empty()) return false;
    return !std::all_of(o.filter.begin(), o.filter.end(),
                        [&](const std::string& f) { return u.key.find(f) != std::string::npos; });
  });
  if (o.shard.empty()) return units;
  const auto [index, count] = parse_shard(o.shard);
  return bench::shard(units, index, count);
}

// Records a unit that overruns --unit-timeout as failed and ends the process (exit 4): a kernel
// that runs on cannot be cancelled from the host, and the next run skips the unit.
class UnitWatchdog {
 public:
  UnitWatchdog(Runtime& rt, bench::Store& store, double timeout_s)
      : rt_(rt), store_(store), timeout_s_(timeout_s) {
    thread_ = std::thread([this] { watch(); });
  }
  ~UnitWatchdog() {
    {
      std::lock_guard lock(mu_);
      over_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  UnitWatchdog(const UnitWatchdog&) = delete;
  UnitWatchdog& operator=(const UnitWatchdog&) = delete;
  /// The unit now running (nullptr: none).
  void running(const bench::Unit* u) {
    std::lock_guard lock(mu_);
    running_ = u;
    start_ = std::chrono::steady_clock::now();
  }

 private:
  void watch() {
    const auto poll = std::chrono::duration<double>(
        timeout_s_ > 0 ? std::clamp(timeout_s_ / 4, 0.001, 0.2) : 0.2);
    std::unique_lock lock(mu_);
    while (!over_) {
      cv_.wait_for(lock, poll);
      if (!running_ || timeout_s_ <= 0) continue;
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (s >= timeout_s_) give_up(s);
    }
  }
  [[noreturn]] void give_up(double s) {
    char why[160];
    std::snprintf(why, sizeof why, "timed out after %.1f s (--unit-timeout)", s);
    // What the runtime and the device were doing: a stuck unit is a bug to diagnose.
    const std::string state = describe_within(rt_, std::chrono::seconds(2));
    store_.put(*running_,
               {{"error", why}, {"timed_out", true}, {"state", state}, {"finished", utc_now()}});
    std::fprintf(stderr, "\n%s %s: recorded as failed; stopping (exit 4), rerun to continue\n%s",
                 running_->key.c_str(), why, state.c_str());
    bench::Leftovers::undo_all();  // a process background's MPS daemon and temporary folder
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_runtime);
  }
  Runtime& rt_;
  bench::Store& store_;
  const double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  const bench::Unit* running_ = nullptr;
  std::chrono::steady_clock::time_point start_;
  bool over_ = false;
  std::thread thread_;
};

struct RunCounts {
  std::size_t ran = 0, failed = 0, left = 0;
};

// Runs `todo` in order, each result stored as it comes; stops starting units after
// --max-minutes (at least one runs, so that every invocation makes progress).
RunCounts run_units(Runtime& rt, const json& config, bench::Store& store,
                    const std::vector<bench::Unit>& todo, const BenchOptions& o) {
  bench::Runner runner(rt, config, bench::self_exe());
  bench::Progress progress(todo, ::isatty(2) != 0);
  UnitWatchdog watchdog(rt, store, o.unit_timeout_s);
  RunCounts n;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const bench::Unit& u = todo[i];
    if (i > 0 && o.max_minutes > 0 && progress.elapsed_s() > o.max_minutes * 60) {
      n.left = todo.size() - i;
      break;
    }
    progress.begin(u);
    json r;
    try {
      runner.prepare(u);  // inputs are made once per process, outside --unit-timeout
      watchdog.running(&u);
      r = runner.run(u);
    } catch (const std::exception& e) {
      ++n.failed;
      r = {{"error", e.what()}};
      std::fprintf(stderr, "\n%s FAILED: %s\n", u.key.c_str(), e.what());
    }
    watchdog.running(nullptr);
    r["finished"] = utc_now();
    store.put(u, std::move(r));
    progress.end(u);
    ++n.ran;
  }
  progress.finish();
  return n;
}

void add_bench_options(CLI::App& app, BenchOptions& b) {
  app.add_option("--config", b.config,
                 "paper | quick | colocate | colocate-quick | a JSON file (default: paper on a "
                 "GPU, quick on the CPU)")
      ->check(parses_with([](const std::string& s) {
        if (!is_builtin_config(s) && !(std::filesystem::is_regular_file(s) && std::ifstream(s)))
          throw not_a_config(s);
      }));
  app.add_option("--out", b.out, "results folder (default: coop-bench-<config name>)");
  app.add_option("--only", b.only, "experiments: overhead, multitasking, colocate")
      ->delimiter(',')
      ->check(CLI::IsMember({"overhead", "multitasking", "colocate"}));
  app.add_option("--filter", b.filter,
                 "run only units whose key contains this (repeatable: all must match)");
  app.add_option("--exclude", b.exclude, "skip units whose key contains this (repeatable)");
  app.add_option("--shard", b.shard,
                 "I/N: run part I (from 0) of N of the selected units, one input's units "
                 "together (one process per GPU, each with its own --out)")
      ->check(parses_with([](const std::string& s) { parse_shard(s); }));
  add_backend(app, b.backend);
  add_duration(app, "--unit-timeout", b.unit_timeout_s,
               "seconds: a unit running longer is recorded as failed and the run stops "
               "(exit 4; rerun to continue); 0 = none");
  app.add_flag("--retry-failed", b.retry_failed, "run units recorded as failed again");
  add_duration(app, "--max-minutes", b.max_minutes,
               "start no unit after this many minutes (at least one runs; exit 3; rerun to "
               "continue); 0 = no limit");
  app.add_flag("--fresh", b.fresh, "discard the folder's results and start over");
  app.add_flag("--list", b.list, "print the planned units and exit");
  app.add_flag("--print-config", b.print_config, "print the configuration (JSON) and exit");
  app.add_flag("--json", b.json,
               "print one JSON document on stdout: the units (--list) or the run's outcome "
               "(progress, logs and the summary go to stderr)");
}

class Bench : public Subcommand {
 public:
  explicit Bench(std::string command_line) : command_line_(std::move(command_line)) {}
  const char* name() const override { return "bench"; }
  const char* description() const override {
    return "run the paper's experiments and co-location (resumable; writes JSON and CSV, see "
           "docs/results.md)";
  }
  void add_options(CLI::App& app) override { add_bench_options(app, o_); }
  int run() override;

 private:
  int list(const std::vector<bench::Unit>& units) const;
  int measure(Runtime& rt, const json& config, const std::string& config_name,
              const std::vector<bench::Unit>& units) const;
  BenchOptions o_;
  std::string command_line_;
};

int Bench::run() {
  RuntimeOptions ro;
  ro.backend = parse_backend(o_.backend);
  // The configuration is needed before the runtime only for --print-config and --list.
  std::string config_name = o_.config;
  std::unique_ptr<Runtime> rt;
  if (config_name.empty()) {
    rt = std::make_unique<Runtime>(ro);
    config_name = rt->backend() == Backend::cuda ? "paper" : "quick";
  }
  const json config = load_config(config_name);
  if (o_.print_config) {
    std::printf("%s\n", config.dump(2).c_str());
    return exit_ok;
  }
  const std::vector<bench::Unit> units = select_units(config, o_);
  if (o_.list) return list(units);
  // A run that would measure nothing is a mistyped selection, not a success.
  if (units.empty())
    throw usage_error(
        "no unit of configuration '" + config_name +
        "' is selected by --only, --filter, --exclude and --shard (--list shows the units)");
  if (!rt) rt = std::make_unique<Runtime>(ro);
  return measure(*rt, config, config_name, units);
}

int Bench::list(const std::vector<bench::Unit>& units) const {
  if (o_.json) {
    json keys = json::array();
    for (const bench::Unit& u : units) keys.push_back(u.key);
    std::cout << json{{"units", keys}, {"count", units.size()}}.dump(2) << '\n';
    return exit_ok;
  }
  for (const bench::Unit& u : units) std::printf("%s\n", u.key.c_str());
  std::printf("%zu units\n", units.size());
  return exit_ok;
}

int Bench::measure(Runtime& rt, const json& config, const std::string& config_name,
                   const std::vector<bench::Unit>& units) const {
  const std::string name = config.value("name", fs::path(config_name).stem().string());
  const fs::path dir = o_.out.empty() ? fs::path("coop-bench-" + name) : fs::path(o_.out);
  json meta{
      {"config", config}, {"device", rt.device_name()}, {"backend", backend_name(rt.backend())}};
  bench::Store store(dir, meta, o_.fresh);
  std::vector<bench::Unit> todo;
  for (const bench::Unit& u : units)
    if (!store.done(u.key) || (o_.retry_failed && store.failed(u.key))) todo.push_back(u);
  std::fprintf(stderr, "coop bench '%s' on %s (%s backend): %zu units, %zu already in %s\n",
               name.c_str(), rt.device_name().c_str(), backend_name(rt.backend()), units.size(),
               units.size() - todo.size(), dir.c_str());
  const RunCounts n = run_units(rt, config, store, todo, o_);

  // Everything the folder holds, planned in this run or not, in one file and as CSV.
  json all = meta;
  all["date"] = utc_now();
  all["commit"] = COOP_GIT_COMMIT;
  all["command"] = command_line_;
  all["units"] = store.results();
  std::ofstream(dir / "results.json") << all.dump(1) << '\n';
  const auto csv = bench::write_csv(dir, store.results());
  std::FILE* out = o_.json ? stderr : stdout;  // under --json the summary is a log
  bench::print_summary(out, store.results());
  std::string files = "results.json, units.jsonl";
  for (const auto& f : csv) files += ", " + f.filename().string();
  std::fprintf(out, "results: %s (%s)\n", dir.c_str(), files.c_str());
  if (n.left)
    std::fprintf(out,
                 "stopped after %.1f minutes with %zu units left: run the same command again to "
                 "continue\n",
                 o_.max_minutes, n.left);
  if (n.failed)
    std::fprintf(out, "%zu units failed (recorded; --retry-failed runs them again)\n", n.failed);
  const int code = n.failed ? exit_failed : n.left ? exit_stopped : exit_ok;
  if (o_.json)
    std::cout << json{{"config", name},        {"results", dir.string()},
                      {"units", units.size()}, {"already_done", units.size() - todo.size()},
                      {"ran", n.ran},          {"failed", n.failed},
                      {"left", n.left},        {"exit_code", code}}
                     .dump(2)
              << '\n';
  return code;
}

// `coop bench-child SPEC_FILE`: started by a colocate unit with a process background (see
// bench::Runner::child); prints its result as one JSON line on stdout, or {"error": ...} before
// failing, so that the unit can report why.
class BenchChild : public Subcommand {
 public:
  const char* name() const override { return "bench-child"; }
  const char* description() const override {
    return "internal: one process of a coop bench colocate unit";
  }
  bool hidden() const override { return true; }
  void add_options(CLI::App& app) override {
    app.add_option("spec", spec_file_, "the unit's spec (JSON)")->required();
  }
  int run() override {
    try {
      std::ifstream in(spec_file_);
      if (!in) throw std::invalid_argument("cannot read " + spec_file_);
      const json spec = json::parse(in);
      RuntimeOptions ro;
      ro.backend = parse_backend(spec.at("backend"));
      ro.device = spec.at("device");
      Runtime rt(ro);
      std::cout << bench::Runner::child(rt, spec).dump() << std::endl;
      return exit_ok;
    } catch (const std::exception& e) {
      std::cout << json{{"error", e.what()}}.dump() << std::endl;
      throw;
    }
  }

 private:
  std::string spec_file_;
};

}  // namespace

std::unique_ptr<Subcommand> bench_command(std::string command_line) {
  return std::make_unique<Bench>(std::move(command_line));
}

std::unique_ptr<Subcommand> bench_child_command() { return std::make_unique<BenchChild>(); }

}  // namespace coop::cli
