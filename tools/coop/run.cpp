// `coop run <app>`: one of the paper's applications on a graph file or a generated input.
#include "run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "coop/apps/apps.hpp"
#include "coop/graph/generate.hpp"
#include "options.hpp"

namespace coop::cli {

namespace {

apps::Priority parse_priority(const std::string& s) {
  if (s == "id") return apps::Priority::id;
  if (s == "hashed") return apps::Priority::hashed;
  throw std::invalid_argument("--priority must be id or hashed, got '" + s + "'");
}

}  // namespace

int run_app(const RunOptions& o) {
  apps::check_app(o.app);
  apps::Input in;
  in.app = o.app;
  std::string input_name;
  if (apps::is_graph_app(o.app)) {
    if (o.graph.empty() == o.gen.empty())
      throw std::invalid_argument(o.app + " needs exactly one of --graph FILE and --gen SPEC");
    auto t0 = std::chrono::steady_clock::now();
    if (!o.graph.empty()) {
      in.graph = std::make_shared<graph::Graph>(graph::read_graph(o.graph));
      input_name = o.graph;
    } else {
      graph::Generated g = graph::generate(o.gen, o.gen_seed);
      input_name = g.name;
      in.graph = std::make_shared<graph::Graph>(std::move(g.graph));
    }
    if (!o.json)
      std::fprintf(
          stderr, "%s: %u vertices, %u arcs (%.0f ms to load)\n", input_name.c_str(), in.graph->n(),
          in.graph->m(),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  } else if (!o.graph.empty() || !o.gen.empty()) {
    throw std::invalid_argument(o.app + " does not read a graph");
  }
  in.source = o.source;
  in.priority = parse_priority(o.priority);
  in.seed = o.seed;
  in.bc_sources = o.bc_sources;
  in.particles = o.particles;
  in.max_leaf = o.max_leaf;
  in.max_depth = o.max_depth;
  in.moves = o.moves;
  in.depth = o.depth;
  if (o.app == "octree") input_name = std::to_string(o.particles) + " particles";
  if (o.app == "game") input_name = "moves '" + o.moves + "', depth " + std::to_string(o.depth);
  in.check();

  RuntimeOptions ro;
  ro.backend = parse_backend(o.backend);
  ro.cpu_slots = o.slots;
  Runtime rt(ro);
  apps::RunConfig cfg;
  cfg.form = apps::parse_form(o.form);
  cfg.policy = Policy::parse(o.policy);
  cfg.barrier = parse_barrier(o.barrier);
  cfg.groups = o.groups;
  cfg.threads = o.threads;
  cfg.shared_carveout = o.carveout;

  std::vector<double> times;
  apps::Result r;
  for (std::uint32_t i = 0; i < std::max(1u, o.repeat); ++i) {
    r = apps::run(rt, in, cfg);
    times.push_back(r.ms);
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];

  apps::Validation v;
  if (o.validate) v = apps::validate(in, r);
  if (!o.output.empty()) {
    std::ofstream out(o.output);
    if (!out) throw std::runtime_error("cannot write " + o.output);
    apps::write_output(out, in, r);
    if (!out.flush()) throw std::runtime_error("writing " + o.output + " failed");
  }
  const std::string summary = apps::summarize(in, r);
  if (o.json) {
    nlohmann::json j;
    j["app"] = o.app;
    j["input"] = input_name;
    j["form"] = apps::form_name(cfg.form);
    j["backend"] = backend_name(rt.backend());
    j["device"] = rt.device_name();
    j["policy"] = cfg.policy.name();
    j["times_ms"] = times;
    j["median_ms"] = median;
    j["result"] = summary;
    if (cfg.form == apps::Form::multi_launch) {
      j["rounds"] = r.rounds;
      j["launches"] = r.launches;
    } else {
      j["groups"] = r.stats.initial_groups;
      j["max_groups"] = r.stats.max_groups;
      j["kills"] = r.stats.kills;
      j["forked_groups"] = r.stats.forked_groups;
      j["barriers"] = r.stats.barriers;
    }
    if (o.validate) j["validation"] = {{"ok", v.ok}, {"detail", v.detail}};
    std::cout << j.dump(2) << '\n';
  } else {
    std::printf("%s on %s (%s, %s, %s): %.3f ms%s\n", o.app.c_str(), input_name.c_str(),
                apps::form_name(cfg.form), backend_name(rt.backend()), rt.device_name().c_str(),
                median, times.size() > 1 ? " (median)" : "");
    std::printf("  %s\n", summary.c_str());
    if (cfg.form != apps::Form::multi_launch)
      std::printf("  %u workgroups (N = %u); %llu kills, %llu forked, %llu barriers\n",
                  r.stats.initial_groups, r.stats.max_groups,
                  static_cast<unsigned long long>(r.stats.kills),
                  static_cast<unsigned long long>(r.stats.forked_groups),
                  static_cast<unsigned long long>(r.stats.barriers));
    else
      std::printf("  %llu rounds, %llu launches\n", static_cast<unsigned long long>(r.rounds),
                  static_cast<unsigned long long>(r.launches));
    if (o.validate) std::printf("  validation: %s: %s\n", v.ok ? "ok" : "FAILED", v.detail.c_str());
  }
  return o.validate && !v.ok ? 1 : 0;
}

}  // namespace coop::cli
