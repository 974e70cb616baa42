// Fibers for the CPU backend: the threads of one workgroup run as fibers on one OS thread and
// switch only at workgroup barriers and explicit pauses (Boost.Context's fcontext switch). This
// keeps a workgroup barrier at two user-space context switches per thread instead of an OS-thread
// handoff (see docs/cpu-backend.md for the measurement behind the choice).
#pragma once

#include <cstddef>
#include <vector>

namespace coop::cpu {

class FiberTeam {
 public:
  using Entry = void (*)(void* arg, unsigned index);

  /// `count` fibers with `stack_bytes` of stack each (guard page below each stack).
  FiberTeam(unsigned count, std::size_t stack_bytes);
  ~FiberTeam();
  FiberTeam(const FiberTeam&) = delete;
  FiberTeam& operator=(const FiberTeam&) = delete;

  /// Runs fiber i = entry(arg, i) for every i, round robin, until all returned or stop() was
  /// called. The entry must not let exceptions escape.
  void run(Entry entry, void* arg);
  /// From inside a fiber: lets the next fiber run; returns when this one is scheduled again.
  void yield();
  /// From inside a fiber: abandon every fiber; run() returns after the caller yields or returns.
  void stop() { stopped_ = true; }
  unsigned current() const { return current_; }
  unsigned size() const { return count_; }
  unsigned finished() const { return finished_; }

  /// Default stack size (COOP_CPU_STACK_KB overrides).
  static std::size_t default_stack_bytes();

 private:
  struct Impl;  // the switching machinery (Boost.Context), kept out of this header
  Impl* impl_;
  unsigned count_;
  unsigned current_ = 0;
  unsigned finished_ = 0;
  bool stopped_ = false;
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
};

}  // namespace coop::cpu
