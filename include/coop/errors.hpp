/// \file
/// The exceptions coop throws for its own reasons (besides std::invalid_argument for impossible
/// arguments and std::bad_alloc): all derive from coop::error.
#pragma once

#include <stdexcept>

namespace coop {

/// Base of coop's own exceptions: catch it to handle every failure the runtime reports.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown (from Job::wait, Runtime::launch or Runtime::run) when a kernel misuses the model or
/// the runtime detects a hang; the message says who did what where.
class misuse_error : public error {
 public:
  using error::error;
};

/// Thrown by Runtime::run / run_fraction when a task's workgroups were not gathered within the
/// runtime's gather deadline and the runtime is set to fail then
/// (RuntimeOptions::gather_deadline_fails); the message names the jobs that hold capacity. The
/// task did not run and holds nothing.
class gather_timeout : public error {
 public:
  using error::error;
};

/// Thrown by Job::wait when the job was cancelled (Job::cancel, or Runtime::shutdown with
/// Shutdown::cancel, or a job the user had suspended when the runtime shut down): its workgroups
/// left at their next offer_kill, resizing barrier or wait without finishing the kernel.
class job_cancelled : public error {
 public:
  using error::error;
};

/// Thrown by Runtime::launch, run, run_fraction and Job::resume once Runtime::shutdown has
/// begun, including by calls that were waiting for capacity then (they hold nothing).
class runtime_closed : public error {
 public:
  using error::error;
};

}  // namespace coop
