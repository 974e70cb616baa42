#include "coop/runtime.hpp"

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "coop/detail/spin.hpp"
#include "task_threads.hpp"

#ifdef COOP_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "coop/cuda/check.hpp"
#include "coop/cuda/device.hpp"
#include "coop/cuda/device_service.hpp"
#include "coop/cuda/occupancy.hpp"
#include "coop/cuda/release.hpp"
#endif

namespace coop {

const char* backend_name(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

const char* task_launch_name(TaskLaunch l) {
  return l == TaskLaunch::at_request ? "at_request" : "after_gather";
}

TaskLaunch parse_task_launch(const std::string& name) {
  if (name == "after_gather") return TaskLaunch::after_gather;
  if (name == "at_request") return TaskLaunch::at_request;
  throw std::invalid_argument("unknown task launch '" + name +
                              "' (expected after_gather or at_request)");
}

void CudaServiceDeleter::operator()(cuda::DeviceService* d) const {
#ifdef COOP_HAVE_CUDA
  delete d;
#else
  (void)d;
#endif
}

namespace {
std::uint32_t cpu_slots_from(const RuntimeOptions& o) {
  if (o.cpu_slots) return o.cpu_slots;
  if (const char* s = std::getenv("COOP_CPU_SLOTS")) {
    long v = std::strtol(s, nullptr, 10);
    if (v >= 1 && v <= long(kMaxGroupsLimit)) return std::uint32_t(v);
  }
  return 16;
}
}  // namespace

void Runtime::report(const std::string& what) const {
  if (opts_.report)
    opts_.report(what);
  else
    std::fprintf(stderr, "coop: %s\n", what.c_str());
}

void Runtime::configure_scheduler() {
  sched_->set_preemption(opts_.preemption);
  sched_->set_gather_deadline(opts_.gather_deadline_s, opts_.gather_deadline_fails,
                              [this](const std::string& what) { report(what); });
}

Runtime::Runtime(RuntimeOptions opts) : opts_(opts) {
  using Select = RuntimeOptions::Select;
  task_launch_.store(opts.task_launch);
#ifdef COOP_HAVE_CUDA
  if (opts.backend != Select::cpu) {
    std::string why;
    auto devs = cuda::devices(&why);
    bool have = opts.device >= 0 && std::size_t(opts.device) < devs.size();
    if (opts.backend == Select::cuda && !have)
      throw std::runtime_error("the CUDA backend was asked for, but device " +
                               std::to_string(opts.device) + " is not there" +
                               (why.empty() ? std::string() : " (" + why + ")"));
    if (have) {
      cuda_.reset(new cuda::DeviceService(opts.device, opts.green_context));
      backend_ = Backend::cuda;
      sched_ = std::make_unique<detail::Scheduler>(std::uint32_t(cuda_->info().multiprocessors) *
                                                   cuda::kUnitsPerSM);
      configure_scheduler();
      return;
    }
  }
#else
  if (opts.backend == Select::cuda)
    throw std::runtime_error("the CUDA backend was asked for, but coop was built without it");
#endif
  if (opts.green_context)
    throw std::invalid_argument(
        "RuntimeOptions::green_context needs the CUDA backend and a device");
  sched_ = std::make_unique<detail::Scheduler>(cpu_slots_from(opts));
  configure_scheduler();
}

void Runtime::set_preemption(const PreemptionPolicy& p) { sched_->set_preemption(p); }
PreemptionPolicy Runtime::preemption() const { return sched_->preemption(); }

Runtime::~Runtime() {
  // Cancel, not wait: a runtime unwound by an exception must not wait for a job that nobody
  // will stop (a wait() first, or shutdown(Shutdown::wait), lets jobs finish).
  try {
    shutdown(Shutdown::cancel);
  } catch (const std::exception& e) {
    report(std::string("runtime shutdown failed: ") + e.what());
  }
}

void Runtime::shutdown(Shutdown how) {
  sched_->shutdown(how == Shutdown::cancel);
#ifdef COOP_HAVE_CUDA
  // The service thread lets go of finished jobs just after reporting them.
  if (cuda_) cuda_->drain();
#endif
}

std::string Runtime::describe() const { return device_name() + "\n" + sched_->describe(); }

std::string Runtime::device_name() const {
#ifdef COOP_HAVE_CUDA
  if (cuda_)
    return cuda_->info().name + " (" + std::to_string(cuda_->info().multiprocessors) +
           (cuda_->info().green_context ? " SMs of a green context)" : " SMs)");
#endif
  return "CPU backend (" + std::to_string(capacity()) + " workgroup slots, " +
         std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
}

void Runtime::run_work(std::uint32_t groups, const std::function<void(Task&)>& work,
                       const std::function<void(CUstream_st*)>& enqueued) {
#ifdef COOP_HAVE_CUDA
  if (cuda_) {
    struct Lease {
      cuda::DeviceService& d;
      CUstream_st* s;
      ~Lease() { d.release_task_stream(s); }
    } lease{*cuda_, cuda_->acquire_task_stream()};
    Task task(groups, backend(), lease.s);
    try {
      work(task);
      if (enqueued) enqueued(lease.s);
    } catch (...) {
      // What it enqueued before throwing still runs on its capacity: wait for it first.
      cudaStreamSynchronize(lease.s);
      throw;
    }
    cuda::check(cudaStreamSynchronize(lease.s), "running a task");
    return;
  }
#endif
  (void)enqueued;  // the CPU backend's task has run when work returns
  Task task(groups, backend(), nullptr);
  work(task);
}

Runtime::TaskSize Runtime::size_of_run(std::uint32_t groups) const {
  std::uint64_t units = std::uint64_t(groups) * sched_->reference_cost();
  if (groups == 0) throw std::invalid_argument("a task needs at least one workgroup");
  if (units > capacity())
    throw std::invalid_argument("task asks for " + std::to_string(groups) +
                                " workgroups but the device holds only " +
                                std::to_string(capacity() / sched_->reference_cost()));
  return {std::uint32_t(units), groups};
}

Runtime::TaskSize Runtime::size_of_fraction(double fraction) const {
  if (!(fraction > 0.0 && fraction <= 1.0))
    throw std::invalid_argument("a task's device fraction must be in (0, 1], got " +
                                std::to_string(fraction));
  // Never more than can be gathered (jobs that give capacity by kills keep their workgroup 0).
  const auto wanted = std::uint32_t(std::ceil(fraction * capacity()));
  auto units = std::min(wanted, sched_->gatherable_units(wanted));
  std::uint32_t groups = std::max<std::uint32_t>(1, units / sched_->reference_cost());
  return {std::max(1u, units), groups};
}

namespace detail {
#ifdef COOP_HAVE_CUDA
// At most one task of the process is enqueued at its request at a time; the others launch after
// their gather. A stream waiting on a release word blocks what is submitted after it to the
// same hardware queue (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), other streams' work
// included: with a queue of requests each enqueued early, a later task's wait stood in front of
// an earlier task's kernels or the control stream's writes that its own release waited for (on
// an H200 the co-location benchmark's requests submitted at arrival stopped; its watchdog could
// not read the job's state over the control stream). One waiting task is safe: what its release
// needs (the target it is armed with, the tasks before it) was submitted before its wait.
std::atomic<bool> early_task_held{false};

// A task enqueued at its request (TaskLaunch::at_request): its stream, held until its work has
// run, and the gate its stream waits behind. The requesting thread enqueues the waits and runs
// the work; a task thread waits for the grant, opens the gate (the jobs may have already) and
// drains the stream. The gate never waits for the work to return (work that synchronizes its
// stream would wait for a grant that comes after it), and the stream goes back only once the
// work has returned and what it enqueued has run.
class EarlyTask {
 public:
  explicit EarlyTask(cuda::DeviceService& d)
      : dev_(d), stream_(d.acquire_task_stream()), gate_(d.release_ring()) {}
  ~EarlyTask() {
    gate_.open();
    wait_for_work();
    cudaStreamSynchronize(stream_);
    dev_.release_task_stream(stream_);
    early_task_held.store(false, std::memory_order_release);
  }
  EarlyTask(const EarlyTask&) = delete;
  EarlyTask& operator=(const EarlyTask&) = delete;
  ReleaseGate* release_gate() { return &gate_; }
  CUstream_st* stream() const { return stream_; }
  // The requesting thread, right after the request.
  void enqueue_waits(bool granted) { gate_.enqueue_waits(stream_, granted); }
  // The requesting thread: the work returned (or threw `error`), or never ran.
  void work_returned(std::exception_ptr error) {
    {
      std::lock_guard lock(mu_);
      returned_ = true;
      error_ = error;
    }
    cv_.notify_all();
  }
  // The task thread, once the scheduler grants the task: release it, wait for the work, call
  // `enqueued` with the stream if it returned, then wait for what it enqueued; rethrows what
  // the work threw.
  void finish(const std::function<void(CUstream_st*)>& enqueued) {
    gate_.open();
    wait_for_work();
    if (!error_) enqueued(stream_);
    cuda::check(cudaStreamSynchronize(stream_), "running a task");
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void wait_for_work() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return returned_; });
  }
  cuda::DeviceService& dev_;
  CUstream_st* stream_;
  cuda::TaskGate gate_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool returned_ = false;
  std::exception_ptr error_;
};
#else
class EarlyTask {  // never made: tasks launch after the gather without the CUDA backend
 public:
  ReleaseGate* release_gate() { return nullptr; }
  CUstream_st* stream() const { return nullptr; }
  void enqueue_waits(bool) {}
  void work_returned(std::exception_ptr) {}
  void finish(const std::function<void(CUstream_st*)>&) {}
};
#endif
}  // namespace detail

bool Runtime::launches_at_request(TaskLaunch launch) const {
#ifdef COOP_HAVE_CUDA
  return cuda_ && launch == TaskLaunch::at_request && !opts_.gather_deadline_fails;
#else
  (void)launch;
  return false;
#endif
}

std::shared_ptr<detail::EarlyTask> Runtime::early_task(TaskLaunch launch) {
#ifdef COOP_HAVE_CUDA
  if (!launches_at_request(launch)) return nullptr;
  bool free = false;
  if (!detail::early_task_held.compare_exchange_strong(free, true, std::memory_order_acquire))
    return nullptr;  // another task waits at its request: this one launches after its gather
  try {
    return std::make_shared<detail::EarlyTask>(*cuda_);
  } catch (...) {
    detail::early_task_held.store(false, std::memory_order_release);
    throw;
  }
#else
  (void)launch;
#endif
  return nullptr;
}

TaskRecord Runtime::run_units(TaskSize size, const std::function<void(Task&)>& work, int priority) {
  // At the request the work runs on this thread and a task thread waits for the grant.
  const TaskLaunch launch = task_launch();
  if (launches_at_request(launch)) return submit_units(size, work, priority, launch).record();
  detail::Scheduler::TaskTicket ticket = sched_->request_task(size.units, size.groups, priority);
  return sched_->run_requested(ticket, [&] {
    run_work(size.groups, work, [&](CUstream_st* s) { sched_->grow_after(ticket, s); });
  });
}

TaskRecord Runtime::run(std::uint32_t groups, const std::function<void(Task&)>& work,
                        int priority) {
  return run_units(size_of_run(groups), work, priority);
}

TaskRecord Runtime::run_fraction(double fraction, const std::function<void(Task&)>& work,
                                 int priority) {
  return run_units(size_of_fraction(fraction), work, priority);
}

// ---------------------------------------------------------------- submitted tasks

namespace detail {
struct SubmittedTask {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::atomic<bool> published{false};  ///< `finished`, for a waiter that spins first
  std::exception_ptr error;
  TaskRecord record;
};
void TaskThreadsDeleter::operator()(TaskThreads* t) const { delete t; }
}  // namespace detail

void TaskHandle::wait() const {
  if (!state_) throw std::logic_error("wait() on an empty TaskHandle");
  // A short task ends within a couple of milliseconds: spin for those rather than pay for a
  // wake-up (~35 us on an H100's host, docs/cuda-backend.md), then sleep.
  detail::spin_for(std::chrono::milliseconds(2),
                   [&] { return state_->published.load(std::memory_order_acquire); });
  std::unique_lock lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->finished; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool TaskHandle::done() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  return state_->finished;
}

TaskRecord TaskHandle::record() const {
  wait();
  std::lock_guard lock(state_->mu);
  return state_->record;
}

TaskHandle Runtime::submit(std::uint32_t groups, std::function<void(Task&)> work, int priority) {
  return submit_units(size_of_run(groups), std::move(work), priority, task_launch());
}

TaskHandle Runtime::submit_fraction(double fraction, std::function<void(Task&)> work,
                                    int priority) {
  return submit_units(size_of_fraction(fraction), std::move(work), priority, task_launch());
}

TaskHandle Runtime::submit(std::uint32_t groups, std::function<void(Task&)> work, int priority,
                           TaskLaunch launch) {
  return submit_units(size_of_run(groups), std::move(work), priority, launch);
}

TaskHandle Runtime::submit_fraction(double fraction, std::function<void(Task&)> work, int priority,
                                    TaskLaunch launch) {
  return submit_units(size_of_fraction(fraction), std::move(work), priority, launch);
}

TaskHandle Runtime::submit_units(TaskSize size, std::function<void(Task&)> work, int priority,
                                 TaskLaunch launch) {
  auto state = std::make_shared<detail::SubmittedTask>();
  std::shared_ptr<detail::EarlyTask> early = early_task(launch);
  // Asked for now, from this thread: the jobs start giving way while a task thread wakes.
  auto ticket = std::make_shared<detail::Scheduler::TaskTicket>(sched_->request_task(
      size.units, size.groups, priority, early ? early->release_gate() : nullptr));
  try {
    if (early) early->enqueue_waits(sched_->granted(*ticket));
    {
      std::lock_guard lock(threads_mu_);
      if (!task_threads_) task_threads_.reset(new detail::TaskThreads);
    }
    std::function<void(Task&)> thread_work;
    if (!early) thread_work = std::move(work);
    task_threads_->post(
        [this, state, ticket, size, early, posted_work = std::move(thread_work)]() mutable {
          TaskRecord rec;
          std::exception_ptr error;
          try {
            // Once the work is enqueued, the jobs grow back behind it (Scheduler::grow_after).
            auto grow = [&](CUstream_st* s) { sched_->grow_after(*ticket, s); };
            rec = sched_->run_requested(*ticket, [&] {
              if (early)
                early->finish(grow);
              else
                run_work(size.groups, posted_work, grow);
            });
          } catch (...) {
            error = std::current_exception();
          }
          early.reset();  // the work has returned and what it enqueued has run
          {
            std::lock_guard lock(state->mu);
            state->record = rec;
            state->error = error;
            state->finished = true;
          }
          state->published.store(true, std::memory_order_release);
          state->cv.notify_all();
        });
  } catch (...) {
    if (early) early->work_returned(nullptr);  // it never ran
    early.reset();
    sched_->drop_requested(*ticket);
    throw;
  }
  if (early) {
    // The work, at the request on this thread: its kernels wait on the device for the jobs.
    std::exception_ptr error;
    try {
      Task task(size.groups, backend(), early->stream());
      work(task);
    } catch (...) {
      error = std::current_exception();  // rethrown by wait(), once the task has ended
    }
    early->work_returned(error);
  }
  return TaskHandle(std::move(state));
}

}  // namespace coop
