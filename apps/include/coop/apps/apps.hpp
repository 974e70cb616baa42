// The paper's applications behind one interface: prepare an input once, run an app in any of
// its forms on any backend, check the result against an independent CPU reference, write it.
// Used by `coop run`, the tests and the benchmarks. The apps are data: one AppInfo row each
// (all_apps(), find_app()), so adding an app is a row and its functions.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coop/apps/common.hpp"
#include "coop/apps/game.hpp"
#include "coop/apps/octree.hpp"
#include "coop/graph/graph.hpp"
#include "coop/policy.hpp"
#include "coop/runtime.hpp"
#include "coop/stats.hpp"

namespace coop::apps {

/// Ends a launch of several runs (RunConfig::runs_per_kernel) early, at a run's end: a long
/// job that its caller stops without losing a run's result (`coop bench` ends a background's
/// launch once its unit's wall time is up). request() from any thread: the kernel sees it at its
/// next restart and ends after the run that starts there (after the first run when asked before
/// the launch); the result is that run's, whole. Its words are in managed memory, which the GPU
/// reads while the host writes it (concurrent managed access, as on Linux). One launch at a
/// time.
class RunStop {
 public:
  RunStop();
  /// Asks the launch to end after a run (any thread).
  void request();
  bool requested() const;
  /// Not requested again, for another launch.
  void reset();
  /// The kernel's view, for a launch about to start.
  RunEnd arm();
  /// After the launch: the runs it did of `runs_per_kernel`.
  std::uint32_t runs_done(std::uint32_t runs_per_kernel) const;

 private:
  mutable ManagedArray<std::uint32_t> words_;  // the request, and the run the launch ends after
};

/// How an app is run.
enum class Form : std::uint8_t {
  cooperative,   ///< the cooperative kernel under the runtime's scheduler
  standalone,    ///< the same kernel as a plain persistent kernel (Mode::persistent)
  multi_launch,  ///< one launch per phase (graph apps only)
};
const char* form_name(Form f);
/// "cooperative" | "standalone" | "multi-launch"; throws std::invalid_argument.
Form parse_form(const std::string& s);

/// What an app runs on. Graph apps read `graph` as given (directed arcs for bfs, sssp and bc;
/// color and mis use its symmetrised form, p-sssp its transpose); the derived graphs and device
/// copies are made once.
struct Input {
  std::string app;
  std::shared_ptr<const graph::Graph> graph;  ///< graph apps
  std::uint32_t source = 0;                   ///< bfs, l-sssp, p-sssp
  Priority priority = Priority::hashed;       ///< color, mis
  std::uint32_t seed = 1;                     ///< color/mis ranks, octree particles
  std::uint32_t bc_sources = 0;               ///< bc: the first K vertices (0 = all)
  std::uint32_t particles = 1u << 20;         ///< octree
  std::uint32_t max_leaf = 32;                ///< octree: a cell with more is split
  std::uint32_t max_depth = 20;               ///< octree
  std::string moves;                          ///< game: opening moves, "3,3,4" (columns 0-6)
  std::uint32_t depth = 7;                    ///< game: look-ahead in plies

  /// Checks the parameters against the graph (source in range, ...); throws
  /// std::invalid_argument with the reason.
  void check() const;
  /// The graph the app's kernel reads (symmetrised for color and mis, transposed for p-sssp);
  /// throws std::invalid_argument for an app without a graph.
  const graph::Graph& kernel_graph() const;

  // Prepared on first use.
  mutable std::shared_ptr<const graph::Graph> symmetric, transposed;
  mutable std::shared_ptr<GraphBuffers> buffers;
  mutable std::vector<Particle> particle_set;
  mutable std::uint32_t particle_seed = 0;  ///< the seed particle_set was made with
};

struct RunConfig {
  Form form = Form::cooperative;
  Policy policy{};
  ResizeBarrier barrier = ResizeBarrier::query;
  std::uint32_t groups = 0;   ///< N (0 = all that can be co-resident)
  std::uint32_t threads = 0;  ///< per workgroup (0 = 256 on the GPU, 8 on the CPU backend)
  /// LaunchConfig::shared_carveout of the persistent forms
  int shared_carveout = LaunchConfig{}.shared_carveout;
  /// Called with true once the app's kernel(s) are launched (a cooperative kernel's job
  /// admitted) and false once they are done (about the span Result::ms times, without
  /// preparing buffers or reading results back): benchmarks keep a clock of kernel time with
  /// it.
  std::function<void(bool running)> on_kernel = {};
  /// Cooperative and standalone forms: called with the job right after it is admitted (before
  /// it is waited for), so that another thread may watch or steer it (stats, set_cap, suspend,
  /// cancel) while run() blocks. Not called for the multi-launch form.
  std::function<void(const Job&)> on_job = {};
  /// Phased apps, cooperative form: run each phase as a coop::for_each loop, so that
  /// workgroups can leave inside a phase (between chunks) and not only at its resizing
  /// barrier. Off by default: on an H100 the loop's kernels hold more registers (fewer
  /// workgroups fit) and pay per chunk, and the paper's pairs ran 1.5x slower on geomean
  /// (docs/apps.md, "Yielding inside phases").
  bool yield_in_phases = false;
  /// GPU: LaunchConfig::ids_by_sm (the first grid's ids by SM, so that tasks get whole SMs).
  /// Off by default: phases with less work than the grid then run on few SMs.
  bool ids_by_sm = false;
  /// Cooperative and standalone forms: runs of the app inside one kernel launch. After each
  /// but the last, the kernel restores the buffers the run wrote (device-side copies made
  /// before the first; for octree and game also the task pools with the root's task) and starts
  /// again, so one launch runs as long as a user's long job does: a high-priority stream's
  /// kernel cannot slip in between the runs. Result::ms and the job's stats cover all of them;
  /// the result is the last run's.
  std::uint32_t runs_per_kernel = 1;
  /// With runs_per_kernel > 1: lets another thread end the launch after an earlier run
  /// (Result::runs says how many ran). Not owned; outlives the run.
  RunStop* stop = nullptr;
};

struct Result {
  double ms = 0;                     ///< launch to completion (wall clock)
  std::uint32_t runs = 1;            ///< runs of the app in the launch (RunConfig::stop: fewer)
  JobStats stats;                    ///< cooperative and standalone forms
  std::uint64_t rounds = 0;          ///< multi-launch: rounds
  std::uint64_t launches = 0;        ///< multi-launch: kernel launches
  std::vector<std::int64_t> values;  ///< per vertex: level, distance (-1 unreachable), colour, 1/0
  std::vector<double> centrality;    ///< bc
  std::vector<Particle> particles;   ///< octree output order
  std::vector<OctreeNode> nodes;     ///< octree cells
  std::int32_t game_value = 0;
};

struct Validation {
  bool ok = false;
  std::string detail;  ///< what was compared, or the first difference
};

/// The eight apps, in the order they are listed: color, mis, p-sssp, bfs, l-sssp, octree,
/// game, bc. Tools that treat one app specially switch on AppId (the compiler then names a
/// case left out) rather than compare names.
enum class AppId : std::uint8_t { color, mis, p_sssp, bfs, l_sssp, octree, game, bc };

/// Which graph an app's kernel reads (Input::kernel_graph()).
enum class GraphUse : std::uint8_t {
  none,         ///< no graph (octree, game)
  arcs,         ///< Input::graph as given (bfs, l-sssp, bc)
  symmetrised,  ///< every arc both ways (color, mis)
  transposed,   ///< arcs reversed, to pull from predecessors (p-sssp)
};

/// One application: what its input needs and its entry points (the functions behind run(),
/// validate(), summarize() and write_output()).
struct AppInfo {
  AppId id;
  std::string_view name;  ///< as typed on the command line: "bfs", "l-sssp", ...
  GraphUse graph;
  bool needs_source;  ///< reads Input::source (checked to be a vertex)
  bool multi_launch;  ///< has Form::multi_launch (the phased apps; not the work-stealing ones)
  /// The app's own parameter checks, after the common graph and source checks (may be null);
  /// throws std::invalid_argument with the reason.
  void (*check)(const Input& in);
  /// Launches the kernel(s) in cfg.form and fills the result (the form is already checked).
  void (*run)(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r);
  Validation (*validate)(const Input& in, const Result& r);
  void (*summarize)(std::ostream& os, const Input& in, const Result& r);
  void (*write)(std::ostream& os, const Input& in, const Result& r);

  bool needs_graph() const { return graph != GraphUse::none; }
};

/// Every app, in AppId order.
std::span<const AppInfo> all_apps();
/// The app called `name`; throws std::invalid_argument naming the known apps.
const AppInfo& find_app(std::string_view name);

/// The app names in all_apps() order.
const std::vector<std::string>& app_names();
// Shorthands for find_app(app).needs_graph(), .multi_launch and the lookup alone (each throws
// std::invalid_argument for an unknown app).
bool is_graph_app(const std::string& app);
bool has_multi_launch(const std::string& app);
void check_app(const std::string& app);

/// One line about a result ("reached 264346 of 264346 vertices, 617 levels").
std::string summarize(const Input& in, const Result& r);

/// Checks that `cfg` fits the app (its form exists, runs_per_kernel is one or the form is a
/// persistent kernel); throws std::invalid_argument with the reason. run() calls it;
/// callers that start the run later (on another thread) call it first to fail before anything runs.
void check_config(const AppInfo& app, const RunConfig& cfg);

/// Runs the app once. Throws std::invalid_argument for bad inputs and forms, coop::misuse_error
/// or std::runtime_error when the run fails (with the reason).
Result run(Runtime& rt, const Input& in, const RunConfig& cfg);

/// Compares with the app's independent CPU reference (and checks the result's own invariants).
Validation validate(const Input& in, const Result& r);

/// One line per vertex in id order (level or distance with -1 unreachable, colour, 1/0, bc
/// value); octree: one line per leaf "depth cx cy cz count"; game: the value.
void write_output(std::ostream& os, const Input& in, const Result& r);

}  // namespace coop::apps
