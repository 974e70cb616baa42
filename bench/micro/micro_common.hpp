// What the micro-benchmark programs share: a main that reports any failure and exits 2, the
// options of the runtime benchmarks (--json FILE, --reps N, --only PART), the run's date and
// command line, and the median-and-spread summary of a measurement.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "coop/bench/percentiles.hpp"

namespace coop::micro {

/// Runs a program's body; an exception (a failed CUDA call, a probe that could not run) is
/// printed on stderr and the program exits 2.
template <class Body>
int run_main(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

struct Options {
  std::string json_path;  ///< --json FILE: where the results go (none when empty)
  int reps = 30;          ///< --reps N
  std::string only;       ///< --only PART: one part of the benchmark (all when empty)
  std::string command;    ///< the command line, for the results

  bool runs(const char* part) const { return only.empty() || only == part; }
};

/// Reads --json FILE, --reps N and --only PART; anything else prints the usage (`parts` lists
/// the parts, "a|b|c") and gives nothing.
inline std::optional<Options> parse_options(int argc, char** argv, const char* parts) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      o.json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      o.reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      o.only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--json FILE] [--reps N] [--only %s]\n", argv[0], parts);
      return std::nullopt;
    }
  }
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  return o;
}

/// Now, "2026-01-31T12:00:00Z".
inline std::string utc_date() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

/// A measurement's median, tail and spread (coop::bench::Percentiles' rule).
struct Stat {
  double median, p99, min, max;
  std::size_t n;
};
inline Stat stat(std::vector<double> samples) {
  const bench::Percentiles p(std::move(samples));
  return {p.median(), p.at(0.99), p.min(), p.max(), p.n()};
}
inline nlohmann::json to_json(const Stat& s) {
  return {{"median", s.median}, {"p99", s.p99}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

}  // namespace coop::micro
