// The coop command: `coop info`, `coop demo`, `coop run`, `coop bench`, `coop fuzz-schedule`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <thread>

#include "bench.hpp"
#include "coop/coop.hpp"
#include "demo.hpp"
#include "fuzz_schedule.hpp"
#include "run.hpp"
#include "stress.hpp"
#if defined(COOP_HAVE_CUDA)
#include "coop/cuda/device.hpp"
#endif

namespace {

int info() {
  std::printf("coop %s\n", "0.1.0");
  std::printf(
      "backends:\n  cpu   built; %u hardware threads (workgroups run as threads, their "
      "threads as fibers)\n",
      std::thread::hardware_concurrency());
#if defined(COOP_HAVE_CUDA)
  std::string why;
  auto devs = coop::cuda::devices(&why);
  std::printf("  cuda  built (sm_90); %zu device(s)%s%s\n", devs.size(), why.empty() ? "" : ": ",
              why.c_str());
  for (auto& d : devs)
    std::printf("    [%d] %s, compute %d.%d, %d SMs, %.1f GiB, kernel-execution watchdog: %s\n",
                d.index, d.name.c_str(), d.major, d.minor, d.multiprocessors,
                double(d.memory_bytes) / (1u << 30), d.exec_timeout ? "yes" : "no");
#else
  std::printf("  cuda  not built (configure with the 'cuda' preset where nvcc is present)\n");
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coop: cooperative kernels for blocking GPU algorithms"};
  app.require_subcommand(1);
  auto* info_cmd = app.add_subcommand("info", "backends and devices");
  coop::cli::DemoOptions d;
  auto* demo = app.add_subcommand(
      "demo", "run an example cooperative kernel while a high-priority task fires periodically");
  demo->add_option("--kernel", d.kernel, "bfs (frontier BFS) or queue (work stealing)")
      ->capture_default_str();
  demo->add_option("--policy", d.policy,
                   "generous | fixed | adversarial:SEED | adversarial-shrink:SEED | cap:M")
      ->capture_default_str();
  demo->add_option("--barrier", d.barrier, "resizing barrier: query or plain")
      ->capture_default_str();
  demo->add_option("--backend", d.backend, "auto (a GPU when present) | cpu | cuda")
      ->capture_default_str();
  demo->add_option("--groups", d.groups, "max workgroups N (0 = all that can be co-resident)");
  demo->add_option("--threads", d.threads, "threads per workgroup (0 = 32 CPU, 256 GPU)");
  demo->add_option("--slots", d.slots, "CPU backend: resident workgroup slots")
      ->capture_default_str();
  demo->add_option("--size", d.size, "vertices (bfs) or elements (queue); 0 = default");
  demo->add_option("--seed", d.seed, "graph seed")->capture_default_str();
  demo->add_option("--period-ms", d.period_ms, "task period")->capture_default_str();
  demo->add_option("--task-groups", d.task_groups, "workgroups per task (0 = N/2)");
  demo->add_option("--task-size", d.task_size, "task matmul size (0 = 96 CPU, 2048 GPU)");
  demo->add_flag("--json", d.json, "print a JSON summary");
  coop::cli::RunOptions r;
  auto* run = app.add_subcommand("run", "run one of the paper's applications");
  run->add_option("app", r.app, "color | mis | p-sssp | bfs | l-sssp | octree | game | bc")
      ->required();
  run->add_option("--graph", r.graph,
                  "graph file: DIMACS .gr, METIS .graph, Matrix Market .mtx, "
                  "Galois binary .gr, .coopcsr");
  run->add_option("--gen", r.gen,
                  "generated graph: a preset or grid:RxC, rmat:S[:EF], "
                  "uniform:N:M, road:N, circuit:N");
  run->add_option("--gen-seed", r.gen_seed, "generator seed")->capture_default_str();
  run->add_option("--source", r.source, "bfs/sssp source vertex (0-based, file order)")
      ->capture_default_str();
  run->add_option("--backend", r.backend, "auto | cpu | cuda")->capture_default_str();
  run->add_option("--form", r.form, "cooperative | standalone | multi-launch")
      ->capture_default_str();
  run->add_option("--policy", r.policy,
                  "generous | fixed | adversarial:SEED | adversarial-shrink:SEED | cap:M")
      ->capture_default_str();
  run->add_option("--barrier", r.barrier, "resizing barrier: query or plain")
      ->capture_default_str();
  run->add_option("--groups", r.groups, "max workgroups N (0 = all that can be co-resident)");
  run->add_option("--threads", r.threads, "threads per workgroup (0 = 256 GPU, 8 CPU)");
  run->add_option("--carveout", r.carveout,
                  "CUDA: percent of each SM's L1/shared memory the job asks to be shared "
                  "(-1 = the driver's choice)")
      ->capture_default_str();
  run->add_option("--slots", r.slots, "CPU backend: resident workgroup slots (0 = default)");
  run->add_option("--priority", r.priority, "color/mis vertex ranks: hashed or id (the paper's)")
      ->capture_default_str();
  run->add_option("--seed", r.seed, "color/mis rank seed, octree particle seed")
      ->capture_default_str();
  run->add_option("--bc-sources", r.bc_sources, "bc: use vertices 0..K-1 as sources (0 = all)");
  run->add_option("--particles", r.particles, "octree: particles")->capture_default_str();
  run->add_option("--max-leaf", r.max_leaf, "octree: most particles in a leaf")
      ->capture_default_str();
  run->add_option("--max-depth", r.max_depth, "octree: deepest level")->capture_default_str();
  run->add_option("--moves", r.moves, "game: opening moves, e.g. 3,3,4 (columns 0-6)");
  run->add_option("--depth", r.depth, "game: look-ahead in plies (1-10)")->capture_default_str();
  run->add_option("--repeat", r.repeat, "runs (the median is reported)")->capture_default_str();
  run->add_flag("--validate", r.validate, "check against the CPU reference (exit 1 if wrong)");
  run->add_option("--output", r.output, "write the result, one line per vertex");
  run->add_flag("--json", r.json, "print a JSON summary");
  coop::cli::BenchOptions b;
  auto* bench = app.add_subcommand(
      "bench", "run the paper's experiments (resumable; writes JSON and CSV, see docs/results.md)");
  bench->add_option("--config", b.config,
                    "paper | quick | a JSON file (default: paper on a GPU, quick on the CPU)");
  bench->add_option("--out", b.out, "results folder (default: coop-bench-<config name>)");
  bench->add_option("--only", b.only, "experiments: overhead, multitasking")->delimiter(',');
  bench->add_option("--filter", b.filter,
                    "run only units whose key contains this (repeatable: all must match)");
  bench->add_option("--exclude", b.exclude, "skip units whose key contains this (repeatable)");
  bench->add_option("--backend", b.backend, "auto | cpu | cuda")->capture_default_str();
  bench
      ->add_option("--unit-timeout", b.unit_timeout_s,
                   "seconds: a unit running longer is recorded as failed and the run stops "
                   "(exit 4; rerun to continue); 0 = none")
      ->capture_default_str();
  bench->add_flag("--retry-failed", b.retry_failed, "run units recorded as failed again");
  bench->add_option(
      "--max-minutes", b.max_minutes,
      "start no unit after this many minutes (at least one runs; exit 3; rerun to continue)");
  bench->add_flag("--fresh", b.fresh, "discard the folder's results and start over");
  bench->add_flag("--list", b.list, "print the planned units and exit");
  bench->add_flag("--print-config", b.print_config, "print the configuration and exit");
  coop::cli::FuzzOptions f;
  auto* fuzz = app.add_subcommand(
      "fuzz-schedule", "run every app under seeded adversarial schedules and validate each result");
  fuzz->add_option("--apps", f.apps, "all, or a comma-separated list")->capture_default_str();
  fuzz->add_option("--seeds", f.seeds, "how many seeds")->capture_default_str();
  fuzz->add_option("--first", f.first, "the first seed")->capture_default_str();
  fuzz->add_option("--backend", f.backend, "cpu | cuda | auto")->capture_default_str();
  fuzz->add_option("--slots", f.slots, "CPU backend: resident workgroup slots (0 = default)");
  fuzz->add_flag("--keep-going", f.keep_going, "do not stop at the first failure");
  fuzz->add_flag("--rotate", f.rotate, "each seed runs one app (seed mod the apps), not all");
  fuzz->add_flag("--shrink-only", f.shrink_only,
                 "adversarial-shrink schedules (no forks): one grid per run, for "
                 "compute-sanitizer");
  coop::cli::StressOptions st;
  auto* stress = app.add_subcommand(
      "stress", "many kill/fork cycles and tasks in one process: results, leaks, latencies");
  stress
      ->add_option("--cycles", st.cycles, "kill/fork cycles wanted (workgroups killed and forked)")
      ->capture_default_str();
  stress->add_option("--tasks", st.tasks, "high-priority tasks taken from a running job")
      ->capture_default_str();
  stress->add_option("--seed", st.seed, "the first adversarial job's seed")->capture_default_str();
  stress->add_option("--churn-seconds", st.churn_seconds, "at most this long on adversarial jobs")
      ->capture_default_str();
  stress
      ->add_option("--stall-seconds", st.stall_seconds,
                   "no progress this long: print the runtime's state and exit 3")
      ->capture_default_str();
  stress->add_option("--backend", st.backend, "auto | cpu | cuda")->capture_default_str();
  stress->add_option("--slots", st.slots, "CPU backend: resident workgroup slots (0 = default)");
  stress->add_option("--json", st.json, "write the report (JSON) here");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*info_cmd) return info();
    if (*run) return coop::cli::run_app(r);
    if (*fuzz) return coop::cli::fuzz_schedules(f);
    if (*stress) return coop::cli::stress_main(st);
    if (*bench) {
      std::string command;
      for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
      return coop::cli::run_bench(b, command);
    }
    return coop::cli::run_demo(d);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coop: %s\n", e.what());
    return 2;
  }
}
