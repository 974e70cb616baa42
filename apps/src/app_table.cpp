// The apps as data: one row per app, and the public entry points that look an app up and call
// its row's functions.
#include <array>
#include <sstream>
#include <stdexcept>

#include "coop/apps/apps.hpp"
#include "entry_points.hpp"

namespace coop::apps {

namespace {

using namespace entry;

// In AppId order (all_apps() and app_names() list them so).
const std::array<AppInfo, 8> kApps{{
    {AppId::color, "color", GraphUse::symmetrised, false, true, nullptr, run_color, validate_color,
     summarize_color, write_values},
    {AppId::mis, "mis", GraphUse::symmetrised, false, true, nullptr, run_mis, validate_mis,
     summarize_mis, write_values},
    {AppId::p_sssp, "p-sssp", GraphUse::transposed, true, true, nullptr, run_p_sssp, validate_sssp,
     summarize_distances, write_values},
    {AppId::bfs, "bfs", GraphUse::arcs, true, true, nullptr, run_bfs, validate_bfs,
     summarize_levels, write_values},
    {AppId::l_sssp, "l-sssp", GraphUse::arcs, true, true, nullptr, run_l_sssp, validate_sssp,
     summarize_distances, write_values},
    {AppId::octree, "octree", GraphUse::none, false, false, check_octree, run_octree,
     validate_octree, summarize_octree, write_octree},
    {AppId::game, "game", GraphUse::none, false, false, check_game, run_game, validate_game,
     summarize_game, write_game},
    {AppId::bc, "bc", GraphUse::arcs, false, true, nullptr, run_bc, validate_bc, summarize_bc,
     write_bc},
}};

}  // namespace

std::span<const AppInfo> all_apps() { return kApps; }

const AppInfo& find_app(std::string_view name) {
  for (const AppInfo& a : kApps)
    if (a.name == name) return a;
  std::string list;
  for (const AppInfo& a : kApps) (list += list.empty() ? "" : ", ") += a.name;
  throw std::invalid_argument("unknown app '" + std::string(name) + "' (" + list + ")");
}

const std::vector<std::string>& app_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const AppInfo& a : kApps) v.emplace_back(a.name);
    return v;
  }();
  return names;
}

bool is_graph_app(const std::string& app) { return find_app(app).needs_graph(); }
bool has_multi_launch(const std::string& app) { return find_app(app).multi_launch; }
void check_app(const std::string& app) { find_app(app); }

const char* form_name(Form f) {
  switch (f) {
    case Form::cooperative:
      return "cooperative";
    case Form::standalone:
      return "standalone";
    case Form::multi_launch:
      break;
  }
  return "multi-launch";
}

Form parse_form(const std::string& s) {
  for (Form f : {Form::cooperative, Form::standalone, Form::multi_launch})
    if (s == form_name(f)) return f;
  throw std::invalid_argument("unknown form '" + s + "' (cooperative, standalone or multi-launch)");
}

void Input::check() const {
  const AppInfo& a = find_app(app);
  if (a.needs_graph()) {
    if (!graph) throw std::invalid_argument(app + " needs a graph (--graph FILE or --gen SPEC)");
    if (graph->n() == 0) throw std::invalid_argument(app + ": the graph has no vertices");
    if (a.needs_source && source >= graph->n())
      throw std::invalid_argument("source " + std::to_string(source) + " is not a vertex (ids 0-" +
                                  std::to_string(graph->n() - 1) + ")");
  }
  if (a.check) a.check(*this);
}

const graph::Graph& Input::kernel_graph() const {
  const AppInfo& a = find_app(app);
  if (!a.needs_graph() || !graph) throw std::invalid_argument(app + " has no graph");
  switch (a.graph) {
    case GraphUse::symmetrised:
      if (!symmetric) symmetric = std::make_shared<graph::Graph>(graph->symmetrize());
      return *symmetric;
    case GraphUse::transposed:
      if (!transposed) transposed = std::make_shared<graph::Graph>(graph->transpose());
      return *transposed;
    case GraphUse::arcs:
    case GraphUse::none:
      break;
  }
  return *graph;
}

void check_config(const AppInfo& a, const RunConfig& cfg) {
  const std::string name(a.name);
  if (cfg.form == Form::multi_launch && !a.multi_launch)
    throw std::invalid_argument(name + " has no multi-launch form (a work-stealing app)");
  if (cfg.runs_per_kernel == 0) throw std::invalid_argument("runs_per_kernel must be at least 1");
  if (cfg.runs_per_kernel > 1 && cfg.form == Form::multi_launch)
    throw std::invalid_argument(
        "runs_per_kernel > 1 runs the app again inside its persistent kernel (cooperative or "
        "standalone form); the multi-launch form has no such kernel");
}

Result run(Runtime& rt, const Input& in, const RunConfig& cfg) {
  in.check();
  const AppInfo& a = find_app(in.app);
  check_config(a, cfg);
  Result r;
  a.run(rt, in, cfg, r);
  return r;
}

Validation validate(const Input& in, const Result& r) {
  in.check();
  return find_app(in.app).validate(in, r);
}

std::string summarize(const Input& in, const Result& r) {
  std::ostringstream os;
  find_app(in.app).summarize(os, in, r);
  return os.str();
}

void write_output(std::ostream& os, const Input& in, const Result& r) {
  find_app(in.app).write(os, in, r);
}

}  // namespace coop::apps
