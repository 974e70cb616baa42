// A coop subcommand, the exit codes they share, and the factories main registers.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <stdexcept>
#include <string>

namespace coop::cli {

/// The exit codes of every subcommand (listed in `coop --help`).
enum Exit : int {
  exit_ok = 0,
  exit_failed = 1,   ///< a result failed validation or a check failed
  exit_usage = 2,    ///< a bad option or value, an unreadable input, an unwritable output
  exit_stopped = 3,  ///< stopped early by a limit (bench --max-minutes, stress --stall-seconds)
  exit_runtime = 4,  ///< a runtime or CUDA error, or a bench unit past --unit-timeout
};
/// The exit-code table as `coop --help` prints it.
const char* exit_codes_help();

/// A subcommand: registers its options on its CLI11 app, then runs once they are parsed.
class Subcommand {
 public:
  virtual ~Subcommand() = default;
  virtual const char* name() const = 0;
  virtual const char* description() const = 0;
  virtual void add_options(CLI::App& app) = 0;
  /// Internal subcommands (run by coop itself) are left out of --help.
  virtual bool hidden() const { return false; }
  /// Returns the exit code; throws for the errors main maps to codes (see exit_code_for).
  virtual int run() = 0;
};

std::unique_ptr<Subcommand> info_command();
std::unique_ptr<Subcommand> demo_command();
std::unique_ptr<Subcommand> run_command();
/// `command_line`: the invocation, recorded in the results.
std::unique_ptr<Subcommand> bench_command(std::string command_line);
/// Internal: one process of a colocate unit whose background is a process (bench::Runner::child).
std::unique_ptr<Subcommand> bench_child_command();
std::unique_ptr<Subcommand> fuzz_schedule_command();
std::unique_ptr<Subcommand> stress_command();

/// A usage error found after parsing (an impossible request): main prints it and exits 2.
class usage_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace coop::cli
