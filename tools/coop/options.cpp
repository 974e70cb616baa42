#include "options.hpp"

#include <cerrno>
#include <cstring>
#include <functional>

#include "coop/graph/generate.hpp"

namespace coop::cli {

const char* exit_codes_help() {
  return "Exit codes (every subcommand):\n"
         "  0  ok\n"
         "  1  a result failed validation or a check failed (run --validate, demo, "
         "fuzz-schedule, stress, a bench unit)\n"
         "  2  usage error: a bad option or value, an impossible request, an unreadable input "
         "or unwritable output (nothing ran)\n"
         "  3  stopped early by a limit: bench --max-minutes, stress --stall-seconds (what was "
         "done is kept; bench: rerun to continue)\n"
         "  4  a runtime or CUDA error, or a bench unit past --unit-timeout (recorded; rerun to "
         "continue)\n"
         "Errors are printed on stderr as 'coop: ...'. --json prints one JSON document on stdout; "
         "progress and logs go to stderr.";
}

RuntimeOptions::Select parse_backend(const std::string& s) {
  if (s == "auto") return RuntimeOptions::Select::automatic;
  if (s == "cpu") return RuntimeOptions::Select::cpu;
  if (s == "cuda") return RuntimeOptions::Select::cuda;
  throw std::invalid_argument("expected auto, cpu or cuda, got '" + s + "'");
}

ResizeBarrier parse_barrier(const std::string& s) {
  if (s == "query") return ResizeBarrier::query;
  if (s == "plain") return ResizeBarrier::plain;
  throw std::invalid_argument("expected query or plain, got '" + s + "'");
}

Policy parse_policy(const std::string& s) { return Policy::parse(s); }

apps::Form parse_form(const std::string& s) { return apps::parse_form(s); }

apps::Priority parse_priority(const std::string& s) {
  if (s == "hashed") return apps::Priority::hashed;
  if (s == "id") return apps::Priority::id;
  throw std::invalid_argument("expected hashed or id, got '" + s + "'");
}

void check_app_name(const std::string& s) { (void)apps::find_app(s); }

void check_graph_spec(const std::string& s) { (void)graph::describe(s); }

CLI::Validator parses_with(std::function<void(const std::string&)> parse) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& s) -> std::string {
        try {
          parse(s);
          return {};
        } catch (const std::exception& e) {  // invalid_argument, or out_of_range from a number
          return e.what();
        }
      },
      "");
}

namespace {

// A number that must be >= 0 (positive: > 0), with a message that says so.
CLI::Validator number_at_least_zero(bool positive) {
  return parses_with([positive](const std::string& s) {
    std::size_t end = 0;
    double v = -1;
    try {
      v = std::stod(s, &end);
    } catch (const std::exception&) {
      end = 0;
    }
    if (end != s.size() || !(positive ? v > 0 : v >= 0))
      throw std::invalid_argument(std::string("expected a number ") + (positive ? "> 0" : ">= 0") +
                                  ", got '" + s + "'");
  });
}

}  // namespace

CLI::Validator non_negative() { return number_at_least_zero(false); }
CLI::Validator positive() { return number_at_least_zero(true); }

void reject_negative_counts(CLI::App& app) {
  for (CLI::Option* opt : app.get_options())
    if (opt->get_type_name().rfind("UINT", 0) == 0) opt->check(non_negative());
}

CLI::Option* add_backend(CLI::App& app, std::string& into) {
  return app.add_option("--backend", into, "auto (a GPU when present) | cpu | cuda")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) { parse_backend(s); }));
}

CLI::Option* add_barrier(CLI::App& app, std::string& into) {
  return app.add_option("--barrier", into, "resizing barrier: query | plain")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) { parse_barrier(s); }));
}

CLI::Option* add_policy(CLI::App& app, std::string& into) {
  return app
      .add_option("--policy", into,
                  "generous | fixed | adversarial:SEED | adversarial-shrink:SEED | cap:M")
      ->capture_default_str()
      ->check(parses_with([](const std::string& s) { parse_policy(s); }));
}

void add_job_shape(CLI::App& app, std::string& policy, std::string& barrier,
                   std::uint32_t& groups) {
  add_policy(app, policy);
  add_barrier(app, barrier);
  app.add_option("--groups", groups, "max workgroups N (0 = all that can be co-resident)")
      ->capture_default_str();
}

CLI::Option* add_slots(CLI::App& app, std::uint32_t& into) {
  return app
      .add_option("--slots", into,
                  "CPU backend: resident workgroup slots (0 = $COOP_CPU_SLOTS, else 16)")
      ->capture_default_str();
}

CLI::Option* add_duration(CLI::App& app, const std::string& name, double& into,
                          const std::string& help) {
  return app.add_option(name, into, help)->capture_default_str()->check(non_negative());
}

CLI::Option* add_json_flag(CLI::App& app, bool& into) {
  return app.add_flag("--json", into,
                      "print one JSON document on stdout (progress and logs go to stderr)");
}

std::ofstream open_output(const std::string& path, const std::string& option) {
  errno = 0;
  std::ofstream out(path);
  if (!out)
    throw usage_error(option + ": cannot write '" + path +
                      "': " + (errno ? std::strerror(errno) : "cannot open"));
  return out;
}

void finish_output(std::ofstream& out, const std::string& path) {
  errno = 0;
  if (!out.flush())
    throw std::runtime_error("writing '" + path +
                             "' failed: " + (errno ? std::strerror(errno) : "I/O error"));
}

}  // namespace coop::cli
