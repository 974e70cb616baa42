// The eight applications give the reference's answer in every form, on real and generated
// graphs of several shapes, under adversarial schedules (random kill / fork / resize decisions,
// seeded: every app x 50 seeds on the CPU, 20 on the GPU) and while high-priority tasks take
// workgroups away. Written once: tests/gpu/apps.cu runs the same file on the GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "coop/apps/apps.hpp"
#include "coop/graph/generate.hpp"

using namespace coop;
using apps::Form;

namespace {

std::shared_ptr<const graph::Graph> load(const std::string& name) {
  return std::make_shared<graph::Graph>(graph::read_graph(test::data_file(name)));
}

std::shared_ptr<const graph::Graph> gen(const std::string& spec, std::uint64_t seed = 1) {
  return std::make_shared<graph::Graph>(graph::generate(spec, seed).graph);
}

/// A small input for `app` (graph apps get `g`).
apps::Input input_for(const std::string& app, std::shared_ptr<const graph::Graph> g,
                      std::uint32_t seed = 1) {
  apps::Input in;
  in.app = app;
  in.graph = std::move(g);
  in.source = in.graph ? seed % in.graph->n() : 0;
  in.seed = seed;
  in.priority = seed % 3 == 0 ? apps::Priority::id : apps::Priority::hashed;
  in.bc_sources = 6;
  in.particles = 3000 + seed * 97 % 4000;
  in.max_leaf = 4 + seed % 12;
  in.max_depth = 12;
  in.moves = seed % 2 ? "3,3,2" : "";
  in.depth = 3 + seed % 2;
  return in;
}

void expect_valid(Runtime& rt, const apps::Input& in, const apps::RunConfig& cfg,
                  const std::string& how) {
  apps::Result r = apps::run(rt, in, cfg);
  apps::Validation v = apps::validate(in, r);
  EXPECT_TRUE(v.ok) << in.app << " (" << apps::form_name(cfg.form) << ", " << how
                    << "): " << v.detail;
}

/// The `coop run` command that repeats one run of input_for's input under `cfg`.
std::string reproduce(const apps::Input& in, const apps::RunConfig& cfg, const std::string& gen,
                      std::uint64_t gen_seed) {
  std::string c = "coop run " + in.app + (test::kOnGpu ? " --backend cuda" : " --backend cpu");
  if (!gen.empty())
    c += " --gen " + gen + " --gen-seed " + std::to_string(gen_seed) + " --source " +
         std::to_string(in.source) + " --priority " +
         (in.priority == apps::Priority::id ? "id" : "hashed") + " --seed " +
         std::to_string(in.seed) + " --bc-sources " + std::to_string(in.bc_sources);
  else if (apps::find_app(in.app).id == apps::AppId::octree)
    c += " --particles " + std::to_string(in.particles) + " --max-leaf " +
         std::to_string(in.max_leaf) + " --max-depth " + std::to_string(in.max_depth) + " --seed " +
         std::to_string(in.seed);
  else
    c += " --moves '" + in.moves + "' --depth " + std::to_string(in.depth);
  return c + " --policy " + cfg.policy.name() + " --groups " + std::to_string(cfg.groups) +
         " --threads " + std::to_string(cfg.threads) + " --barrier " +
         (cfg.barrier == ResizeBarrier::plain ? "plain" : "query") + " --validate";
}

/// The graph apps, from the table.
std::vector<std::string> graph_apps() {
  std::vector<std::string> names;
  for (const apps::AppInfo& a : apps::all_apps())
    if (a.needs_graph()) names.emplace_back(a.name);
  return names;
}

}  // namespace

TEST(Apps, TheTableListsEveryAppOnceInIdOrder) {
  const auto table = apps::all_apps();
  ASSERT_EQ(table.size(), 8u);
  EXPECT_EQ(apps::app_names(), (std::vector<std::string>{"color", "mis", "p-sssp", "bfs", "l-sssp",
                                                         "octree", "game", "bc"}));
  for (std::size_t i = 0; i < table.size(); ++i) {
    const apps::AppInfo& a = table[i];
    EXPECT_EQ(std::size_t(a.id), i) << a.name;
    EXPECT_EQ(&apps::find_app(a.name), &a);
    EXPECT_TRUE(a.run && a.validate && a.summarize && a.write) << a.name;
    // The phased apps are the graph apps; the work-stealing ones have no multi-launch form.
    EXPECT_EQ(a.multi_launch, a.needs_graph()) << a.name;
    EXPECT_EQ(apps::is_graph_app(std::string(a.name)), a.needs_graph());
    EXPECT_TRUE(!a.needs_source || a.needs_graph()) << a.name;
  }
  try {
    apps::find_app("nope");
    ADD_FAILURE() << "an unknown app was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown app 'nope' (color, mis, p-sssp, bfs, l-sssp, octree, game, bc)");
  }
  EXPECT_THROW(apps::check_app("BFS"), std::invalid_argument);
}

TEST(Apps, EveryFormOnRealGraphs) {
  auto rt = test::make_runtime(8);
  for (const char* file : {"rome99.gr", "256_16384.gr"}) {
    auto g = load(file);
    for (const auto& app : graph_apps())
      for (Form f : {Form::cooperative, Form::standalone, Form::multi_launch}) {
        apps::Input in = input_for(app, g);
        expect_valid(*rt, in, {.form = f}, file);
      }
  }
}

TEST(Apps, EveryFormOnGeneratedShapes) {
  auto rt = test::make_runtime(8);
  // A grid (long diameter), R-MAT (skewed degrees), a road-like graph, a dense uniform graph,
  // a circuit-like graph, and one with unreachable parts (several components).
  // Racecheck (far slower) gets the same shapes a tenth the size, one seed of octree and game.
  const bool race = test::under_racecheck();
  const std::vector<const char*> specs =
      race ? std::vector<const char*>{"grid:12x16",      "rmat:7",      "road:300",
                                      "uniform:100:900", "circuit:200", "uniform:200:150"}
           : std::vector<const char*>{"grid:40x50",       "rmat:10",      "road:3000",
                                      "uniform:300:9000", "circuit:2000", "uniform:2000:1500"};
  for (const char* spec : specs) {
    auto g = gen(spec);
    for (const auto& app : graph_apps())
      for (Form f : {Form::cooperative, Form::standalone, Form::multi_launch})
        expect_valid(*rt, input_for(app, g), {.form = f}, spec);
  }
  for (const char* app : {"octree", "game"})
    for (Form f : {Form::cooperative, Form::standalone})
      for (std::uint32_t seed = 1; seed <= (race ? 1u : 4u); ++seed)
        expect_valid(*rt, input_for(app, nullptr, seed), {.form = f},
                     "seed " + std::to_string(seed));
}

TEST(Apps, AdversarialSchedules) {
  auto rt = test::make_runtime(8);
  const std::uint64_t seeds = test::kOnGpu ? 20 : 50;
  for (const auto& app : apps::app_names()) {
    std::uint64_t kills = 0, forked = 0;
    // Whether a schedule gets to fork depends on timing (on a loaded 2-core machine a small
    // game search can end before any fork): more seeds, up to four times as many, until the
    // schedules have killed and forked.
    const auto exercised = [&] { return kills > 0 && (forked > 0 || test::under_sanitizer()); };
    for (std::uint64_t seed = 1; seed <= seeds || (!exercised() && seed <= 4 * seeds); ++seed) {
      const char* shapes[] = {"road:600", "grid:20x30", "rmat:9", "uniform:400:3000"};
      auto g = apps::is_graph_app(app) ? gen(shapes[seed % 4], seed) : nullptr;
      apps::Input in = input_for(app, g, std::uint32_t(seed));
      apps::RunConfig cfg;
      cfg.policy = test::adversarial(seed);
      cfg.groups = 1 + std::uint32_t(seed % 8);
      cfg.threads = test::kOnGpu ? 32u << (seed % 4) : 1 + std::uint32_t(seed % 4);
      cfg.barrier = seed % 2 ? ResizeBarrier::query : ResizeBarrier::plain;
      cfg.yield_in_phases = seed % 3 != 0;  // phases as coop::for_each loops, or grid-stride
      apps::Result r = apps::run(*rt, in, cfg);
      apps::Validation v = apps::validate(in, r);
      ASSERT_TRUE(v.ok) << app << ": " << v.detail << "\nreproduce with: "
                        << reproduce(in, cfg, g ? shapes[seed % 4] : "", seed);
      kills += r.stats.kills;
      forked += r.stats.forked_groups;
    }
    // The schedules did resize (a test that never kills proves nothing).
    EXPECT_GT(kills, 0u) << app;
    if (test::under_sanitizer())
      EXPECT_EQ(forked, 0u) << app << ": the shrink-only adversary forked";
    else
      EXPECT_GT(forked, 0u) << app;
  }
}

/// Hubs: vertex 0 has an arc to and from every other vertex, vertex 1 to and from every fifth,
/// the rest are a path; seeded weights. Its worklist entries are up to n / kSliceArcs slices of
/// one vertex (bfs, l-sssp), and a source on the path reaches the hubs in the second round.
std::shared_ptr<const graph::Graph> hubs(std::uint32_t n, std::uint32_t seed) {
  std::vector<graph::Arc> arcs;
  const auto both = [&](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t w = 1 + (a * 7919u + b * 104729u + seed) % 50;
    arcs.push_back({a, b, w});
    arcs.push_back({b, a, w});
  };
  for (std::uint32_t v = 2; v < n; ++v) both(0, v);
  for (std::uint32_t v = 2; v < n; v += 5) both(1, v);
  for (std::uint32_t v = 2; v + 1 < n; ++v) both(v, v + 1);
  return std::make_shared<graph::Graph>(graph::Graph::from_arcs(n, arcs));
}

TEST(Apps, WorklistsSliceHubsUnderAdversarialSchedules) {
  auto rt = test::make_runtime(8);
  const std::uint32_t n = 40 * apps::kSliceArcs + 7;  // hub 0: 41 slices, hub 1: 9
  for (std::uint32_t seed = 1; seed <= (test::kOnGpu ? 8u : 16u); ++seed) {
    const auto g = hubs(n, seed);
    for (const char* app : {"bfs", "l-sssp"}) {
      apps::Input in = input_for(app, g, seed);
      in.source = seed % 3 == 0 ? 0 : 2 + seed * 37 % (n - 2);  // a hub, or a path vertex
      for (apps::Form form :
           {apps::Form::cooperative, apps::Form::standalone, apps::Form::multi_launch}) {
        apps::RunConfig cfg{.form = form};
        if (form == apps::Form::cooperative) cfg.policy = test::adversarial(seed);
        cfg.groups = 1 + seed % 8;
        cfg.threads = test::kOnGpu ? 32u << (seed % 3) : 1 + seed % 4;
        cfg.yield_in_phases = seed % 2 == 0;
        expect_valid(*rt, in, cfg, "hubs, seed " + std::to_string(seed));
      }
    }
  }
}

TEST(Apps, WhileHighPriorityTasksRun) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(8);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> tasks{0};
  // Tasks of a quarter of the workgroups fire back to back while the apps run.
  std::thread firing([&] {
    while (!stop.load()) {
      rt->run(2, [&](Task&) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
      tasks.fetch_add(1);
    }
  });
  auto g = gen("road:2000", 7);
  for (const auto& app : apps::app_names())
    for (std::uint32_t seed = 1; seed <= 2; ++seed)
      expect_valid(*rt, input_for(app, apps::is_graph_app(app) ? g : nullptr, seed),
                   {.form = Form::cooperative}, "with tasks");
  stop = true;
  firing.join();
  EXPECT_GT(tasks.load(), 0u);
}

// Jobs created while another job's persistent kernel runs (a job's setup copies its state to the
// device: through the legacy stream or from pageable memory that copy was seen to wait for the
// running kernel, and the second job never started). Two apps launched beside an adversarial
// one, again and again; every result valid.
TEST(Apps, JobsStartBesideARunningJob) {
  auto rt = test::make_runtime(8);
  auto g = load("rome99.gr");
  const std::uint32_t reps = test::kOnGpu ? 12 : 2;
  for (std::uint32_t rep = 1; rep <= reps; ++rep) {
    apps::RunConfig adversarial;
    adversarial.policy = test::adversarial(rep);
    std::thread first(
        [&] { expect_valid(*rt, input_for("color", g, rep), adversarial, "beside others"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread second([&] { expect_valid(*rt, input_for("game", nullptr, rep), {}, "beside"); });
    expect_valid(*rt, input_for("octree", nullptr, rep), {}, "beside");
    second.join();
    first.join();
  }
}

// Clumps of max_leaf + 1 points, each a few ulps wide, split down to max_depth: many more
// cells than the first guess the app sizes its buffers by, so the run must go again with room
// for the worst case and still build the exact tree.
TEST(Apps, OctreeOfNestedClumpsOutgrowsTheFirstGuess) {
  auto rt = test::make_runtime(4);
  apps::Input in = input_for("octree", nullptr);
  in.max_leaf = 3;
  in.max_depth = 18;
  in.particles = 4 * 200;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(0.0f, 0.99f);
  in.particle_set.clear();
  for (std::uint32_t c = 0; c < in.particles / (in.max_leaf + 1); ++c) {
    const float x = uni(rng), y = uni(rng), z = uni(rng);
    for (std::uint32_t k = 0; k <= in.max_leaf; ++k) {
      const float d = float(k) * 1e-6f;  // below the cell size at max_depth
      in.particle_set.push_back({x + d, y + d, z + d, std::uint32_t(in.particle_set.size())});
    }
  }
  in.particle_seed = in.seed;
  const auto guess = apps::OctreeRun::internal_cells_guess(in.particles, in.max_leaf, in.max_depth);
  apps::Result r = apps::run(*rt, in, {});
  EXPECT_GT(r.nodes.size(), 1 + 8 * guess) << "the input did not outgrow the guess";
  apps::Validation v = apps::validate(in, r);
  EXPECT_TRUE(v.ok) << v.detail;
}

/// runs_per_kernel: the kernel runs the app again from the buffers it saved before the first
/// run, under adversarial schedules (kills and forks inside the runs and at the restarts), in
/// every persistent form. The result alone would not tell a restart that restored nothing (the
/// second run would find the first's answer and stop at once): the barriers must be R runs'
/// worth, exactly R times one run's plus two per restart where the app's rounds do not depend
/// on the schedule.
TEST(Apps, RunsPerKernelStartEachRunFromTheSavedBuffers) {
  auto rt = test::make_runtime(8);
  const char* shapes[] = {"road:600", "grid:20x30", "rmat:9"};
  for (std::uint32_t seed = 1; seed <= (test::kOnGpu ? 6u : 9u); ++seed) {
    const auto g = gen(shapes[seed % 3], seed);
    for (const auto& app : graph_apps()) {
      const apps::Input in = input_for(app, g, seed);
      const std::uint32_t runs = 2 + seed % 3;
      apps::RunConfig one{.groups = 1 + seed % 8, .threads = test::kOnGpu ? 64u : 1 + seed % 4};
      const apps::Result single = apps::run(*rt, in, one);
      for (int how = 0; how < 3; ++how) {
        apps::RunConfig cfg = one;
        cfg.runs_per_kernel = runs;
        if (how == 0) cfg.form = Form::standalone;
        if (how >= 1) cfg.policy = test::adversarial(seed * 3 + std::uint64_t(how));
        cfg.yield_in_phases = how == 2;
        const apps::Result r = apps::run(*rt, in, cfg);
        const apps::Validation v = apps::validate(in, r);
        const std::string what = app + " on " + shapes[seed % 3] + ", " + std::to_string(runs) +
                                 " runs, " +
                                 (how == 0   ? "standalone"
                                  : how == 1 ? "cooperative"
                                             : "yielding");
        EXPECT_TRUE(v.ok) << what << ": " << v.detail;
        if (how == 0) continue;  // a plain persistent kernel counts no barriers
        const std::uint64_t expected = runs * single.stats.barriers + 2 * (runs - 1);
        if (app == "l-sssp")  // its rounds depend on the order of the relaxations
          EXPECT_GE(2 * r.stats.barriers, expected) << what;
        else
          EXPECT_EQ(r.stats.barriers, expected) << what;
      }
    }
  }
}

/// The work-stealing apps restart from their pools: under adversarial schedules, in both
/// persistent forms, each launch ends with every run's particles placed or search finished (the
/// run functions throw otherwise), a valid last result, and exactly two barriers per restart.
TEST(Apps, RunsPerKernelRestartTheWorkStealingApps) {
  auto rt = test::make_runtime(8);
  for (std::uint32_t seed = 1; seed <= (test::kOnGpu ? 4u : 6u); ++seed) {
    for (const char* app : {"octree", "game"}) {
      apps::Input in = input_for(app, nullptr, seed);
      in.max_leaf = 8 + seed;
      // Seed 1: a root that is a leaf already (every run is over at once).
      in.particles = seed == 1 ? in.max_leaf : 3000 + 500 * seed;
      in.depth = 3 + seed % 3;
      in.moves = seed % 2 ? "3,3" : "";
      const std::uint32_t runs = 2 + seed % 3;
      for (const bool standalone : {true, false}) {
        apps::RunConfig cfg{.groups = 1 + seed % 8,
                            .threads = test::kOnGpu ? 64u : 1 + seed % 4,
                            .runs_per_kernel = runs};
        if (standalone)
          cfg.form = Form::standalone;
        else
          cfg.policy = test::adversarial(seed * 5);
        const std::string what = std::string(app) + ", seed " + std::to_string(seed) + ", " +
                                 std::to_string(runs) + " runs, " +
                                 (standalone ? "standalone" : "cooperative");
        apps::Result r;
        ASSERT_NO_THROW(r = apps::run(*rt, in, cfg)) << what;
        const apps::Validation v = apps::validate(in, r);
        EXPECT_TRUE(v.ok) << what << ": " << v.detail;
        if (!standalone) {
          EXPECT_EQ(r.stats.barriers, 2 * (runs - 1)) << what;
        }
      }
    }
  }
}

/// RunConfig::stop ends a launch of many runs after a run, every workgroup after the same one,
/// with that run's result whole: asked before the launch, after the first run; asked as the
/// launch is admitted, after an early run (the kernel sees the request at a restart). The
/// barriers add up to the runs done, and the work-stealing apps' end counters to that many runs
/// (their run functions throw otherwise). Under adversarial schedules, in every persistent form.
TEST(Apps, RunsPerKernelEndEarlyWhenAsked) {
  auto rt = test::make_runtime(8);
  const char* shapes[] = {"road:600", "grid:20x30", "rmat:9"};
  const std::uint32_t many = 400;  // far more than run before a request is seen
  for (std::uint32_t seed = 1; seed <= 3; ++seed) {
    const auto g = gen(shapes[seed % 3], seed);
    std::vector<std::string> apps_here = graph_apps();
    apps_here.insert(apps_here.end(), {"octree", "game"});
    for (const auto& app : apps_here) {
      const apps::Input in = input_for(app, app == "octree" || app == "game" ? nullptr : g, seed);
      apps::RunConfig one{.groups = 1 + seed % 8, .threads = test::kOnGpu ? 64u : 1 + seed % 4};
      const apps::Result single = apps::run(*rt, in, one);
      for (int how = 0; how < 3; ++how) {
        for (const bool before : {true, false}) {
          apps::RunStop stop;
          apps::RunConfig cfg = one;
          cfg.runs_per_kernel = many;
          cfg.stop = &stop;
          if (how == 0) cfg.form = Form::standalone;
          if (how >= 1) cfg.policy = test::adversarial(seed * 7 + std::uint64_t(how));
          cfg.yield_in_phases = how == 2;
          if (before)
            stop.request();
          else
            cfg.on_kernel = [&stop](bool on) {
              if (on) stop.request();
            };
          const std::string what = app + ", seed " + std::to_string(seed) + ", " +
                                   (how == 0   ? "standalone"
                                    : how == 1 ? "cooperative"
                                               : "yielding") +
                                   (before ? ", asked before" : ", asked at admission");
          apps::Result r;
          ASSERT_NO_THROW(r = apps::run(*rt, in, cfg)) << what;
          const apps::Validation v = apps::validate(in, r);
          EXPECT_TRUE(v.ok) << what << ": " << v.detail;
          if (before) {
            EXPECT_EQ(r.runs, 1u) << what;
          } else {
            EXPECT_GE(r.runs, 1u) << what;
            EXPECT_LT(r.runs, many) << what;
          }
          if (how == 0) continue;  // a plain persistent kernel counts no barriers
          const std::uint64_t restarts = 2 * (std::uint64_t(r.runs) - 1);
          if (app == "octree" || app == "game")
            EXPECT_EQ(r.stats.barriers, restarts) << what;
          else if (app == "l-sssp")  // its rounds depend on the order of the relaxations
            EXPECT_GE(2 * r.stats.barriers, r.runs * single.stats.barriers + restarts) << what;
          else
            EXPECT_EQ(r.stats.barriers, r.runs * single.stats.barriers + restarts) << what;
        }
      }
    }
  }
}

TEST(Apps, BadInputsAreRefused) {
  auto rt = test::make_runtime(4);
  apps::Input in = input_for("bfs", gen("grid:4x4"));
  in.source = 16;
  EXPECT_THROW(apps::run(*rt, in, {}), std::invalid_argument);
  in = input_for("octree", nullptr);
  EXPECT_THROW(apps::run(*rt, in, {.form = Form::multi_launch}), std::invalid_argument);
  in = input_for("game", nullptr);
  in.moves = "3,9";
  EXPECT_THROW(apps::run(*rt, in, {}), std::invalid_argument);
  in.moves = "0,1,0,1,0,1,0";  // the first player has already won
  EXPECT_THROW(apps::run(*rt, in, {}), std::invalid_argument);
  in = input_for("nope", nullptr);
  EXPECT_THROW(apps::run(*rt, in, {}), std::invalid_argument);
  // Runs inside one kernel: a persistent form, at least one.
  in = input_for("bfs", gen("grid:4x4"));
  EXPECT_THROW(apps::run(*rt, in, {.form = Form::multi_launch, .runs_per_kernel = 2}),
               std::invalid_argument);
  EXPECT_THROW(apps::run(*rt, in, {.runs_per_kernel = 0}), std::invalid_argument);
}
