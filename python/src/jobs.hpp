// What the Python package launches, in plain C++ (no Python here): a job started on a thread of
// its own, so that Python holds a handle on it while it runs (coop's launchers for the apps
// block until the job ends), and the jobs it can start: the paper's apps and example kernels.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "coop/apps/apps.hpp"
#include "coop/runtime.hpp"

namespace coop::python {

/// A launch parameter as Python gives it (after conversion): launch_app's keyword arguments.
using Value = std::variant<bool, std::int64_t, double, std::string>;
using Params = std::map<std::string, Value>;

/// The result of a finished job, for Python to convert: one of these is set.
struct JobResult {
  std::vector<std::int64_t> ints;      ///< per vertex (graph apps)
  std::vector<double> reals;           ///< per vertex (bc); octree: leaves x 5
  std::vector<float> matrix;           ///< gemm: C, rows x cols
  std::size_t rows = 0, cols = 0;      ///< the shape of reals (octree) or matrix (gemm)
  std::optional<std::int64_t> scalar;  ///< game
};

/// A named input matrix of a job (gemm's A and B), row-major.
struct Matrix {
  std::string name;
  std::size_t rows = 0, cols = 0;
  std::vector<float> data;
};

/// A job run on a thread of its own. The body launches the job, hands its coop::Job to
/// `publish` and waits for it; everything the body needs lives in the subclass.
class ThreadedJob {
 public:
  virtual ~ThreadedJob();
  ThreadedJob(const ThreadedJob&) = delete;
  ThreadedJob& operator=(const ThreadedJob&) = delete;

  /// Blocks until the body has published its job or ended; rethrows what it threw by then.
  void wait_started();
  /// Blocks until the body has ended; rethrows what it threw (coop::job_cancelled, ...).
  void wait();
  /// True once the body has ended.
  bool done() const;
  /// The coop::Job (empty for forms without one, e.g. multi-launch, or before it started).
  Job job() const;
  /// Stops the job early (cancel): true if it was still running.
  bool cancel();
  /// The name it was launched under.
  const std::string& name() const { return name_; }

  /// What the job computed (after wait()).
  virtual JobResult result() const = 0;
  /// Compares with an independent reference: {ok, detail}.
  virtual std::pair<bool, std::string> validate() const = 0;
  /// One line about the result.
  virtual std::string summary() const = 0;
  /// The input matrices (gemm: A and B), for a check by an independent product.
  virtual std::vector<Matrix> operands() const { return {}; }
  /// Counters of its own (gemm: tiles done), added to Job.stats().
  virtual std::map<std::string, double> progress() const { return {}; }
  /// Asks the kernel to stop at its next work item, keeping what is done (false: it has no
  /// stop flag; use cancel()).
  virtual bool stop() { return false; }

 protected:
  explicit ThreadedJob(std::string name) : name_(std::move(name)) {}
  /// Starts `body` on the job's thread; call once from the subclass's constructor, last.
  void start(std::function<void(const std::function<void(const Job&)>& publish)> body);
  /// Cancels the job if it still runs and joins the thread: the first thing every subclass's
  /// destructor does, since the body uses the subclass's members.
  void end_thread() noexcept;
  /// Throws std::logic_error unless the body ended without an error.
  void require_finished() const;

 private:
  std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, finished_ = false;
  std::exception_ptr error_;
  Job job_;
  std::thread thread_;
};

/// The names launch_app() knows: the apps, then the example kernels.
std::vector<std::string> launchable_names();
/// Throws std::invalid_argument naming the known ones unless `name` is an app or example kernel.
void check_name(const std::string& name);
/// The keyword parameters `name` takes, for the error that names them.
std::vector<std::string> parameter_names(const std::string& name);
/// Launches `name` (an app or an example kernel) with `params`; throws std::invalid_argument for
/// an unknown name, parameter or value (before anything runs), and what the launch throws.
std::unique_ptr<ThreadedJob> launch(Runtime& rt, const std::string& name, const Params& params);

// The example kernels (example_jobs.cpp, compiled by nvcc in a CUDA build).
/// Whether `name` is an example kernel.
bool is_example(const std::string& name);
std::vector<std::string> example_names();
std::vector<std::string> example_parameter_names(const std::string& name);
std::unique_ptr<ThreadedJob> launch_example(Runtime& rt, const std::string& name,
                                            const Params& params);

// Reading Params (shared by the apps and the examples): the value of `key` or `fallback`; throws
// std::invalid_argument naming the key when the value has the wrong type or range.
std::string get_string(const Params& p, const std::string& key, const std::string& fallback);
std::int64_t get_int(const Params& p, const std::string& key, std::int64_t fallback,
                     std::int64_t lo, std::int64_t hi);
bool get_bool(const Params& p, const std::string& key, bool fallback);
/// Throws std::invalid_argument naming the first key of `p` not in `known`.
void require_known(const std::string& name, const Params& p, const std::vector<std::string>& known);
/// The launch options every job takes (policy, barrier, groups, threads, carveout, form).
extern const std::vector<std::string> kLaunchParams;
/// A LaunchConfig-like reading of kLaunchParams.
apps::RunConfig run_config(const Params& p);

}  // namespace coop::python
