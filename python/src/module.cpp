// `import coop`: the runtime, jobs and tasks for Python (docs/python.md). Every call that waits
// releases the GIL; Python callables run by the runtime's threads take it back.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "coop/coop.hpp"
#include "jobs.hpp"
#if defined(COOP_HAVE_CUDA)
#include "coop/cuda/device.hpp"
#endif

namespace py = pybind11;
using namespace py::literals;

namespace coop::python {
namespace {

using RuntimePtr = std::shared_ptr<Runtime>;

// ---------------------------------------------------------------- records as dicts

py::dict record_dict(const TaskRecord& r) {
  return py::dict("groups"_a = r.groups, "priority"_a = r.priority, "request_ms"_a = r.request_ms,
                  "gathered_ms"_a = r.gathered_ms, "start_ms"_a = r.start_ms, "end_ms"_a = r.end_ms,
                  "gather_ms"_a = r.gather_ms(), "run_ms"_a = r.run_ms());
}

py::dict stats_dict(const JobStats& s) {
  py::list timeline;
  for (const TimelinePoint& p : s.timeline) timeline.append(py::make_tuple(p.t_ms, p.active));
  return py::dict("max_groups"_a = s.max_groups, "initial_groups"_a = s.initial_groups,
                  "final_groups"_a = s.final_groups, "kills"_a = s.kills, "forks"_a = s.forks,
                  "forked_groups"_a = s.forked_groups, "resizes"_a = s.resizes,
                  "barriers"_a = s.barriers, "suspends"_a = s.suspends, "start_ms"_a = s.start_ms,
                  "end_ms"_a = s.end_ms, "elapsed_ms"_a = s.end_ms > 0 ? s.elapsed_ms() : 0.0,
                  "timeline"_a = timeline);
}

py::dict info_dict() {
  py::dict cpu("built"_a = true, "hardware_threads"_a = std::thread::hardware_concurrency());
  py::dict cuda("built"_a = false);
#if defined(COOP_HAVE_CUDA)
  std::string why;
  py::list devices;
  for (const cuda::DeviceInfo& d : cuda::devices(&why))
    devices.append(py::dict("index"_a = d.index, "name"_a = d.name,
                            "compute"_a = std::to_string(d.major) + "." + std::to_string(d.minor),
                            "multiprocessors"_a = d.multiprocessors,
                            "memory_gib"_a = double(d.memory_bytes) / double(1u << 30),
                            "exec_timeout"_a = d.exec_timeout));
  cuda = py::dict("built"_a = true, "arch"_a = "sm_90", "devices"_a = devices, "why_none"_a = why);
#endif
  return py::dict("version"_a = COOP_PYTHON_VERSION, "cpu"_a = cpu, "cuda"_a = cuda);
}

// ---------------------------------------------------------------- the runtime

/// Owns `p`; deleting it (a runtime's shutdown, a job's thread joined) waits for coop's threads,
/// which may need the GIL to finish a Python task's work: it is released meanwhile.
template <class T>
std::shared_ptr<T> without_gil_on_delete(T* p) {
  return std::shared_ptr<T>(p, [](T* q) {
    if (PyGILState_Check()) {
      py::gil_scoped_release unlocked;
      delete q;
    } else {
      delete q;
    }
  });
}

RuntimePtr make_runtime(const std::string& backend, int device, std::uint32_t cpu_slots,
                        bool checking, double watchdog_s, const std::string& preemption,
                        double gather_deadline_s, bool gather_deadline_fails,
                        const std::string& task_launch) {
  RuntimeOptions o;
  if (backend == "auto")
    o.backend = RuntimeOptions::Select::automatic;
  else if (backend == "cpu")
    o.backend = RuntimeOptions::Select::cpu;
  else if (backend == "cuda")
    o.backend = RuntimeOptions::Select::cuda;
  else
    throw std::invalid_argument("backend: expected auto, cpu or cuda, got '" + backend + "'");
  o.device = device;
  o.cpu_slots = cpu_slots;
  o.checking = checking;
  o.watchdog_s = watchdog_s;
  o.preemption = PreemptionPolicy::parse(preemption);
  o.gather_deadline_s = gather_deadline_s;
  o.gather_deadline_fails = gather_deadline_fails;
  o.task_launch = parse_task_launch(task_launch);
  py::gil_scoped_release unlocked;  // starting the CUDA backend can take a while
  return without_gil_on_delete(new Runtime(o));
}

Shutdown parse_shutdown(const std::string& how) {
  if (how == "wait") return Shutdown::wait;
  if (how == "cancel") return Shutdown::cancel;
  throw std::invalid_argument("shutdown: expected 'wait' or 'cancel', got '" + how + "'");
}

// launch_app's keyword arguments as Params (bool before int: True is an int in Python).
Params read_params(const py::kwargs& kwargs) {
  Params p;
  for (auto [key, value] : kwargs) {
    const std::string k = py::str(key);
    if (py::isinstance<py::bool_>(value))
      p[k] = value.cast<bool>();
    else if (py::isinstance<py::int_>(value))
      p[k] = value.cast<std::int64_t>();
    else if (py::isinstance<py::float_>(value))
      p[k] = value.cast<double>();
    else if (py::isinstance<py::str>(value))
      p[k] = value.cast<std::string>();
    else if (py::hasattr(value, "__fspath__"))  // pathlib.Path for graph=
      p[k] = py::str(value.attr("__fspath__")()).cast<std::string>();
    else
      throw py::type_error(k + ": expected a bool, int, float, str or path, got " +
                           std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  }
  return p;
}

// ---------------------------------------------------------------- jobs

/// A launched job as Python holds it: the job's thread, and the runtime it runs on (kept alive
/// as long as the job is).
struct PyJob {
  RuntimePtr rt;
  std::shared_ptr<ThreadedJob> job;

  Job handle(const char* what) const {
    Job j = job->job();
    if (!j)
      throw std::logic_error(std::string(what) + ": " + job->name() +
                             " ran in a form without a cooperative job (multi-launch)");
    return j;
  }
};

py::object result_object(const JobResult& r) {
  if (r.scalar) return py::int_(*r.scalar);
  if (!r.matrix.empty()) {
    py::array_t<float> a({r.rows, r.cols});
    std::copy(r.matrix.begin(), r.matrix.end(), a.mutable_data());
    return a;
  }
  if (r.cols > 1 || !r.reals.empty()) {
    py::array_t<double> a = r.cols > 1 ? py::array_t<double>({r.rows, r.cols})
                                       : py::array_t<double>(py::ssize_t(r.reals.size()));
    std::copy(r.reals.begin(), r.reals.end(), a.mutable_data());
    return a;
  }
  py::array_t<std::int64_t> a(py::ssize_t(r.ints.size()));
  std::copy(r.ints.begin(), r.ints.end(), a.mutable_data());
  return a;
}

// ---------------------------------------------------------------- tasks

/// What a task's work sees (a copy of coop::Task, valid after the task ended too).
struct TaskView {
  std::uint32_t groups = 0;
  std::string backend;
  std::uintptr_t stream = 0;  ///< cudaStream_t; 0 on the CPU backend
};

TaskView view_of(const Task& t) {
  return {t.groups(), backend_name(t.backend()), reinterpret_cast<std::uintptr_t>(t.stream())};
}

/// A Python callable whose last reference may be dropped on a thread without the GIL.
std::shared_ptr<py::function> hold(py::function f) {
  return {new py::function(std::move(f)), [](py::function* p) {
            py::gil_scoped_acquire locked;
            delete p;
          }};
}

/// The work of a task submitted from Python: calls `fn(task)` with the GIL.
std::function<void(Task&)> python_work(py::function fn) {
  return [f = hold(std::move(fn))](Task& t) {
    py::gil_scoped_acquire locked;
    (*f)(view_of(t));
  };
}

/// Checks that exactly one of groups and fraction is given.
void check_size(std::uint32_t groups, double fraction) {
  if ((groups == 0) == (fraction == 0))
    throw std::invalid_argument("a task needs exactly one of groups=K (K >= 1) and fraction=F");
}

struct PyTaskHandle {
  RuntimePtr rt;
  TaskHandle handle;
};

PyTaskHandle submit(const RuntimePtr& rt, py::function fn, std::uint32_t groups, double fraction,
                    int priority) {
  check_size(groups, fraction);
  auto work = python_work(std::move(fn));
  py::gil_scoped_release unlocked;
  return {rt, fraction > 0 ? rt->submit_fraction(fraction, std::move(work), priority)
                           : rt->submit(groups, std::move(work), priority)};
}

/// `with rt.task(groups=k) as t:` -- the runtime gathers the workgroups, the body of the with
/// statement runs while the task holds them (enqueueing on t.stream on a GPU), and leaving it
/// gives them back (after the stream's work has finished).
class TaskScope {
 public:
  TaskScope(RuntimePtr rt, std::uint32_t groups, double fraction, int priority)
      : rt_(std::move(rt)), groups_(groups), fraction_(fraction), priority_(priority) {
    check_size(groups, fraction);
  }
  ~TaskScope() {
    try {
      leave();
    } catch (...) {  // left without __exit__: the task's failure has nobody to go to
    }
  }

  TaskView enter() {
    if (handle_) throw std::logic_error("this task scope was entered already");
    auto work = [s = shared_](Task& t) {
      std::unique_lock lock(s->mu);
      s->view = view_of(t);
      s->entered = true;
      s->cv.notify_all();
      s->cv.wait(lock, [&] { return s->leave; });
    };
    // After the gather whatever the runtime's setting: the work waits for the scope's end, which
    // the caller reaches only after enter() returns.
    handle_ = fraction_ > 0
                  ? rt_->submit_fraction(fraction_, work, priority_, TaskLaunch::after_gather)
                  : rt_->submit(groups_, work, priority_, TaskLaunch::after_gather);
    std::unique_lock lock(shared_->mu);
    // The work signals when the workgroups are there; a task that fails before (shutdown,
    // gather deadline) never calls it, so its handle is polled too.
    while (
        !shared_->cv.wait_for(lock, std::chrono::milliseconds(1), [&] { return shared_->entered; }))
      if (handle_.done()) {
        lock.unlock();
        handle_.wait();  // rethrows why it did not run
      }
    return shared_->view;
  }

  void leave() {
    if (!handle_) return;
    {
      std::lock_guard lock(shared_->mu);
      shared_->leave = true;
      shared_->cv.notify_all();
    }
    TaskHandle h = std::exchange(handle_, TaskHandle{});
    record_ = h.record();
  }

  std::optional<TaskRecord> record() const { return record_; }

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool entered = false, leave = false;
    TaskView view;
  };
  RuntimePtr rt_;
  std::uint32_t groups_;
  double fraction_;
  int priority_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  TaskHandle handle_;
  std::optional<TaskRecord> record_;
};

}  // namespace
}  // namespace coop::python

PYBIND11_MODULE(_coop, m) {
  using namespace coop;
  using namespace coop::python;
  m.doc() = "coop: cooperative kernels that share the GPU (the extension behind `import coop`)";
  m.attr("__version__") = COOP_PYTHON_VERSION;

  // coop's exceptions: Error and its subclasses (invalid arguments are ValueError).
  static py::exception<coop::error> base(m, "Error", PyExc_RuntimeError);
  static py::exception<misuse_error> misuse(m, "MisuseError", base.ptr());
  static py::exception<gather_timeout> timeout(m, "GatherTimeout", base.ptr());
  static py::exception<job_cancelled> cancelled(m, "JobCancelled", base.ptr());
  static py::exception<runtime_closed> closed(m, "RuntimeClosed", base.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const misuse_error& e) {
      PyErr_SetString(misuse.ptr(), e.what());
    } catch (const gather_timeout& e) {
      PyErr_SetString(timeout.ptr(), e.what());
    } catch (const job_cancelled& e) {
      PyErr_SetString(cancelled.ptr(), e.what());
    } catch (const runtime_closed& e) {
      PyErr_SetString(closed.ptr(), e.what());
    } catch (const coop::error& e) {
      PyErr_SetString(base.ptr(), e.what());
    }
  });

  m.def("info", &info_dict,
        "The version, the backends built and the devices present (as `coop info --json`).");
  m.def("launchable", &launchable_names,
        "The names Runtime.launch_app knows: apps, then example kernels.");
  m.def("parameters", &parameter_names, "name"_a, "The keyword parameters launch_app(name) takes.");

  py::class_<TaskView>(m, "Task", "What a task holds while it runs.")
      .def_readonly("groups", &TaskView::groups, "Workgroups the task may run.")
      .def_readonly("backend", &TaskView::backend, "'cpu' or 'cuda'.")
      .def_property_readonly(
          "stream",
          [](const TaskView& t) -> py::object {
            return t.stream ? py::object(py::int_(t.stream)) : py::object(py::none());
          },
          "CUDA: the task's high-priority stream (cudaStream_t as an int, e.g. for "
          "torch.cuda.ExternalStream); None on the CPU backend.")
      .def("__repr__", [](const TaskView& t) {
        return "<coop.Task groups=" + std::to_string(t.groups) + " backend=" + t.backend + ">";
      });

  py::class_<PyTaskHandle>(m, "TaskHandle", "A submitted task (Runtime.submit).")
      .def(
          "wait", [](const PyTaskHandle& h) { h.handle.wait(); },
          py::call_guard<py::gil_scoped_release>(),
          "Blocks until the task has run; raises what its work raised.")
      .def("done", [](const PyTaskHandle& h) { return h.handle.done(); })
      .def(
          "record",
          [](const PyTaskHandle& h) {
            TaskRecord r;
            {
              py::gil_scoped_release unlocked;
              r = h.handle.record();
            }
            return record_dict(r);
          },
          "wait(), then the task's record as a dict.");

  py::class_<TaskScope>(m, "TaskScope", "with rt.task(groups=k) as t: ...")
      .def("__enter__", &TaskScope::enter, py::call_guard<py::gil_scoped_release>())
      .def("__exit__",
           [](TaskScope& s, const py::args&) {
             py::gil_scoped_release unlocked;
             s.leave();
             return false;
           })
      .def_property_readonly(
          "record",
          [](const TaskScope& s) -> py::object {
            auto r = s.record();
            return r ? py::object(record_dict(*r)) : py::object(py::none());
          },
          "The task's record once the with block has ended (None before).");

  py::class_<PyJob>(m, "Job", "A launched cooperative kernel (Runtime.launch_app).")
      .def_property_readonly("name", [](const PyJob& j) { return j.job->name(); })
      .def(
          "wait", [](PyJob& j) { j.job->wait(); }, py::call_guard<py::gil_scoped_release>(),
          "Blocks until the job has ended; raises JobCancelled, MisuseError, ...")
      .def("done", [](const PyJob& j) { return j.job->done(); })
      .def(
          "stats",
          [](const PyJob& j) {
            JobStats s;
            std::map<std::string, double> extra;
            {
              py::gil_scoped_release unlocked;
              if (Job h = j.job->job()) s = h.stats();
              extra = j.job->progress();
            }
            py::dict d = stats_dict(s);
            for (const auto& [k, v] : extra) d[py::str(k)] = v;
            return d;
          },
          "Counters so far (kills, forks, barriers, M over time as (t_ms, M) pairs, ...).")
      .def_property_readonly(
          "active_groups", [](const PyJob& j) { return j.handle("active_groups").active_groups(); },
          "M: the workgroups running now.")
      .def_property_readonly(
          "max_groups", [](const PyJob& j) { return j.handle("max_groups").max_groups(); },
          "N: the most workgroups the job may have.")
      .def(
          "result", [](const PyJob& j) { return result_object(j.job->result()); },
          "What the job computed: per-vertex values (int64), bc centrality (float64), octree "
          "leaves (rows of depth, x, y, z, particles), the game's value (int) or gemm's C.")
      .def(
          "validate",
          [](const PyJob& j) {
            std::pair<bool, std::string> v;
            {
              py::gil_scoped_release unlocked;
              v = j.job->validate();
            }
            return py::dict("ok"_a = v.first, "detail"_a = v.second);
          },
          "Compares the result with an independent CPU reference: {'ok': bool, 'detail': str}.")
      .def("summary", [](const PyJob& j) { return j.job->summary(); })
      .def(
          "inputs",
          [](const PyJob& j) {
            py::dict d;
            for (const Matrix& mat : j.job->operands()) {
              py::array_t<float> a({mat.rows, mat.cols});
              std::copy(mat.data.begin(), mat.data.end(), a.mutable_data());
              d[py::str(mat.name)] = a;
            }
            return d;
          },
          "The input matrices (gemm: {'a': A, 'b': B}); {} for the apps.")
      .def(
          "set_cap", [](PyJob& j, std::uint32_t cap) { j.handle("set_cap").set_cap(cap); }, "cap"_a,
          py::call_guard<py::gil_scoped_release>())
      .def(
          "suspend", [](PyJob& j) { return j.handle("suspend").suspend(); },
          py::call_guard<py::gil_scoped_release>(),
          "Suspends the job at its next resizing barrier (M -> 0); False if it finished first.")
      .def(
          "resume", [](PyJob& j, std::uint32_t up_to) { return j.handle("resume").resume(up_to); },
          "m"_a = 0, py::call_guard<py::gil_scoped_release>(),
          "Restarts a suspended job with up to m workgroups (0 = N); returns M.")
      .def(
          "cancel", [](PyJob& j) { return j.job->cancel(); },
          py::call_guard<py::gil_scoped_release>(),
          "Stops the job at its next offer_kill or barrier; wait() then raises JobCancelled.")
      .def(
          "stop", [](PyJob& j) { return j.job->stop(); },
          "Kernels with a stop flag (gemm): claim no more work, end normally. False: none.")
      .def("__repr__", [](const PyJob& j) {
        return "<coop.Job " + j.job->name() + (j.job->done() ? " done>" : " running>");
      });

  py::class_<Runtime, RuntimePtr>(m, "Runtime",
                                  "Owns the scheduler of one device (docs/python.md).")
      .def(py::init(&make_runtime), "backend"_a = "auto", "device"_a = 0, "cpu_slots"_a = 0,
           "checking"_a = true, "watchdog_s"_a = 20.0, "preemption"_a = "hybrid",
           "gather_deadline_s"_a = 10.0, "gather_deadline_fails"_a = false,
           "task_launch"_a = "after_gather")
      .def_property_readonly("backend", [](const Runtime& r) { return backend_name(r.backend()); })
      .def_property_readonly("device_name", &Runtime::device_name)
      .def_property_readonly("capacity", &Runtime::capacity, "Capacity in scheduler units.")
      .def("now_ms", &Runtime::now_ms, "The clock of stats and task records.")
      .def("describe", &Runtime::describe, py::call_guard<py::gil_scoped_release>())
      .def(
          "launch_app",
          [](const RuntimePtr& rt, const std::string& name, const py::kwargs& kwargs) {
            Params p = read_params(kwargs);
            const std::vector<std::string> known = parameter_names(name);  // ValueError
            for (const auto& [key, value] : p)
              if (std::find(known.begin(), known.end(), key) == known.end())
                throw py::type_error("launch_app('" + name + "') got an unexpected keyword '" +
                                     key + "' (it takes " +
                                     py::str(py::cast(known)).cast<std::string>() + ")");
            std::shared_ptr<ThreadedJob> job;
            {
              py::gil_scoped_release unlocked;
              job = without_gil_on_delete(launch(*rt, name, p).release());
            }
            return PyJob{rt, std::move(job)};
          },
          "name"_a,
          "Launches an app or example kernel with `coop run`'s options as keywords; returns "
          "once it runs.")
      .def(
          "task",
          [](const RuntimePtr& rt, std::uint32_t groups, double fraction, int priority) {
            return std::make_unique<TaskScope>(rt, groups, fraction, priority);
          },
          py::kw_only(), "groups"_a = 0, "fraction"_a = 0.0, "priority"_a = 0,
          "A context manager holding groups (or a fraction of the device) while its body runs.")
      .def("submit", &submit, "fn"_a, py::kw_only(), "groups"_a = 0, "fraction"_a = 0.0,
           "priority"_a = 0, "Runs fn(task) on a runtime thread once the capacity is free.")
      .def(
          "run",
          [](const RuntimePtr& rt, py::function fn, std::uint32_t groups, double fraction,
             int priority) {
            check_size(groups, fraction);
            auto work = python_work(std::move(fn));
            TaskRecord r;
            {
              py::gil_scoped_release unlocked;
              r = fraction > 0 ? rt->run_fraction(fraction, work, priority)
                               : rt->run(groups, work, priority);
            }
            return record_dict(r);
          },
          "fn"_a, py::kw_only(), "groups"_a = 0, "fraction"_a = 0.0, "priority"_a = 0,
          "Blocks until the capacity is free, runs fn(task) on this thread, returns the record.")
      .def(
          "run",
          [](const RuntimePtr& rt, std::uint32_t groups, py::function fn, int priority) {
            auto work = python_work(std::move(fn));
            TaskRecord r;
            {
              py::gil_scoped_release unlocked;
              r = rt->run(groups, work, priority);
            }
            return record_dict(r);
          },
          "groups"_a, "fn"_a, "priority"_a = 0, "rt.run(groups, fn): the same with the size first.")
      .def("task_records",
           [](const Runtime& r) {
             py::list l;
             for (const TaskRecord& t : r.task_records()) l.append(record_dict(t));
             return l;
           })
      .def(
          "set_preemption",
          [](Runtime& r, const std::string& p) { r.set_preemption(PreemptionPolicy::parse(p)); },
          "'shrink', 'suspend' or 'hybrid[:F]'.")
      .def_property_readonly("preemption", [](const Runtime& r) { return r.preemption().name(); })
      .def(
          "set_task_launch",
          [](Runtime& r, const std::string& l) { r.set_task_launch(parse_task_launch(l)); },
          "'after_gather' or 'at_request' (CUDA: when a task's work is enqueued).")
      .def_property_readonly("task_launch",
                             [](const Runtime& r) { return task_launch_name(r.task_launch()); })
      .def(
          "shutdown", [](Runtime& r, const std::string& how) { r.shutdown(parse_shutdown(how)); },
          "how"_a = "wait", py::call_guard<py::gil_scoped_release>(),
          "'wait' lets running jobs finish; 'cancel' stops them.")
      .def("__enter__", [](const RuntimePtr& r) { return r; })
      .def("__exit__", [](Runtime& r, const py::args&) {
        py::gil_scoped_release unlocked;
        r.shutdown(Shutdown::cancel);
        return false;
      });
}
