#include "coop/runtime.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "task_threads.hpp"

#ifdef COOP_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "coop/cuda/check.hpp"
#include "coop/cuda/device.hpp"
#include "coop/cuda/device_service.hpp"
#include "coop/cuda/occupancy.hpp"
#endif

namespace coop {

const char* backend_name(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

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

void Runtime::run_work(std::uint32_t groups, const std::function<void(Task&)>& work) {
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
    } catch (...) {
      // What it enqueued before throwing still runs on its capacity: wait for it first.
      cudaStreamSynchronize(lease.s);
      throw;
    }
    cuda::check(cudaStreamSynchronize(lease.s), "running a task");
    return;
  }
#endif
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

TaskRecord Runtime::run(std::uint32_t groups, const std::function<void(Task&)>& work,
                        int priority) {
  const TaskSize size = size_of_run(groups);
  return sched_->run_task(size.units, size.groups, priority, [&] { run_work(size.groups, work); });
}

TaskRecord Runtime::run_fraction(double fraction, const std::function<void(Task&)>& work,
                                 int priority) {
  const TaskSize size = size_of_fraction(fraction);
  return sched_->run_task(size.units, size.groups, priority, [&] { run_work(size.groups, work); });
}

// ---------------------------------------------------------------- submitted tasks

namespace detail {
struct SubmittedTask {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;
  TaskRecord record;
};
void TaskThreadsDeleter::operator()(TaskThreads* t) const { delete t; }
}  // namespace detail

void TaskHandle::wait() const {
  if (!state_) throw std::logic_error("wait() on an empty TaskHandle");
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
  const TaskSize size = size_of_run(groups);
  return submit_units(size, std::move(work), priority);
}

TaskHandle Runtime::submit_fraction(double fraction, std::function<void(Task&)> work,
                                    int priority) {
  const TaskSize size = size_of_fraction(fraction);
  return submit_units(size, std::move(work), priority);
}

TaskHandle Runtime::submit_units(TaskSize size, std::function<void(Task&)> work, int priority) {
  auto state = std::make_shared<detail::SubmittedTask>();
  // Asked for now, from this thread: the jobs start giving way while a task thread wakes.
  auto ticket = std::make_shared<detail::Scheduler::TaskTicket>(
      sched_->request_task(size.units, size.groups, priority));
  try {
    {
      std::lock_guard lock(threads_mu_);
      if (!task_threads_) task_threads_.reset(new detail::TaskThreads);
    }
    task_threads_->post([this, state, ticket, size, work = std::move(work)] {
      TaskRecord rec;
      std::exception_ptr error;
      try {
        rec = sched_->run_requested(*ticket, [&] { run_work(size.groups, work); });
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(state->mu);
        state->record = rec;
        state->error = error;
        state->finished = true;
      }
      state->cv.notify_all();
    });
  } catch (...) {
    sched_->drop_requested(*ticket);
    throw;
  }
  return TaskHandle(std::move(state));
}

}  // namespace coop
