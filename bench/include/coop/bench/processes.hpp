// Co-location between processes, as users share a GPU between programs: child processes run
// through the shell, temporary folders, and an MPS control daemon started and stopped within
// one run. Used by `coop bench --config colocate` (background "process") and
// coop_bench_colocate (`--only processes`). POSIX; header-only so that the micro-benchmarks can
// use it.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
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

/// What this process leaves on the machine while a unit runs (temporary folders, MPS daemons):
/// each owner undoes its own when destroyed; undo_all() undoes what is left, newest first, for
/// a process that must end without unwinding (`coop bench --unit-timeout`).
class Leftovers {
 public:
  /// Registers how to undo one thing; returns the ticket that drop() takes.
  static std::uint64_t add(std::function<void()> undo) {
    std::lock_guard lock(state().mu);
    state().undo.emplace_back(++state().tickets, std::move(undo));
    return state().tickets;
  }
  /// Its owner undid it.
  static void drop(std::uint64_t ticket) {
    std::lock_guard lock(state().mu);
    std::erase_if(state().undo, [&](const auto& u) { return u.first == ticket; });
  }
  static void undo_all() {
    std::lock_guard lock(state().mu);
    for (auto it = state().undo.rbegin(); it != state().undo.rend(); ++it) it->second();
    state().undo.clear();
  }

 private:
  struct State {
    std::mutex mu;
    std::uint64_t tickets = 0;
    std::vector<std::pair<std::uint64_t, std::function<void()>>> undo;
  };
  static State& state() {
    static State s;
    return s;
  }
};

/// A new folder under /tmp (`/tmp/PREFIX-XXXXXX`), removed with what it holds when destroyed.
class TempFolder {
 public:
  explicit TempFolder(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a folder " + tmpl);
    path_ = tmpl;
    ticket_ = Leftovers::add([p = path_] { remove(p); });
  }
  ~TempFolder() {
    Leftovers::drop(ticket_);
    remove(path_);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  static void remove(const std::filesystem::path& p) {
    std::error_code ignored;
    std::filesystem::remove_all(p, ignored);
  }
  std::filesystem::path path_;
  std::uint64_t ticket_ = 0;
};

/// An MPS control daemon with a private pipe directory, started and stopped within this run
/// (the GPU's settings are left alone). env() goes in front of each client's command. The
/// daemon serves the GPUs this process sees (CUDA_VISIBLE_DEVICES, inherited), and its clients
/// run without CUDA_VISIBLE_DEVICES, as MPS requires: they number the daemon's GPUs from 0, so
/// a client that kept CUDA_VISIBLE_DEVICES=1 found no device (coop bench --shard, one GPU each).
class MpsDaemon {
 public:
  MpsDaemon()
      : dir_("coop-mps"),
        env_("CUDA_MPS_PIPE_DIRECTORY=" + dir_.path().string() +
             " CUDA_MPS_LOG_DIRECTORY=" + dir_.path().string() + " ") {
    if (std::system((env_ + "nvidia-cuda-mps-control -d").c_str()) != 0)
      throw std::runtime_error("nvidia-cuda-mps-control -d failed (no MPS here?)");
    // A daemon left behind would keep serving the GPU.
    ticket_ = Leftovers::add([env = env_] { quit(env); });
  }
  ~MpsDaemon() {
    Leftovers::drop(ticket_);
    if (!quit(env_)) std::fprintf(stderr, "stopping the MPS daemon failed\n");
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the server exits after its clients
  }
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;
  std::string env() const { return "env -u CUDA_VISIBLE_DEVICES " + env_; }

 private:
  static bool quit(const std::string& env) {
    return std::system(("echo quit | " + env + "nvidia-cuda-mps-control").c_str()) == 0;
  }
  TempFolder dir_;  // first: the daemon's pipes live in it
  std::string env_;
  std::uint64_t ticket_ = 0;
};

}  // namespace coop::bench
