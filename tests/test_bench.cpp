// The evaluation harness: results survive interruption and resume, CSV and summaries are
// exact, plans match the paper's experiment count, and the experiments run end to end on the
// CPU backend with validated app results.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "coop/apps/apps.hpp"
#include "coop/bench/experiments.hpp"
#include "coop/bench/harness.hpp"
#include "coop/bench/percentiles.hpp"
#include "coop/bench/poisson.hpp"
#include "coop/bench/watchdog.hpp"
#include "kernel_clock.hpp"  // the harness's own (bench/src)

namespace fs = std::filesystem;
using coop::bench::json;
using coop::bench::Unit;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("coop-test-bench-" + name);
  fs::remove_all(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json tiny_config() {
  std::ifstream in(COOP_TEST_BENCH_CONFIG);
  return json::parse(in);
}

// Co-location at test scale: a road BFS in the background, matmul requests at 30 % load.
json colocate_config() {
  return json::parse(R"({
    "name": "colocate-tiny",
    "pairs": [{"name": "bfs/road", "app": "bfs", "input": "road:60000"}],
    "colocate": {
      "loads": [0.3],
      "seconds": 0.4,
      "kernel_seconds": 0.15,
      "request": {"task": "matmul", "gpu_ms": 2},
      "mechanisms": [
        {"name": "requests-only", "background": "none"},
        {"name": "stream-priority", "background": "standalone"},
        {"name": "suspend", "policy": "suspend"},
        {"name": "coop-whole", "policy": "shrink"},
        {"name": "coop-prestaged", "policy": "shrink", "prestage": true},
        {"name": "coop-half-yield", "share": 0.5, "yield_in_phases": true, "ids_by_sm": true},
        {"name": "coop-at-request", "policy": "shrink", "task_launch": "at_request"},
        {"name": "time-slicing", "background": "process"}
      ]
    }
  })");
}

}  // namespace

TEST(BenchStore, ResumesFinishedUnitsAndRerunsACutLine) {
  const fs::path dir = scratch("store");
  const json meta{{"config", {{"name", "x"}}}, {"device", "d"}, {"backend", "cpu"}};
  {
    coop::bench::Store s(dir, meta, false);
    s.put({"a", "overhead", {}, 1}, {{"v", 1}});
    s.put({"b", "overhead", {}, 1}, {{"v", 2}});
  }
  // An interruption in the middle of writing a third line.
  std::ofstream(dir / "units.jsonl", std::ios::app) << "{\"key\": \"c\", \"v\":";
  coop::bench::Store s(dir, meta, false);
  EXPECT_TRUE(s.done("a"));
  EXPECT_TRUE(s.done("b"));
  EXPECT_FALSE(s.done("c"));
  ASSERT_EQ(s.results().size(), 2u);
  EXPECT_EQ(s.results()[1]["v"], 2);
  EXPECT_EQ(s.results()[1]["experiment"], "overhead");
}

TEST(BenchStore, RefusesAnotherConfigurationUnlessFresh) {
  const fs::path dir = scratch("config");
  const json meta{{"config", {{"name", "x"}}}, {"device", "d"}, {"backend", "cpu"}};
  { coop::bench::Store(dir, meta, false).put({"a", "overhead", {}, 1}, {{"v", 1}}); }
  json other = meta;
  other["config"]["name"] = "y";
  try {
    coop::bench::Store s(dir, other, false);
    FAIL() << "a folder of another configuration was reopened";
  } catch (const std::invalid_argument& e) {  // a usage error: nothing ran
    EXPECT_NE(std::string(e.what()).find("another config"), std::string::npos) << e.what();
  }
  coop::bench::Store fresh(dir, other, true);
  EXPECT_FALSE(fresh.done("a"));
}

TEST(BenchCsv, FlattensObjectsQuotesTextAndLeavesArraysToTheJson) {
  const fs::path dir = scratch("csv");
  fs::create_directories(dir);
  std::vector<json> rows{
      {{"key", "k1"}, {"experiment", "e"}, {"t", {{"median", 2.5}}}, {"s", "a,b"}, {"xs", {1}}},
      {{"key", "k2"}, {"experiment", "e"}, {"t", {{"median", 3}}}, {"extra", true}}};
  auto files = coop::bench::write_csv(dir, rows);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(slurp(files[0]),
            "key,experiment,s,t.median,extra\n"
            "k1,e,\"a,b\",2.5,\n"
            "k2,e,,3,true\n");
}

// A run with no progress is ended with its last step and the state, with the exit code asked,
// also when the state never comes (its lock held by the stalled thread); one that makes progress
// is left alone.
TEST(BenchWatchdog, EndsAStalledRunWithItsLastStepAndState) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        coop::bench::Watchdog w(
            0.2, [] { return std::string("the state"); }, stderr, 3);
        w.progress("the last step");
        std::this_thread::sleep_for(std::chrono::seconds(10));
      },
      testing::ExitedWithCode(3), "no progress for 0.2 s at \"the last step\"(.|\n)*the state");
  EXPECT_EXIT(
      {
        coop::bench::Watchdog w(
            0.2,
            [] {
              std::this_thread::sleep_for(std::chrono::seconds(30));
              return std::string();
            },
            stderr, 3);
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      testing::ExitedWithCode(3), "no state within 5 s");
  coop::bench::Watchdog w(
      0.3, [] { return std::string(); }, stderr, 3);
  for (int i = 0; i < 10; ++i) {
    w.progress("a step");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// One server that takes requests in order and spends `service` on each, for the request
// streams: what a device queue does with submitted work.
class FifoServer {
 public:
  explicit FifoServer(std::chrono::milliseconds service) : service_(service) {
    thread_ = std::thread([this] {
      for (;;) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        std::promise<void> done = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        std::this_thread::sleep_for(service_);
        lock.lock();
        --outstanding_;  // before the request is seen done, which lets another be submitted
        lock.unlock();
        done.set_value();
      }
    });
  }
  ~FifoServer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::shared_future<void> submit() {
    std::lock_guard lock(mu_);
    queue_.emplace_back();
    most_outstanding_ = std::max(most_outstanding_, ++outstanding_);
    cv_.notify_all();
    return queue_.back().get_future().share();
  }
  std::size_t most_outstanding() {
    std::lock_guard lock(mu_);
    return most_outstanding_;
  }

 private:
  std::chrono::milliseconds service_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::promise<void>> queue_;
  std::size_t outstanding_ = 0, most_outstanding_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// Requests submitted as they arrive: the same arrivals as the blocking stream for a seed, each
// finished once and in order, every latency at least the service, the service time counted once
// per request however deep the queue, and never more in flight than allowed, even overloaded.
TEST(BenchPoisson, SubmittedRequestsAreTheSameArrivalsFinishedInOrder) {
  using coop::bench::poisson;
  using coop::bench::poisson_submitted;
  const double seconds = 0.3, alone_ms = 2;
  const std::size_t arrivals = poisson(2.0, alone_ms, seconds, 7, [] {}).ms.size();
  ASSERT_GT(arrivals, 100u);  // about 300
  FifoServer server(std::chrono::milliseconds(2));
  std::vector<std::size_t> order;
  const auto l = poisson_submitted(
      2.0, alone_ms, seconds, 7, 3, [&](std::size_t) { return server.submit(); },
      [&](std::size_t i, const std::shared_future<void>& f) {
        f.wait();
        order.push_back(i);
      });
  ASSERT_EQ(l.ms.size(), arrivals);
  ASSERT_EQ(order.size(), arrivals);
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
  for (double ms : l.ms) EXPECT_GE(ms, alone_ms);
  EXPECT_GE(l.busy_ms, alone_ms * double(arrivals));
  EXPECT_LE(l.busy_ms, l.span_ms);
  EXPECT_EQ(server.most_outstanding(), 3u);  // overloaded: the bound is reached, never passed
}

// A request that fails is reported after every submitted request has been finished.
TEST(BenchPoisson, ASubmittedRequestThatFailsIsReportedOnceAllAreFinished) {
  FifoServer server(std::chrono::milliseconds(1));
  std::size_t submitted = 0, finished = 0;
  EXPECT_THROW(
      {
        try {
          coop::bench::poisson_submitted(
              0.5, 1, 0.1, 3, 4,
              [&](std::size_t) {
                ++submitted;
                return server.submit();
              },
              [&](std::size_t i, const std::shared_future<void>& f) {
                f.wait();
                ++finished;
                if (i == 2) throw std::runtime_error("request 2 failed");
              });
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "request 2 failed");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_GT(submitted, 3u);
  EXPECT_EQ(finished, submitted);
}

TEST(BenchSummary, MedianAndPercentilesInterpolate) {
  json s = coop::bench::summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s["n"], 5);
  EXPECT_DOUBLE_EQ(s["median"], 3);
  EXPECT_DOUBLE_EQ(s["min"], 1);
  EXPECT_DOUBLE_EQ(s["max"], 5);
  EXPECT_DOUBLE_EQ(s["p90"], 4.6);
  EXPECT_EQ(coop::bench::summarize({})["n"], 0);
}

TEST(BenchSummary, PercentilesInterpolateBetweenClosestRanks) {
  const coop::bench::Percentiles p({10, 40, 20, 30});
  EXPECT_EQ(p.n(), 4u);
  EXPECT_DOUBLE_EQ(p.median(), 25);  // the mean of the middle two
  EXPECT_DOUBLE_EQ(p.at(0), 10);
  EXPECT_DOUBLE_EQ(p.at(1), 40);
  EXPECT_DOUBLE_EQ(p.at(0.99), 39.7);
  EXPECT_DOUBLE_EQ(p.min(), 10);
  EXPECT_DOUBLE_EQ(p.max(), 40);
  EXPECT_DOUBLE_EQ(coop::bench::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(coop::bench::percentile({}, 0.5), 0);
}

TEST(BenchPlan, ThePaperConfigurationHasThePapers240MultitaskingConfigurations) {
  auto units = coop::bench::plan(coop::bench::builtin_config("paper"));
  std::size_t coop = 0, overhead = 0;
  for (const Unit& u : units) {
    if (u.experiment == "overhead") ++overhead;
    if (u.key.rfind("multitasking/cooperative/", 0) == 0) ++coop;
  }
  // §5.4: 11 pairs, 3 workloads, 4 requests, 2 barriers for the 9 graph pairs = 240.
  EXPECT_EQ(coop, 240u);
  EXPECT_EQ(overhead, 12u);  // the 11 pairs and bc
  std::set<std::string> keys;
  for (const Unit& u : units) EXPECT_TRUE(keys.insert(u.key).second) << "duplicate " << u.key;
}

TEST(BenchPlan, MalformedConfigurationsNameTheProblem) {
  auto expect_error = [](json c, const std::string& needle) {
    try {
      coop::bench::plan(c);
      ADD_FAILURE() << "accepted: " << c.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  json c = tiny_config();
  c["latency"] = json::object();
  expect_error(c, "unknown experiment 'latency'");
  c = tiny_config();
  c["multitasking"]["variants"][0]["groups"] = {"N/3"};
  expect_error(c, "N/3");
  c = tiny_config();
  c["overhead"]["pairs"] = {"nope"};
  expect_error(c, "no pair named 'nope'");
  c = tiny_config();
  c["pairs"][0]["app"] = "sort";
  expect_error(c, "sort");
  c = tiny_config();
  c["multitasking"]["workloads"][0]["period_ms"] = -1;
  expect_error(c, "period_ms");
  c = tiny_config();
  c["multitasking"]["variants"][0]["shared_carveout"] = 101;
  expect_error(c, "'shared_carveout' must be -1 or a percentage 0-100");
  c = tiny_config();
  c["overhead"]["shared_carveout"] = "max";
  expect_error(c, "overhead: 'shared_carveout'");
  c = tiny_config();
  c["overhead"]["shared_carveout"] = -1;  // the driver's choice is a valid setting
  EXPECT_NO_THROW(coop::bench::plan(c));
  c = tiny_config();
  c["overhead"]["yield_in_phases"] = "yes";
  expect_error(c, "overhead: 'yield_in_phases' must be true or false");
  c = tiny_config();
  c["multitasking"]["variants"][0]["yield_in_phases"] = "yes";
  expect_error(c, "cooperative: 'yield_in_phases' must be true or false");
  c = tiny_config();
  c["multitasking"]["variants"][1]["yield_in_phases"] = true;
  c["multitasking"]["variants"][1]["form"] = "standalone";
  expect_error(c, "true only in the cooperative form");

  c = colocate_config();
  c["colocate"]["loads"] = {1.5};
  expect_error(c, "colocate: 'loads' must be a list of fractions in (0, 1)");
  c = colocate_config();
  c["colocate"]["mechanisms"][0]["policy"] = "shrink";
  expect_error(c, "requests-only: 'policy' applies to a cooperative background");
  c = colocate_config();
  c["colocate"]["mechanisms"][3]["share"] = 0;
  expect_error(c, "coop-whole: 'share' must be a fraction in (0, 1]");
  c = colocate_config();
  c["colocate"]["mechanisms"][3]["policy"] = "never";
  expect_error(c, "never");
  c = colocate_config();
  c["colocate"]["mechanisms"][4]["name"] = "coop-whole";
  expect_error(c, "mechanism 'coop-whole' is named twice");
  c = colocate_config();
  c["colocate"]["request"]["task"] = "fft";
  expect_error(c, "the request's 'task' must be matmul or cublas");
  c = colocate_config();
  c["colocate"]["mechanisms"].push_back({{"name", "green"}, {"background", "green"}});
  expect_error(c, "green: 'sms' (the requests' SMs) must be a positive integer");
  c["colocate"]["mechanisms"].back()["sms"] = 0;
  expect_error(c, "green: 'sms' (the requests' SMs) must be a positive integer");
  c["colocate"]["mechanisms"].back()["sms"] = 16;
  c["colocate"]["mechanisms"].back()["share"] = 0.5;
  expect_error(c, "green: 'share' applies to a cooperative background");
  c = colocate_config();
  c["colocate"]["mechanisms"][3]["sms"] = 16;
  expect_error(c, "coop-whole: 'sms' applies to a green background");
  c = colocate_config();
  c["colocate"]["mechanisms"][1]["background"] = "mps";
  expect_error(c, "'background' must be none, standalone, cooperative, green or process");
  c = colocate_config();
  c["colocate"]["mechanisms"][7]["mps_percent"] = 0;
  expect_error(c,
               "time-slicing: 'mps_percent' (the app's share of the SMs under MPS) must be an "
               "integer in [1, 100]");
  c["colocate"]["mechanisms"][7]["mps_percent"] = 50.5;
  expect_error(c,
               "time-slicing: 'mps_percent' (the app's share of the SMs under MPS) must be an "
               "integer in [1, 100]");
  c = colocate_config();
  c["colocate"]["mechanisms"][3]["mps_percent"] = 50;
  expect_error(c, "coop-whole: 'mps_percent' applies to a process background");
  c = colocate_config();
  c["colocate"]["mechanisms"][6]["task_launch"] = "early";
  expect_error(c, "coop-at-request: unknown task launch 'early'");
  c = colocate_config();
  c["colocate"]["mechanisms"][1]["task_launch"] = "at_request";
  expect_error(c, "stream-priority: 'task_launch' applies to a cooperative background");
  c = colocate_config();
  c["colocate"]["mechanisms"][1]["ids_by_sm"] = true;
  expect_error(c, "stream-priority: 'ids_by_sm' applies to a cooperative background");
  c = colocate_config();
  c["colocate"]["mechanisms"][3]["ids_by_sm"] = "yes";
  expect_error(c, "coop-whole: 'ids_by_sm' must be true or false");
  c = colocate_config();
  c["colocate"]["mechanisms"][4]["task_launch"] = "at_request";
  expect_error(c, "coop-prestaged: 'prestage' enqueues the request itself: no 'task_launch'");
}

TEST(BenchPlan, TheColocateConfigurationsPlanEveryPairLoadAndMechanism) {
  for (const char* name : {"colocate", "colocate-quick"}) {
    const json c = coop::bench::builtin_config(name);
    const auto units = coop::bench::plan(c);
    // Every mechanism for every pair and load, but yielding inside phases only for phased apps.
    std::size_t expected = 0;
    for (const json& p : c["pairs"])
      for (const json& m : c["colocate"]["mechanisms"])
        expected += !m.value("yield_in_phases", false) || coop::apps::has_multi_launch(p["app"]);
    EXPECT_EQ(units.size(), expected * c["colocate"]["loads"].size()) << name;
    // One arrival sequence per load, the same for every mechanism.
    for (const Unit& u : units)
      for (const Unit& v : units)
        if (u.params["load"] == v.params["load"]) {
          EXPECT_EQ(u.params["seed"], v.params["seed"]);
        }
  }
}

// Parts for one process per GPU: disjoint, together the whole plan in its order, an input
// pair's units in one part while there are enough pairs, and refined when there are not.
TEST(BenchPlan, ShardsSplitThePlanIntoWholeGroups) {
  const auto units = coop::bench::plan(coop::bench::builtin_config("colocate"));
  std::map<std::string, std::size_t> pairs;  // units per pair
  for (const Unit& u : units) ++pairs[u.params["pair"].get<std::string>()];
  ASSERT_GE(pairs.size(), 4u);
  std::size_t biggest_pair = 0;
  for (const auto& [pair, n] : pairs) biggest_pair = std::max(biggest_pair, n);
  for (std::size_t count :
       {std::size_t(1), std::size_t(2), pairs.size(), std::size_t(8), units.size() + 1}) {
    std::map<std::string, std::size_t> part_of_key;
    std::map<std::string, std::set<std::size_t>> parts_of_pair;
    std::size_t total = 0, smallest = units.size(), largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const auto part = coop::bench::shard(units, i, count);
      total += part.size();
      smallest = std::min(smallest, part.size());
      largest = std::max(largest, part.size());
      for (const Unit& u : part) {
        EXPECT_TRUE(part_of_key.emplace(u.key, i).second) << u.key << " in two parts";
        parts_of_pair[u.params["pair"].get<std::string>()].insert(i);
      }
      // The plan's order within the part.
      std::size_t at = 0;
      for (const Unit& u : part) {
        while (at < units.size() && units[at].key != u.key) ++at;
        EXPECT_LT(at, units.size()) << u.key << " out of order in part " << i << " of " << count;
      }
      // The same answer again (a resumed part must name the same units).
      EXPECT_EQ(coop::bench::shard(units, i, count).size(), part.size());
    }
    EXPECT_EQ(total, units.size()) << count << " parts";
    EXPECT_EQ(part_of_key.size(), units.size());
    if (count <= pairs.size()) {
      for (const auto& [pair, parts] : parts_of_pair) EXPECT_EQ(parts.size(), 1u) << pair;
      // Largest group first onto the least loaded part: no part is a whole group ahead.
      EXPECT_LE(largest - smallest, biggest_pair) << count << " parts";
    } else if (count <= units.size()) {
      EXPECT_GT(smallest, 0u) << count << " parts: one is empty";
    }
  }
  EXPECT_THROW(coop::bench::shard(units, 2, 2), std::invalid_argument);
  EXPECT_THROW(coop::bench::shard(units, 0, 0), std::invalid_argument);
}

// With "yield_in_phases" a phased app's overhead unit also times its yielding form (every
// phase a coop::for_each loop), validated like the others, against the same standalone runs.
TEST(BenchExperiments, OverheadTimesTheYieldingFormBesideTheOthers) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = tiny_config();
  config.erase("multitasking");
  config["overhead"]["yield_in_phases"] = true;
  const auto units = coop::bench::plan(config);
  ASSERT_EQ(units.size(), 1u);
  coop::bench::Runner runner(rt, config);
  const json r = runner.run(units[0]);
  const json& forms = r["forms"];
  ASSERT_TRUE(forms.contains("cooperative-yield")) << r.dump();
  EXPECT_EQ(forms["cooperative-yield"]["samples"].size(), 2u);
  EXPECT_EQ(forms["cooperative-yield"]["validation"].get<std::string>().rfind("ok", 0), 0u)
      << forms["cooperative-yield"]["validation"];
  EXPECT_NEAR(r["cooperative_yield_over_standalone"].get<double>(),
              forms["cooperative-yield"]["median"].get<double>() /
                  forms["standalone"]["median"].get<double>(),
              1e-12);
  EXPECT_TRUE(forms.contains("cooperative") && forms.contains("multi-launch"));
}

TEST(BenchExperiments, RunEndToEndOnTheCpuBackend) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  const json config = tiny_config();
  auto units = coop::bench::plan(config);
  ASSERT_EQ(units.size(), 1u + 2u + 2u);
  coop::bench::Runner runner(rt, config);
  for (const Unit& u : units) {
    json r = runner.run(u);
    if (u.experiment == "overhead") {
      EXPECT_EQ(r["forms"]["cooperative"]["samples"].size(), 2u);
      EXPECT_EQ(r["forms"]["standalone"]["validation"].get<std::string>().rfind("ok", 0), 0u);
      EXPECT_NEAR(r["cooperative_over_standalone"].get<double>(),
                  r["forms"]["cooperative"]["median"].get<double>() /
                      r["forms"]["standalone"]["median"].get<double>(),
                  1e-12);
      continue;
    }
    const std::size_t tasks = r["tasks"];
    EXPECT_GE(tasks, 1u) << u.key;
    EXPECT_EQ(r["samples"]["gather_ms"].size(), tasks);
    // Where in the app's run each task was released and began: within one run (each starts
    // at 0), not the kernel time accumulated over the runs; -1 between runs.
    double longest_run = 0;
    for (double x : r["samples"]["app_run_ms"]) longest_run = std::max(longest_run, x);
    for (const char* field : {"request_into_run_ms", "task_start_into_run_ms"}) {
      ASSERT_EQ(r["samples"][field].size(), tasks) << field;
      for (double x : r["samples"][field]) {
        if (x == -1) continue;
        EXPECT_GE(x, 0) << field;
        EXPECT_LE(x, longest_run * 1.5 + 5) << field;
      }
    }
    EXPECT_LE(r["periods_met"].get<std::size_t>(), tasks);
    EXPECT_DOUBLE_EQ(r["slowdown"].get<double>(),
                     r["app_ms"].get<double>() / r["alone_ms"].get<double>());
    EXPECT_DOUBLE_EQ(r["model_slowdown"].get<double>(), 12.0 / 10.0);
    EXPECT_NE(r["validation"].get<std::string>().find("ok"), std::string::npos) << r["validation"];
    if (r["variant"] == "cooperative") {
      EXPECT_EQ(r["groups"], r["N"].get<std::uint32_t>() / 2);
    }
  }
  EXPECT_EQ(rt.preemption().name(), coop::PreemptionPolicy{}.name()) << "the policy was restored";
}

// A multitasking variant with "yield_in_phases" runs the phased apps' yielding form beside the
// tasks (validated, and its alone time its own) and plans no unit for the work-stealing apps.
TEST(BenchExperiments, MultitaskingRunsTheYieldingFormOfThePhasedApps) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = tiny_config();
  config.erase("overhead");
  config["multitasking"]["variants"] = json::array({config["multitasking"]["variants"][0]});
  config["multitasking"]["variants"][0]["yield_in_phases"] = true;
  const auto units = coop::bench::plan(config);
  ASSERT_EQ(units.size(), 1u);  // bfs/road; octree steals work and has no phases
  EXPECT_NE(units[0].key.find("bfs/road"), std::string::npos) << units[0].key;
  coop::bench::Runner runner(rt, config);
  const json r = runner.run(units[0]);
  EXPECT_TRUE(r["yield_in_phases"].get<bool>());
  EXPECT_GE(r["tasks"].get<std::size_t>(), 1u);
  EXPECT_NE(r["validation"].get<std::string>().find("ok"), std::string::npos) << r["validation"];
}

// A static split through green contexts is a GPU mechanism: on the CPU backend its unit fails
// with a reason, before any request runs.
TEST(BenchExperiments, AGreenSplitNeedsTheCudaBackend) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = colocate_config();
  config["colocate"]["mechanisms"] = {{{"name", "green-16"}, {"background", "green"}, {"sms", 16}}};
  const auto units = coop::bench::plan(config);
  ASSERT_EQ(units.size(), 1u);
  coop::bench::Runner runner(rt, config);
  try {
    runner.run(units[0]);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs the CUDA backend"), std::string::npos) << e.what();
  }
}

// MPS is a GPU mechanism, and a process background needs the coop command to run its sides.
TEST(BenchExperiments, AProcessBackgroundSaysWhatItNeeds) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = colocate_config();
  config["colocate"]["mechanisms"] = {
      {{"name", "mps-50"}, {"background", "process"}, {"mps_percent", 50}},
      {{"name", "time-slicing"}, {"background", "process"}}};
  const auto units = coop::bench::plan(config);
  ASSERT_EQ(units.size(), 2u);
  auto expect_refused = [&](coop::bench::Runner& runner, const Unit& u, const std::string& why) {
    try {
      runner.run(u);
      ADD_FAILURE() << u.key << ": expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  coop::bench::Runner with_cli(rt, config, "coop");
  expect_refused(with_cli, units[0], "mps-50: MPS needs the CUDA backend");
  coop::bench::Runner without(rt, config);
  expect_refused(without, units[1], "a process background runs the coop command");
}

// The app's kernel clock read from another mapping of its file (as the request process reads
// the app process's): the same readings, and the end is seen.
TEST(BenchKernelClock, ASharedClockReadsTheSameInEveryMapping) {
  const fs::path dir = scratch("clock");
  fs::create_directories(dir);
  const fs::path file = dir / "clock";
  coop::bench::KernelClock writer(file.string(), true);
  coop::bench::KernelClock reader(file.string(), false);
  EXPECT_FALSE(reader.running());
  EXPECT_EQ(reader.now(), 0.0);
  EXPECT_EQ(reader.into_span(), -1.0) << "between runs";
  writer.set(true);
  EXPECT_TRUE(reader.running());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(reader.into_span(), 20.0);
  writer.set(false);
  const double ran = writer.now();
  EXPECT_EQ(reader.into_span(), -1.0);
  EXPECT_GE(ran, 20.0);
  EXPECT_FALSE(reader.running());
  EXPECT_EQ(reader.now(), ran);  // stopped: the clock stands
  EXPECT_FALSE(reader.due(1.0)) << "nothing is due between runs";
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  writer.set(true);
  EXPECT_TRUE(reader.due(ran)) << "a time reached is due once the app runs again";
  EXPECT_LT(reader.into_span(), ran) << "a new run counts from 0";
  // The moment the clock read 1 ms lies in the first span; the moment it read `ran` + 0 starts
  // the second, at least 10 ms of wall time after the first span ended.
  const auto first = reader.wall_at(1.0), second = reader.wall_at(ran);
  EXPECT_GE(coop::bench::ms_between(first, second), ran - 1.0 + 10.0);
  EXPECT_FALSE(reader.finished());
  writer.finish();
  EXPECT_TRUE(reader.finished());
}

TEST(BenchExperiments, ColocateRunsEveryMechanismOnTheCpuBackend) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = colocate_config();
  if (std::string(COOP_TEST_CLI).empty()) config["colocate"]["mechanisms"].erase(7);  // no coop
  const auto units = coop::bench::plan(config);
  ASSERT_EQ(units.size(), config["colocate"]["mechanisms"].size());
  // The process background runs the coop command twice (the app's side, the requests' side).
  coop::bench::Runner runner(rt, config, COOP_TEST_CLI);
  for (const Unit& u : units) {
    const json r = runner.run(u);  // throws on a wrong app result or request product
    const std::string mech = r["mechanism"];
    const std::size_t n = r["requests"];
    EXPECT_GE(n, 1u) << mech;
    EXPECT_EQ(r["samples"]["latency_ms"].size(), n) << mech;
    const json& l = r["latency_ms"];
    EXPECT_LE(l["min"].get<double>(), l["median"].get<double>());
    EXPECT_LE(l["median"].get<double>(), l["p99"].get<double>());
    EXPECT_LE(l["p99"].get<double>(), l["p999"].get<double>());
    EXPECT_LE(l["p999"].get<double>(), l["max"].get<double>());
    EXPECT_GE(r["slo_attainment"].get<double>(), 0.0);
    EXPECT_LE(r["slo_attainment"].get<double>(), 1.0);
    EXPECT_GT(r["request_busy_fraction"].get<double>(), 0.0) << mech;
    // Kernel time passes only while a run's kernels run (or, with no background, always).
    EXPECT_GT(r["kernel_seconds"].get<double>(), 0.0) << mech;
    EXPECT_LE(r["kernel_seconds"].get<double>(), r["wall_seconds"].get<double>()) << mech;
    if (mech == "requests-only") {
      EXPECT_EQ(r["background_runs"], 0u);
      EXPECT_EQ(r["background_fraction_of_alone"], 0.0);
      continue;
    }
    EXPECT_GE(r["background_runs"].get<std::size_t>(), 1u) << mech;
    // A long job: as many runs in one launch as fill kernel_seconds of one plain run alone.
    const double single = r["background_single_run_ms"];
    const auto runs = r["runs_per_kernel"].get<std::uint32_t>();
    EXPECT_EQ(runs, std::max(1u, std::uint32_t(std::ceil(150 / single)))) << mech;
    if (runs > 1) {
      EXPECT_GT(r["background_alone_ms"].get<double>(), single) << mech;
    }
    // Throughput from the runs done: a launch ended at the unit's wall limit did fewer.
    const auto app_runs = r["background_app_runs"].get<std::uint64_t>();
    EXPECT_GE(app_runs, r["background_runs"].get<std::uint64_t>()) << mech;
    EXPECT_LE(app_runs, runs * r["background_runs"].get<std::uint64_t>()) << mech;
    double run_sum = 0;
    for (double x : r["samples"]["background_run_ms"]) run_sum += x;
    EXPECT_NEAR(r["background_fraction_of_alone"].get<double>(),
                r["background_alone_ms"].get<double>() * double(app_runs) / (runs * run_sum), 1e-9)
        << mech;
    EXPECT_NE(r["validation"].get<std::string>().find("ok"), std::string::npos)
        << mech << ": " << r["validation"];
    if (r["background"] == "process") {
      EXPECT_EQ(r["mps_percent"], 0u);
    }
    if (r["background"] == "cooperative") {
      EXPECT_EQ(r["samples"]["gather_ms"].size(), n) << mech;
      EXPECT_EQ(r["gather_ms"]["n"], n);
      EXPECT_EQ(r["task_launch"], mech == "coop-at-request" ? "at_request" : "after_gather");
      EXPECT_EQ(r["ids_by_sm"], mech == "coop-half-yield") << mech;
      // The host's steps around the gather and the work: one sample per request, each a span
      // between two readings of one clock in order, so never negative and never longer than
      // the request's latency.
      for (const char* step : {"call_to_request", "grant_to_work", "work_to_return"}) {
        const json& h = r["host_steps_ms"][step];
        EXPECT_EQ(h["n"], n) << mech << " " << step;
        EXPECT_GE(h["min"].get<double>(), 0.0) << mech << " " << step;
        EXPECT_LE(h["max"].get<double>(), l["max"].get<double>()) << mech << " " << step;
      }
    }
  }
  EXPECT_EQ(rt.preemption().name(), coop::PreemptionPolicy{}.name()) << "the policy was restored";
}

// A launch of many runs that outlasts the unit's wall limit (max_seconds) ends there, after a
// whole run: the unit reports the runs done, checks the result, and computes the background's
// throughput from them. In-process and in a process of its own (time slicing). How long a run
// takes on the CPU backend varies with the machine's load, so the early end is checked where a
// launch alone took four times the limit: the limit passes before a quarter of its runs, and with
// eight runs or more at least six are left, of which the launch does at most two after the
// request.
TEST(BenchExperiments, ColocateEndsALongLaunchAtTheUnitsWallLimit) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = colocate_config();
  // A graph of few levels, many runs to a launch; the plain kernel beside the requests (the
  // cooperative form's launches end early alike: Apps.RunsPerKernelEndEarlyWhenAsked).
  config["pairs"] = json::parse(R"([{"name": "bfs/grid", "app": "bfs", "input": "grid:20x20"}])");
  const double max_ms = 50;
  config["colocate"]["kernel_seconds"] = 6;
  config["colocate"]["max_seconds"] = max_ms / 1e3;
  config["colocate"]["mechanisms"] = json::parse(R"([
    {"name": "stream-priority", "background": "standalone"},
    {"name": "time-slicing", "background": "process"}])");
  if (std::string(COOP_TEST_CLI).empty()) config["colocate"]["mechanisms"].erase(1);
  coop::bench::Runner runner(rt, config, COOP_TEST_CLI);
  int checked = 0;
  for (const Unit& u : coop::bench::plan(config)) {
    const json r = runner.run(u);  // throws on a wrong app result or request product
    const std::string mech = r["mechanism"];
    const auto runs = r["runs_per_kernel"].get<std::uint64_t>();
    const auto app_runs = r["background_app_runs"].get<std::uint64_t>();
    const json& launches = r["samples"]["background_run_ms"];
    ASSERT_GE(launches.size(), 1u) << mech;
    EXPECT_GE(app_runs, launches.size()) << mech;
    EXPECT_LE(app_runs, runs * launches.size()) << mech;
    EXPECT_NE(r["validation"].get<std::string>().find("ok"), std::string::npos)
        << mech << ": " << r["validation"];
    double run_sum = 0;
    for (double x : launches) run_sum += x;
    EXPECT_NEAR(r["background_fraction_of_alone"].get<double>(),
                r["background_alone_ms"].get<double>() * double(app_runs) / (runs * run_sum), 1e-9)
        << mech;
    if (r["background_alone_ms"].get<double>() > 4 * max_ms && runs >= 8) {
      ++checked;
      EXPECT_EQ(launches.size(), 1u) << mech << ": no launch begins after the limit";
      EXPECT_LT(app_runs, runs) << mech << ": the launch ended early";
    }
  }
  EXPECT_GT(checked, 0) << "no launch alone took four times the limit: nothing was checked";
}

// A work-stealing background is a long job too: octree builds again inside its launch (from its
// pools as seeded) until one launch takes kernel_seconds alone, and the builds beside the
// requests are checked.
TEST(BenchExperiments, ColocateRepeatsAWorkStealingAppInsideItsLaunch) {
  coop::RuntimeOptions ro;
  ro.backend = coop::RuntimeOptions::Select::cpu;
  coop::Runtime rt(ro);
  json config = colocate_config();
  config["pairs"] = json::parse(R"([{"name": "octree/20k", "app": "octree", "particles": 20000}])");
  config["colocate"]["mechanisms"] = json::parse(R"([
    {"name": "stream-priority", "background": "standalone"},
    {"name": "coop-whole", "policy": "shrink"}])");
  coop::bench::Runner runner(rt, config, COOP_TEST_CLI);
  for (const Unit& u : coop::bench::plan(config)) {
    const json r = runner.run(u);  // throws on a wrong app result or request product
    const std::string mech = r["mechanism"];
    const double single = r["background_single_run_ms"];
    const auto runs = r["runs_per_kernel"].get<std::uint32_t>();
    EXPECT_EQ(runs, std::max(1u, std::uint32_t(std::ceil(150 / single)))) << mech;
    EXPECT_GT(runs, 1u) << mech << ": one build took " << single << " ms";
    EXPECT_GT(r["background_alone_ms"].get<double>(), single) << mech;
    EXPECT_NE(r["validation"].get<std::string>().find("ok"), std::string::npos)
        << mech << ": " << r["validation"];
  }
}
