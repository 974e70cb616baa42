#include "coop/bench/harness.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>
#include <system_error>

#include "coop/bench/percentiles.hpp"

namespace coop::bench {

namespace fs = std::filesystem;

namespace {

// Appends one line and makes it durable: an interruption loses at most the unit in progress.
void append_durably(const fs::path& file, const std::string& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + file.string() + " for appending");
  const std::string text = line + "\n";
  const ssize_t wrote = ::write(fd, text.data(), text.size());
  const bool ok = wrote == ssize_t(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + file.string());
}

}  // namespace

Store::Store(fs::path dir, const json& meta, bool fresh) : dir_(std::move(dir)) {
  const fs::path run = dir_ / "run.json", units = dir_ / "units.jsonl";
  if (fresh) {
    fs::remove(run);
    fs::remove(units);
  }
  // Before anything runs: a folder that cannot be made is a usage error, with the OS's reason.
  std::error_code made;
  fs::create_directories(dir_, made);
  if (made || !fs::is_directory(dir_))
    throw std::invalid_argument("--out " + dir_.string() + ": cannot make the results folder (" +
                                (made ? made.message() : std::string("not a folder")) + ")");
  if (fs::exists(run)) {
    json old;
    try {
      std::ifstream(run) >> old;
    } catch (const json::exception& e) {
      throw std::runtime_error(run.string() + " is not valid JSON (" + e.what() +
                               "); use --fresh to start over");
    }
    for (const char* field : {"config", "device", "backend"})
      if (old.value(field, json()) != meta.value(field, json()))
        throw std::invalid_argument(dir_.string() + " holds results of another " + field +
                                    " (see its run.json); use --fresh to replace them or --out to "
                                    "write elsewhere");
  } else {
    std::ofstream(run) << meta.dump(2) << '\n';
  }
  std::ifstream in(units);
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      // A line cut short by an interruption: that unit runs again.
      std::fprintf(stderr, "%s:%zu: an unfinished line, its unit runs again\n", units.c_str(), n);
      continue;
    }
    if (j.value("key", "").empty()) continue;
    keep(std::move(j));
  }
}

void Store::keep(json result) {
  const std::string key = result["key"];
  auto it = index_.find(key);
  if (it != index_.end()) {
    results_[it->second] = std::move(result);
  } else {
    index_[key] = results_.size();
    results_.push_back(std::move(result));
  }
}

bool Store::failed(const std::string& key) const {
  auto it = index_.find(key);
  return it != index_.end() && results_[it->second].contains("error");
}

void Store::put(const Unit& unit, json result) {
  std::lock_guard lock(mu_);
  result["key"] = unit.key;
  result["experiment"] = unit.experiment;
  append_durably(dir_ / "units.jsonl", result.dump());
  keep(std::move(result));
}

std::string format_duration(double s) {
  char buf[32];
  const long t = std::lround(std::max(0.0, s));
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

Progress::Progress(const std::vector<Unit>& todo, bool terminal)
    : total_(todo.size()), terminal_(terminal) {
  for (const Unit& u : todo) total_cost_ += u.cost;
}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(clock::now() - start_).count();
}

double Progress::eta_s() const {
  if (done_cost_ <= 0) return 0;
  return (total_cost_ - done_cost_) * measured_s_ / done_cost_;
}

void Progress::begin(const Unit& unit) {
  unit_start_ = clock::now();
  draw(unit.key);
}

void Progress::end(const Unit& unit) {
  measured_s_ += std::chrono::duration<double>(clock::now() - unit_start_).count();
  done_cost_ += unit.cost;
  ++done_;
  if (!terminal_) draw(unit.key + " done");
}

void Progress::finish() {
  draw("finished");
  if (terminal_) std::fputc('\n', stderr);
}

void Progress::draw(const std::string& label) {
  const int width = 24;
  const double frac = total_cost_ > 0 ? done_cost_ / total_cost_ : 1.0;
  std::string bar(std::size_t(width), ' ');
  for (int i = 0; i < int(frac * width + 0.5) && i < width; ++i) bar[std::size_t(i)] = '=';
  const std::string eta = done_ ? format_duration(eta_s()) : "?";
  std::fprintf(stderr, "%s[%s] %3d%% %zu/%zu units, %s elapsed, ETA %s  %s%s",
               terminal_ ? "\r\033[K" : "", bar.c_str(), int(frac * 100 + 0.5), done_, total_,
               format_duration(elapsed_s()).c_str(), eta.c_str(), label.c_str(),
               terminal_ ? "" : "\n");
  std::fflush(stderr);
}

namespace {

void flatten(const json& j, const std::string& prefix, std::vector<std::string>& order,
             std::map<std::string, std::string>& row) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      flatten(*it, name, order, row);
    } else if (!it->is_array()) {
      if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      row[name] = it->is_string() ? it->get<std::string>() : it->dump();
    }
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::vector<fs::path> write_csv(const fs::path& dir, const std::vector<json>& results) {
  std::map<std::string, std::vector<std::string>> columns;
  std::map<std::string, std::vector<std::map<std::string, std::string>>> rows;
  for (const json& r : results) {
    const std::string exp = r.value("experiment", "unknown");
    std::map<std::string, std::string> row;
    auto& cols = columns[exp];
    // What identifies a row first; the rest in the JSON's (alphabetical) order.
    if (cols.empty())
      for (const char* id : {"key", "experiment", "pair"})
        if (r.contains(id)) cols.push_back(id);
    flatten(r, "", cols, row);
    rows[exp].push_back(std::move(row));
  }
  std::vector<fs::path> files;
  for (auto& [exp, cols] : columns) {
    const fs::path file = dir / (exp + ".csv");
    std::ofstream out(file);
    for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << csv_field(cols[i]);
    out << '\n';
    for (auto& row : rows[exp]) {
      for (std::size_t i = 0; i < cols.size(); ++i) {
        auto it = row.find(cols[i]);
        out << (i ? "," : "") << (it == row.end() ? "" : csv_field(it->second));
      }
      out << '\n';
    }
    if (!out) throw std::runtime_error("cannot write " + file.string());
    files.push_back(file);
  }
  return files;
}

json summarize(std::vector<double> samples) {
  const Percentiles p(std::move(samples));
  if (p.empty()) return {{"n", 0}};
  return {{"n", p.n()},       {"median", p.median()}, {"min", p.min()},   {"max", p.max()},
          {"p10", p.at(0.1)}, {"p90", p.at(0.9)},     {"p99", p.at(0.99)}};
}

std::vector<Unit> shard(const std::vector<Unit>& units, std::size_t index, std::size_t count) {
  if (count == 0 || index >= count)
    throw std::invalid_argument("shard " + std::to_string(index) + " of " + std::to_string(count) +
                                ": the index must be below the count");
  // A unit's group at each grain: its pair, its pair and mechanism (the key's last part), itself.
  auto group_of = [](const Unit& u, int grain) {
    const std::string pair =
        u.params.contains("pair") ? u.params["pair"].get<std::string>() : u.key;
    if (grain == 0) return pair;
    if (grain == 1) return pair + " " + u.key.substr(u.key.rfind('/') + 1);
    return u.key;
  };
  std::vector<std::string> order;  // groups in the order of their first unit
  std::map<std::string, double> cost;
  int grain = 0;
  for (;; ++grain) {
    order.clear();
    cost.clear();
    for (const Unit& u : units) {
      const std::string g = group_of(u, grain);
      if (!cost.count(g)) order.push_back(g);
      cost[g] += u.cost;
    }
    if (order.size() >= count || grain == 2) break;
  }
  // Largest group first onto the least loaded part (ties: first group, lowest part).
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return cost[a] > cost[b]; });
  std::vector<double> load(count, 0.0);
  std::map<std::string, std::size_t> part_of;
  for (const std::string& g : order) {
    const auto least = std::min_element(load.begin(), load.end());
    *least += cost[g];
    part_of[g] = std::size_t(least - load.begin());
  }
  std::vector<Unit> out;
  for (const Unit& u : units)
    if (part_of[group_of(u, grain)] == index) out.push_back(u);
  return out;
}

}  // namespace coop::bench
