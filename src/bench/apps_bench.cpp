// Application benchmark: the paper's 11 app/input pairs (plus bc from its appendix), each as a
// cooperative kernel with a scheduler that never resizes (policy fixed), as the same kernel
// standalone (a plain persistent kernel with CUDA's grid barrier, the same grid), and as
// conventional multi-launch. Runs the forms interleaved, reports medians with their spread and
// the ratios to the standalone run measured in the same process, validates every form once
// against the CPU reference, and writes JSON (--json FILE).
//
//   coop_bench_apps [--reps N] [--only APP[,APP]] [--pairs paper|small] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/apps.hpp"
#include "coop/coop.hpp"
#include "coop/graph/generate.hpp"

using namespace coop;
using json = nlohmann::json;

namespace {

struct Pair {
  std::string app, input;  ///< input: a generator preset/spec, or "" for octree/game
  apps::Priority priority = apps::Priority::id;
};

std::vector<Pair> pairs(const std::string& set) {
  if (set == "small")
    return {{"color", "grid:200x200"}, {"mis", "grid:200x200"}, {"p-sssp", "road:20000"},
            {"bfs", "road:50000"},     {"bfs", "rmat:14"},      {"l-sssp", "road:50000"},
            {"l-sssp", "rmat:14"},     {"octree", ""},          {"game", ""},
            {"bc", "uniform:256:8192"}};
  // The paper's Table 2 pairs (color and mis with its deterministic id ranks), then bc.
  return {{"color", "ecology"}, {"color", "g3_circuit"}, {"mis", "ecology"}, {"mis", "g3_circuit"},
          {"p-sssp", "usa-ny"}, {"bfs", "usa-w"},        {"bfs", "rmat22"},  {"l-sssp", "usa-nw"},
          {"l-sssp", "rmat20"}, {"octree", ""},          {"game", ""},       {"bc", "1k-128k"}};
}

struct Spread {
  double median, min, max;
  std::vector<double> all;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back(), v};
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / double(v.size()));
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::string json_path, only, set = "paper";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--reps")
      reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--json")
      json_path = next();
    else if (a == "--only")
      only = "," + next() + ",";
    else if (a == "--pairs")
      set = next();
    else {
      std::fprintf(stderr,
                   "usage: coop_bench_apps [--reps N] [--only APP[,APP]] [--pairs paper|small] "
                   "[--json FILE]\n");
      return 2;
    }
  }
  Runtime rt;
  std::printf("device: %s (%s backend)\n", rt.device_name().c_str(), backend_name(rt.backend()));
  json out;
  {
    std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    out["date"] = date;
  }
  out["device"] = rt.device_name();
  out["backend"] = backend_name(rt.backend());
  out["reps"] = reps;
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
  out["command"] = cmd;
  std::vector<double> coop_ratios, multi_ratios;
  bool all_valid = true;
  std::printf("%-7s %-12s %10s %10s %10s %8s %8s %8s %6s\n", "app", "input", "coop ms", "alone ms",
              "multi ms", "spread%", "coop/al", "multi/al", "N");
  for (const Pair& p : pairs(set)) {
    if (!only.empty() && only.find("," + p.app + ",") == std::string::npos) continue;
    apps::Input in;
    in.app = p.app;
    in.priority = p.priority;
    std::string input = p.input;
    if (apps::is_graph_app(p.app)) {
      in.graph = std::make_shared<graph::Graph>(graph::generate(p.input, 1).graph);
    } else if (p.app == "octree") {
      in.particles = set == "small" ? 1u << 16 : 1u << 20;
      input = std::to_string(in.particles) + " particles";
    } else {
      in.depth = set == "small" ? 6 : 8;
      input = "depth " + std::to_string(in.depth);
    }
    std::vector<apps::Form> forms{apps::Form::cooperative, apps::Form::standalone};
    if (apps::has_multi_launch(p.app)) forms.push_back(apps::Form::multi_launch);

    // Warm-up and validation of each form; the grid both persistent forms use is the smaller
    // of their occupancy bounds (the paper's "same grid").
    std::map<apps::Form, std::vector<double>> times;
    std::map<apps::Form, std::string> validation;
    std::uint32_t groups = 0;
    for (apps::Form f : forms) {
      apps::RunConfig cfg{.form = f, .policy = Policy::fixed()};
      apps::Result r = apps::run(rt, in, cfg);
      apps::Validation v = apps::validate(in, r);
      all_valid = all_valid && v.ok;
      validation[f] = (v.ok ? "ok: " : "FAILED: ") + v.detail;
      if (f != apps::Form::multi_launch)
        groups = groups ? std::min(groups, r.stats.max_groups) : r.stats.max_groups;
    }
    for (int rep = 0; rep < reps; ++rep)
      for (apps::Form f : forms) {
        apps::RunConfig cfg{.form = f, .policy = Policy::fixed(), .groups = groups};
        times[f].push_back(apps::run(rt, in, cfg).ms);
      }
    json j{{"app", p.app}, {"input", input}, {"groups", groups}};
    if (in.graph) {
      j["vertices"] = in.graph->n();
      j["arcs"] = in.graph->m();
    }
    std::map<apps::Form, Spread> s;
    for (apps::Form f : forms) {
      s[f] = spread(times[f]);
      j["forms"][apps::form_name(f)] = {{"median_ms", s[f].median},
                                        {"min_ms", s[f].min},
                                        {"max_ms", s[f].max},
                                        {"times_ms", s[f].all},
                                        {"validation", validation[f]}};
    }
    const double alone = s[apps::Form::standalone].median;
    const double coop_ratio = s[apps::Form::cooperative].median / alone;
    j["cooperative_over_standalone"] = coop_ratio;
    if (p.app != "bc") coop_ratios.push_back(coop_ratio);
    double multi_ratio = 0;
    if (s.count(apps::Form::multi_launch)) {
      multi_ratio = s[apps::Form::multi_launch].median / alone;
      j["multi_launch_over_standalone"] = multi_ratio;
      if (p.app != "bc") multi_ratios.push_back(multi_ratio);
    }
    double worst = 0;
    for (auto& [f, sp] : s) worst = std::max(worst, (sp.max - sp.min) / sp.median * 100);
    char multi_ms[16] = "-", multi_col[16] = "-";
    if (multi_ratio) {
      std::snprintf(multi_ms, sizeof multi_ms, "%.3f", s[apps::Form::multi_launch].median);
      std::snprintf(multi_col, sizeof multi_col, "%.3f", multi_ratio);
    }
    std::printf("%-7s %-12s %10.3f %10.3f %10s %8.1f %8.3f %8s %6u\n", p.app.c_str(), input.c_str(),
                s[apps::Form::cooperative].median, alone, multi_ms, worst, coop_ratio, multi_col,
                groups);
    for (auto& [f, v] : validation)
      if (v.rfind("ok", 0) != 0) std::printf("  %s: %s\n", apps::form_name(f), v.c_str());
    std::fflush(stdout);
    out["pairs"].push_back(j);
  }
  const double gm = geomean(coop_ratios);
  const double mx =
      coop_ratios.empty() ? 0 : *std::max_element(coop_ratios.begin(), coop_ratios.end());
  std::printf(
      "cooperative / standalone over %zu pairs: geomean %.3f, max %.3f (paper 1.07 / 1.23)\n",
      coop_ratios.size(), gm, mx);
  std::printf("multi-launch / standalone over %zu pairs: geomean %.3f\n", multi_ratios.size(),
              geomean(multi_ratios));
  out["cooperative_over_standalone"] = {
      {"geomean", gm}, {"max", mx}, {"pairs", coop_ratios.size()}};
  out["multi_launch_over_standalone"] = {{"geomean", geomean(multi_ratios)}};
  out["all_valid"] = all_valid;
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << out.dump(2) << '\n';
  }
  return all_valid ? 0 : 1;
}
