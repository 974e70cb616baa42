// Co-location between processes, as users share a GPU between programs: child processes run
// through the shell, and an MPS control daemon started and stopped within one run. Used by
// `coop bench --config colocate` (background "process") and coop_bench_colocate
// (`--only processes`). POSIX; header-only so that the micro-benchmarks can use it.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coop/bench/harness.hpp"

namespace coop::bench {

/// A command run through the shell, its standard output read line by line.
class ChildProcess {
 public:
  explicit ChildProcess(const std::string& command)
      : command_(command), f_(popen(command.c_str(), "r")) {
    if (!f_) throw std::runtime_error("cannot start: " + command);
  }
  ~ChildProcess() {
    if (f_) pclose(f_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// The next line (without its newline); false at the end of the output.
  bool read_line(std::string& line) {
    line.clear();
    char buf[4096];
    while (std::fgets(buf, sizeof buf, f_)) {
      line += buf;
      if (line.back() == '\n') {
        line.pop_back();
        return true;
      }
    }
    return !line.empty();
  }
  /// Reads lines until `marker` (true) or the end of the output (false).
  bool wait_for_line(const std::string& marker) {
    for (std::string line; read_line(line);)
      if (line == marker) return true;
    return false;
  }
  /// The JSON object on the last line of the output, once the child has exited with status 0;
  /// throws naming the command otherwise.
  json result() {
    std::string last;
    for (std::string line; read_line(line);)
      if (!line.empty()) last = line;
    const int rc = pclose(f_);
    f_ = nullptr;
    json out;
    if (!last.empty() && last[0] == '{') out = json::parse(last, nullptr, false);
    if (rc != 0 || !out.is_object() || out.contains("error")) {
      const int code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : rc;
      const std::string why = out.is_object() && out.contains("error") && out["error"].is_string()
                                  ? out["error"].get<std::string>()
                              : last.empty() ? "no output"
                                             : "last line: " + last;
      throw std::runtime_error("a child process failed (exit " + std::to_string(code) +
                               "): " + why + " [" + command_ + "]");
    }
    return out;
  }

 private:
  std::string command_;
  FILE* f_;
};

/// This program's path (to run it again as a child).
inline std::string self_exe() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program (/proc/self/exe)");
  return std::string(path, std::size_t(n));
}

/// An MPS control daemon with a private pipe directory, started and stopped within this run
/// (the GPU's settings are left alone). env() goes in front of each client's command.
class MpsDaemon {
 public:
  MpsDaemon() {
    char tmpl[] = "/tmp/coop-mps-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("cannot make the MPS pipe directory");
    dir_ = tmpl;
    env_ = "CUDA_MPS_PIPE_DIRECTORY=" + dir_ + " CUDA_MPS_LOG_DIRECTORY=" + dir_ + " ";
    if (std::system((env_ + "nvidia-cuda-mps-control -d").c_str()) != 0) {
      remove_dir();
      throw std::runtime_error("nvidia-cuda-mps-control -d failed (no MPS here?)");
    }
    std::lock_guard lock(running_mu());
    running().push_back(env_);
  }
  ~MpsDaemon() {
    {
      std::lock_guard lock(running_mu());
      std::erase(running(), env_);
    }
    if (!quit(env_)) std::fprintf(stderr, "stopping the MPS daemon failed\n");
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the server exits after its clients
    remove_dir();
  }
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;
  const std::string& env() const { return env_; }

  /// Asks every daemon still running to quit, for a process about to end without unwinding
  /// (`coop bench --unit-timeout`): a daemon left behind would keep serving the GPU.
  static void quit_all() {
    std::lock_guard lock(running_mu());
    for (const std::string& env : running()) quit(env);
    running().clear();
  }

 private:
  static bool quit(const std::string& env) {
    return std::system(("echo quit | " + env + "nvidia-cuda-mps-control").c_str()) == 0;
  }
  static std::mutex& running_mu() {
    static std::mutex mu;
    return mu;
  }
  static std::vector<std::string>& running() {
    static std::vector<std::string> envs;
    return envs;
  }
  void remove_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string dir_, env_;
};

}  // namespace coop::bench
