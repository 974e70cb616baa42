// The bench configurations: the built-in ones, reading a configuration, and planning it into
// units.
#include "config.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "coop/apps/apps.hpp"
#include "coop/bench/experiments.hpp"
#include "coop/graph/generate.hpp"
#include "coop/graph/graph.hpp"

namespace coop::bench {

namespace {

// ------------------------------------------------------------------ configurations

const char* const kPaperConfig = R"({
  "name": "paper",
  "pairs": [
    {"name": "color/ecology", "app": "color", "input": "ecology", "priority": "id"},
    {"name": "color/g3_circuit", "app": "color", "input": "g3_circuit", "priority": "id"},
    {"name": "mis/ecology", "app": "mis", "input": "ecology", "priority": "id"},
    {"name": "mis/g3_circuit", "app": "mis", "input": "g3_circuit", "priority": "id"},
    {"name": "p-sssp/usa-ny", "app": "p-sssp", "input": "usa-ny"},
    {"name": "bfs/usa-w", "app": "bfs", "input": "usa-w"},
    {"name": "bfs/rmat22", "app": "bfs", "input": "rmat22"},
    {"name": "l-sssp/usa-nw", "app": "l-sssp", "input": "usa-nw"},
    {"name": "l-sssp/rmat20", "app": "l-sssp", "input": "rmat20"},
    {"name": "octree", "app": "octree", "particles": 1048576},
    {"name": "game", "app": "game", "depth": 8},
    {"name": "bc/1k-128k", "app": "bc", "input": "1k-128k", "in_geomean": false}
  ],
  "overhead": {"pairs": "all", "reps": 5},
  "multitasking": {
    "pairs": "all-in-geomean",
    "workloads": [
      {"name": "light", "period_ms": 70, "gpu_ms": 3},
      {"name": "medium", "period_ms": 40, "gpu_ms": 3},
      {"name": "heavy", "period_ms": 40, "gpu_ms": 10}
    ],
    "min_periods": 10,
    "variants": [
      {"name": "cooperative", "task": "matmul", "policy": "cooperative",
       "groups": ["1", "N/4", "N/2", "N-1"], "barriers": ["plain", "query"]},
      {"name": "cublas", "task": "cublas", "policy": "cooperative",
       "groups": ["N/2", "N-1"], "barriers": ["query"]},
      {"name": "kernel-level", "task": "matmul", "policy": "kernel", "groups": ["N"],
       "barriers": ["query"]},
      {"name": "hybrid", "task": "matmul", "policy": "hybrid:0.5", "groups": ["N/4", "N"],
       "barriers": ["query"]},
      {"name": "priority-only", "task": "matmul", "form": "standalone", "groups": ["N"]},
      {"name": "multi-launch", "task": "matmul", "form": "multi-launch", "groups": ["N"]}
    ]
  }
})";

const char* const kQuickConfig = R"({
  "name": "quick",
  "pairs": [
    {"name": "bfs/road", "app": "bfs", "input": "road:3000"},
    {"name": "color/grid", "app": "color", "input": "grid:40x40"},
    {"name": "octree", "app": "octree", "particles": 8192},
    {"name": "game", "app": "game", "depth": 4}
  ],
  "overhead": {"pairs": "all", "reps": 3},
  "multitasking": {
    "pairs": ["bfs/road", "octree"],
    "workloads": [{"name": "heavy", "period_ms": 40, "gpu_ms": 10}],
    "min_periods": 4,
    "variants": [
      {"name": "cooperative", "task": "matmul", "policy": "cooperative",
       "groups": ["1", "N/2"], "barriers": ["plain", "query"]},
      {"name": "kernel-level", "task": "matmul", "policy": "kernel", "groups": ["N"],
       "barriers": ["query"]}
    ]
  }
})";

// Co-location on a GPU (docs/colocation.md): apps on inputs sized to the device run back to
// back as long backgrounds while inference-like requests (a cuBLAS SGEMM, ~0.4 ms alone)
// arrive as a Poisson stream at 10, 30 and 60 % of the device's time; the static splits give
// the requests 16, 32 or 64 SMs of green contexts and the app the rest. The half-device
// mechanisms (-sm) launch the app with its workgroups numbered by SM, so that half of them is
// half of the SMs. time-slicing and mps-50 run the app and the requests in two processes (the
// driver switches between them; MPS runs both, the app on at most half of the SMs). The app
// runs again inside its kernel until one launch takes kernel_seconds (10) alone: a long job, as
// users have it, that a request on a high-priority stream cannot slip in between the runs of.
// Requests arrive for at least `seconds` of kernel time, in whole launches: here one launch.
const char* const kColocateConfig = R"({
  "name": "colocate",
  "pairs": [
    {"name": "bfs/road-24m", "app": "bfs", "input": "road:24000000"},
    {"name": "bfs/rmat24", "app": "bfs", "input": "rmat:24"},
    {"name": "octree/8m", "app": "octree", "particles": 8388608},
    {"name": "game/10", "app": "game", "depth": 10},
    {"name": "l-sssp/road-24m", "app": "l-sssp", "input": "road:24000000"}
  ],
  "colocate": {
    "pairs": "all",
    "loads": [0.1, 0.3, 0.6],
    "seconds": 4,
    "kernel_seconds": 10,
    "request": {"task": "cublas", "gpu_ms": 0.4},
    "mechanisms": [
      {"name": "requests-only", "background": "none"},
      {"name": "stream-priority", "background": "standalone"},
      {"name": "suspend", "policy": "suspend"},
      {"name": "coop-whole", "policy": "shrink"},
      {"name": "coop-whole-yield", "policy": "shrink", "yield_in_phases": true},
      {"name": "coop-at-request", "policy": "shrink", "task_launch": "at_request"},
      {"name": "coop-half-sm", "policy": "shrink", "share": 0.5, "ids_by_sm": true},
      {"name": "coop-half-yield-sm", "policy": "shrink", "share": 0.5, "yield_in_phases": true, "ids_by_sm": true},
      {"name": "green-16", "background": "green", "sms": 16},
      {"name": "green-32", "background": "green", "sms": 32},
      {"name": "green-64", "background": "green", "sms": 64},
      {"name": "time-slicing", "background": "process"},
      {"name": "mps-50", "background": "process", "mps_percent": 50}
    ]
  }
})";

// The same mechanisms at CPU scale (a minute on the CPU backend): the harness and its checks
// without a GPU. The operating system time-slices the CPU backend's threads, so its latencies
// say little about a GPU's.
const char* const kColocateQuickConfig = R"({
  "name": "colocate-quick",
  "pairs": [
    {"name": "bfs/road", "app": "bfs", "input": "road:300000"},
    {"name": "octree", "app": "octree", "particles": 65536}
  ],
  "colocate": {
    "pairs": "all",
    "loads": [0.1, 0.3],
    "seconds": 2,
    "request": {"task": "matmul", "gpu_ms": 4},
    "mechanisms": [
      {"name": "requests-only", "background": "none"},
      {"name": "stream-priority", "background": "standalone"},
      {"name": "suspend", "policy": "suspend"},
      {"name": "coop-whole", "policy": "shrink"},
      {"name": "coop-at-request", "policy": "shrink", "task_launch": "at_request"},
      {"name": "coop-half", "policy": "shrink", "share": 0.5},
      {"name": "time-slicing", "background": "process"}
    ]
  }
})";

// ------------------------------------------------------------------ planning

std::string need_string(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_string())
    throw std::invalid_argument(where + ": '" + field + "' must be a string");
  return j[field].get<std::string>();
}

double need_number(const json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j[field].is_number() || j[field].get<double>() <= 0)
    throw std::invalid_argument(where + ": '" + field + "' must be a positive number");
  return j[field].get<double>();
}

// "all", "all-in-geomean" or a list of names.
std::vector<std::string> select_pairs(const json& config, const json& which,
                                      const std::string& where) {
  std::vector<std::string> names;
  if (which.is_string()) {
    const std::string w = which.get<std::string>();
    if (w != "all" && w != "all-in-geomean")
      throw std::invalid_argument(where +
                                  ": 'pairs' must be \"all\", \"all-in-geomean\" or a list");
    for (const json& p : config["pairs"])
      if (w == "all" || p.value("in_geomean", true)) names.push_back(p["name"]);
  } else if (which.is_array()) {
    for (const json& n : which) names.push_back(find_pair(config, n.get<std::string>())["name"]);
  } else {
    throw std::invalid_argument(where + ": 'pairs' must be \"all\", \"all-in-geomean\" or a list");
  }
  return names;
}

}  // namespace

namespace {
// Throws std::invalid_argument naming `where` and the field when `j` has a field not in
// `known`: a misspelt option would otherwise be ignored and its default used.
void check_fields(const json& j, std::initializer_list<std::string_view> known,
                  const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(where + " must be an object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw std::invalid_argument(where + ": unknown field '" + it.key() + "' (" + list + ")");
    }
}
}  // namespace

std::string graph_file_of(const std::string& input) {
  constexpr std::string_view prefix = "file:";
  return input.starts_with(prefix) ? input.substr(prefix.size()) : std::string();
}

const json& find_pair(const json& config, const std::string& name) {
  for (const json& p : config["pairs"])
    if (p.value("name", "") == name) return p;
  throw std::invalid_argument("no pair named '" + name + "' in the configuration's pairs");
}

std::uint32_t resolve_groups(const std::string& spec, std::uint32_t n) {
  if (spec == "N") return n;
  if (spec == "N-1") return std::max(1u, n - 1);
  if (spec == "N/2") return std::max(1u, n / 2);
  if (spec == "N/4") return std::max(1u, n / 4);
  if (spec == "1") return 1;
  throw std::invalid_argument("groups must be 1, N/4, N/2, N-1 or N, got '" + spec + "'");
}

int carveout_of(const json& o) {
  return o.value("shared_carveout", LaunchConfig{}.shared_carveout);
}

namespace {

struct Builtin {
  const char* name;
  const char* text;
};
const Builtin kBuiltins[] = {{"paper", kPaperConfig},
                             {"quick", kQuickConfig},
                             {"colocate", kColocateConfig},
                             {"colocate-quick", kColocateQuickConfig}};

}  // namespace

std::vector<std::string> builtin_config_names() {
  std::vector<std::string> names;
  for (const Builtin& b : kBuiltins) names.push_back(b.name);
  return names;
}

std::string builtin_config_list() {
  std::string list;
  for (const Builtin& b : kBuiltins) list += (list.empty() ? "" : ", ") + std::string(b.name);
  return list;
}

json builtin_config(const std::string& name) {
  for (const Builtin& b : kBuiltins)
    if (name == b.name) return json::parse(b.text);
  throw std::invalid_argument("no built-in configuration '" + name + "' (" + builtin_config_list() +
                              ")");
}

Mechanism parse_mechanism(const json& m, const std::string& where) {
  Mechanism out;
  out.name = need_string(m, "name", where);
  const std::string at = where + " " + out.name;
  const std::string bg = m.value("background", "cooperative");
  if (bg == "none")
    out.background = Mechanism::Background::none;
  else if (bg == "standalone")
    out.background = Mechanism::Background::standalone;
  else if (bg == "green")
    out.background = Mechanism::Background::green;
  else if (bg == "process")
    out.background = Mechanism::Background::process;
  else if (bg != "cooperative")
    throw std::invalid_argument(
        at + ": 'background' must be none, standalone, cooperative, green or process");
  for (const char* field :
       {"policy", "share", "prestage", "task_launch", "yield_in_phases", "ids_by_sm"})
    if (m.contains(field) && out.background != Mechanism::Background::cooperative)
      throw std::invalid_argument(at + ": '" + field + "' applies to a cooperative background");
  if (m.contains("policy")) {
    if (!m["policy"].is_string()) throw std::invalid_argument(at + ": 'policy' must be a string");
    out.policy = PreemptionPolicy::parse(m["policy"].get<std::string>());
  }
  if (m.contains("task_launch")) {
    if (!m["task_launch"].is_string())
      throw std::invalid_argument(at + ": 'task_launch' must be after_gather or at_request");
    try {
      out.launch = parse_task_launch(m["task_launch"].get<std::string>());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(at + ": " + e.what());
    }
  }
  if (out.background == Mechanism::Background::green) {
    if (!m.contains("sms") || !m["sms"].is_number_integer() || m["sms"].get<std::int64_t>() < 1 ||
        m["sms"].get<std::int64_t>() > 4096)
      throw std::invalid_argument(at + ": 'sms' (the requests' SMs) must be a positive integer");
    out.sms = m["sms"].get<std::uint32_t>();
  } else if (m.contains("sms")) {
    throw std::invalid_argument(at + ": 'sms' applies to a green background");
  }
  if (m.contains("mps_percent")) {
    if (out.background != Mechanism::Background::process)
      throw std::invalid_argument(at + ": 'mps_percent' applies to a process background");
    if (!m["mps_percent"].is_number_integer() || m["mps_percent"].get<std::int64_t>() < 1 ||
        m["mps_percent"].get<std::int64_t>() > 100)
      throw std::invalid_argument(at +
                                  ": 'mps_percent' (the app's share of the SMs under MPS) must be "
                                  "an integer in [1, 100]");
    out.mps_percent = m["mps_percent"].get<std::uint32_t>();
  }
  if (m.contains("share")) {
    if (!m["share"].is_number() || !(m["share"].get<double>() > 0) || m["share"].get<double>() > 1)
      throw std::invalid_argument(at + ": 'share' must be a fraction in (0, 1]");
    out.share = m["share"];
  }
  for (auto [field, flag] :
       {std::pair{"prestage", &out.prestage}, std::pair{"yield_in_phases", &out.yield_in_phases},
        std::pair{"ids_by_sm", &out.ids_by_sm}})
    if (m.contains(field)) {
      if (!m[field].is_boolean())
        throw std::invalid_argument(at + ": '" + field + "' must be true or false");
      *flag = m[field];
    }
  if (out.prestage && out.launch == TaskLaunch::at_request)
    throw std::invalid_argument(at + ": 'prestage' enqueues the request itself: no 'task_launch'");
  return out;
}

namespace {

void check_carveout(const json& o, const std::string& where) {
  if (!o.contains("shared_carveout")) return;
  const json& c = o["shared_carveout"];
  if (!c.is_number_integer() || c.get<int>() < -1 || c.get<int>() > 100)
    throw std::invalid_argument(where + ": 'shared_carveout' must be -1 or a percentage 0-100");
}

// Every pair names itself once and an app, and a graph app its input; only known experiments.
void check_pairs(const json& config) {
  if (!config.is_object() || !config.contains("pairs") || !config["pairs"].is_array())
    throw std::invalid_argument("configuration: 'pairs' must be a list");
  std::set<std::string> names;
  for (const json& p : config["pairs"]) {
    const std::string name = need_string(p, "name", "a pair");
    const std::string app = need_string(p, "app", "pair " + name);
    check_fields(
        p, {"name", "app", "input", "priority", "particles", "depth", "bc_sources", "in_geomean"},
        "pair " + name);
    if (!apps::find_app(app).needs_graph() && p.contains("input"))
      throw std::invalid_argument("pair " + name + ": " + app + " does not read a graph ('input')");
    if (apps::find_app(app).needs_graph()) {
      const std::string input = need_string(p, "input", "pair " + name);
      // A file is checked now, so that a wrong path fails before the run, not in its units.
      if (input.starts_with("file:")) {
        const std::string path = graph_file_of(input);
        std::error_code ec;
        if (path.empty() || !std::filesystem::exists(path, ec))
          throw std::invalid_argument("pair " + name + ": no graph file '" + path + "'");
        if (!std::filesystem::is_regular_file(path, ec))
          throw std::invalid_argument("pair " + name + ": '" + path + "' is not a file");
        if (std::filesystem::file_size(path, ec) == 0)
          throw std::invalid_argument("pair " + name + ": graph file '" + path + "' is empty");
        try {
          graph::detect_format(path);
        } catch (const std::exception& e) {
          throw std::invalid_argument("pair " + name + ": " + e.what());
        }
      } else {
        try {  // a generator spec: checked now too, not when its unit runs
          graph::describe(input);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument("pair " + name + ": " + e.what());
        }
      }
    }
    if (!names.insert(name).second)
      throw std::invalid_argument("pair '" + name + "' is named twice");
  }
  for (auto it = config.begin(); it != config.end(); ++it)
    if (it.key() != "name" && it.key() != "pairs" && it.key() != "overhead" &&
        it.key() != "multitasking" && it.key() != "colocate")
      throw std::invalid_argument("configuration: unknown experiment '" + it.key() +
                                  "' (overhead, multitasking, colocate)");
}

void plan_overhead(const json& config, std::vector<Unit>& units) {
  const json& o = config["overhead"];
  check_fields(o, {"pairs", "reps", "shared_carveout", "yield_in_phases"}, "overhead");
  const int reps = o.value("reps", 5);
  if (reps < 1) throw std::invalid_argument("overhead: 'reps' must be at least 1");
  check_carveout(o, "overhead");
  if (o.contains("yield_in_phases") && !o["yield_in_phases"].is_boolean())
    throw std::invalid_argument("overhead: 'yield_in_phases' must be true or false");
  for (const std::string& pair : select_pairs(config, o.value("pairs", json("all")), "overhead"))
    units.push_back(
        {"overhead/" + pair, "overhead", {{"pair", pair}, {"reps", reps}}, double(reps) * 3});
}

// Checks a multitasking variant's fields; returns its form.
apps::Form check_variant(const json& v, const std::string& where) {
  const std::string task = v.value("task", "matmul");
  if (task != "matmul" && task != "cublas")
    throw std::invalid_argument(where + ": 'task' must be matmul or cublas");
  const apps::Form form = apps::parse_form(v.value("form", "cooperative"));
  PreemptionPolicy::parse(v.value("policy", "cooperative"));
  check_carveout(v, where);
  for (const json& g : v.value("groups", json::array({"N/2"})))
    resolve_groups(g.get<std::string>(), 4);
  if (v.contains("yield_in_phases") && (!v["yield_in_phases"].is_boolean() ||
                                        (v["yield_in_phases"] && form != apps::Form::cooperative)))
    throw std::invalid_argument(where +
                                ": 'yield_in_phases' must be true or false, and true only in the "
                                "cooperative form");
  return form;
}

// One variant's units: per workload, pair, groups request and (cooperative graph apps only)
// barrier.
void plan_variant(const json& config, const json& v, const std::vector<std::string>& pairs,
                  double min_periods, std::vector<Unit>& units) {
  const json& m = config["multitasking"];
  const std::string vname = need_string(v, "name", "a multitasking variant");
  const apps::Form form = check_variant(v, "multitasking variant " + vname);
  const json groups = v.value("groups", json::array({"N/2"}));
  for (const json& w : m["workloads"]) {
    const std::string wname = need_string(w, "name", "a workload");
    const double period = need_number(w, "period_ms", "workload " + wname);
    need_number(w, "gpu_ms", "workload " + wname);
    for (const std::string& pair : pairs) {
      const apps::AppInfo& app = apps::find_app(find_pair(config, pair)["app"].get<std::string>());
      if (form == apps::Form::multi_launch && !app.multi_launch) continue;
      // Yielding inside phases means nothing to the work-stealing apps (multi_launch: phased).
      if (v.value("yield_in_phases", false) && !app.multi_launch) continue;
      // The barrier variant matters only for cooperative graph apps.
      json barriers = json::array({nullptr});
      if (form == apps::Form::cooperative && app.needs_graph())
        barriers = v.value("barriers", json::array({"query"}));
      for (const json& g : groups)
        for (const json& b : barriers) {
          std::string key =
              "multitasking/" + vname + "/" + pair + "/" + wname + "/k=" + g.get<std::string>();
          if (!b.is_null()) key += "/" + b.get<std::string>();
          units.push_back({key,
                           "multitasking",
                           {{"pair", pair},
                            {"variant", v},
                            {"workload", w},
                            {"groups", g},
                            {"barrier", b},
                            {"min_periods", min_periods}},
                           period * min_periods / 100.0 + 1});
        }
    }
  }
}

void plan_multitasking(const json& config, std::vector<Unit>& units) {
  const json& m = config["multitasking"];
  check_fields(m, {"pairs", "workloads", "variants", "min_periods"}, "multitasking");
  const auto pairs = select_pairs(config, m.value("pairs", json("all")), "multitasking");
  if (!m.contains("workloads") || !m["workloads"].is_array() || !m.contains("variants") ||
      !m["variants"].is_array())
    throw std::invalid_argument("multitasking: 'workloads' and 'variants' must be lists");
  const double min_periods = m.value("min_periods", 10.0);
  for (const json& v : m["variants"]) plan_variant(config, v, pairs, min_periods, units);
}

// Per pair, load and mechanism; one arrival seed per load, the same for every mechanism.
void plan_colocate(const json& config, std::vector<Unit>& units) {
  const json& c = config["colocate"];
  check_fields(c,
               {"pairs", "loads", "seconds", "max_seconds", "kernel_seconds", "request",
                "mechanisms", "seed"},
               "colocate");
  const double kernel_seconds =
      c.contains("kernel_seconds") ? need_number(c, "kernel_seconds", "colocate") : 0.0;
  if (kernel_seconds < 0)
    throw std::invalid_argument("colocate: 'kernel_seconds' must be 0 or more");
  const auto pairs = select_pairs(config, c.value("pairs", json("all")), "colocate");
  const double seconds = c.contains("seconds") ? need_number(c, "seconds", "colocate") : 4.0;
  const double max_seconds =
      c.contains("max_seconds") ? need_number(c, "max_seconds", "colocate") : 10 * seconds;
  if (!c.contains("loads") || !c["loads"].is_array() || c["loads"].empty())
    throw std::invalid_argument("colocate: 'loads' must be a list of fractions in (0, 1)");
  for (const json& l : c["loads"])
    if (!l.is_number() || !(l.get<double>() > 0 && l.get<double>() < 1))
      throw std::invalid_argument("colocate: 'loads' must be a list of fractions in (0, 1)");
  const json request = c.value("request", json{{"task", "cublas"}, {"gpu_ms", 0.4}});
  const std::string task = request.value("task", "cublas");
  if (task != "matmul" && task != "cublas")
    throw std::invalid_argument("colocate: the request's 'task' must be matmul or cublas");
  need_number(request, "gpu_ms", "colocate: the request");
  if (!c.contains("mechanisms") || !c["mechanisms"].is_array() || c["mechanisms"].empty())
    throw std::invalid_argument("colocate: 'mechanisms' must be a list");
  std::set<std::string> names;
  for (const json& m : c["mechanisms"])
    if (!names.insert(parse_mechanism(m, "colocate mechanism").name).second)
      throw std::invalid_argument("colocate: mechanism '" + m["name"].get<std::string>() +
                                  "' is named twice");
  const std::uint64_t seed = c.value("seed", 1);
  for (const std::string& pair : pairs) {
    // Yielding inside phases means nothing to the work-stealing apps: no unit repeats another.
    const bool phased =
        apps::find_app(find_pair(config, pair)["app"].get<std::string>()).multi_launch;
    for (std::size_t li = 0; li < c["loads"].size(); ++li) {
      const double load = c["loads"][li];
      char load_key[32];
      std::snprintf(load_key, sizeof load_key, "load=%g", load);
      for (const json& m : c["mechanisms"]) {
        if (m.value("yield_in_phases", false) && !phased) continue;
        units.push_back({"colocate/" + pair + "/" + load_key + "/" + m["name"].get<std::string>(),
                         "colocate",
                         {{"pair", pair},
                          {"load", load},
                          {"seconds", seconds},
                          {"max_seconds", max_seconds},
                          {"kernel_seconds", kernel_seconds},
                          {"request", request},
                          {"mechanism", m},
                          {"seed", seed + li}},
                         std::max(seconds, kernel_seconds) + 1});
      }
    }
  }
}

}  // namespace

std::vector<Unit> plan(const json& config) {
  check_pairs(config);
  std::vector<Unit> units;
  if (config.contains("overhead")) plan_overhead(config, units);
  if (config.contains("multitasking")) plan_multitasking(config, units);
  if (config.contains("colocate")) plan_colocate(config, units);
  return units;
}

}  // namespace coop::bench
