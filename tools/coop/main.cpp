// The coop command: registers the subcommands, maps every failure to one exit-code scheme
// (exit_codes_help) and prints errors as "coop: ...".
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "coop/errors.hpp"
#include "coop/graph/graph.hpp"
#include "coop_commit.hpp"
#include "options.hpp"

namespace {

using namespace coop::cli;

// CLI11's own errors: --help and --version exit 0 through CLI11, everything else is a usage
// error (2) with coop's prefix instead of CLI11's codes.
int parse_error_exit(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);
  std::fprintf(stderr, "coop: %s\nRun with --help for more information.\n", e.what());
  return exit_usage;
}

// An exception that escaped a subcommand: impossible requests and bad inputs are usage errors,
// everything else (coop::error, CUDA errors, ...) a runtime error.
int exception_exit(const std::exception& e) {
  std::fprintf(stderr, "coop: %s\n", e.what());
  if (dynamic_cast<const std::invalid_argument*>(&e)) return exit_usage;
  // A malformed input file (a graph's line and reason): the input is unreadable, nothing ran.
  if (dynamic_cast<const coop::graph::parse_error*>(&e)) return exit_usage;
  return exit_runtime;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coop: cooperative kernels for blocking GPU algorithms", "coop"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", std::string("coop ") + COOP_CLI_VERSION + " (commit " + COOP_GIT_COMMIT + ")");
  app.footer(exit_codes_help());
  std::vector<std::unique_ptr<Subcommand>> commands;
  commands.push_back(info_command());
  commands.push_back(demo_command());
  commands.push_back(run_command());
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  commands.push_back(bench_command(command_line));
  commands.push_back(bench_child_command());
  commands.push_back(fuzz_schedule_command());
  commands.push_back(stress_command());
  for (auto& c : commands) {
    CLI::App& sub = *app.add_subcommand(c->name(), c->description());
    if (c->hidden()) sub.group("");
    c->add_options(sub);
    reject_negative_counts(sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error_exit(app, e);
  }
  try {
    for (auto& c : commands)
      if (app.got_subcommand(c->name())) return c->run();
  } catch (const std::exception& e) {
    return exception_exit(e);
  }
  return exit_usage;  // require_subcommand(1) makes this unreachable
}
