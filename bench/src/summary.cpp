// The headline figures of a set of results: Table 2, per workload and variant the
// multitasking slowdown and periods met, and per co-location unit the request latency and the
// background kept.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "coop/bench/experiments.hpp"
#include "coop/bench/percentiles.hpp"

namespace coop::bench {

namespace {

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / double(v.size()));
}

// Table 2: cooperative / standalone (and multi-launch / standalone) over the pairs in the
// geomean.
void print_overhead(std::FILE* f, const std::vector<json>& results) {
  std::vector<double> coop, multi, yield;
  double worst = 0;
  std::string worst_pair;
  for (const json& r : results) {
    if (r.contains("error") || r.value("experiment", "") != "overhead" ||
        !r.value("in_geomean", true))
      continue;
    const double c = r["cooperative_over_standalone"];
    coop.push_back(c);
    if (c > worst) worst = c, worst_pair = r["pair"];
    if (r.contains("multi_launch_over_standalone"))
      multi.push_back(r["multi_launch_over_standalone"]);
    if (r.contains("cooperative_yield_over_standalone"))
      yield.push_back(r["cooperative_yield_over_standalone"]);
  }
  if (coop.empty()) return;  // no overhead units in these results
  std::fprintf(f,
               "Table 2: cooperative / standalone over %zu pairs: geomean %.3f, max %.3f (%s); "
               "paper 1.07 / 1.23.",
               coop.size(), geomean(coop), worst, worst_pair.c_str());
  if (multi.empty())
    std::fprintf(f, " No multi-launch pairs.\n");
  else
    std::fprintf(f, " Multi-launch / standalone geomean %.3f over %zu pairs.\n", geomean(multi),
                 multi.size());
  if (!yield.empty())
    std::fprintf(f,
                 "Yielding inside phases (coop::for_each) / standalone over %zu phased pairs: "
                 "geomean %.3f, max %.3f.\n",
                 yield.size(), geomean(yield), *std::max_element(yield.begin(), yield.end()));
}

// Per workload and variant: the median slowdown and period over pairs, per groups request.
void print_multitasking(std::FILE* f, const std::vector<json>& results) {
  std::map<std::string, std::vector<double>> slow, met;
  std::map<std::string, double> model;
  for (const json& r : results) {
    if (r.contains("error") || r.value("experiment", "") != "multitasking") continue;
    const std::string key = r["workload"].get<std::string>() + " " +
                            r["variant"].get<std::string>() + " " +
                            r["groups_spec"].get<std::string>();
    slow[key].push_back(r["slowdown"]);
    met[key].push_back(r["met_fraction"]);
    model[key] = r["model_slowdown"];
  }
  for (auto& [key, v] : slow)
    std::fprintf(f,
                 "%-40s median slowdown %.3f (model %.3f), periods met %.1f%% (median, %zu runs)\n",
                 key.c_str(), median(v), model[key], 100 * median(met[key]), v.size());
}

// Co-location: per pair and load, each mechanism's request latency and background kept.
void print_colocate(std::FILE* f, const std::vector<json>& results) {
  std::string last;
  for (const json& r : results) {
    if (r.contains("error") || r.value("experiment", "") != "colocate") continue;
    char head[160];
    std::snprintf(head, sizeof head, "co-location %s at %.0f %% load (request alone p99 %.3f ms)",
                  r["pair"].get<std::string>().c_str(), 100 * r["load"].get<double>(),
                  r["request_alone_ms"]["p99"].get<double>());
    if (head != last) std::fprintf(f, "%s\n", head);
    last = head;
    const json& l = r["latency_ms"];
    std::fprintf(f,
                 "  %-20s request p50 %9.3f p99 %9.3f p99.9 %9.3f ms, SLO %5.1f %%, background "
                 "%.3f of alone\n",
                 r["mechanism"].get<std::string>().c_str(), l["median"].get<double>(),
                 l["p99"].get<double>(), l["p999"].get<double>(),
                 100 * r["slo_attainment"].get<double>(),
                 r["background_fraction_of_alone"].get<double>());
  }
}

}  // namespace

void print_summary(std::FILE* f, const std::vector<json>& results) {
  print_overhead(f, results);
  print_multitasking(f, results);
  print_colocate(f, results);
}

}  // namespace coop::bench
