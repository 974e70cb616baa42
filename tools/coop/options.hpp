// The one place where the coop subcommands parse and check their options: every option type
// (backend, barrier, policy, form, priority, graph input, seeds, durations, output files) is
// parsed by one function here, and the same function checks the option while the command line
// is read, so a bad value is a usage error (exit 2) before any work starts.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "coop/apps/apps.hpp"
#include "coop/policy.hpp"
#include "coop/runtime.hpp"
#include "subcommand.hpp"

namespace coop::cli {

// The parsers: each throws std::invalid_argument saying what is expected.
/// "auto" | "cpu" | "cuda" (--backend).
RuntimeOptions::Select parse_backend(const std::string& s);
/// "query" | "plain" (--barrier).
ResizeBarrier parse_barrier(const std::string& s);
/// Policy::parse (--policy).
Policy parse_policy(const std::string& s);
/// "cooperative" | "standalone" | "multi-launch" (--form).
apps::Form parse_form(const std::string& s);
/// "hashed" | "id" (--priority).
apps::Priority parse_priority(const std::string& s);
/// An app name (run's APP, fuzz-schedule's --apps).
void check_app_name(const std::string& s);
/// A generator preset or spec (--gen), checked without generating the graph.
void check_graph_spec(const std::string& s);

/// A CLI11 check that runs `parse` on the value: its std::invalid_argument message becomes the
/// usage error.
CLI::Validator parses_with(std::function<void(const std::string&)> parse);

// The option adders: the option with its help, default shown, and its parser as its check.
CLI::Option* add_backend(CLI::App& app, std::string& into);
CLI::Option* add_barrier(CLI::App& app, std::string& into);
CLI::Option* add_policy(CLI::App& app, std::string& into);
/// How a job is launched: --policy, --barrier and --groups (N; 0 = all that can be co-resident).
void add_job_shape(CLI::App& app, std::string& policy, std::string& barrier, std::uint32_t& groups);
/// CPU backend: resident workgroup slots.
CLI::Option* add_slots(CLI::App& app, std::uint32_t& into);
/// A number of seconds (or minutes, ...) that must be >= 0.
CLI::Option* add_duration(CLI::App& app, const std::string& name, double& into,
                          const std::string& help);
/// Checks for numbers: >= 0, > 0.
CLI::Validator non_negative();
CLI::Validator positive();
/// Every unsigned option of `app` refuses a negative value (CLI11 would wrap it around).
void reject_negative_counts(CLI::App& app);
/// `--json`: print one JSON document on stdout (progress and logs go to stderr).
CLI::Option* add_json_flag(CLI::App& app, bool& into);

/// Opens `path` for writing (truncating it), before any work: throws usage_error with the OS's
/// reason when it cannot be opened.
std::ofstream open_output(const std::string& path, const std::string& option);
/// Throws runtime_error with the OS's reason when `out` failed while writing `path`.
void finish_output(std::ofstream& out, const std::string& path);

}  // namespace coop::cli
