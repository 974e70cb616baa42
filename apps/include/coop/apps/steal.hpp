// Work-stealing task pools for octree and game: one lock-protected LIFO pool per workgroup id
// (the paper's design), in global memory, so the tasks of a killed workgroup stay stealable.
// Only thread 0 of a workgroup calls these. A lock is held for a few instructions and never
// across a cooperative primitive, so a holder is never killed while holding it.
#pragma once

#include <cstdint>

#include "coop/atomic.hpp"
#include "coop/config.hpp"
#include "coop/memory.hpp"

namespace coop::apps {

struct StealPools {
  std::uint32_t* lock;   ///< per pool: 0 free, 1 held
  std::uint32_t* count;  ///< per pool: tasks in it
  std::uint32_t* items;  ///< pool q's tasks are items[q * capacity ...]
  std::uint32_t pools;
  std::uint32_t capacity;

  template <class Ctx>
  COOP_HD void acquire(Ctx& ctx, std::uint32_t q) const {
    for (;;) {
      std::uint32_t free = 0;
      if (atomic_ref<std::uint32_t>(lock[q]).cas(free, 1, memory_order::acquire)) return;
      ctx.pause();
    }
  }
  COOP_HD bool try_acquire(std::uint32_t q) const {
    if (atomic_ref<std::uint32_t>(lock[q]).load(memory_order::relaxed) != 0) return false;
    std::uint32_t free = 0;
    return atomic_ref<std::uint32_t>(lock[q]).cas(free, 1, memory_order::acquire);
  }
  COOP_HD void release(std::uint32_t q) const {
    atomic_ref<std::uint32_t>(lock[q]).store(0, memory_order::release);
  }

  /// Pushes into pool `home`, or the next pool with room. False only if every pool is full.
  template <class Ctx>
  COOP_HD bool push(Ctx& ctx, std::uint32_t home, std::uint32_t task) const {
    for (std::uint32_t i = 0; i < pools; ++i) {
      const std::uint32_t q = (home + i) % pools;
      acquire(ctx, q);
      const std::uint32_t c = count[q];
      if (c < capacity) {
        items[std::uint64_t(q) * capacity + c] = task;
        atomic_ref<std::uint32_t>(count[q]).store(c + 1, memory_order::relaxed);
        release(q);
        return true;
      }
      release(q);
    }
    return false;
  }
  /// Pops the newest task of pool `home`, else steals from the others (scanning from `start`).
  template <class Ctx>
  COOP_HD bool take(Ctx& ctx, std::uint32_t home, std::uint64_t start, std::uint32_t& task) const {
    if (atomic_ref<std::uint32_t>(count[home]).load(memory_order::relaxed) != 0) {
      acquire(ctx, home);
      const bool got = pop_locked(home, task);
      release(home);
      if (got) return true;
    }
    for (std::uint32_t i = 0; i < pools; ++i) {
      const std::uint32_t q = std::uint32_t((start + i) % pools);
      if (q == home || atomic_ref<std::uint32_t>(count[q]).load(memory_order::relaxed) == 0)
        continue;
      if (!try_acquire(q)) continue;
      const bool got = pop_locked(q, task);
      release(q);
      if (got) return true;
    }
    return false;
  }

 private:
  COOP_HD bool pop_locked(std::uint32_t q, std::uint32_t& task) const {
    const std::uint32_t c = count[q];
    if (c == 0) return false;
    task = items[std::uint64_t(q) * capacity + c - 1];
    atomic_ref<std::uint32_t>(count[q]).store(c - 1, memory_order::relaxed);
    return true;
  }
};

/// What next_task hands a workgroup besides a task index.
inline constexpr std::uint32_t kTaskIdle = 0xffffffffu, kTaskDone = 0xfffffffeu;

/// The top of a work-stealing loop, after its offer_kill / request_fork: thread 0 takes the
/// workgroup's next task (its own pool first, then stealing) unless `done()` says the work is
/// over, and every thread gets the answer: a task index, kTaskIdle or kTaskDone.
template <class Ctx, class Done>
COOP_HD std::uint32_t next_task(Ctx& ctx, const StealPools& pools, Done&& done) {
  std::uint32_t task = kTaskIdle;
  if (ctx.local_id() == 0) {
    if (done())
      task = kTaskDone;
    else if (!pools.take(ctx, ctx.group_id() % pools.pools, ctx.group_id() + 1, task))
      task = kTaskIdle;
  }
  return ctx.broadcast(task);
}

/// The pools' memory: `pools` pools holding `total` tasks between them (at least 64 each).
struct StealPoolBuffers {
  StealPoolBuffers(std::uint32_t pools, std::uint64_t total)
      : capacity(std::uint32_t(total / pools + 64)),
        lock(pools),
        count(pools),
        items(std::uint64_t(pools) * capacity) {
    lock.to_device();
    count.to_device();
    items.to_device();
  }
  StealPools view() {
    return {lock.data(), count.data(), items.data(), std::uint32_t(lock.size()), capacity};
  }
  std::uint32_t capacity;
  ManagedArray<std::uint32_t> lock, count, items;
};

}  // namespace coop::apps
