// Work stealing for cooperative kernels: one lock-protected LIFO pool of tasks per workgroup id
// (the paper's design), in memory every workgroup can reach, so the tasks of a workgroup that the
// scheduler kills stay stealable by the others. Works on every backend (host and device code):
// the locks are atomic_ref compare-and-swaps, and a workgroup waiting for a lock calls
// ctx.pause(), which lets the holder run where workgroups share a core.
//
// Only one thread of a workgroup (thread 0 in next_task) touches the pools. A lock is held for a
// few instructions and never across a cooperative primitive, so its holder is never killed while
// holding it.
//
//   struct Params { WorkPool<std::uint32_t> pool; ... };           // a view, passed by value
//   template <class Ctx> COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
//     const auto all_done = [&] { return ...; };
//     COOP_WORK_STEALING(ctx, p.pool, all_done, [&](std::uint32_t task) { ... });
//   }
//
// which is the paper's loop: offer_kill and request_fork at the top of every turn, then one task
// (work_on_next_task). Write the loop out to put other primitives in it.
//
// with the pools' memory owned on the host by WorkPoolBuffers<std::uint32_t>.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "coop/atomic.hpp"
#include "coop/config.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"

namespace coop {

/// Per-workgroup task pools (a view: trivially copyable, goes into kernel parameters). Task must
/// be trivially copyable. Pool q holds up to `capacity` tasks at items[q * capacity ...].
template <class Task>
struct WorkPool {
  static_assert(std::is_trivially_copyable_v<Task>, "tasks are copied as plain memory");

  std::uint32_t* lock;     ///< per pool: 0 free, 1 held
  std::uint32_t* count;    ///< per pool: tasks in it
  Task* items;             ///< pools * capacity slots
  std::uint32_t pools;     ///< the number of pools
  std::uint32_t capacity;  ///< slots per pool
  /// Per pool: where its workgroup's next steal scan starts (an offset from the pool after
  /// it). With it a take() scans at most kStealWindow pools and the next one goes on from there;
  /// without it (nullptr) every take() scans all pools.
  std::uint32_t* scan = nullptr;

  /// The most pools one take() looks at for a task to steal when `scan` is set. An idle
  /// workgroup reaches its next offer_kill after that many loads, kStealBatch at a time, rather
  /// than after one load per pool of the job: on an H200 with 1,056 pools a full scan took
  /// ~0.5 ms (serial L2 round trips), which is how long a task then waited for idle workgroups.
  static constexpr std::uint32_t kStealWindow = 32;
  /// Pools whose task counts one scan step loads at once (independent loads, in flight together).
  static constexpr std::uint32_t kStealBatch = 4;

  /// The pool a workgroup pushes to and pops from first (there may be fewer pools than
  /// workgroups; computed at each call because forks give new workgroups new ids).
  template <class Ctx>
  COOP_HD std::uint32_t home(Ctx& ctx) const {
    return ctx.group_id() % pools;
  }

  /// Pushes into pool `home`, or the next pool with room. False only if every pool is full.
  template <class Ctx>
  COOP_HD bool push(Ctx& ctx, std::uint32_t home, const Task& task) const {
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
  /// push() into the calling workgroup's home pool.
  template <class Ctx>
  COOP_HD bool push(Ctx& ctx, const Task& task) const {
    return push(ctx, home(ctx), task);
  }

  /// Pops the newest task of pool `home`, else steals the newest task of another pool, scanning
  /// from pool `start % pools` on (plus the home pool's scan offset, when `scan` is set) and
  /// skipping pools that are empty or locked. With `scan` set, at most kStealWindow pools per
  /// call: the next call from the same home pool goes on where this one stopped, so a workgroup
  /// alone still reaches every pool.
  template <class Ctx>
  COOP_HD bool take(Ctx& ctx, std::uint32_t home, std::uint64_t start, Task& task) const {
    // Both loads issued before either is used.
    const std::uint32_t home_count =
        atomic_ref<std::uint32_t>(count[home]).load(memory_order::relaxed);
    const std::uint32_t from =
        scan ? atomic_ref<std::uint32_t>(scan[home]).load(memory_order::relaxed) : 0u;
    if (home_count != 0) {
      acquire(ctx, home);
      const bool got = pop_locked(home, task);
      release(home);
      if (got) return true;
    }
    const std::uint32_t window = scan && pools > kStealWindow ? kStealWindow : pools;
    const std::uint32_t first = std::uint32_t((start + from) % pools);
    // Pool `first + k` for k below the window, which is at most the number of pools.
    const auto pool_at = [&](std::uint32_t k) {
      const std::uint32_t q = first + k;
      return q >= pools ? q - pools : q;
    };
    for (std::uint32_t i = 0; i < window; i += kStealBatch) {
      // A batch of counts loaded together (each load in a loop that tests it at once would
      // wait a round trip per pool), then tried in order.
      std::uint32_t counts[kStealBatch];
      for (std::uint32_t j = 0; j < kStealBatch; ++j)
        counts[j] =
            i + j < window
                ? atomic_ref<std::uint32_t>(count[pool_at(i + j)]).load(memory_order::relaxed)
                : 0u;
      for (std::uint32_t j = 0; j < kStealBatch; ++j) {
        const std::uint32_t q = pool_at(i + j);
        if (counts[j] == 0 || q == home || !try_acquire(q)) continue;
        const bool got = pop_locked(q, task);
        release(q);
        if (got) {
          if (scan) store_scan(home, from + i);  // the next scan starts at this batch again
          return true;
        }
      }
    }
    if (scan) store_scan(home, from + window);
    return false;
  }
  /// take() for the calling workgroup: its home pool, then stealing from the pools after it
  /// (workgroups start their scans at different pools, so thieves spread out).
  template <class Ctx>
  COOP_HD bool take(Ctx& ctx, Task& task) const {
    return take(ctx, home(ctx), std::uint64_t(ctx.group_id()) + 1, task);
  }

 private:
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
  COOP_HD void store_scan(std::uint32_t home, std::uint32_t next) const {
    atomic_ref<std::uint32_t>(scan[home]).store(next % pools, memory_order::relaxed);
  }
  COOP_HD void release(std::uint32_t q) const {
    atomic_ref<std::uint32_t>(lock[q]).store(0, memory_order::release);
  }
  COOP_HD bool pop_locked(std::uint32_t q, Task& task) const {
    const std::uint32_t c = count[q];
    if (c == 0) return false;
    task = items[std::uint64_t(q) * capacity + c - 1];
    atomic_ref<std::uint32_t>(count[q]).store(c - 1, memory_order::relaxed);
    return true;
  }
};

/// What next_task found for a workgroup.
enum class NextTask : std::uint32_t {
  task,  ///< a task to work on
  idle,  ///< no task now (others may still push some): pause and ask again
  done,  ///< the caller's done() said the work is over
};

namespace detail {
/// ctx.broadcast for any trivially copyable value, in 8-byte pieces (broadcast moves 8 bytes).
template <class Ctx, class T>
COOP_HD T broadcast_value(Ctx& ctx, const T& value) {
  constexpr std::size_t words = (sizeof(T) + 7) / 8;
  std::uint64_t bits[words] = {};
  std::memcpy(bits, &value, sizeof(T));
  for (std::size_t w = 0; w < words; ++w) bits[w] = ctx.broadcast(bits[w]);
  T out;
  std::memcpy(&out, bits, sizeof(T));
  return out;
}
}  // namespace detail

/// The top of a work-stealing loop (after its offer_kill / request_fork), called by every thread
/// of the workgroup: thread 0 takes the workgroup's next task (its home pool first, then
/// stealing) unless `done()` says the work is over, and every thread gets the answer.
template <class Ctx, class Task, class Done>
COOP_HD NextTask next_task(Ctx& ctx, const WorkPool<Task>& pool, Done&& done, Task& task) {
  NextTask found = NextTask::idle;
  if (ctx.local_id() == 0) {
    if (done())
      found = NextTask::done;
    else if (pool.take(ctx, task))
      found = NextTask::task;
  }
  if constexpr (sizeof(Task) <= 4) {  // the answer and the task in one broadcast
    std::uint32_t task_bits = 0;
    if (found == NextTask::task) std::memcpy(&task_bits, &task, sizeof(Task));
    const std::uint64_t both =
        ctx.broadcast(std::uint64_t(found) << 32 | task_bits);  // one workgroup barrier pair
    found = NextTask(both >> 32);
    task_bits = std::uint32_t(both);
    if (found == NextTask::task) std::memcpy(&task, &task_bits, sizeof(Task));
  } else {
    found = NextTask(ctx.broadcast(std::uint32_t(found)));
    if (found == NextTask::task) task = detail::broadcast_value(ctx, task);
  }
  return found;
}

/// One turn of a work-stealing loop: next_task, then `work(task)` on every thread, or a pause when
/// there was no task. Returns false once `done()` said the work is over (leave the loop).
/// `task_start_ns` is set on thread 0 to when the task began, in the clock's low 32 bits (odd;
/// 0 when there was no task): one register held across the task, not two.
template <class Ctx, class Task, class Done, class Work>
COOP_HD bool work_on_next_task(Ctx& ctx, const WorkPool<Task>& pool, Done&& done, Work&& work,
                               std::uint32_t& task_start_ns) {
  Task task{};
  const NextTask found = next_task(ctx, pool, done, task);
  task_start_ns = 0;
  if (found == NextTask::done) return false;
  if (found == NextTask::idle) {
    ctx.pause();
  } else {
    if (ctx.local_id() == 0) task_start_ns = std::uint32_t(detail::now_ns()) | 1u;
    work(task);
  }
  return true;
}
/// One turn of a work-stealing loop, as above, for a loop that does not need the task's start.
template <class Ctx, class Task, class Done, class Work>
COOP_HD bool work_on_next_task(Ctx& ctx, const WorkPool<Task>& pool, Done&& done, Work&& work) {
  std::uint32_t task_start_ns = 0;
  return work_on_next_task(ctx, pool, done, work, task_start_ns);
}

namespace detail {
/// A task longer than this is long: the offer after it votes on the request word loaded as it
/// ends. An offer otherwise votes on the word thread 0 loaded at the previous one, as old as the
/// task, so a request that reached the device during a long task would be seen only after the
/// next one (visit 2 of results/2026-11-28-steal-gather/: on octree and game the workgroups
/// wanted at N - 1 took 24-36 us p50 to leave after the first of them saw the request). Two of
/// for_each's offer intervals (kOfferIntervalNs): the thread's wait for the load is then under
/// a tenth of the task: Table 2's geomean did not move, and game, whose tasks are the shortest,
/// ran 0.7-0.8 % slower.
inline constexpr std::uint32_t kLongTaskNs = 2 * 4000;

/// The offer at the top of a work-stealing turn, after a task that began at `task_start_ns`
/// (thread 0's; 0: none).
template <class Ctx>
COOP_HD bool offer_after_task(Ctx& ctx, std::uint32_t task_start_ns, int site) {
  if constexpr (requires { ctx.offer_kill_fresh(site, true); }) {
    const bool fresh = ctx.local_id() == 0 && task_start_ns != 0 &&
                       std::uint32_t(detail::now_ns()) - task_start_ns > kLongTaskNs;
    return ctx.offer_kill_fresh(site, fresh);
  } else {
    return ctx.offer_kill(site);
  }
}
}  // namespace detail

/// A whole work-stealing kernel body: at the top of every turn the workgroup offers to leave
/// (offer_kill; after a task over kLongTaskNs, on the request word as it is at the task's end)
/// and takes the workgroups the scheduler grants (COOP_REQUEST_FORK: new
/// workgroups start there), then works on the next task of `pool` until `all_done()` says the
/// work is over. `all_done` and `work` are defined before it (they are not resume-point locals).
#define COOP_WORK_STEALING(ctx, pool, all_done, work)                                      \
  std::uint32_t coop_task_start_ns_ = 0;                                                   \
  COOP_BEGIN(ctx);                                                                         \
  for (;;) {                                                                               \
    if (::coop::detail::offer_after_task(ctx, coop_task_start_ns_, __LINE__)) return;      \
    COOP_REQUEST_FORK(ctx);                                                                \
    if (!::coop::work_on_next_task(ctx, pool, all_done, work, coop_task_start_ns_)) break; \
  }                                                                                        \
  COOP_END(ctx)

/// The memory of `pools` pools with `capacity` slots each, visible to the host and every
/// backend's workgroups. Seed the first tasks with push() before the launch.
template <class Task>
class WorkPoolBuffers {
 public:
  /// `pools` empty pools of `capacity` slots each.
  WorkPoolBuffers(std::uint32_t pools, std::uint32_t capacity)
      : capacity_(capacity),
        lock_(pools),
        count_(pools),
        scan_(pools),
        items_(std::uint64_t(pools) * capacity) {}

  /// A capacity with which `pools` pools hold `total` tasks between them and have 64 slots of
  /// slack each, so that uneven pushes overflow into other pools only rarely.
  static std::uint32_t capacity_for(std::uint32_t pools, std::uint64_t total) {
    return std::uint32_t(total / pools + 64);
  }

  /// Puts `task` into pool `pool` from the host (before the launch). False if it is full.
  bool push(std::uint32_t pool, const Task& task) {
    if (count_[pool] == capacity_) return false;
    items_[std::uint64_t(pool) * capacity_ + count_[pool]++] = task;
    return true;
  }
  /// Moves the pools to the GPU ahead of the launch (nothing to do on the CPU backend).
  void to_device() const {
    lock_.to_device();
    count_.to_device();
    scan_.to_device();
    items_.to_device();
  }
  /// The view to pass in the kernel's parameters.
  WorkPool<Task> view() {
    return {lock_.data(), count_.data(), items_.data(), pools(), capacity_, scan_.data()};
  }
  /// The number of pools.
  std::uint32_t pools() const { return std::uint32_t(lock_.size()); }
  /// Slots per pool.
  std::uint32_t capacity() const { return capacity_; }
  /// Tasks in pool q (read after the job ended).
  std::uint32_t size(std::uint32_t q) const { return count_[q]; }
  /// The per-pool task counts, for code that saves the pools as seeded (a kernel that runs its
  /// work again from the start).
  ManagedArray<std::uint32_t>& counts() { return count_; }
  /// The pools' slots (pool q's at q * capacity()), as counts().
  ManagedArray<Task>& slots() { return items_; }

 private:
  std::uint32_t capacity_;
  ManagedArray<std::uint32_t> lock_, count_, scan_;
  ManagedArray<Task> items_;
};

}  // namespace coop
