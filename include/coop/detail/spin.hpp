// A host thread's spin-wait.
#pragma once

#include <chrono>
#include <thread>

namespace coop::detail {

/// Tells the core that this thread spins (x86: `pause`), so that the sibling hyperthread and the
/// memory system are not flooded; elsewhere a compiler barrier.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

/// Spins until `done()` or `limit` has passed, yielding now and then (a machine with few cores
/// runs the thread that makes `done()` true too). Returns done()'s last answer. Waiting by
/// spinning first, as a CUDA stream synchronization does: waking a sleeping thread costs tens of
/// microseconds, as much as the short waits this runtime has (a gather, a short task).
template <class Done>
bool spin_for(std::chrono::steady_clock::duration limit, Done&& done) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (unsigned spins = 1;; ++spins) {
    if (done()) return true;
    if (spins % 64 == 0) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::yield();
    }
    cpu_relax();
  }
}

}  // namespace coop::detail
