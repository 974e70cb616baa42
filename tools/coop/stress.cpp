// coop stress: many kill/fork cycles and high-priority tasks in one process, every job's work
// checked, with the process's threads, file descriptors, the runtime's CUDA streams and device
// memory compared before and after, and the tasks' latency distribution.
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "coop/bench/percentiles.hpp"
#include "coop/bench/watchdog.hpp"
#include "coop/coop.hpp"
#include "coop/memory.hpp"
#include "options.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include <cuda_runtime.h>

#include "coop/cuda/job.hpp"
#include "coop/cuda/loading.hpp"
#include "coop/cuda/streams.hpp"
#define COOP_STRESS_CUDA 1
#else
#define COOP_STRESS_CUDA 0
#endif

namespace coop::cli {
namespace {

using json = nlohmann::json;
using clk = std::chrono::steady_clock;

struct StressOptions {
  std::uint64_t cycles = 100000;  ///< kill/fork cycles: min(workgroups killed, forked)
  std::uint64_t tasks = 10000;    ///< high-priority tasks of 1, N/4, N/2, N-1 workgroups
  std::uint64_t seed = 1;         ///< the first adversarial job's seed
  double churn_seconds = 60;      ///< at most this long on adversarial jobs
  double stall_seconds = 30;      ///< no progress this long: print the runtime's state, exit 3
  std::string backend = "auto";
  std::uint32_t slots = 0;  ///< CPU backend capacity (0 = default)
  bool json = false;        ///< print the report on stdout (the log goes to stderr)
  std::string json_file;    ///< and/or write it here
};

/// Hands out items [0, items) one per workgroup and round, offering a kill and asking for a fork
/// before each: under churn every item must still be taken exactly once (item i counts in
/// hits[i % slots]). Stops early (each workgroup on its own: there are no global barriers) when
/// *stop is set.
struct Churn {
  struct Params {
    std::uint64_t items;
    std::uint64_t slots;
    std::uint64_t* next;
    std::uint32_t* hits;
    std::uint32_t* stop;
  };
  struct Shared {
    std::uint64_t item;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    auto& sh = ctx.shared();
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);
      COOP_REQUEST_FORK(ctx);
      if (ctx.local_id() == 0) {
        // The stop flag is read before an item is taken: every item taken is processed.
        sh.item = atomic_ref<std::uint32_t>(*p.stop).load() != 0
                      ? p.items
                      : atomic_ref<std::uint64_t>(*p.next).fetch_add(1);
      }
      ctx.barrier();
      const std::uint64_t item = sh.item;
      ctx.barrier();
      if (item >= p.items) break;
      if (ctx.local_id() == 0) atomic_ref<std::uint32_t>(p.hits[item % p.slots]).fetch_add(1);
    }
    COOP_END(ctx);
  }
};

/// The process's resources that a leak would grow.
struct Resources {
  long threads = 0, fds = 0;
  int streams = 0;
  double device_free_mib = 0;
  json to_json() const {
    return {{"threads", threads},
            {"fds", fds},
            {"cuda_streams", streams},
            {"device_free_mib", device_free_mib}};
  }
};

long count_entries(const char* dir) {
  long n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

Resources sample() {
  Resources r;
  r.threads = count_entries("/proc/self/task");
  r.fds = count_entries("/proc/self/fd") - 1;  // the directory being read
#if COOP_STRESS_CUDA
  r.streams = cuda::live_streams();
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) r.device_free_mib = free_b / 1048576.0;
#endif
  return r;
}

json percentiles(const std::vector<double>& v) {
  if (v.empty()) return json::object();
  const bench::Percentiles p(v);
  return {{"n", p.n()}, {"p50", p.median()}, {"p99", p.at(0.99)}, {"max", p.max()}};
}

#if COOP_STRESS_CUDA
__global__ void mark_blocks(std::uint32_t* marks, std::uint32_t id) {
  if (threadIdx.x == 0) marks[blockIdx.x] = id;
}
#endif

/// Checks one Churn run: the items handed out, [0, min(next, items)), each counted once.
std::string check_items(const ManagedArray<std::uint32_t>& hits, std::uint64_t slots,
                        std::uint64_t items, std::uint64_t next) {
  const std::uint64_t taken = std::min(next, items);
  for (std::uint64_t s = 0; s < slots; ++s) {
    const std::uint64_t want = taken / slots + (s < taken % slots ? 1 : 0);
    if (hits[s] != want)
      return "items = " + std::to_string(s) + " mod " + std::to_string(slots) + " were taken " +
             std::to_string(hits[s]) + " times, expected " + std::to_string(want) + " (" +
             std::to_string(taken) + " items handed out)";
  }
  return {};
}

// What both phases share: the runtime, the watchdog, the Churn buffers, the log and the report.
struct Session {
  const StressOptions& o;
  Runtime& rt;
  bench::Watchdog& watchdog;
  std::FILE* log;
  bool gpu;
  std::uint32_t threads;
  std::uint64_t slots;
  ManagedArray<std::uint64_t> next{1};
  ManagedArray<std::uint32_t> hits, stop{1};
  json report;
  std::vector<std::string> problems;
  Resources warm;             ///< after the first job
  bool warm_sampled = false;  ///< a first churn job ran and `warm` holds its sample
  std::uint64_t churn_cycles = 0;

  Session(const StressOptions& opts, Runtime& r, bench::Watchdog& w, std::FILE* l)
      : o(opts),
        rt(r),
        watchdog(w),
        log(l),
        gpu(r.backend() == Backend::cuda),
        threads(gpu ? 64 : 2),
        slots(gpu ? 200000 : 4000),
        hits(slots) {}
  void reset() {
    next[0] = 0;
    stop[0] = 0;
    std::fill(hits.data(), hits.data() + slots, 0u);
  }
};

// Phase 1: adversarial jobs (seeded kills and forks at every offer) until enough cycles or out
// of time.
void churn_phase(Session& s) {
  // Items per churn job: a GPU job of only `slots` items ends before its last workgroups have
  // started, with about one kill. At 64 items per slot it runs long enough to churn.
  const std::uint64_t churn_items = s.gpu ? 64 * s.slots : s.slots;
  std::uint64_t kills = 0, forked = 0, jobs = 0;
  const auto t1 = clk::now();
  auto time_left = [&] {
    return std::chrono::duration<double>(clk::now() - t1).count() < s.o.churn_seconds;
  };
  while (std::min(kills, forked) < s.o.cycles && time_left()) {
    s.reset();
    auto job = s.rt.launch<Churn>(
        {.max_groups = 0, .threads = s.threads, .policy = Policy::adversarial(s.o.seed + jobs)},
        {churn_items, s.slots, s.next.data(), s.hits.data(), s.stop.data()});
    s.watchdog.progress("churn: waiting for an adversarial job");
    job.wait();
    const JobStats st = job.stats();
    kills += st.kills;
    forked += st.forked_groups;
    ++jobs;
    const std::string bad = check_items(s.hits, s.slots, churn_items, s.next[0]);
    if (!bad.empty()) {
      s.problems.push_back("churn job " + std::to_string(jobs) + " (seed " +
                           std::to_string(s.o.seed + jobs - 1) + "): " + bad);
      break;
    }
    if (jobs == 1) {
      s.warm = sample();
      s.warm_sampled = true;
    }
  }
  const double churn_s = std::chrono::duration<double>(clk::now() - t1).count();
  std::fprintf(s.log, "churn: %llu jobs, %llu kills, %llu workgroups forked in %.1f s\n",
               (unsigned long long)jobs, (unsigned long long)kills, (unsigned long long)forked,
               churn_s);
  std::fflush(s.log);
  s.churn_cycles = std::min(kills, forked);
  s.report["churn"] = {{"jobs", jobs},
                       {"kills", kills},
                       {"forked_groups", forked},
                       {"cycles", s.churn_cycles},
                       {"seconds", churn_s}};
}

// The task phase's GPU side: a kernel that marks its blocks, checked now and then.
struct TaskMarks {
#if COOP_STRESS_CUDA
  std::uint32_t* marks = nullptr;
  std::vector<std::uint32_t> seen;
  explicit TaskMarks(bool gpu) {
    // Allocated before the job starts: an allocation may wait for running kernels.
    if (!gpu) return;
    cuda::check(
        cudaMalloc(reinterpret_cast<void**>(&marks), sizeof(std::uint32_t) * kMaxGroupsLimit),
        "allocating task marks");
    seen.resize(kMaxGroupsLimit);
  }
  ~TaskMarks() {
    if (marks) cudaFree(marks);
  }
  TaskMarks(const TaskMarks&) = delete;
  TaskMarks& operator=(const TaskMarks&) = delete;
#else
  explicit TaskMarks(bool) {}
#endif
};

struct TaskTimes {
  std::vector<double> gather, response, regrow;
  std::uint64_t wrong = 0, not_regrown = 0;
};

// One task of k workgroups taken from the running job, then the wait for the job to grow back.
// False when the job stopped growing back (reported; not worth 2 s per task).
bool one_task(Session& s, Job& job, TaskMarks& tm, std::uint64_t i, std::uint32_t k,
              TaskTimes& tt) {
  const std::uint32_t n = job.max_groups();
  const auto id = std::uint32_t(i + 1);
  s.watchdog.progress("tasks: gathering and running a task");
  TaskRecord r = s.rt.run(
      k,
      [&](Task& t) {
#if COOP_STRESS_CUDA
        if (s.gpu) {
          mark_blocks<<<k, 32, 0, t.stream()>>>(tm.marks, id);
          s.watchdog.progress("tasks: the task's kernel is queued (waiting for it)");
          return;
        }
#endif
        (void)t;
        (void)id;
        (void)tm;
      },
      1);
  tt.gather.push_back(r.gather_ms());
  tt.response.push_back(r.end_ms - r.request_ms);
  s.watchdog.progress("tasks: waiting for the job to grow back");
  const auto since = clk::now();
  while (job.active_groups() < n && clk::now() - since < std::chrono::seconds(2))
    std::this_thread::yield();
  if (job.active_groups() < n && tt.not_regrown++ == 0)
    std::fprintf(s.log, "task %llu: the job is not back to N after 2 s:\n%s\n",
                 (unsigned long long)(i + 1), s.rt.describe().c_str());
  if ((i + 1) % 2000 == 0) {
    std::fprintf(s.log, "  %llu tasks\n", (unsigned long long)(i + 1));
    std::fflush(s.log);
  }
  if (tt.not_regrown > 3) return false;
  tt.regrow.push_back(std::chrono::duration<double, std::milli>(clk::now() - since).count());
#if COOP_STRESS_CUDA
  if (s.gpu && i % 64 == 0) {  // the task's blocks all ran
    s.watchdog.progress("tasks: reading the task's marks");
    cuda::check(
        cudaMemcpy(tm.seen.data(), tm.marks, sizeof(std::uint32_t) * k, cudaMemcpyDeviceToHost),
        "reading task marks");
    for (std::uint32_t b = 0; b < k; ++b) tt.wrong += tm.seen[b] != id;
  }
#endif
  return true;
}

void report_tasks(Session& s, const JobStats& js, const std::uint32_t (&sizes)[4], double tasks_s,
                  const TaskTimes& tt) {
  s.report["tasks"] = {{"count", tt.gather.size()},
                       {"groups", {sizes[0], sizes[1], sizes[2], sizes[3]}},
                       {"N", js.max_groups},
                       {"seconds", tasks_s},
                       {"job_kills", js.kills},
                       {"job_forked_groups", js.forked_groups},
                       {"gather_ms", percentiles(tt.gather)},
                       {"response_ms", percentiles(tt.response)},
                       {"regrow_ms", percentiles(tt.regrow)}};
  const std::uint64_t cycles = s.churn_cycles + std::min(js.kills, js.forked_groups);
  s.report["kill_fork_cycles"] = cycles;
  std::fprintf(s.log, "kill/fork cycles (workgroups killed and forked again): %llu\n",
               (unsigned long long)cycles);
  if (cycles < s.o.cycles)
    s.problems.push_back("only " + std::to_string(cycles) + " kill/fork cycles of " +
                         std::to_string(s.o.cycles) + " (raise --churn-seconds)");
  const json g = s.report["tasks"]["gather_ms"], resp = s.report["tasks"]["response_ms"];
  std::fprintf(
      s.log,
      "tasks: %llu in %.1f s; gather p50 %.3f p99 %.3f max %.3f ms; request to end p50 %.3f "
      "p99 %.3f max %.3f ms; back to N p50 %.3f ms\n",
      (unsigned long long)tt.gather.size(), tasks_s, g.value("p50", 0.0), g.value("p99", 0.0),
      g.value("max", 0.0), resp.value("p50", 0.0), resp.value("p99", 0.0), resp.value("max", 0.0),
      s.report["tasks"]["regrow_ms"].value("p50", 0.0));
}

// Phase 2: tasks of 1, N/4, N/2 and N-1 workgroups taken from a running job, each a kill/fork
// cycle: its workgroups are killed for it and forked again after it before the next task asks.
void task_phase(Session& s) {
  s.reset();
  const std::uint64_t endless = std::uint64_t(1) << 62;  // stopped by the flag
  TaskMarks tm(s.gpu);
  s.watchdog.progress("tasks: launching the job");
  auto job = s.rt.launch<Churn>({.max_groups = 0, .threads = s.threads},
                                {endless, s.slots, s.next.data(), s.hits.data(), s.stop.data()});
  const std::uint32_t n = job.max_groups();
  const std::uint32_t sizes[] = {1, std::max(1u, n / 4), std::max(1u, n / 2), std::max(1u, n - 1)};
  TaskTimes tt;
  const auto t2 = clk::now();
  for (std::uint64_t i = 0; i < s.o.tasks; ++i)
    if (!one_task(s, job, tm, i, sizes[i % 4], tt)) break;
  const double tasks_s = std::chrono::duration<double>(clk::now() - t2).count();
  atomic_ref<std::uint32_t>(s.stop[0]).store(1);
  s.watchdog.progress("tasks: waiting for the job to stop");
  job.wait();
  if (s.next[0] >= endless) s.problems.push_back("the task phase's job ran out of items");
  const std::string bad = check_items(s.hits, s.slots, endless, s.next[0]);
  if (!bad.empty()) s.problems.push_back("task phase job: " + bad);
  if (tt.wrong) s.problems.push_back(std::to_string(tt.wrong) + " task blocks did not run");
  if (tt.not_regrown)
    s.problems.push_back(std::to_string(tt.not_regrown) +
                         " times the job had not forked back to N 2 s after a task");
  report_tasks(s, job.stats(), sizes, tasks_s, tt);
}

// With the runtime alive, its second job onwards must not grow anything; once it is gone,
// everything it made must be gone too. Device memory moves in pages: 2 MiB of slack.
void check_resources(const Resources& before, const Resources& warm, const Resources& end,
                     const Resources& after, std::vector<std::string>& problems, std::FILE* log) {
  if (end.threads > warm.threads || end.fds > warm.fds || end.streams > warm.streams)
    problems.push_back("threads/fds/streams grew while the runtime ran: " + warm.to_json().dump() +
                       " -> " + end.to_json().dump());
  if (warm.device_free_mib - end.device_free_mib > 2)
    problems.push_back(
        "device memory shrank while the runtime ran: " + std::to_string(warm.device_free_mib) +
        " -> " + std::to_string(end.device_free_mib) + " MiB free");
  if (after.threads != before.threads || after.streams != before.streams || after.fds > before.fds)
    problems.push_back("the runtime left threads/fds/streams behind: " + before.to_json().dump() +
                       " -> " + after.to_json().dump());
  std::fprintf(log,
               "resources before / after first job / end / after runtime: threads %ld %ld %ld %ld, "
               "fds %ld %ld %ld %ld, coop CUDA streams %d %d %d %d, device free MiB %.0f %.0f "
               "%.0f %.0f\n",
               before.threads, warm.threads, end.threads, after.threads, before.fds, warm.fds,
               end.fds, after.fds, before.streams, warm.streams, end.streams, after.streams,
               before.device_free_mib, warm.device_free_mib, end.device_free_mib,
               after.device_free_mib);
}

class Stress : public Subcommand {
 public:
  const char* name() const override { return "stress"; }
  const char* description() const override {
    return "many kill/fork cycles and tasks in one process: results, leaks, latencies";
  }
  void add_options(CLI::App& app) override;
  int run() override;

 private:
  StressOptions o_;
};

void Stress::add_options(CLI::App& app) {
  app.add_option("--cycles", o_.cycles, "kill/fork cycles wanted (workgroups killed and forked)")
      ->capture_default_str();
  app.add_option("--tasks", o_.tasks, "high-priority tasks taken from a running job")
      ->capture_default_str();
  app.add_option("--seed", o_.seed, "the first adversarial job's seed")->capture_default_str();
  add_duration(app, "--churn-seconds", o_.churn_seconds, "at most this long on adversarial jobs");
  add_duration(app, "--stall-seconds", o_.stall_seconds,
               "no progress this long: print the runtime's state and exit 3 (0 = never)");
  add_backend(app, o_.backend);
  add_slots(app, o_.slots);
  add_json_flag(app, o_.json);
  app.add_option("--json-file", o_.json_file, "write the report (JSON) to this file too");
}

// adversarial jobs (every item of their work checked) for up to --churn-seconds, then --tasks
// tasks taken from a running job, each followed by its regrowth to N, in one runtime; fails
// unless --cycles workgroups were killed and forked again; compares threads, file descriptors,
// coop's CUDA streams and device memory before and after and reports the tasks' gather and
// response percentiles. 0 when nothing leaked and every result was right, 1 otherwise, 3 (after
// printing Runtime::describe) when it made no progress for --stall-seconds.
int Stress::run() {
  const StressOptions& o = o_;
  std::FILE* log = o.json ? stderr : stdout;
  std::ofstream json_file;
  if (!o.json_file.empty()) json_file = open_output(o.json_file, "--json-file");
  RuntimeOptions ro;
  ro.backend = parse_backend(o.backend);
  ro.cpu_slots = o.slots;
#if COOP_STRESS_CUDA
  // The tasks' kernel is first launched while a job runs: it must be loaded already.
  cuda::prefer_eager_module_loading();
  // The CUDA context (its driver threads, device files and memory) lives as long as the process,
  // not the runtime: create it before the first sample so that it is not counted as a leak.
  if (ro.backend != RuntimeOptions::Select::cpu && cudaFree(nullptr) != cudaSuccess)
    cudaGetLastError();  // no GPU
#endif
  const Resources before = sample();
  json report;
  std::vector<std::string> problems;
  Resources warm, end;
  {
    Runtime rt(ro);
    // A hang is the one failure a stress run must never turn into.
    bench::Watchdog watchdog(
        o.stall_seconds, [&] { return rt.describe(); }, log, exit_stopped);
    std::fprintf(log, "coop stress on %s: %llu kill/fork cycles, %llu tasks\n",
                 rt.device_name().c_str(), (unsigned long long)o.cycles,
                 (unsigned long long)o.tasks);
    std::fflush(log);
    Session s(o, rt, watchdog, log);
    churn_phase(s);
    task_phase(s);
    end = sample();
    s.report["device"] = rt.device_name();
    report = std::move(s.report);
    problems = std::move(s.problems);
    // With no churn job (--cycles 0) the end is the only sample taken with the runtime warm.
    warm = s.warm_sampled ? s.warm : end;
  }
  const Resources after = sample();
  report["resources"] = {{"before_runtime", before.to_json()},
                         {"after_first_job", warm.to_json()},
                         {"end", end.to_json()},
                         {"after_runtime", after.to_json()}};
  check_resources(before, warm, end, after, problems, log);
  report["problems"] = problems;
  for (const auto& p : problems) std::fprintf(log, "PROBLEM: %s\n", p.c_str());
  if (!o.json_file.empty()) {
    json_file << report.dump(1) << '\n';
    finish_output(json_file, o.json_file);
  }
  if (o.json) std::cout << report.dump(1) << '\n';
  std::fprintf(log, "%s\n", problems.empty() ? "stress: no problem" : "stress: FAILED");
  return problems.empty() ? exit_ok : exit_failed;
}

}  // namespace

std::unique_ptr<Subcommand> stress_command() { return std::make_unique<Stress>(); }

}  // namespace coop::cli
