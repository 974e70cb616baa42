// `coop fuzz-schedule`: adversarial schedules across all apps, validated, reproducible.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "coop/apps/apps.hpp"
#include "coop/coop.hpp"
#include "coop/graph/generate.hpp"
#include "options.hpp"

namespace coop::cli {

namespace {

struct FuzzOptions {
  std::string apps = "all";  ///< "all" or a comma-separated list
  std::uint64_t seeds = 1000;
  std::uint64_t first = 1;
  std::string backend = "cpu";
  std::uint32_t slots = 0;  ///< CPU backend capacity (0 = default)
  bool keep_going = false;  ///< do not stop at the first failure
  bool rotate = false;      ///< each seed runs one app (seed mod the apps) instead of all
  /// adversarial-shrink schedules: kills and shrinking resizes only, so each run is one grid
  /// (for compute-sanitizer, which runs one kernel at a time)
  bool shrink_only = false;
  bool json = false;
};

// One run: the app, its input drawn from the seed, the barrier, and how to rerun it.
struct Case {
  apps::Input in;
  apps::RunConfig cfg;
  std::string command;
};

Case make_case(const std::string& app, std::uint64_t seed, const std::string& backend,
               bool shrink_only) {
  Case c;
  c.in.app = app;
  std::ostringstream cmd;
  cmd << "coop run " << app;
  const apps::AppInfo& info = apps::find_app(app);
  if (info.needs_graph()) {
    // Small graphs of the shapes the apps meet (road-like: deep; R-MAT: shallow and skewed;
    // grids for the colouring apps), sized and seeded by the seed.
    const unsigned shape = unsigned(seed / 7 % 3);
    std::string spec;
    if (shape == 0) spec = "road:" + std::to_string(200 + seed % 600);
    if (shape == 1) spec = "rmat:" + std::to_string(7 + seed % 3);
    if (shape == 2)
      spec = "grid:" + std::to_string(8 + seed % 20) + "x" + std::to_string(8 + seed % 13);
    c.in.graph = std::make_shared<graph::Graph>(graph::generate(spec, seed).graph);
    c.in.source = std::uint32_t(seed % c.in.graph->n());
    c.in.seed = std::uint32_t(seed);
    if (info.id == apps::AppId::bc) c.in.bc_sources = 8;
    cmd << " --gen " << spec << " --gen-seed " << seed << " --source " << c.in.source << " --seed "
        << c.in.seed;
    if (info.id == apps::AppId::bc) cmd << " --bc-sources 8";
  } else if (info.id == apps::AppId::octree) {
    c.in.particles = 500 + std::uint32_t(seed % 3000);
    c.in.seed = std::uint32_t(seed);
    c.in.max_leaf = 4 + std::uint32_t(seed % 29);
    cmd << " --particles " << c.in.particles << " --seed " << c.in.seed << " --max-leaf "
        << c.in.max_leaf;
  } else {  // game
    c.in.depth = 2 + std::uint32_t(seed % 3);
    const char* openings[] = {"", "3", "3,3", "2,4,3", "0,6,1,5"};
    c.in.moves = openings[seed % 5];
    cmd << " --depth " << c.in.depth;
    if (!c.in.moves.empty()) cmd << " --moves " << c.in.moves;
  }
  c.cfg.policy = shrink_only ? Policy::adversarial_shrinking(seed) : Policy::adversarial(seed);
  c.cfg.barrier = seed % 2 ? ResizeBarrier::plain : ResizeBarrier::query;
  cmd << " --policy " << c.cfg.policy.name() << " --barrier " << (seed % 2 ? "plain" : "query");
  // The phased apps' yielding form (every phase a coop::for_each loop: kills and forks inside
  // phases) in every other pair of seeds, beside either barrier.
  if (info.multi_launch && seed / 2 % 2 == 1) {
    c.cfg.yield_in_phases = true;
    cmd << " --yield-in-phases";
  }
  cmd << " --backend " << backend << " --validate";
  c.command = cmd.str();
  return c;
}

std::vector<std::string> split_apps(const std::string& list) {
  if (list == "all") return apps::app_names();
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string a; std::getline(ss, a, ',');) {
    check_app_name(a);
    out.push_back(a);
  }
  if (out.empty()) throw std::invalid_argument("no app named");
  return out;
}

// The campaign's counts and failures.
struct Tally {
  std::uint64_t runs = 0, failures = 0, kills = 0, forks = 0, resizes = 0;
  nlohmann::json failed = nlohmann::json::array();
};

// One run, validated; the reason it failed ("" when right).
std::string run_case(Runtime& rt, const Case& c, Tally& t) {
  try {
    apps::Result r = apps::run(rt, c.in, c.cfg);
    t.kills += r.stats.kills;
    t.forks += r.stats.forks;
    t.resizes += r.stats.resizes;
    apps::Validation v = apps::validate(c.in, r);
    if (!v.ok) return "wrong result: " + v.detail;
  } catch (const std::exception& e) {
    return e.what();  // a hang is reported by the CPU backend's watchdog as misuse_error
  }
  return {};
}

class FuzzSchedule : public Subcommand {
 public:
  const char* name() const override { return "fuzz-schedule"; }
  const char* description() const override {
    return "run every app under seeded adversarial schedules and validate each result";
  }
  void add_options(CLI::App& app) override;
  int run() override;

 private:
  // Runs every case of one seed; false when a failure ends the campaign.
  bool run_seed(Runtime& rt, const std::vector<std::string>& names, std::uint64_t seed, Tally& t);
  FuzzOptions o_;
  std::FILE* log_ = stdout;  // stderr under --json
};

void FuzzSchedule::add_options(CLI::App& app) {
  app.add_option("--apps", o_.apps, "all, or a comma-separated list")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) { split_apps(s); }));
  app.add_option("--seeds", o_.seeds, "how many seeds")->capture_default_str()->check(positive());
  app.add_option("--first", o_.first, "the first seed")->capture_default_str();
  add_backend(app, o_.backend);
  add_slots(app, o_.slots);
  app.add_flag("--keep-going", o_.keep_going, "do not stop at the first failure");
  app.add_flag("--rotate", o_.rotate, "each seed runs one app (seed mod the apps), not all");
  app.add_flag("--shrink-only", o_.shrink_only,
               "adversarial-shrink schedules (no forks): one grid per run, for "
               "compute-sanitizer");
  add_json_flag(app, o_.json);
}

bool FuzzSchedule::run_seed(Runtime& rt, const std::vector<std::string>& names, std::uint64_t seed,
                            Tally& t) {
  for (std::size_t a = 0; a < names.size(); ++a) {
    if (o_.rotate && a != seed % names.size()) continue;
    const Case c = make_case(names[a], seed, o_.backend, o_.shrink_only);
    const std::string what = run_case(rt, c, t);
    ++t.runs;
    if (what.empty()) continue;
    ++t.failures;
    t.failed.push_back(
        {{"seed", seed}, {"app", names[a]}, {"what", what}, {"reproduce", c.command}});
    std::fprintf(log_, "FAILED seed %llu %s: %s\n  reproduce: %s\n", (unsigned long long)seed,
                 names[a].c_str(), what.c_str(), c.command.c_str());
    std::fflush(log_);
    if (!o_.keep_going) return false;
  }
  return true;
}

int FuzzSchedule::run() {
  const FuzzOptions& o = o_;
  if (o.json) log_ = stderr;
  const std::vector<std::string> names = split_apps(o.apps);
  RuntimeOptions ro;
  ro.backend = parse_backend(o.backend);
  ro.cpu_slots = o.slots;
  Runtime rt(ro);
  std::fprintf(log_, "schedule fuzzing on %s (%s backend): seeds %llu..%llu, apps",
               rt.device_name().c_str(), backend_name(rt.backend()), (unsigned long long)o.first,
               (unsigned long long)(o.first + o.seeds - 1));
  for (auto& n : names) std::fprintf(log_, " %s", n.c_str());
  std::fprintf(log_, o.shrink_only ? ", shrink-only schedules\n" : "\n");
  std::fflush(log_);
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  Tally t;
  for (std::uint64_t seed = o.first; seed < o.first + o.seeds; ++seed) {
    if (!run_seed(rt, names, seed, t)) break;
    if ((seed - o.first + 1) % 100 == 0) {
      std::fprintf(log_, "  %llu seeds, %llu runs, %llu failures, %.0f s\n",
                   (unsigned long long)(seed - o.first + 1), (unsigned long long)t.runs,
                   (unsigned long long)t.failures, seconds());
      std::fflush(log_);
    }
  }
  std::fprintf(log_,
               "%llu runs (%llu seeds, %s %zu apps) in %.0f s: %llu failures; the schedules killed "
               "%llu workgroups, forked %llu times and resized %llu times\n",
               (unsigned long long)t.runs, (unsigned long long)o.seeds,
               o.rotate ? "rotating over" : "each on", names.size(), seconds(),
               (unsigned long long)t.failures, (unsigned long long)t.kills,
               (unsigned long long)t.forks, (unsigned long long)t.resizes);
  if (o.json)
    std::cout << nlohmann::json{{"device", rt.device_name()},
                                {"backend", backend_name(rt.backend())},
                                {"first_seed", o.first},
                                {"seeds", o.seeds},
                                {"apps", names},
                                {"runs", t.runs},
                                {"failures", t.failed},
                                {"kills", t.kills},
                                {"forks", t.forks},
                                {"resizes", t.resizes},
                                {"seconds", seconds()}}
                     .dump(2)
              << '\n';
  return t.failures ? exit_failed : exit_ok;
}

}  // namespace

std::unique_ptr<Subcommand> fuzz_schedule_command() { return std::make_unique<FuzzSchedule>(); }

}  // namespace coop::cli
