// The headline figures of a set of results: Table 2 and, per workload and variant, the
// multitasking slowdown and periods met.
#include <cmath>
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
  std::vector<double> coop, multi;
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
  }
  if (coop.empty()) {
    std::fprintf(f, "Table 2: no overhead pairs in these results.\n");
    return;
  }
  std::fprintf(f,
               "Table 2: cooperative / standalone over %zu pairs: geomean %.3f, max %.3f (%s); "
               "paper 1.07 / 1.23.",
               coop.size(), geomean(coop), worst, worst_pair.c_str());
  if (multi.empty())
    std::fprintf(f, " No multi-launch pairs.\n");
  else
    std::fprintf(f, " Multi-launch / standalone geomean %.3f over %zu pairs.\n", geomean(multi),
                 multi.size());
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

}  // namespace

void print_summary(std::FILE* f, const std::vector<json>& results) {
  print_overhead(f, results);
  print_multitasking(f, results);
}

}  // namespace coop::bench
