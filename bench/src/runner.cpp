// The runner: inputs, tasks and validations kept between units, and the dispatch to the
// experiments.
#include "runner.hpp"

#include <algorithm>
#include <stdexcept>

#include "config.hpp"
#include "coop/graph/generate.hpp"
#include "coop/graph/graph.hpp"

namespace coop::bench {

namespace {
// A pair's graph: read from its file, or generated.
graph::Graph pair_graph(const std::string& input) {
  if (const std::string path = graph_file_of(input); !path.empty()) return graph::read_graph(path);
  return graph::generate(input, 1).graph;
}
}  // namespace

apps::Input& Runner::State::input(const std::string& pair, const std::string& graph_file) {
  auto& slot = inputs[pair];
  if (slot) return *slot;
  const json& p = find_pair(config, pair);
  auto in = std::make_unique<apps::Input>();
  in->app = p["app"];
  in->priority =
      p.value("priority", "hashed") == "id" ? apps::Priority::id : apps::Priority::hashed;
  if (apps::find_app(in->app).needs_graph())
    in->graph = std::make_shared<graph::Graph>(graph_file.empty() ? pair_graph(p["input"])
                                                                  : graph::read_binary(graph_file));
  in->particles = p.value("particles", in->particles);
  in->depth = p.value("depth", in->depth);
  in->bc_sources = p.value("bc_sources", in->bc_sources);
  in->check();
  slot = std::move(in);
  return *slot;
}

std::string Runner::State::describe_input(const json& p, const apps::Input& in) {
  if (in.graph) return p["input"].get<std::string>();
  if (apps::find_app(in.app).id == apps::AppId::octree)
    return std::to_string(in.particles) + " particles";
  return "depth " + std::to_string(in.depth);
}

TaskWork& Runner::State::task(const std::string& kind, double gpu_ms) {
  const std::string key = kind + "/" + std::to_string(gpu_ms);
  auto& slot = tasks[key];
  if (!slot) slot = std::make_unique<TaskWork>(rt, kind, gpu_ms);
  return *slot;
}

std::string Runner::State::validate_once(const std::string& what, const apps::Input& in,
                                         const apps::Result& r) {
  if (!validated.insert(what).second) return "checked earlier in this run";
  apps::Validation v = apps::validate(in, r);
  if (!v.ok) throw std::runtime_error(what + ": wrong result: " + v.detail);
  return "ok: " + v.detail;
}

Runner::Runner(Runtime& rt, json config, std::string child_exe)
    : s_(std::make_unique<State>(rt, std::move(config), std::move(child_exe))) {}
Runner::~Runner() = default;

void Runner::prepare(const Unit& u) {
  if (u.params.contains("pair")) s_->input(u.params["pair"].get<std::string>());
}

json Runner::run(const Unit& u) {
  if (u.experiment == "overhead") return s_->overhead(u);
  if (u.experiment == "multitasking") return s_->multitasking(u);
  if (u.experiment == "colocate") return s_->colocate(u);
  throw std::invalid_argument("unknown experiment '" + u.experiment + "'");
}

json to_json(const JobStats& s) {
  return {{"max_groups", s.max_groups}, {"kills", s.kills},       {"forks", s.forks},
          {"resizes", s.resizes},       {"barriers", s.barriers}, {"suspends", s.suspends}};
}

// Every k-th change, keeping the last.
json timeline(const JobStats& s, std::size_t limit) {
  json t = json::array();
  const std::size_t step = std::max<std::size_t>(1, s.timeline.size() / limit);
  for (std::size_t i = 0; i < s.timeline.size(); i += step)
    t.push_back({s.timeline[i].t_ms - s.start_ms, s.timeline[i].active});
  if (!s.timeline.empty() && (s.timeline.size() - 1) % step)
    t.push_back({s.timeline.back().t_ms - s.start_ms, s.timeline.back().active});
  return t;
}

}  // namespace coop::bench
