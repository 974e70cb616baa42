// `coop bench`: plans the configuration's units, skips those the results folder already has,
// runs the rest with a progress bar, and writes results.json and one CSV per experiment.
#include "bench.hpp"

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
#include <mutex>
#include <stdexcept>
#include <thread>

#include "coop/bench/experiments.hpp"
#include "coop/bench/harness.hpp"
#include "coop/coop.hpp"
#include "coop_commit.hpp"
#include "options.hpp"

namespace coop::cli {

namespace fs = std::filesystem;
using bench::json;

namespace {

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

json load_config(const std::string& spec) {
  const auto names = bench::builtin_config_names();
  if (std::find(names.begin(), names.end(), spec) != names.end())
    return bench::builtin_config(spec);
  std::ifstream in(spec);
  if (!in)
    throw std::invalid_argument("--config: '" + spec +
                                "' is neither a built-in configuration (paper, quick) nor a "
                                "readable file");
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

}  // namespace

int run_bench(const BenchOptions& o, const std::string& command) {
  RuntimeOptions ro;
  ro.backend = parse_backend(o.backend);
  // The configuration is needed before the runtime only for --print-config and --list.
  std::string config_name = o.config;
  std::unique_ptr<Runtime> rt;
  if (config_name.empty()) {
    rt = std::make_unique<Runtime>(ro);
    config_name = rt->backend() == Backend::cuda ? "paper" : "quick";
  }
  json config = load_config(config_name);
  if (o.print_config) {
    std::printf("%s\n", config.dump(2).c_str());
    return 0;
  }
  std::vector<bench::Unit> units = bench::plan(config);
  for (const std::string& e : o.only)
    if (e != "overhead" && e != "multitasking")
      throw std::invalid_argument("--only: unknown experiment '" + e +
                                  "' (overhead, multitasking)");
  std::erase_if(units, [&](const bench::Unit& u) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), u.experiment) == o.only.end())
      return true;
    for (const std::string& x : o.exclude)
      if (u.key.find(x) != std::string::npos) return true;
    if (o.filter.empty()) return false;
    return !std::all_of(o.filter.begin(), o.filter.end(),
                        [&](const std::string& f) { return u.key.find(f) != std::string::npos; });
  });
  if (o.list) {
    for (const bench::Unit& u : units) std::printf("%s\n", u.key.c_str());
    std::printf("%zu units\n", units.size());
    return 0;
  }
  if (!rt) rt = std::make_unique<Runtime>(ro);
  const std::string name = config.value("name", fs::path(config_name).stem().string());
  const fs::path dir = o.out.empty() ? fs::path("coop-bench-" + name) : fs::path(o.out);
  json meta{
      {"config", config}, {"device", rt->device_name()}, {"backend", backend_name(rt->backend())}};
  bench::Store store(dir, meta, o.fresh);
  std::vector<bench::Unit> todo;
  for (const bench::Unit& u : units)
    if (!store.done(u.key) || (o.retry_failed && store.failed(u.key))) todo.push_back(u);
  std::fprintf(stderr, "coop bench '%s' on %s (%s backend): %zu units, %zu already in %s\n",
               name.c_str(), rt->device_name().c_str(), backend_name(rt->backend()), units.size(),
               units.size() - todo.size(), dir.c_str());

  bench::Runner runner(*rt, config);
  bench::Progress progress(todo, ::isatty(2) != 0);
  // A unit that overruns is recorded as failed and the process stops: a kernel that runs on
  // cannot be cancelled from the host, and the next run skips the unit.
  std::mutex mu;
  std::condition_variable cv;
  const bench::Unit* running = nullptr;
  auto unit_start = std::chrono::steady_clock::now();
  bool over = false;
  const auto poll = std::chrono::duration<double>(
      o.unit_timeout_s > 0 ? std::clamp(o.unit_timeout_s / 4, 0.001, 0.2) : 0.2);
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    while (!over) {
      cv.wait_for(lock, poll);
      if (!running || o.unit_timeout_s <= 0) continue;
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - unit_start).count();
      if (s < o.unit_timeout_s) continue;
      char why[160];
      std::snprintf(why, sizeof why, "timed out after %.1f s (--unit-timeout)", s);
      // What the runtime and the device were doing: a stuck unit is a bug to diagnose.
      const std::string state = describe_within(*rt, std::chrono::seconds(2));
      store.put(*running,
                {{"error", why}, {"timed_out", true}, {"state", state}, {"finished", utc_now()}});
      std::fprintf(stderr, "\n%s %s: recorded as failed; stopping (exit 4), rerun to continue\n%s",
                   running->key.c_str(), why, state.c_str());
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(4);
    }
  });
  std::size_t failed = 0, left = 0;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const bench::Unit& u = todo[i];
    // At least one unit runs, so that every invocation makes progress.
    if (i > 0 && o.max_minutes > 0 && progress.elapsed_s() > o.max_minutes * 60) {
      left = todo.size() - i;
      break;
    }
    progress.begin(u);
    {
      std::lock_guard lock(mu);
      running = &u;
      unit_start = std::chrono::steady_clock::now();
    }
    json r;
    try {
      r = runner.run(u);
    } catch (const std::exception& e) {
      ++failed;
      r = {{"error", e.what()}};
      std::fprintf(stderr, "\n%s FAILED: %s\n", u.key.c_str(), e.what());
    }
    {
      std::lock_guard lock(mu);
      running = nullptr;
    }
    r["finished"] = utc_now();
    store.put(u, std::move(r));
    progress.end(u);
  }
  {
    std::lock_guard lock(mu);
    over = true;
  }
  cv.notify_all();
  watchdog.join();
  progress.finish();

  // Everything the folder holds, planned in this run or not, in one file and as CSV.
  json all = meta;
  all["date"] = utc_now();
  all["commit"] = COOP_GIT_COMMIT;
  all["command"] = command;
  all["units"] = store.results();
  std::ofstream(dir / "results.json") << all.dump(1) << '\n';
  const auto csv = bench::write_csv(dir, store.results());
  bench::print_summary(stdout, store.results());
  std::printf("results: %s (results.json, units.jsonl", dir.c_str());
  for (const auto& f : csv) std::printf(", %s", f.filename().c_str());
  std::printf(")\n");
  if (left)
    std::printf(
        "stopped after %.1f minutes with %zu units left: run the same command again to "
        "continue\n",
        o.max_minutes, left);
  if (failed) std::printf("%zu units failed (recorded; --retry-failed runs them again)\n", failed);
  return failed ? 1 : left ? 3 : 0;
}

}  // namespace coop::cli
