/// \file
/// The host-side entry point: a Runtime owns the scheduler of one device (a GPU, or the CPU
/// backend's virtual compute units), launches cooperative kernels as jobs and runs
/// non-cooperative tasks that borrow workgroup slots from them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "coop/cpu/backend.hpp"
#include "coop/detail/scheduler.hpp"
#include "coop/job.hpp"
#include "coop/kernel.hpp"
#include "coop/policy.hpp"
#include "coop/stats.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include "coop/cuda/backend.cuh"
// Runtime::launch<K> can reach the GPU only where nvcc compiles it, so its body differs between
// a .cu and a .cpp file. The ABI tag gives nvcc's instantiations their own symbols: one binary
// may launch the same K from both kinds of file without the linker keeping just one body (a .cu
// launch on a GPU would then throw "compiled by a host compiler", or the reverse).
/// Internal: 1 where Runtime::launch can reach the GPU (nvcc with the CUDA backend), else 0.
#define COOP_LAUNCHES_ON_GPU 1
/// Internal: gives nvcc's Runtime::launch instantiations symbols of their own.
#define COOP_LAUNCH_ABI [[gnu::abi_tag("coop_nvcc")]]
#else
/// Internal: 1 where Runtime::launch can reach the GPU (nvcc with the CUDA backend), else 0.
#define COOP_LAUNCHES_ON_GPU 0
/// Internal: gives nvcc's Runtime::launch instantiations symbols of their own.
#define COOP_LAUNCH_ABI
#endif

struct CUstream_st;    // cudaStream_t is CUstream_st*
struct CUgreenCtx_st;  // CUgreenCtx is CUgreenCtx_st*

namespace coop {

/// The backend a Runtime drives.
enum class Backend : std::uint8_t {
  cpu,   ///< the CPU backend: workgroups run on the host
  cuda,  ///< a CUDA GPU
};
/// "cpu" or "cuda".
const char* backend_name(Backend b);

namespace cuda {
class DeviceService;
}
/// Internal: deletes Runtime's CUDA device service (defined in the library, so that this header
/// needs no CUDA headers).
struct CudaServiceDeleter {
  /// Deletes `d` (in a build without the CUDA backend there is none to delete).
  void operator()(cuda::DeviceService* d) const;
};

/// CUDA: when a task's work (run, run_fraction, submit, submit_fraction) is enqueued.
enum class TaskLaunch : std::uint8_t {
  /// Once the scheduler has its workgroups: the host saw the jobs' workgroups leave, then
  /// `work` runs (on run's caller, or on a runtime thread for submit) and enqueues on
  /// task.stream().
  after_gather,
  /// At the request, on the calling thread, behind a wait on task.stream() that the jobs giving
  /// way release from the device: the block whose exit frees the last workgroup the task needs
  /// writes the word the stream waits for, and the host writes it when it grants the task. No
  /// host step lies between the workgroups out and the first task block. `work` runs before
  /// the workgroups are free, on the calling thread for submit too (a runtime thread waits for
  /// the grant: `work` may synchronize its stream, but must not wait for what its caller does
  /// after the call); it always runs, even when the gather fails (a shutdown while it waits):
  /// its kernels are then released beside the jobs and the call (or the handle) still reports
  /// the failure. With RuntimeOptions::gather_deadline_fails tasks launch after_gather (they
  /// must be withdrawable).
  at_request,
};
/// "after_gather" or "at_request".
const char* task_launch_name(TaskLaunch l);
/// The TaskLaunch named `name`; throws std::invalid_argument for another name.
TaskLaunch parse_task_launch(const std::string& name);

/// How a Runtime is set up: backend, device, CPU-backend checks and preemption.
struct RuntimeOptions {
  /// Which backend drives the jobs: a GPU when the CUDA backend is built and a device is present
  /// (automatic), or one explicitly (cuda throws when there is no device).
  enum class Select : std::uint8_t {
    automatic,  ///< the GPU when there is one, else the CPU backend
    cpu,        ///< the CPU backend
    cuda,       ///< the GPU `device`
  };
  Select backend = Select::automatic;  ///< which backend (automatic by default)
  /// CUDA: which device.
  int device = 0;
  /// CUDA: run every job, task and interruptible kernel on this green context's SMs (a static
  /// partition made with the driver's green-context calls, e.g. coop::cuda::GreenSplit in
  /// <coop/cuda/green.hpp>; the caller keeps it alive longer than the runtime). Jobs are sized
  /// to its SMs. nullptr: the whole device. Needs the CUDA backend.
  CUgreenCtx_st* green_context = nullptr;
  /// CPU backend: how many workgroups can be resident at once (its "compute units").
  /// 0 = $COOP_CPU_SLOTS, else 16.
  std::uint32_t cpu_slots = 0;
  /// CPU backend: check workgroup-level uniformity and report misuse (cheap; on by default).
  bool checking = true;
  /// CPU backend: report a job whose workgroups all wait this long without progress (0 = never).
  double watchdog_s = 20;
  /// How capacity is freed for tasks: kills, whole-job suspension, or the hybrid of both.
  PreemptionPolicy preemption{};
  /// CUDA: when a task's work is enqueued (the CPU backend runs it once gathered).
  TaskLaunch task_launch = TaskLaunch::after_gather;
  /// A task still waiting for its workgroups this long after asking is reported (a job that
  /// stopped offering kills); 0 = never.
  double gather_deadline_s = 10;
  /// ... and then fails with coop::gather_timeout (it did not run and holds nothing) instead of
  /// waiting on until the capacity frees.
  bool gather_deadline_fails = false;
  /// Where reports go (default: one line on stderr).
  std::function<void(const std::string&)> report;
};

/// What a non-cooperative task gets while it holds its workgroups.
class Task {
 public:
  /// The workgroups the task may run: `groups` for Runtime::run; for Runtime::run_fraction,
  /// how many of the lowest-priority running job's size fit in what was gathered (at least 1).
  std::uint32_t groups() const { return groups_; }
  /// The backend the task runs on (Runtime::backend).
  Backend backend() const { return backend_; }
  /// CUDA: the high-priority stream to enqueue the task's work on (cudaStream_t); the runtime
  /// waits for it before giving the capacity back. nullptr on the CPU backend.
  CUstream_st* stream() const { return stream_; }

 private:
  friend class Runtime;
  Task(std::uint32_t g, Backend b, CUstream_st* s) : groups_(g), backend_(b), stream_(s) {}
  std::uint32_t groups_;
  Backend backend_;
  CUstream_st* stream_;
};

namespace detail {
struct SubmittedTask;
class EarlyTask;
class TaskThreads;
/// Internal: deletes Runtime's task threads (defined in the library).
struct TaskThreadsDeleter {
  /// Joins and deletes `t`.
  void operator()(TaskThreads* t) const;
};
}  // namespace detail

/// A task submitted with Runtime::submit or Runtime::submit_fraction: the caller goes on while
/// the jobs give way and the work runs on a thread of the runtime. Copies share the task. A
/// handle may be dropped unwaited: the task still runs to its end.
class TaskHandle {
 public:
  /// An empty handle, referring to no task (operator bool is false).
  TaskHandle() = default;
  /// Blocks until the task has run (CUDA: until its stream work has finished) or failed;
  /// rethrows what its work threw, or coop::gather_timeout / coop::runtime_closed when it never
  /// got its workgroups. Spins for up to 2 ms before it sleeps (a short task's caller then
  /// has its record without a thread's wake-up).
  void wait() const;
  /// True once the task has run or failed (wait() then returns at once).
  bool done() const;
  /// wait(), then the task's record.
  TaskRecord record() const;
  /// Whether this handle refers to a task.
  explicit operator bool() const { return bool(state_); }

 private:
  friend class Runtime;
  explicit TaskHandle(std::shared_ptr<detail::SubmittedTask> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::SubmittedTask> state_;
};

/// How Runtime::shutdown treats jobs that still run.
enum class Shutdown : std::uint8_t {
  wait,    ///< let them finish (jobs the scheduler preempted are restarted to finish)
  cancel,  ///< stop them at their next offer_kill, resizing barrier or protocol wait
};

/// Owns the scheduler of one device: launches cooperative kernels as jobs (launch) and runs
/// non-cooperative tasks on capacity gathered from them (run, run_fraction). Not copyable.
class Runtime {
 public:
  /// Picks the backend by `opts.backend` and starts the device's scheduler. Throws
  /// std::runtime_error when the CUDA backend is asked for but coop was built without it or the
  /// device is not there.
  explicit Runtime(RuntimeOptions opts = {});
  /// shutdown(Shutdown::cancel): jobs still running are cancelled (call Job::wait or
  /// shutdown(Shutdown::wait) first to let them finish).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The backend this runtime drives.
  Backend backend() const { return backend_; }
  /// The device, for reports: the GPU's name and SM count, or the CPU backend's workgroup slots
  /// and hardware threads.
  std::string device_name() const;
  /// Capacity in scheduler units (CPU: workgroup slots; CUDA: SMs x cuda::kUnitsPerSM).
  std::uint32_t capacity() const { return sched_->capacity(); }
  /// Milliseconds since the runtime was created: the clock of JobStats and TaskRecord times.
  double now_ms() const { return sched_->now_ms(); }

  /// Launches cooperative kernel K with at most cfg.max_groups workgroups (0 = as many as can
  /// be co-resident). Returns once it runs with M0 >= 1 workgroups. On the CUDA backend the
  /// kernel must be compiled by nvcc (this call in a .cu file). Keep the returned Job: dropping
  /// its last handle cancels the job (see coop::Job).
  template <class K>
  COOP_LAUNCH_ABI Job launch(const LaunchConfig& cfg, const params_t<K>& params,
                             const transmit_t<K>& transmit = {}) {
    // Before anything is allocated: on a GPU, freeing a refused job's memory would wait for
    // the kernels still running.
    if (sched_->closed()) throw runtime_closed("cannot launch a job: the runtime has shut down");
    if (backend_ == Backend::cuda) {
#if COOP_LAUNCHES_ON_GPU
      return cuda::launch<K>(*cuda_, *sched_, cfg, params, transmit);
#else
      throw std::logic_error(
          "this runtime drives a GPU, but the kernel was compiled by a host compiler: launch it "
          "from a .cu file compiled by nvcc");
#endif
    }
    return cpu::launch<K>(*sched_, cfg, cpu_options(), params, transmit);
  }

  /// Runs a non-cooperative task on `groups` workgroup slots (workgroups the size of the
  /// lowest-priority running job's) gathered from the running jobs: blocks until they are free,
  /// runs `work` (CUDA: `work` enqueues on task.stream() and the runtime waits for it), gives
  /// them back. Returns the task's record.
  TaskRecord run(std::uint32_t groups, const std::function<void(Task&)>& work, int priority = 0);
  /// The same for work whose grid the scheduler does not control (a library call such as a
  /// cuBLAS GEMM): gathers `fraction` (0, 1] of the device, at most all but workgroup 0 of each
  /// running job. Library kernels whose blocks need most of an SM want fraction 1.
  TaskRecord run_fraction(double fraction, const std::function<void(Task&)>& work,
                          int priority = 0);
  /// run() without blocking the caller: the jobs are asked for the workgroups at once, from
  /// this thread (the request time is now), and `work` runs on a thread of the runtime as soon
  /// as they are free. The handle waits for it, says whether it is done and gives its record.
  /// Tasks submitted together are gathered and run concurrently, highest priority first where
  /// they compete for capacity. Throws like run() for impossible sizes, before anything is
  /// asked of the jobs.
  TaskHandle submit(std::uint32_t groups, std::function<void(Task&)> work, int priority = 0);
  /// run_fraction() without blocking the caller, as submit() is to run().
  TaskHandle submit_fraction(double fraction, std::function<void(Task&)> work, int priority = 0);
  /// submit() with this task's TaskLaunch instead of the runtime's (for work that must run
  /// only once the workgroups are free, or on a runtime thread: TaskLaunch::after_gather).
  TaskHandle submit(std::uint32_t groups, std::function<void(Task&)> work, int priority,
                    TaskLaunch launch);
  /// submit_fraction() with this task's TaskLaunch instead of the runtime's.
  TaskHandle submit_fraction(double fraction, std::function<void(Task&)> work, int priority,
                             TaskLaunch launch);
  /// The records of the tasks that have completed (run, run_fraction, submit, submit_fraction),
  /// in the order they ended (a task whose work threw has none).
  std::vector<TaskRecord> task_records() const { return sched_->task_records(); }

  /// Ends the runtime's work, from any thread: launches, tasks and resumptions, new ones and
  /// those waiting for capacity, fail with coop::runtime_closed; running tasks finish; jobs the
  /// user suspended are cancelled (they could not be resumed); running jobs finish or, with
  /// Shutdown::cancel, are cancelled (Job::wait throws coop::job_cancelled; an interruptible
  /// launch throws interrupt_error). Returns when no job runs and no call is inside the
  /// runtime; the Runtime may then be destroyed while Job handles live on (wait, done, stats
  /// still answer). A second call does nothing.
  void shutdown(Shutdown how = Shutdown::wait);
  /// The scheduler's state and each job's (on a GPU, read from the device): for diagnosing a
  /// job that seems stuck.
  std::string describe() const;

  /// Changes how capacity is freed for tasks from now on.
  void set_preemption(const PreemptionPolicy& p);
  /// How capacity is freed for tasks now (RuntimeOptions::preemption or set_preemption).
  PreemptionPolicy preemption() const;
  /// Changes when the work of tasks requested from now on is enqueued
  /// (RuntimeOptions::task_launch).
  void set_task_launch(TaskLaunch l) { task_launch_.store(l); }
  /// When task work is enqueued now.
  TaskLaunch task_launch() const { return task_launch_.load(); }

  // For coop's own launchers (interruptible kernels): the scheduler and the backend.
  /// Internal: the scheduler, used by coop's own launchers.
  detail::Scheduler& scheduler() { return *sched_; }
  /// Internal: RuntimeOptions::checking, used by coop's own launchers.
  bool cpu_checking() const { return opts_.checking; }
  /// The options this runtime was made with.
  const RuntimeOptions& options() const { return opts_; }
  /// Internal: the CUDA device service (Backend::cuda only), used by coop's own launchers.
  cuda::DeviceService& cuda_device() { return *cuda_; }

 private:
  cpu::Options cpu_options() const { return {opts_.checking, opts_.watchdog_s}; }
  struct TaskSize {
    std::uint32_t units, groups;
  };
  TaskSize size_of_run(std::uint32_t groups) const;
  TaskSize size_of_fraction(double fraction) const;
  /// Runs `work` for a task of `groups` and waits for what it enqueued (CUDA), calling
  /// `enqueued` with the task's stream once the work has returned, before the wait.
  void run_work(std::uint32_t groups, const std::function<void(Task&)>& work,
                const std::function<void(CUstream_st*)>& enqueued = {});
  TaskHandle submit_units(TaskSize size, std::function<void(Task&)> work, int priority,
                          TaskLaunch launch);
  /// run / run_fraction for a size.
  TaskRecord run_units(TaskSize size, const std::function<void(Task&)>& work, int priority);
  /// Whether a task asking for `launch` is enqueued at its request.
  bool launches_at_request(TaskLaunch launch) const;
  /// A task's stream and release gate when it launches at its request, else nullptr.
  std::shared_ptr<detail::EarlyTask> early_task(TaskLaunch launch);
  void configure_scheduler();
  void report(const std::string& what) const;
  RuntimeOptions opts_;
  Backend backend_ = Backend::cpu;
  std::unique_ptr<cuda::DeviceService, CudaServiceDeleter> cuda_;
  std::unique_ptr<detail::Scheduler> sched_;
  std::atomic<TaskLaunch> task_launch_{TaskLaunch::after_gather};
  std::mutex threads_mu_;  ///< guards the lazy start of task_threads_
  std::unique_ptr<detail::TaskThreads, detail::TaskThreadsDeleter> task_threads_;
};

}  // namespace coop
