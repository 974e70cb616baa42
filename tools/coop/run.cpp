// `coop run <app>`: one of the paper's applications on a graph file or a generated input.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "coop/apps/apps.hpp"
#include "coop/bench/percentiles.hpp"
#include "coop/graph/generate.hpp"
#include "options.hpp"

namespace coop::cli {
namespace {

struct RunOptions {
  std::string app;
  std::string graph;  ///< a graph file
  std::string gen;    ///< or a generator spec / preset
  std::uint64_t gen_seed = 1;
  std::uint32_t source = 0;
  std::string backend = "auto";
  std::string form = "cooperative";
  std::string policy = "generous";
  std::string barrier = "query";
  bool yield_in_phases = false;
  bool ids_by_sm = false;
  std::uint32_t groups = 0;
  std::uint32_t threads = 0;
  int carveout = coop::LaunchConfig{}.shared_carveout;  ///< LaunchConfig::shared_carveout (CUDA)
  std::uint32_t slots = 0;                              ///< CPU backend capacity (0 = default)
  std::string priority = "hashed";
  std::uint32_t seed = 1;
  std::uint32_t bc_sources = 0;
  std::uint32_t particles = 1u << 20;
  std::uint32_t max_leaf = 32;
  std::uint32_t max_depth = 20;
  std::string moves;
  std::uint32_t depth = 7;
  std::uint32_t repeat = 1;
  std::uint32_t runs_per_kernel = 1;
  bool validate = false;
  std::string output;
  std::string save_graph;  ///< write the graph in coop's binary format here
  bool json = false;
  /// Options that only some apps read, with those apps: one given to another app is refused
  /// rather than ignored (a user who types --source for color expects it to mean something).
  struct AppSpecific {
    const CLI::Option* option;
    std::vector<apps::AppId> apps;
  };
  std::vector<AppSpecific> app_specific;
};

// What the app ran on, as the output names it.
struct InputLabel {
  std::string name;
  std::string source;        ///< "file", "generated" or "built-in" (octree, game)
  std::string description;   ///< the generator's description
  std::string stand_in_for;  ///< the real graph a generated preset replaces
};

std::string preset_list() {
  std::string s = "Generator presets (--gen; every one is generated here, from --gen-seed):\n";
  for (const std::string& name : graph::preset_names())
    s += "  " + name + ": " + graph::describe(name).description + "\n";
  return s + "Generator specs: grid:RxC, rmat:SCALE[:EDGEFACTOR], uniform:N:M, road:N, circuit:N";
}

void add_input_options(CLI::App& app, RunOptions& r) {
  std::string apps_help;
  for (const std::string& a : apps::app_names()) apps_help += (apps_help.empty() ? "" : " | ") + a;
  app.add_option("app", r.app, apps_help)->required()->check(parses_with(check_app_name));
  app.add_option("--graph", r.graph,
                 "graph file: DIMACS .gr, METIS .graph, Matrix Market .mtx, "
                 "Galois binary .gr, .coopcsr")
      ->check(CLI::ExistingFile);
  std::string presets;
  for (const std::string& p : graph::preset_names()) presets += (presets.empty() ? "" : ", ") + p;
  app.add_option("--gen", r.gen,
                 "generated graph: a preset (" + presets +
                     ") or grid:RxC, rmat:S[:EF], uniform:N:M, road:N, circuit:N")
      ->check(parses_with(check_graph_spec));
  app.add_option("--gen-seed", r.gen_seed, "generator seed")->capture_default_str();
  app.add_option("--save-graph", r.save_graph,
                 "write the graph (read or generated) in coop's binary format (.coopcsr): "
                 "--graph reads it back, and a coop bench pair takes it as input file:PATH, "
                 "without generating it again");
  using apps::AppId;
  const auto only_for = [&r](CLI::Option* opt, std::vector<AppId> for_apps) {
    r.app_specific.push_back({opt, std::move(for_apps)});
  };
  only_for(app.add_option("--source", r.source, "bfs/sssp source vertex (0-based, file order)")
               ->capture_default_str(),
           {AppId::bfs, AppId::l_sssp, AppId::p_sssp});
  only_for(
      app.add_option("--priority", r.priority, "color/mis vertex ranks: hashed | id (the paper's)")
          ->capture_default_str()
          ->check(parses_with([](const std::string& s) { parse_priority(s); })),
      {AppId::color, AppId::mis});
  only_for(app.add_option("--seed", r.seed, "color/mis rank seed, octree particle seed")
               ->capture_default_str(),
           {AppId::color, AppId::mis, AppId::octree});
  only_for(
      app.add_option("--bc-sources", r.bc_sources, "bc: use vertices 0..K-1 as sources (0 = all)")
          ->capture_default_str(),
      {AppId::bc});
  only_for(app.add_option("--particles", r.particles, "octree: particles")->capture_default_str(),
           {AppId::octree});
  only_for(app.add_option("--max-leaf", r.max_leaf, "octree: most particles in a leaf")
               ->capture_default_str(),
           {AppId::octree});
  only_for(
      app.add_option("--max-depth", r.max_depth, "octree: deepest level")->capture_default_str(),
      {AppId::octree});
  only_for(app.add_option("--moves", r.moves, "game: opening moves, e.g. 3,3,4 (columns 0-6)"),
           {AppId::game});
  only_for(
      app.add_option("--depth", r.depth, "game: look-ahead in plies (1-10)")->capture_default_str(),
      {AppId::game});
  app.footer(preset_list());
}

void add_run_options(CLI::App& app, RunOptions& r) {
  add_backend(app, r.backend);
  app.add_option("--form", r.form, "cooperative | standalone | multi-launch")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) { parse_form(s); }));
  add_job_shape(app, r.policy, r.barrier, r.groups);
  app.add_flag("--yield-in-phases", r.yield_in_phases,
               "phased apps, cooperative form: each phase a coop::for_each loop (workgroups "
               "may leave inside a phase; slower, see docs/apps.md)");
  app.add_flag("--ids-by-sm", r.ids_by_sm,
               "GPU: number the job's workgroups by SM, so that tasks get whole SMs (slower for "
               "phases with less work than the grid, see docs/cuda-backend.md)");
  app.add_option("--threads", r.threads, "threads per workgroup (0 = 256 GPU, 8 CPU)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  app.add_option("--carveout", r.carveout,
                 "CUDA: percent of each SM's L1/shared memory the job asks to be shared "
                 "(-1 = the driver's choice)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 100));
  add_slots(app, r.slots);
  app.add_option("--repeat", r.repeat, "runs (the median is reported)")
      ->capture_default_str()
      ->check(positive());
  app.add_option("--runs-per-kernel", r.runs_per_kernel,
                 "cooperative and standalone forms: run the app this many times inside one "
                 "kernel launch (a long job; the time covers them all)")
      ->capture_default_str()
      ->check(positive());
  app.add_flag("--validate", r.validate, "check against the CPU reference (exit 1 if wrong)");
  app.add_option("--output", r.output, "write the result, one line per vertex");
  add_json_flag(app, r.json);
}

// The checks that need more than one option, before anything is loaded or run.
void check_combination(const RunOptions& o) {
  const apps::AppInfo& info = apps::find_app(o.app);
  for (const RunOptions::AppSpecific& a : o.app_specific) {
    if (a.option->count() == 0 || std::ranges::find(a.apps, info.id) != a.apps.end()) continue;
    std::string readers;
    for (apps::AppId id : a.apps)  // all_apps() is in AppId order
      readers +=
          (readers.empty() ? "" : ", ") + std::string(apps::all_apps()[std::size_t(id)].name);
    throw usage_error(a.option->get_name() + ": " + o.app + " does not read it (only " + readers +
                      ")");
  }
  if (apps::is_graph_app(o.app) && o.graph.empty() == o.gen.empty())
    throw usage_error(o.app + " needs exactly one of --graph FILE and --gen SPEC");
  if (!apps::is_graph_app(o.app) && (!o.graph.empty() || !o.gen.empty() || !o.save_graph.empty()))
    throw usage_error(o.app + " does not read a graph");
  if (parse_form(o.form) == apps::Form::multi_launch && !apps::has_multi_launch(o.app))
    throw usage_error("--form multi-launch: " + o.app + " has no multi-launch form");
  if (parse_form(o.form) == apps::Form::multi_launch && o.runs_per_kernel > 1)
    throw usage_error(
        "--runs-per-kernel: the multi-launch form has no persistent kernel to run "
        "the app again in");
  if (!o.save_graph.empty() && std::filesystem::path(o.save_graph).extension() != ".coopcsr")
    throw usage_error("--save-graph " + o.save_graph +
                      ": the file must end in .coopcsr (coop's binary format, which it writes)");
  // The outputs are opened before the input is read: one that is the input would empty it.
  for (const auto& [option, path] :
       {std::pair{"--output", o.output}, std::pair{"--save-graph", o.save_graph}}) {
    std::error_code ec;
    if (!path.empty() && !o.graph.empty() && std::filesystem::equivalent(path, o.graph, ec))
      throw usage_error(std::string(option) + " " + path + ": that is the input graph (--graph)");
  }
  // Both outputs to one file: the result would be written over the saved graph. (Absolute
  // first: weakly_canonical leaves a relative path to a file not yet made relative.)
  const auto resolved = [](const std::string& p) {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(p));
  };
  if (!o.output.empty() && !o.save_graph.empty() && resolved(o.output) == resolved(o.save_graph))
    throw usage_error("--output " + o.output + ": that is the --save-graph file");
}

// The graph (loaded or generated) and the app's other inputs.
apps::Input load_input(const RunOptions& o, InputLabel& label) {
  apps::Input in;
  in.app = o.app;
  in.source = o.source;
  in.priority = parse_priority(o.priority);
  in.seed = o.seed;
  in.bc_sources = o.bc_sources;
  in.particles = o.particles;
  in.max_leaf = o.max_leaf;
  in.max_depth = o.max_depth;
  in.moves = o.moves;
  in.depth = o.depth;
  label.source = "built-in";
  const apps::AppInfo& info = apps::find_app(o.app);
  if (info.id == apps::AppId::octree) label.name = std::to_string(o.particles) + " particles";
  if (info.id == apps::AppId::game)
    label.name = "moves '" + o.moves + "', depth " + std::to_string(o.depth);
  if (!info.needs_graph()) {
    in.check();
    return in;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!o.graph.empty()) {
    in.graph = std::make_shared<graph::Graph>(graph::read_graph(o.graph));
    label = {o.graph, "file", "", ""};
  } else {
    graph::Generated g = graph::generate(o.gen, o.gen_seed);
    label = {g.name, "generated", g.description, g.stand_in_for};
    in.graph = std::make_shared<graph::Graph>(std::move(g.graph));
  }
  std::fprintf(
      stderr, "%s: %u vertices, %u arcs (%.0f ms to %s)\n", label.name.c_str(), in.graph->n(),
      in.graph->m(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
      label.source == "file" ? "load" : "generate");
  in.check();
  return in;
}

// "usa-ny (generated stand-in for DIMACS USA-road-d.NY)", "rmat:10 (generated)", a file's name.
std::string input_text(const InputLabel& l) {
  if (l.source != "generated") return l.name;
  if (!l.stand_in_for.empty()) return l.name + " (generated stand-in for " + l.stand_in_for + ")";
  return l.name + " (generated)";
}

struct Outcome {
  apps::Result result;
  std::vector<double> times;
  double median_ms = 0;
  std::optional<apps::Validation> validation;
};

void print_json(const RunOptions& o, const InputLabel& label, const Runtime& rt,
                const apps::RunConfig& cfg, const Outcome& out, const std::string& summary) {
  nlohmann::json j;
  j["app"] = o.app;
  j["input"] = label.name;
  j["input_source"] = label.source;
  if (label.source == "generated") {
    j["input_description"] = label.description;
    j["stand_in_for"] =
        label.stand_in_for.empty() ? nlohmann::json() : nlohmann::json(label.stand_in_for);
  }
  j["form"] = apps::form_name(cfg.form);
  j["backend"] = backend_name(rt.backend());
  j["device"] = rt.device_name();
  j["policy"] = cfg.policy.name();
  j["times_ms"] = out.times;
  j["median_ms"] = out.median_ms;
  j["result"] = summary;
  const apps::Result& r = out.result;
  if (cfg.form == apps::Form::multi_launch) {
    j["rounds"] = r.rounds;
    j["launches"] = r.launches;
  } else {
    j["groups"] = r.stats.initial_groups;
    j["max_groups"] = r.stats.max_groups;
    j["kills"] = r.stats.kills;
    j["forked_groups"] = r.stats.forked_groups;
    j["barriers"] = r.stats.barriers;
    j["runs_per_kernel"] = cfg.runs_per_kernel;
  }
  if (out.validation)
    j["validation"] = {{"ok", out.validation->ok}, {"detail", out.validation->detail}};
  std::cout << j.dump(2) << '\n';
}

void print_text(const RunOptions& o, const InputLabel& label, const Runtime& rt,
                const apps::RunConfig& cfg, const Outcome& out, const std::string& summary) {
  std::printf("%s on %s (%s, %s, %s): %.3f ms%s\n", o.app.c_str(), input_text(label).c_str(),
              apps::form_name(cfg.form), backend_name(rt.backend()), rt.device_name().c_str(),
              out.median_ms, out.times.size() > 1 ? " (median)" : "");
  if (cfg.runs_per_kernel > 1)
    std::printf("  %u runs of the app in each kernel launch\n", cfg.runs_per_kernel);
  if (!label.description.empty()) std::printf("  input: %s\n", label.description.c_str());
  std::printf("  %s\n", summary.c_str());
  const apps::Result& r = out.result;
  if (cfg.form != apps::Form::multi_launch)
    std::printf("  %u workgroups (N = %u); %llu kills, %llu forked, %llu barriers\n",
                r.stats.initial_groups, r.stats.max_groups,
                static_cast<unsigned long long>(r.stats.kills),
                static_cast<unsigned long long>(r.stats.forked_groups),
                static_cast<unsigned long long>(r.stats.barriers));
  else
    std::printf("  %llu rounds, %llu launches\n", static_cast<unsigned long long>(r.rounds),
                static_cast<unsigned long long>(r.launches));
  if (out.validation)
    std::printf("  validation: %s: %s\n", out.validation->ok ? "ok" : "FAILED",
                out.validation->detail.c_str());
}

class Run : public Subcommand {
 public:
  const char* name() const override { return "run"; }
  const char* description() const override { return "run one of the paper's applications"; }
  void add_options(CLI::App& app) override {
    add_input_options(app, o_);
    add_run_options(app, o_);
  }
  int run() override;

 private:
  RunOptions o_;
};

int Run::run() {
  const RunOptions& o = o_;
  check_combination(o);
  // Opened before the work so that an unwritable path fails at once, with the OS's reason.
  std::ofstream output;
  if (!o.output.empty()) output = open_output(o.output, "--output");
  if (!o.save_graph.empty()) {
    // Checked without emptying it: an older graph there stays until the new one is written.
    errno = 0;
    if (!std::ofstream(o.save_graph, std::ios::binary | std::ios::app))
      throw usage_error("--save-graph: cannot write '" + o.save_graph +
                        "': " + (errno ? std::strerror(errno) : "cannot open"));
  }
  InputLabel label;
  const apps::Input in = load_input(o, label);
  if (!o.save_graph.empty()) graph::write_binary(*in.graph, o.save_graph);

  RuntimeOptions ro;
  ro.backend = parse_backend(o.backend);
  ro.cpu_slots = o.slots;
  Runtime rt(ro);
  apps::RunConfig cfg;
  cfg.form = parse_form(o.form);
  cfg.policy = parse_policy(o.policy);
  cfg.barrier = parse_barrier(o.barrier);
  cfg.yield_in_phases = o.yield_in_phases;
  cfg.ids_by_sm = o.ids_by_sm;
  cfg.groups = o.groups;
  cfg.threads = o.threads;
  cfg.shared_carveout = o.carveout;
  cfg.runs_per_kernel = o.runs_per_kernel;

  Outcome out;
  for (std::uint32_t i = 0; i < std::max(1u, o.repeat); ++i) {
    out.result = apps::run(rt, in, cfg);
    out.times.push_back(out.result.ms);
  }
  out.median_ms = bench::median(out.times);
  if (o.validate) out.validation = apps::validate(in, out.result);
  if (!o.output.empty()) {
    apps::write_output(output, in, out.result);
    finish_output(output, o.output);
  }
  const std::string summary = apps::summarize(in, out.result);
  if (o.json)
    print_json(o, label, rt, cfg, out, summary);
  else
    print_text(o, label, rt, cfg, out, summary);
  return out.validation && !out.validation->ok ? exit_failed : exit_ok;
}

}  // namespace

std::unique_ptr<Subcommand> run_command() { return std::make_unique<Run>(); }

}  // namespace coop::cli
