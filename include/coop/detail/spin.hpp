// One step of a host thread's spin-wait.
#pragma once

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

}  // namespace coop::detail
