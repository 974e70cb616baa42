// `coop info`: the version, the backends built and the devices present.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "coop_commit.hpp"
#include "options.hpp"
#if defined(COOP_HAVE_CUDA)
#include "coop/cuda/device.hpp"
#endif

namespace coop::cli {
namespace {

nlohmann::json describe_backends() {
  nlohmann::json j;
  j["version"] = COOP_CLI_VERSION;
  j["commit"] = COOP_GIT_COMMIT;
  j["cpu"] = {{"built", true}, {"hardware_threads", std::thread::hardware_concurrency()}};
#if defined(COOP_HAVE_CUDA)
  std::string why;
  nlohmann::json devices = nlohmann::json::array();
  for (auto& d : coop::cuda::devices(&why))
    devices.push_back({{"index", d.index},
                       {"name", d.name},
                       {"compute", std::to_string(d.major) + "." + std::to_string(d.minor)},
                       {"multiprocessors", d.multiprocessors},
                       {"memory_gib", double(d.memory_bytes) / (1u << 30)},
                       {"exec_timeout", d.exec_timeout}});
  j["cuda"] = {{"built", true}, {"arch", "sm_90"}, {"devices", devices}, {"why_none", why}};
#else
  j["cuda"] = {{"built", false}};
#endif
  return j;
}

void print_backends(const nlohmann::json& j) {
  std::printf("coop %s (commit %s)\n", j["version"].get<std::string>().c_str(),
              j["commit"].get<std::string>().c_str());
  std::printf(
      "backends:\n  cpu   built; %u hardware threads (workgroups run as threads, their "
      "threads as fibers)\n",
      j["cpu"]["hardware_threads"].get<unsigned>());
  const nlohmann::json& cuda = j["cuda"];
  if (!cuda["built"].get<bool>()) {
    std::printf("  cuda  not built (configure with the 'cuda' preset where nvcc is present)\n");
    return;
  }
  const std::string why = cuda["why_none"];
  std::printf("  cuda  built (sm_90); %zu device(s)%s%s\n", cuda["devices"].size(),
              why.empty() ? "" : ": ", why.c_str());
  for (const auto& d : cuda["devices"])
    std::printf("    [%d] %s, compute %s, %d SMs, %.1f GiB, kernel-execution watchdog: %s\n",
                d["index"].get<int>(), d["name"].get<std::string>().c_str(),
                d["compute"].get<std::string>().c_str(), d["multiprocessors"].get<int>(),
                d["memory_gib"].get<double>(), d["exec_timeout"].get<bool>() ? "yes" : "no");
}

class Info : public Subcommand {
 public:
  const char* name() const override { return "info"; }
  const char* description() const override { return "version, backends and devices"; }
  void add_options(CLI::App& app) override { add_json_flag(app, json_); }
  int run() override {
    const nlohmann::json j = describe_backends();
    if (json_)
      std::cout << j.dump(2) << '\n';
    else
      print_backends(j);
    return exit_ok;
  }

 private:
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> info_command() { return std::make_unique<Info>(); }

}  // namespace coop::cli
