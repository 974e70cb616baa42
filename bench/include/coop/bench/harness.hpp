// The evaluation harness's bookkeeping, independent of what is measured: units of work with
// stable keys, a results folder that survives interruption (one JSON line per finished unit,
// flushed as it ends, so a rerun resumes), a progress bar with an ETA, and CSV export.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace coop::bench {

using json = nlohmann::json;

/// One measurement that is run, stored and resumed as a whole.
struct Unit {
  std::string key;         ///< unique and stable across runs: "multitasking/bfs:usa-w/heavy/N-2"
  std::string experiment;  ///< "overhead" | "multitasking"
  json params;             ///< what the experiment needs to run it
  double cost = 1;         ///< relative time estimate, for the ETA
};

/// Part `index` of `count` (0-based) of `units`, for running one part per GPU: the parts are
/// disjoint, together they are `units`, and each keeps their order. A part takes whole groups,
/// balanced by cost: the units of one input pair together when there are at least `count`
/// pairs (each process makes an input once, and a generated 24 M-vertex graph takes a minute),
/// else those of one pair and mechanism (a mechanism's alone run is timed once), else single
/// units. Throws std::invalid_argument when `index` >= `count`.
std::vector<Unit> shard(const std::vector<Unit>& units, std::size_t index, std::size_t count);

/// A results folder: run.json (what was run, on what) and units.jsonl (one line per finished
/// unit, in the order they finished). Reopening a folder resumes it; a folder written with
/// another configuration or on another device is refused unless `fresh` clears it.
class Store {
 public:
  Store(std::filesystem::path dir, const json& meta, bool fresh);

  /// The folder has a result for the unit (a measurement, or a recorded failure).
  bool done(const std::string& key) const { return index_.count(key) != 0; }
  /// The unit's stored result is a failure ({"error": ...}).
  bool failed(const std::string& key) const;
  /// Appends the unit's result and makes it durable before returning (a later result for the
  /// same key replaces the earlier one). Safe to call from any thread.
  void put(const Unit& unit, json result);
  /// Every stored result, each with "key" and "experiment", in the order they finished.
  const std::vector<json>& results() const { return results_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  void keep(json result);
  std::vector<json> results_;
  std::map<std::string, std::size_t> index_;
  std::mutex mu_;
};

/// A one-line progress bar on stderr (redrawn in place on a terminal, a line per unit
/// otherwise): units done, elapsed time, and an ETA from the cost of what is left at the pace
/// measured so far in this process.
class Progress {
 public:
  Progress(const std::vector<Unit>& todo, bool terminal);
  void begin(const Unit& unit);
  void end(const Unit& unit);
  void finish();
  double elapsed_s() const;
  /// Seconds the units not yet run should take at the measured pace (0 before any ended).
  double eta_s() const;

 private:
  void draw(const std::string& label);
  using clock = std::chrono::steady_clock;
  clock::time_point start_ = clock::now(), unit_start_;
  double total_cost_ = 0, done_cost_ = 0, measured_s_ = 0;
  std::size_t total_ = 0, done_ = 0;
  bool terminal_;
};

/// "1h02m", "3m10s", "42s".
std::string format_duration(double seconds);

/// Writes one CSV per experiment (DIR/<experiment>.csv): a row per unit, a column per scalar
/// field (nested objects flattened as "a.b"; arrays left to the JSON). Returns the files.
std::vector<std::filesystem::path> write_csv(const std::filesystem::path& dir,
                                             const std::vector<json>& results);

/// Median, spread and tail of samples (interpolated as Percentiles does), as JSON ({"n", "median",
/// "min", "max", "p10", "p90", "p99"}; {"n": 0} when empty).
json summarize(std::vector<double> samples);

}  // namespace coop::bench
