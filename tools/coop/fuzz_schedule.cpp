// `coop fuzz-schedule`: adversarial schedules across all apps, validated, reproducible.
#include "fuzz_schedule.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "coop/apps/apps.hpp"
#include "coop/coop.hpp"
#include "coop/graph/generate.hpp"
#include "options.hpp"

namespace coop::cli {

namespace {

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
  if (apps::is_graph_app(app)) {
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
    if (app == "bc") c.in.bc_sources = 8;
    cmd << " --gen " << spec << " --gen-seed " << seed << " --source " << c.in.source << " --seed "
        << c.in.seed;
    if (app == "bc") cmd << " --bc-sources 8";
  } else if (app == "octree") {
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
  cmd << " --policy " << c.cfg.policy.name() << " --barrier " << (seed % 2 ? "plain" : "query")
      << " --backend " << backend << " --validate";
  c.command = cmd.str();
  return c;
}

std::vector<std::string> split_apps(const std::string& list) {
  if (list == "all") return apps::app_names();
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string a; std::getline(ss, a, ',');) {
    apps::check_app(a);
    out.push_back(a);
  }
  if (out.empty()) throw std::invalid_argument("--apps: no app named");
  return out;
}

}  // namespace

int fuzz_schedules(const FuzzOptions& o) {
  const std::vector<std::string> names = split_apps(o.apps);
  RuntimeOptions ro;
  ro.backend = parse_backend(o.backend);
  ro.cpu_slots = o.slots;
  Runtime rt(ro);
  std::printf("schedule fuzzing on %s (%s backend): seeds %llu..%llu, apps",
              rt.device_name().c_str(), backend_name(rt.backend()), (unsigned long long)o.first,
              (unsigned long long)(o.first + o.seeds - 1));
  for (auto& n : names) std::printf(" %s", n.c_str());
  std::printf(o.shrink_only ? ", shrink-only schedules\n" : "\n");
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t runs = 0, failures = 0, kills = 0, forks = 0, resizes = 0;
  for (std::uint64_t seed = o.first; seed < o.first + o.seeds; ++seed) {
    for (std::size_t a = 0; a < names.size(); ++a) {
      if (o.rotate && a != seed % names.size()) continue;
      const std::string& app = names[a];
      Case c = make_case(app, seed, o.backend, o.shrink_only);
      std::string what;
      try {
        apps::Result r = apps::run(rt, c.in, c.cfg);
        kills += r.stats.kills;
        forks += r.stats.forks;
        resizes += r.stats.resizes;
        apps::Validation v = apps::validate(c.in, r);
        if (!v.ok) what = "wrong result: " + v.detail;
      } catch (const std::exception& e) {
        what = e.what();  // a hang is reported by the CPU backend's watchdog as misuse_error
      }
      ++runs;
      if (!what.empty()) {
        ++failures;
        std::printf("FAILED seed %llu %s: %s\n  reproduce: %s\n", (unsigned long long)seed,
                    app.c_str(), what.c_str(), c.command.c_str());
        std::fflush(stdout);
        if (!o.keep_going) return 1;
      }
    }
    if ((seed - o.first + 1) % 100 == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  %llu seeds, %llu runs, %llu failures, %.0f s\n",
                  (unsigned long long)(seed - o.first + 1), (unsigned long long)runs,
                  (unsigned long long)failures, s);
      std::fflush(stdout);
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%llu runs (%llu seeds, %s %zu apps) in %.0f s: %llu failures; the schedules killed %llu "
      "workgroups, forked %llu times and resized %llu times\n",
      (unsigned long long)runs, (unsigned long long)o.seeds, o.rotate ? "rotating over" : "each on",
      names.size(), s, (unsigned long long)failures, (unsigned long long)kills,
      (unsigned long long)forks, (unsigned long long)resizes);
  return failures ? 1 : 0;
}

}  // namespace coop::cli
