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
// multi-launch form, on the same grid, forms interleaved. With "yield_in_phases" the phased
// apps' yielding form (every phase a coop::for_each loop) runs beside them as
// "cooperative-yield", on the same grid too.
json Runner::State::overhead(const Unit& u) {
  const std::string pair = u.params["pair"];
  const int reps = u.params["reps"];
  const json& p = find_pair(config, pair);
  apps::Input& in = input(pair);
  const apps::AppInfo& app = apps::find_app(in.app);
  const int carveout = carveout_of(config["overhead"]);
  struct Series {
    const char* name;
    apps::RunConfig cfg;
  };
  const auto series = [&](apps::Form f, bool yield) {
    return Series{yield ? "cooperative-yield" : apps::form_name(f),
                  {.form = f,
                   .policy = Policy::fixed(),
                   .shared_carveout = carveout,
                   .yield_in_phases = yield}};
  };
  std::vector<Series> forms{series(apps::Form::cooperative, false),
                            series(apps::Form::standalone, false)};
  if (app.multi_launch) forms.push_back(series(apps::Form::multi_launch, false));
  if (app.multi_launch && config["overhead"].value("yield_in_phases", false))
    forms.push_back(series(apps::Form::cooperative, true));
  std::map<std::string, std::string> checked;
  std::uint32_t groups = 0;
  for (Series& s : forms) {  // warm-up, validation, and the grid every persistent form fits
    apps::Result r = apps::run(rt, in, s.cfg);
    checked[s.name] = validate_once(pair + " " + s.name, in, r);
    if (s.cfg.form != apps::Form::multi_launch)
      groups = groups ? std::min(groups, r.stats.max_groups) : r.stats.max_groups;
  }
  std::map<std::string, std::vector<double>> times;
  for (int rep = 0; rep < reps; ++rep)
    for (Series& s : forms) {
      s.cfg.groups = groups;
      times[s.name].push_back(apps::run(rt, in, s.cfg).ms);
    }
  json out{{"pair", pair},
           {"app", in.app},
           {"input", describe_input(p, in)},
           {"groups", groups},
           {"in_geomean", p.value("in_geomean", true)}};
  if (in.graph) {
    out["vertices"] = in.graph->n();
    out["arcs"] = in.graph->m();
  }
  for (const Series& f : forms) {
    json s = summarize(times[f.name]);
    s["samples"] = times[f.name];
    s["validation"] = checked[f.name];
    out["forms"][f.name] = s;
  }
  const double standalone = out["forms"]["standalone"]["median"];
  out["cooperative_over_standalone"] =
      out["forms"]["cooperative"]["median"].get<double>() / standalone;
  if (out["forms"].contains("cooperative-yield"))
    out["cooperative_yield_over_standalone"] =
        out["forms"]["cooperative-yield"]["median"].get<double>() / standalone;
  if (out["forms"].contains("multi-launch"))
    out["multi_launch_over_standalone"] =
        out["forms"]["multi-launch"]["median"].get<double>() / standalone;
  return out;
}

}  // namespace coop::bench
