// coop stress: many kill/fork cycles and high-priority tasks in one process, every job's work
// checked, with the process's threads, file descriptors, the runtime's CUDA streams and device
// memory compared before and after, and the tasks' latency distribution.
#include "stress.hpp"

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "coop/coop.hpp"
#include "coop/memory.hpp"

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

json percentiles(std::vector<double> v) {
  if (v.empty()) return json::object();
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * (v.size() - 1)))]; };
  return {{"n", v.size()}, {"p50", at(0.5)}, {"p99", at(0.99)}, {"max", v.back()}};
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

/// Ends a stalled run with what it was doing and the runtime's state (a hang is the one failure
/// a stress run must never turn into): progress() marks each step, and no mark for
/// `stall_seconds` prints Runtime::describe and exits the process with 3.
class Watchdog {
 public:
  Watchdog(const Runtime& rt, double stall_seconds)
      : rt_(rt),
        stall_(std::chrono::duration_cast<clk::duration>(
            std::chrono::duration<double>(stall_seconds))) {
    if (stall_seconds > 0) thread_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// `where` must be a string literal (kept by pointer).
  void progress(const char* where) {
    where_.store(where);
    marks_.fetch_add(1);
  }

 private:
  void watch() {
    std::unique_lock lock(mu_);
    std::uint64_t seen = marks_.load();
    auto last = clk::now();
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return done_; })) {
      if (const std::uint64_t m = marks_.load(); m != seen) {
        seen = m;
        last = clk::now();
      } else if (clk::now() - last > stall_) {
        std::printf("STALL: no progress for %.0f s at \"%s\" (step %llu); runtime state:\n%s\n",
                    std::chrono::duration<double>(stall_).count(), where_.load(),
                    (unsigned long long)m, rt_.describe().c_str());
        std::fflush(stdout);
        std::_Exit(3);  // the stalled threads cannot be joined
      }
    }
  }
  const Runtime& rt_;
  const clk::duration stall_;
  std::atomic<const char*> where_{"start"};
  std::atomic<std::uint64_t> marks_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

int stress_main(const StressOptions& o) {
#if COOP_STRESS_CUDA
  // The tasks' kernel is first launched while a job runs: it must be loaded already.
  cuda::prefer_eager_module_loading();
  // The CUDA context (its driver threads, device files and memory) lives as long as the process,
  // not the runtime: create it before the first sample so that it is not counted as a leak.
  if (o.backend != "cpu" && cudaFree(nullptr) != cudaSuccess) cudaGetLastError();  // no GPU
#endif
  const Resources before = sample();
  json report;
  std::vector<std::string> problems;
  Resources warm, end;
  {
    RuntimeOptions ro;
    ro.backend = o.backend == "cpu"    ? RuntimeOptions::Select::cpu
                 : o.backend == "cuda" ? RuntimeOptions::Select::cuda
                                       : RuntimeOptions::Select::automatic;
    ro.cpu_slots = o.slots;
    Runtime rt(ro);
    const bool gpu = rt.backend() == Backend::cuda;
    const std::uint32_t threads = gpu ? 64 : 2;
    Watchdog watchdog(rt, o.stall_seconds);
    std::printf("coop stress on %s: %llu kill/fork cycles, %llu tasks\n", rt.device_name().c_str(),
                (unsigned long long)o.cycles, (unsigned long long)o.tasks);
    std::fflush(stdout);
    const std::uint64_t slots = gpu ? 200000 : 4000;
    // Items per churn job: a GPU job of only `slots` items ends before its last workgroups have
    // started, with about one kill. At 64 items per slot it runs long enough to churn.
    const std::uint64_t churn_items = gpu ? 64 * slots : slots;
    ManagedArray<std::uint64_t> next(1);
    ManagedArray<std::uint32_t> hits(slots), stop(1);

    // Phase 1: adversarial jobs (seeded kills and forks at every offer) until enough cycles or
    // out of time.
    std::uint64_t kills = 0, forked = 0, jobs = 0;
    const auto t1 = clk::now();
    auto churn_time_left = [&] {
      return std::chrono::duration<double>(clk::now() - t1).count() < o.churn_seconds;
    };
    while (std::min(kills, forked) < o.cycles && churn_time_left()) {
      next[0] = 0;
      std::fill(hits.data(), hits.data() + slots, 0u);
      auto job = rt.launch<Churn>(
          {.max_groups = 0, .threads = threads, .policy = Policy::adversarial(o.seed + jobs)},
          {churn_items, slots, next.data(), hits.data(), stop.data()});
      watchdog.progress("churn: waiting for an adversarial job");
      job.wait();
      const JobStats s = job.stats();
      kills += s.kills;
      forked += s.forked_groups;
      ++jobs;
      const std::string bad = check_items(hits, slots, churn_items, next[0]);
      if (!bad.empty()) {
        problems.push_back("churn job " + std::to_string(jobs) + " (seed " +
                           std::to_string(o.seed + jobs - 1) + "): " + bad);
        break;
      }
      if (jobs == 1) warm = sample();
    }
    const double churn_s = std::chrono::duration<double>(clk::now() - t1).count();
    std::printf("churn: %llu jobs, %llu kills, %llu workgroups forked in %.1f s\n",
                (unsigned long long)jobs, (unsigned long long)kills, (unsigned long long)forked,
                churn_s);
    std::fflush(stdout);
    report["churn"] = {{"jobs", jobs},
                       {"kills", kills},
                       {"forked_groups", forked},
                       {"cycles", std::min(kills, forked)},
                       {"seconds", churn_s}};

    // Phase 2: tasks of 1, N/4, N/2 and N-1 workgroups taken from a running job, each a
    // kill/fork cycle: its workgroups are killed for it and forked again after it before the
    // next task asks.
    next[0] = 0;
    stop[0] = 0;
    std::fill(hits.data(), hits.data() + slots, 0u);
    const std::uint64_t endless = std::uint64_t(1) << 62;  // stopped by the flag
#if COOP_STRESS_CUDA
    // Allocated before the job starts: an allocation may wait for running kernels.
    std::uint32_t* marks = nullptr;
    if (gpu)
      cuda::check(
          cudaMalloc(reinterpret_cast<void**>(&marks), sizeof(std::uint32_t) * kMaxGroupsLimit),
          "allocating task marks");
    std::vector<std::uint32_t> seen(kMaxGroupsLimit);
#endif
    watchdog.progress("tasks: launching the job");
    auto job = rt.launch<Churn>({.max_groups = 0, .threads = threads},
                                {endless, slots, next.data(), hits.data(), stop.data()});
    const std::uint32_t n = job.max_groups();
    const std::uint32_t sizes[] = {1, std::max(1u, n / 4), std::max(1u, n / 2),
                                   std::max(1u, n - 1)};
    std::vector<double> gather, response, regrow;
    std::uint64_t wrong = 0, not_regrown = 0;
    const auto t2 = clk::now();
    for (std::uint64_t i = 0; i < o.tasks; ++i) {
      const std::uint32_t k = sizes[i % 4];
      const auto id = std::uint32_t(i + 1);
      watchdog.progress("tasks: gathering and running a task");
      TaskRecord r = rt.run(
          k,
          [&](Task& t) {
#if COOP_STRESS_CUDA
            if (gpu) {
              mark_blocks<<<k, 32, 0, t.stream()>>>(marks, id);
              watchdog.progress("tasks: the task's kernel is queued (waiting for it)");
              return;
            }
#endif
            (void)t;
            (void)id;
          },
          1);
      gather.push_back(r.gather_ms());
      response.push_back(r.end_ms - r.request_ms);
      watchdog.progress("tasks: waiting for the job to grow back");
      const auto since = clk::now();
      while (job.active_groups() < n && clk::now() - since < std::chrono::seconds(2))
        std::this_thread::yield();
      if (job.active_groups() < n && not_regrown++ == 0)
        std::printf("task %llu: the job is not back to N after 2 s:\n%s\n",
                    (unsigned long long)(i + 1), rt.describe().c_str());
      if ((i + 1) % 2000 == 0) {
        std::printf("  %llu tasks\n", (unsigned long long)(i + 1));
        std::fflush(stdout);
      }
      if (not_regrown > 3) break;  // reported: not worth 2 s per task
      regrow.push_back(std::chrono::duration<double, std::milli>(clk::now() - since).count());
#if COOP_STRESS_CUDA
      if (gpu && i % 64 == 0) {  // the task's blocks all ran
        watchdog.progress("tasks: reading the task's marks");
        cuda::check(
            cudaMemcpy(seen.data(), marks, sizeof(std::uint32_t) * k, cudaMemcpyDeviceToHost),
            "reading task marks");
        for (std::uint32_t b = 0; b < k; ++b) wrong += seen[b] != id;
      }
#endif
    }
    const double tasks_s = std::chrono::duration<double>(clk::now() - t2).count();
    atomic_ref<std::uint32_t>(stop[0]).store(1);
    watchdog.progress("tasks: waiting for the job to stop");
    job.wait();
    if (next[0] >= endless) problems.push_back("the task phase's job ran out of items");
    const std::string bad = check_items(hits, slots, endless, next[0]);
    if (!bad.empty()) problems.push_back("task phase job: " + bad);
    if (wrong) problems.push_back(std::to_string(wrong) + " task blocks did not run");
    if (not_regrown)
      problems.push_back(std::to_string(not_regrown) +
                         " times the job had not forked back to N 2 s after a task");
#if COOP_STRESS_CUDA
    if (marks) cudaFree(marks);
#endif
    const JobStats js = job.stats();
    report["tasks"] = {{"count", gather.size()},
                       {"groups", {sizes[0], sizes[1], sizes[2], sizes[3]}},
                       {"N", n},
                       {"seconds", tasks_s},
                       {"job_kills", js.kills},
                       {"job_forked_groups", js.forked_groups},
                       {"gather_ms", percentiles(gather)},
                       {"response_ms", percentiles(response)},
                       {"regrow_ms", percentiles(regrow)}};
    const std::uint64_t cycles = std::min(kills, forked) + std::min(js.kills, js.forked_groups);
    report["kill_fork_cycles"] = cycles;
    std::printf("kill/fork cycles (workgroups killed and forked again): %llu\n",
                (unsigned long long)cycles);
    if (cycles < o.cycles)
      problems.push_back("only " + std::to_string(cycles) + " kill/fork cycles of " +
                         std::to_string(o.cycles) + " (raise --churn-seconds)");
    const json g = report["tasks"]["gather_ms"], resp = report["tasks"]["response_ms"];
    std::printf(
        "tasks: %llu in %.1f s; gather p50 %.3f p99 %.3f max %.3f ms; request to end p50 %.3f "
        "p99 %.3f max %.3f ms; back to N p50 %.3f ms\n",
        (unsigned long long)gather.size(), tasks_s, g.value("p50", 0.0), g.value("p99", 0.0),
        g.value("max", 0.0), resp.value("p50", 0.0), resp.value("p99", 0.0), resp.value("max", 0.0),
        report["tasks"]["regrow_ms"].value("p50", 0.0));
    end = sample();
    report["device"] = rt.device_name();
  }
  const Resources after = sample();
  report["resources"] = {{"before_runtime", before.to_json()},
                         {"after_first_job", warm.to_json()},
                         {"end", end.to_json()},
                         {"after_runtime", after.to_json()}};
  // With the runtime alive, its second job onwards must not grow anything; once it is gone,
  // everything it made must be gone too. Device memory moves in pages: 2 MiB of slack.
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
  std::printf(
      "resources before / after first job / end / after runtime: threads %ld %ld %ld %ld, "
      "fds %ld %ld %ld %ld, coop CUDA streams %d %d %d %d, device free MiB %.0f %.0f "
      "%.0f %.0f\n",
      before.threads, warm.threads, end.threads, after.threads, before.fds, warm.fds, end.fds,
      after.fds, before.streams, warm.streams, end.streams, after.streams, before.device_free_mib,
      warm.device_free_mib, end.device_free_mib, after.device_free_mib);
  report["problems"] = problems;
  for (const auto& p : problems) std::printf("PROBLEM: %s\n", p.c_str());
  if (!o.json.empty()) std::ofstream(o.json) << report.dump(1) << '\n';
  std::printf("%s\n", problems.empty() ? "stress: no problem" : "stress: FAILED");
  return problems.empty() ? 0 : 1;
}

}  // namespace coop::cli
