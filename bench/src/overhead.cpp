// The overhead experiment (Table 2): an app's cooperative form against its standalone and
// multi-launch forms when nothing else runs.
#include <algorithm>
#include <map>
#include <vector>

#include "config.hpp"
#include "runner.hpp"

namespace coop::bench {

// Table 2: the cooperative kernel with a scheduler that never resizes, against the same
// kernel standalone (a plain persistent kernel with the platform's grid barrier) and the
// multi-launch form, on the same grid, forms interleaved.
json Runner::State::overhead(const Unit& u) {
  const std::string pair = u.params["pair"];
  const int reps = u.params["reps"];
  const json& p = find_pair(config, pair);
  apps::Input& in = input(pair);
  std::vector<apps::Form> forms{apps::Form::cooperative, apps::Form::standalone};
  if (apps::find_app(in.app).multi_launch) forms.push_back(apps::Form::multi_launch);
  std::map<apps::Form, std::string> checked;
  std::uint32_t groups = 0;
  const int carveout = carveout_of(config["overhead"]);
  for (apps::Form f : forms) {  // warm-up, validation, and the grid both persistent forms fit
    apps::Result r =
        apps::run(rt, in, {.form = f, .policy = Policy::fixed(), .shared_carveout = carveout});
    checked[f] = validate_once(pair + " " + apps::form_name(f), in, r);
    if (f != apps::Form::multi_launch)
      groups = groups ? std::min(groups, r.stats.max_groups) : r.stats.max_groups;
  }
  std::map<apps::Form, std::vector<double>> times;
  for (int rep = 0; rep < reps; ++rep)
    for (apps::Form f : forms)
      times[f].push_back(
          apps::run(
              rt, in,
              {.form = f, .policy = Policy::fixed(), .groups = groups, .shared_carveout = carveout})
              .ms);
  json out{{"pair", pair},
           {"app", in.app},
           {"input", describe_input(p, in)},
           {"groups", groups},
           {"in_geomean", p.value("in_geomean", true)}};
  if (in.graph) {
    out["vertices"] = in.graph->n();
    out["arcs"] = in.graph->m();
  }
  for (apps::Form f : forms) {
    json s = summarize(times[f]);
    s["samples"] = times[f];
    s["validation"] = checked[f];
    out["forms"][apps::form_name(f)] = s;
  }
  const double standalone = out["forms"]["standalone"]["median"];
  out["cooperative_over_standalone"] =
      out["forms"]["cooperative"]["median"].get<double>() / standalone;
  if (out["forms"].contains("multi-launch"))
    out["multi_launch_over_standalone"] =
        out["forms"]["multi-launch"]["median"].get<double>() / standalone;
  return out;
}

}  // namespace coop::bench
