// The paper's experiments (§5) as harness units: overhead without multitasking (Table 2) and
// multitasking with periodic high-priority tasks (Fig. 5 responsiveness, Fig. 6 throughput and
// period, Table 3 kernel-level preemption, and the baselines: stream priority only and
// multi-launch). `coop bench` plans them from a configuration and runs them through the
// harness; scripts/bench_report.py turns the results into plots and docs/results.md.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "coop/bench/harness.hpp"
#include "coop/runtime.hpp"

namespace coop::bench {

/// Names of the built-in configurations: "paper" (the paper's pairs and workloads at full
/// size, for a GPU) and "quick" (small inputs; minutes on the CPU backend).
std::vector<std::string> builtin_config_names();
/// The same names as one line: "paper, quick, ...".
std::string builtin_config_list();
/// A built-in configuration; throws std::invalid_argument naming the known ones.
json builtin_config(const std::string& name);

/// The units a configuration asks for, in run order; throws std::invalid_argument for a
/// malformed configuration (with the field and the reason).
std::vector<Unit> plan(const json& config);

/// Runs units on one runtime, keeping inputs, reference checks, calibrations and alone
/// timings between them.
class Runner {
 public:
  /// `child_exe`: a program whose `bench-child SPEC_FILE` calls Runner::child (the coop
  /// command), run for the colocate mechanisms whose background is a process; without it
  /// those units fail with the reason.
  Runner(Runtime& rt, json config, std::string child_exe = {});
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  /// Makes what the unit reads and later units share (its pair's input: a generated graph of
  /// tens of millions of vertices takes a minute), so that a caller can time run() alone.
  /// Throws like run().
  void prepare(const Unit& unit);
  /// Measures one unit; throws when it cannot run (with the reason).
  json run(const Unit& unit);
  /// One side of a colocate unit whose background is a process, in that process: the request
  /// stream ("role": "requests") or the app's back-to-back runs ("background"), as the spec
  /// the unit wrote says. A requests side prints "ready" on stdout once its task is prepared.
  /// Returns what the unit reads; throws with the reason.
  static json child(Runtime& rt, const json& spec);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Prints the headline figures of the results at hand (Table 2 and 3 style lines).
void print_summary(std::FILE* out, const std::vector<json>& results);

}  // namespace coop::bench
