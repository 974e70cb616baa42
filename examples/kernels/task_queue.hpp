// Example cooperative kernel: work stealing over per-workgroup lock-protected LIFO queues (the
// paper's Fig. 2). offer_kill and request_fork sit at the top of the main loop; a killed
// workgroup's queue stays stealable. The work: sum f(i) over [0, total), split recursively into
// tasks down to `grain` elements; each leaf is summed by all threads of a workgroup.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"

namespace coop::examples {

struct TaskQueue {
  struct Range {
    std::uint64_t lo, hi;
  };
  struct Params {
    Range* tasks;            ///< queue q occupies tasks[q * capacity, (q + 1) * capacity)
    std::uint32_t* top;      ///< per-queue size
    std::uint32_t* lock;     ///< per-queue spin lock
    std::uint32_t queues;    ///< number of queues (workgroup g pushes to queue g % queues)
    std::uint32_t capacity;  ///< slots per queue
    std::uint64_t grain;     ///< leaf size
    std::uint64_t* pending;  ///< tasks pushed but not finished
    std::uint64_t* sum;      ///< the result
  };
  struct Shared {
    Range task;
    std::uint32_t state;  // 0 = no task this round, 1 = task, 2 = all work done
  };

  COOP_HD static std::uint64_t f(std::uint64_t i) { return (i * 2654435761u) % 1000u; }

  template <class Ctx>
  COOP_HD static void lock(Ctx& ctx, const Params& p, std::uint32_t q) {
    std::uint32_t free_ = 0;
    while (!atomic_ref<std::uint32_t>(p.lock[q]).cas(free_, 1u)) {
      free_ = 0;
      ctx.pause();
    }
  }
  COOP_HD static void unlock(const Params& p, std::uint32_t q) {
    atomic_ref<std::uint32_t>(p.lock[q]).store(0u);
  }
  template <class Ctx>
  COOP_HD static bool pop(Ctx& ctx, const Params& p, std::uint32_t q, Range& out) {
    if (atomic_ref<std::uint32_t>(p.top[q]).load(memory_order::relaxed) == 0) return false;
    lock(ctx, p, q);
    bool got = p.top[q] > 0;
    if (got) out = p.tasks[std::uint64_t(q) * p.capacity + --p.top[q]];
    unlock(p, q);
    return got;
  }
  template <class Ctx>
  COOP_HD static bool push(Ctx& ctx, const Params& p, std::uint32_t q, Range r) {
    lock(ctx, p, q);
    bool room = p.top[q] < p.capacity;
    if (room) p.tasks[std::uint64_t(q) * p.capacity + p.top[q]++] = r;
    unlock(p, q);
    return room;
  }

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    auto& sh = ctx.shared();
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);
      COOP_REQUEST_FORK(ctx);
      if (ctx.local_id() == 0) {
        // The queue id is computed after the fork: a new workgroup uses its own queue.
        const std::uint32_t me = ctx.group_id();
        sh.state = 0;
        for (std::uint32_t k = 0; k < p.queues && sh.state == 0; ++k)
          if (pop(ctx, p, (me + k) % p.queues, sh.task)) sh.state = 1;
        if (sh.state == 0 && atomic_ref<std::uint64_t>(*p.pending).load() == 0) sh.state = 2;
      }
      ctx.barrier();
      const std::uint32_t state = sh.state;
      const Range task = sh.task;
      ctx.barrier();  // everyone has read sh before thread 0 writes it again
      if (state == 2) break;
      if (state == 0) {
        ctx.pause();
        continue;
      }
      if (task.hi - task.lo > p.grain) {
        if (ctx.local_id() == 0) split(ctx, p, task);
        continue;
      }
      std::uint64_t local = 0;
      for (std::uint64_t i = task.lo + ctx.local_id(); i < task.hi; i += ctx.local_size())
        local += f(i);
      atomic_ref<std::uint64_t>(*p.sum).fetch_add(local, memory_order::relaxed);
      ctx.barrier();  // the whole leaf is summed before it counts as done
      if (ctx.local_id() == 0) atomic_ref<std::uint64_t>(*p.pending).fetch_sub(1);
    }
    COOP_END(ctx);
  }

  template <class Ctx>
  COOP_HD static void split(Ctx& ctx, const Params& p, Range task) {
    const std::uint32_t me = ctx.group_id() % p.queues;  // there may be fewer queues than N
    const std::uint64_t mid = task.lo + (task.hi - task.lo) / 2;
    atomic_ref<std::uint64_t>(*p.pending).fetch_add(2);
    Range halves[2] = {{task.lo, mid}, {mid, task.hi}};
    for (auto& h : halves) {
      if (push(ctx, p, me, h)) continue;
      // The queue is full (rare): this thread sums the half itself; correctness is kept.
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
  TaskQueueBuffers(std::uint32_t queues, std::uint64_t total, std::uint64_t grain,
                   std::uint32_t capacity = 64)
      : tasks(std::size_t(queues) * capacity),
        top(queues, 0),
        lock(queues, 0),
        pending(1),
        queues_(queues),
        capacity_(capacity),
        grain_(grain) {
    tasks[0] = {0, total};
    top[0] = 1;
  }
  TaskQueue::Params params() {
    return {tasks.data(), top.data(), lock.data(),   queues_,
            capacity_,    grain_,     pending.get(), sum.get()};
  }
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
  ManagedArray<TaskQueue::Range> tasks;
  ManagedArray<std::uint32_t> top, lock;
  Managed<std::uint64_t> pending, sum;
  std::uint32_t queues_, capacity_;
  std::uint64_t grain_;
};

}  // namespace coop::examples
