// Example cooperative kernel: work stealing over per-workgroup lock-protected LIFO queues (the
// paper's Fig. 2, with coop::WorkPool). offer_kill and request_fork sit at the top of the main
// loop; a killed workgroup's queue stays stealable. The work: sum f(i) over [0, total), split
// recursively into tasks down to `grain` elements; each leaf is summed by all threads of a
// workgroup.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"
#include "coop/work_pool.hpp"

namespace coop::examples {

struct TaskQueue {
  struct Range {
    std::uint64_t lo, hi;
  };
  struct Params {
    WorkPool<Range> pool;    ///< the tasks: ranges still to sum
    std::uint64_t grain;     ///< leaf size
    std::uint64_t* pending;  ///< tasks pushed but not finished
    std::uint64_t* sum;      ///< the result
  };

  COOP_HD static std::uint64_t f(std::uint64_t i) { return (i * 2654435761u) % 1000u; }

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    // Checked before a task is taken: with nothing pending, no pool holds a task.
    const auto nothing_pending = [&] { return atomic_ref<std::uint64_t>(*p.pending).load() == 0; };
    COOP_WORK_STEALING(ctx, p.pool, nothing_pending, [&](Range task) { work(ctx, p, task); });
  }

  /// A large range is split in two (by thread 0); a leaf is summed by every thread.
  template <class Ctx>
  COOP_HD static void work(Ctx& ctx, const Params& p, Range task) {
    if (task.hi - task.lo > p.grain) {
      if (ctx.local_id() == 0) split(ctx, p, task);
      return;
    }
    std::uint64_t local = 0;
    for (std::uint64_t i = task.lo + ctx.local_id(); i < task.hi; i += ctx.local_size())
      local += f(i);
    atomic_ref<std::uint64_t>(*p.sum).fetch_add(local, memory_order::relaxed);
    ctx.barrier();  // the whole leaf is summed before it counts as done
    if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(*p.pending).fetch_sub(1);
  }

  template <class Ctx>
  COOP_HD static void split(Ctx& ctx, const Params& p, Range task) {
    const std::uint64_t mid = task.lo + (task.hi - task.lo) / 2;
    atomic_ref<std::uint64_t>(*p.pending).fetch_add(2);
    Range halves[2] = {{task.lo, mid}, {mid, task.hi}};
    for (auto& h : halves) {
      if (p.pool.push(ctx, h)) continue;
      // Every pool is full (rare): this thread sums the half itself; correctness is kept.
      std::uint64_t s = 0;
      for (std::uint64_t i = h.lo; i < h.hi; ++i) s += f(i);
      atomic_ref<std::uint64_t>(*p.sum).fetch_add(s, memory_order::relaxed);
      atomic_ref<std::uint64_t>(*p.pending).fetch_sub(1);
    }
    atomic_ref<std::uint64_t>(*p.pending).fetch_sub(1);
  }
};

/// Buffers for one TaskQueue run over [0, total), in memory every backend's workgroups can use.
struct TaskQueueBuffers {
  /// `queues` pools of `capacity` tasks; the whole range starts in pool 0.
  TaskQueueBuffers(std::uint32_t queues, std::uint64_t total, std::uint64_t grain,
                   std::uint32_t capacity = 64)
      : pool(queues, capacity), pending(1), grain_(grain) {
    pool.push(0, {0, total});
    pool.to_device();
  }
  TaskQueue::Params params() { return {pool.view(), grain_, pending.get(), sum.get()}; }
  /// The sum computed on the host (split over its hardware threads: GPU-sized inputs).
  static std::uint64_t reference(std::uint64_t total) {
    const unsigned parts = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::uint64_t> partial(parts, 0);
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < parts; ++w)
      workers.emplace_back([&, w] {
        for (std::uint64_t i = total * w / parts; i < total * (w + 1) / parts; ++i)
          partial[w] += TaskQueue::f(i);
      });
    for (auto& t : workers) t.join();
    std::uint64_t s = 0;
    for (auto v : partial) s += v;
    return s;
  }
  WorkPoolBuffers<TaskQueue::Range> pool;
  Managed<std::uint64_t> pending, sum;
  std::uint64_t grain_;
};

}  // namespace coop::examples
