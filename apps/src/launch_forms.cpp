// Launching the apps: each app's run function (its row in app_table.cpp names it). Compiled by
// nvcc when the CUDA backend is built, so that the same kernels run on the GPU (the runtime
// picks the backend).
#include <chrono>
#include <stdexcept>
#include <string>

#include "coop/apps/apps.hpp"
#include "coop/apps/bc.hpp"
#include "coop/apps/bfs.hpp"
#include "coop/apps/color.hpp"
#include "coop/apps/mis.hpp"
#include "coop/apps/phased.hpp"
#include "coop/apps/sssp.hpp"
#include "entry_points.hpp"

namespace coop::apps {

namespace {

using Clock = std::chrono::steady_clock;

std::uint32_t threads_of(const Runtime& rt, const RunConfig& cfg) {
  if (cfg.threads) return cfg.threads;
  return rt.backend() == Backend::cuda ? 256 : 8;
}

LaunchConfig launch_config(const Runtime& rt, const RunConfig& cfg) {
  LaunchConfig lc;
  lc.max_groups = cfg.groups;
  lc.threads = threads_of(rt, cfg);
  lc.policy = cfg.policy;
  lc.barrier = cfg.barrier;
  lc.mode = cfg.form == Form::standalone ? Mode::persistent : Mode::cooperative;
  lc.shared_carveout = cfg.shared_carveout;
  lc.ids_by_sm = cfg.ids_by_sm;
  return lc;
}

/// The kernel's view of RunConfig::stop: empty unless the launch runs the app several times.
RunEnd run_end(const RunConfig& cfg) {
  return cfg.stop && cfg.runs_per_kernel > 1 ? cfg.stop->arm() : RunEnd{};
}

/// Runs kernel K (cooperative or standalone) and times it.
template <class K>
void run_kernel(Runtime& rt, const RunConfig& cfg, const params_t<K>& params,
                const transmit_t<K>& transmit, Result& r) {
  const LaunchConfig lc = launch_config(rt, cfg);
  auto t0 = Clock::now();
  Job job = rt.launch<K>(lc, params, transmit);
  if (cfg.on_kernel) cfg.on_kernel(true);  // admitted: the scheduler knows the job from here
  if (cfg.on_job) cfg.on_job(job);
  job.wait();
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (cfg.on_kernel) cfg.on_kernel(false);
  r.stats = job.stats();
  r.runs = cfg.stop && cfg.runs_per_kernel > 1 ? cfg.stop->runs_done(cfg.runs_per_kernel)
                                               : cfg.runs_per_kernel;
}

/// Runs phased app A in the requested form.
template <class A, class Buffers>
void run_phased(Runtime& rt, const RunConfig& cfg, Buffers& b, Result& r) {
  if (cfg.form != Form::multi_launch) {
    ManagedArray<LoopCursor> cursor(1);  // the phases' loop cursor, fresh for this run
    cursor.to_device();
    RunSnapshot saved;  // the buffers before the first run, when the kernel runs it again
    if (cfg.runs_per_kernel > 1) b.save(saved);
    const typename Phased<A>::Params params{
        b.params,    cursor.data(), cfg.form == Form::standalone, cfg.runs_per_kernel, saved.view(),
        b.initial(), run_end(cfg)};
    if (cfg.yield_in_phases && cfg.form == Form::cooperative)
      run_kernel<Phased<A, true>>(rt, cfg, params, {b.initial(), 0, 0, 0}, r);
    else
      run_kernel<Phased<A>>(rt, cfg, params, {b.initial(), 0, 0, 0}, r);
    return;
  }
  const std::uint32_t threads = threads_of(rt, cfg);
  // GPU: as many blocks as the round's work needs (up to the hardware limit); CPU: the pool's
  // grid of at most 1024 emulated workgroups.
  const std::uint32_t max_blocks = rt.backend() == Backend::cuda ? 0x7fffffffu : 1024u;
  if (cfg.on_kernel) cfg.on_kernel(true);
  auto t0 = Clock::now();
  MultiLaunchStats st = multi_launch<A>(rt, b.params, b.initial(), threads, max_blocks);
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (cfg.on_kernel) cfg.on_kernel(false);
  r.rounds = st.rounds;
  r.launches = st.launches;
}

template <class T>
std::vector<std::int64_t> widen(const ManagedArray<T>& a) {
  return std::vector<std::int64_t>(a.begin(), a.end());
}

std::vector<std::int64_t> distances(const ManagedArray<std::uint64_t>& d) {
  std::vector<std::int64_t> out(d.size());
  for (std::size_t v = 0; v < d.size(); ++v)
    out[v] = d[v] == kUnreachable ? -1 : std::int64_t(d[v]);
  return out;
}

std::uint32_t pools_for(const RunConfig& cfg) { return cfg.groups ? cfg.groups : 1024; }

/// The kernel's graph in device-visible memory, copied once per input.
const GraphBuffers& graph_buffers(const Input& in) {
  if (!in.buffers) in.buffers = std::make_shared<GraphBuffers>(in.kernel_graph());
  return *in.buffers;
}

}  // namespace

namespace entry {

void run_bfs(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  BfsRun b(graph_buffers(in), in.source);
  run_phased<Bfs>(rt, cfg, b, r);
  r.values = widen(b.level);
}

void run_l_sssp(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  LSsspRun b(graph_buffers(in), in.source);
  run_phased<LSssp>(rt, cfg, b, r);
  r.values = distances(b.dist);
}

void run_p_sssp(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  PSsspRun b(graph_buffers(in), in.source);
  run_phased<PSssp>(rt, cfg, b, r);
  r.values = distances(b.dist);
}

void run_color(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  ColorRun b(graph_buffers(in), in.priority, in.seed);
  run_phased<Color>(rt, cfg, b, r);
  r.values = widen(b.color);
}

void run_mis(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  MisRun b(graph_buffers(in), in.priority, in.seed);
  run_phased<Mis>(rt, cfg, b, r);
  r.values = widen(b.state);
}

void run_bc(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  BcRun b(graph_buffers(in), bc_sources(in));
  run_phased<Bc>(rt, cfg, b, r);
  r.centrality = b.bc.to_vector();
}

void run_octree(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  if (in.particle_set.size() != in.particles || in.particle_seed != in.seed) {
    in.particle_set = make_particles(in.particles, in.seed);
    in.particle_seed = in.seed;
  }
  // A task counts or scatters at most 16 particles per thread: a few microseconds between a
  // workgroup's offers on the GPU.
  const std::uint64_t n = in.particle_set.size();
  const std::uint64_t guess = OctreeRun::internal_cells_guess(n, in.max_leaf, in.max_depth);
  const std::uint64_t bound = OctreeRun::internal_cells_bound(n, in.max_leaf, in.max_depth);
  // Sized by a guess first: the worst case's buffers take longer to allocate and copy than
  // the kernel takes to run. An input that needs more runs again with room for the worst case
  // (the time, counters and timeline then describe the second run).
  for (std::uint64_t cells : {guess, bound}) {
    OctreeRun b(in.particle_set, pools_for(cfg), in.max_leaf, in.max_depth,
                16 * threads_of(rt, cfg), cells, cfg.runs_per_kernel);
    b.params.run_end = run_end(cfg);
    if (cfg.runs_per_kernel > 1)
      run_kernel<Repeated<Octree>>(rt, cfg, b.params, {}, r);
    else
      run_kernel<Octree>(rt, cfg, b.params, {}, r);
    if (*b.error != octree_ok && cells != bound) continue;
    if (*b.error == octree_out_of_nodes)
      throw std::runtime_error("octree: ran out of cell storage (" +
                               std::to_string(b.nodes.size()) + " cells)");
    if (*b.error == octree_pools_full)
      throw std::runtime_error("octree: the task pools overflowed");
    if (*b.placed != n * r.runs)
      throw std::runtime_error("octree: the kernel ended with " + std::to_string(*b.placed) +
                               " particles placed over its runs, not " +
                               std::to_string(n * r.runs));
    r.particles = b.out.to_vector();
    r.nodes.assign(b.nodes.begin(), b.nodes.begin() + *b.node_count);
    return;
  }
}

void run_game(Runtime& rt, const Input& in, const RunConfig& cfg, Result& r) {
  GameRun b(connect4::parse_moves(in.moves), in.depth, pools_for(cfg), cfg.runs_per_kernel);
  b.params.run_end = run_end(cfg);
  if (cfg.runs_per_kernel > 1)
    run_kernel<Repeated<Game>>(rt, cfg, b.params, {}, r);
  else
    run_kernel<Game>(rt, cfg, b.params, {}, r);
  if (*b.error != game_ok)
    throw std::runtime_error(*b.error == game_out_of_nodes ? "game: ran out of node storage"
                                                           : "game: the task pools overflowed");
  if (*b.done != r.runs)
    throw std::runtime_error("game: the kernel ended with " + std::to_string(*b.done) +
                             " searches finished, not " + std::to_string(r.runs));
  r.game_value = *b.root_value;
  r.rounds = *b.node_count;
}

}  // namespace entry

}  // namespace coop::apps
