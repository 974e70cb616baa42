// A work-stealing app run several times in one kernel launch (RunConfig::runs_per_kernel): a
// long job, as users have it, that a kernel on a high-priority stream cannot slip in between the
// runs of.
//
// Repeated<W> is W's loop (COOP_WORK_STEALING's) with a restart after each run but the last:
// every workgroup meets at a resizing barrier, so that none is still in its last task (which
// may read what the copy overwrites), copies back its grid stride of the buffers W saved before
// the first run (its pools with the first task among them), and meets again, so that the copy
// is whole before anyone takes a task. Forked workgroups know the run from the transmitted
// state. It is a kernel of its own because the restart costs W's single run registers (on an
// H200, game's kernel, held to 32 a thread, spilled; octree's went from 40 to 48, one
// workgroup per SM fewer).
//
// W provides Params with `pools` (a WorkPool<std::uint32_t>), `runs_per_kernel`, `restore`
// (a RunRestore) and `run_end` (a RunEnd); Transmit with `runs`; `run_over(p, runs)`: whether the
// run after `runs` finished ones is over (its end counters count over the runs, so that the
// launch's last value proves them all); and `work(ctx, p, task)`.
#pragma once

#include <cstdint>

#include "coop/apps/common.hpp"
#include "coop/kernel.hpp"
#include "coop/work_pool.hpp"

namespace coop::apps {

template <class W>
struct Repeated : W {
  using Params = typename W::Params;
  using Transmit = typename W::Transmit;

  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    const auto run_over = [&] { return W::run_over(p, t.runs); };
    const auto work = [&](std::uint32_t task) { W::work(ctx, p, task); };
    std::uint32_t task_start_ns = 0;
    COOP_BEGIN(ctx);
    for (;;) {
      if (::coop::detail::offer_after_task(ctx, task_start_ns, __LINE__)) return;
      COOP_REQUEST_FORK(ctx);
      if (work_on_next_task(ctx, p.pools, run_over, work, task_start_ns)) continue;
      if (++t.runs >= p.runs_per_kernel || p.run_end.ends_after(t.runs)) break;
      COOP_RESIZING_BARRIER(ctx);
      p.run_end.poll(ctx.global_id(), t.runs);
      p.restore.copy(ctx.global_id(), ctx.global_size());
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

}  // namespace coop::apps
