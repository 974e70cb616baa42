/// \file
/// Scheduler policies, kernel traits (the App. B alternatives) and launch configuration.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "coop/config.hpp"

namespace coop {

/// How the scheduler answers offer_kill / request_fork / resizing barriers of one job.
struct Policy {
  /// Which policy; `seed`, `cap` and `shrink_only` apply to some kinds only.
  enum class Kind : std::uint8_t {
    generous,  ///< kill only when capacity is needed elsewhere, fork when it is free (default)
    fixed,     ///< never resize: M stays at its initial value
    /// A random legal choice at every kill, fork and resizing point (seeded), for testing a
    /// kernel. The job is reserved: it holds all N workgroups from its start to its end, so
    /// tasks that need them wait for its end (the runtime reports such a task once).
    adversarial,
    cap,  ///< like generous, but never more than `cap` workgroups (changeable live)
  };
  Kind kind = Kind::generous;  ///< which policy (generous by default)
  std::uint64_t seed = 0;      ///< adversarial only
  std::uint32_t cap = 0;       ///< cap only: the initial limit on M
  /// adversarial only: random kills and shrinking resizes, but never a fork or a growing
  /// resize, so a job only ever runs the grid it was launched with. For tools that run one
  /// kernel at a time (compute-sanitizer), under which a forked grid would wait for the job.
  bool shrink_only = false;

  /// Kind::generous, the default.
  static Policy generous() { return {}; }
  /// Kind::fixed: M stays at the M0 the job started with.
  static Policy fixed() { return {Kind::fixed, 0, 0}; }
  /// Kind::adversarial with `seed` (the same seed draws the same choices).
  static Policy adversarial(std::uint64_t seed) { return {Kind::adversarial, seed, 0}; }
  /// Kind::adversarial with `seed` and shrink_only: random kills and shrinks, never a growth.
  static Policy adversarial_shrinking(std::uint64_t seed) {
    return {Kind::adversarial, seed, 0, true};
  }
  /// Kind::cap: like generous, with at most `m` workgroups (Job::set_cap changes it live).
  static Policy capped(std::uint32_t m) { return {Kind::cap, 0, m}; }

  /// The text parse() reads back: "generous", "fixed", "adversarial:SEED",
  /// "adversarial-shrink:SEED" or "cap:M".
  std::string name() const;
  /// Parses "generous", "fixed", "adversarial:SEED", "adversarial-shrink:SEED" or "cap:M";
  /// throws std::invalid_argument.
  static Policy parse(const std::string& text);
};

/// Which resizing barrier implementation a job uses (paper §4.2).
enum class ResizeBarrier : std::uint8_t {
  query,  ///< all W requested workgroups leave at one barrier (default)
  plain,  ///< each slave offers a kill once on arrival; at most a few leave per barrier
};

/// Opt-in alternative semantics from App. B, declared by a kernel as
/// `static constexpr coop::KernelTraits traits{...};`.
struct KernelTraits {
  /// Any workgroup may be killed, not only the top one: ids are no longer contiguous.
  bool kill_any_order = false;
  /// Workgroup 0 may be killed when it is the last one, ending the kernel early.
  bool allow_kill_zero = false;
  /// Launch bounds (CUDA's __launch_bounds__): workgroups of at most this many threads (0: no
  /// bound). A launch with more is rejected on every backend.
  std::uint32_t max_threads = 0;
  /// With max_threads: compile the GPU kernel so that this many workgroups fit on an SM
  /// (registers per thread capped accordingly), as the plain kernel it replaces may be.
  std::uint32_t min_groups_per_sm = 0;
  /// The kernel can start over: workgroups started at its resume point 0 (where
  /// `request_fork(0)` starts them) with workgroup 0's transmitted state carry on the work even
  /// when no other workgroup runs, because its progress is in global memory (a work counter,
  /// partial results parked for whoever comes next: the persistent GEMM). A suspension the
  /// scheduler makes for a large task (PreemptionPolicy suspend or hybrid) then takes effect at
  /// an `offer_kill` too, not only at a resizing barrier: the job leaves the device whole, its
  /// workgroup 0 included, instead of keeping workgroup 0 paused beside the task, and restarts
  /// at resume point 0 once no task holds the device.
  bool restartable = false;
};

/// Execution mode of a launch.
enum class Mode : std::uint8_t {
  cooperative,  ///< the cooperative kernels model
  /// Backwards-compatible mode: the kernel as a plain persistent kernel (kill/fork are no-ops,
  /// a resizing barrier is a global barrier, M = N from the start). On the GPU it is a
  /// separate kernel whose barriers are CUDA's grid barrier (the baseline coop is measured
  /// against; it cannot be suspended); on the CPU backend, the protocol with resizing off. Like
  /// an adversarial job it is reserved: tasks that need its workgroups wait for its end.
  persistent,
};

/// How the scheduler frees capacity for a high-priority task (paper §5.5: cooperative gathering
/// suits small requests, kernel-level preemption large ones). No kill takes capacity from a
/// reserved job (Policy::Kind::adversarial, Mode::persistent): it holds all N workgroups until
/// it ends (an adversarial cooperative job also until `suspend` or `hybrid` suspends it), and a
/// task that needs them waits that long (reported once through RuntimeOptions::report). A
/// fixed-policy job keeps its M.
struct PreemptionPolicy {
  /// How a task's capacity is gathered from the running jobs.
  enum class Mode : std::uint8_t {
    shrink,   ///< kill workgroups; every job keeps its workgroup 0 running
    suspend,  ///< suspend whole jobs at their next resizing barrier (M -> 0), then restart them
    hybrid,   ///< shrink for requests up to `suspend_above` of the device, suspend above it
    /// Former name of shrink.
    cooperative [[deprecated("PreemptionPolicy::Mode::shrink")]] = shrink,
    /// Former name of suspend.
    kernel [[deprecated("PreemptionPolicy::Mode::suspend")]] = suspend,
  };
  Mode mode = Mode::hybrid;  ///< how capacity is freed (hybrid by default)
  /// hybrid: the fraction of the device above which a request suspends whole jobs. The default
  /// comes from measurement (docs/interruptible.md, "Choosing the hybrid threshold").
  double suspend_above = 0.5;
  /// A job shrunk to its workgroup 0 for a task pauses that workgroup at its next offer_kill or
  /// resizing barrier until no task runs: it waits without computing, so that the task's
  /// blocks on its SM are not starved of issue slots (on an H100 a compute-bound workgroup 0
  /// slowed a request's cuBLAS kernels by 7-8 %: docs/cuda-backend.md, "Pausing workgroup 0").
  /// false: workgroup 0 works on beside the task.
  bool pause_kept = true;

  /// "shrink", "suspend" or "hybrid:F", with ",no-pause" when pause_kept is false.
  std::string name() const;
  /// Parses "shrink", "suspend", "hybrid" or "hybrid:F" (and the former names "cooperative" for
  /// shrink, "kernel" for suspend), each optionally followed by ",no-pause"; throws
  /// std::invalid_argument.
  static PreemptionPolicy parse(const std::string& text);
};

/// How Runtime::launch starts a cooperative kernel: its size, scheduling policy and barrier.
struct LaunchConfig {
  std::uint32_t max_groups = 0;  ///< N: at most this many workgroups (0 = as many as fit)
  std::uint32_t threads = 64;    ///< threads per workgroup
  Policy policy{};               ///< how the scheduler resizes the job (generous by default)
  ResizeBarrier barrier = ResizeBarrier::query;  ///< the resizing barrier implementation
  Mode mode = Mode::cooperative;                 ///< cooperative, or a plain persistent kernel
  int priority = 0;                              ///< higher-priority jobs give up workgroups last
  /// CUDA: the share of each SM's unified L1/shared memory, in percent, that the job's kernel
  /// asks to be shared memory (cudaFuncAttributePreferredSharedMemoryCarveout; -1 = the
  /// driver's choice). The driver configures little shared memory for a kernel that uses
  /// little, and a task kernel needing more than an SM is configured with cannot use the slots
  /// the job frees there until the whole SM drains (on the H200 a 3 ms matmul given a quarter of
  /// the device waited for the job to end). So jobs ask for the most; the graph apps ran no
  /// slower for the smaller L1 (docs/cuda-backend.md). Ignored by the CPU backend.
  int shared_carveout = 100;
  /// CUDA: number the job's workgroups by SM (SM 0's the lowest ids), in its first grid and in
  /// each grid it grows back by, instead of launch order, so that the top ids, the ones
  /// offer_kill removes first, fill whole SMs: a task then runs on SMs of its own instead of
  /// beside the job's blocks, whose warps starve its warps (docs/cuda-backend.md, "Launch"),
  /// also after a whole-device task took the job down to workgroup 0. For jobs that share the
  /// device with tasks. Not for
  /// kernels whose phases can have less work than the grid has threads (a grid-stride loop's
  /// low ids do the work): those ids then sit on a few SMs (bfs on a road graph ran 2.2 times
  /// slower). Used only when it costs the kernel no occupancy; COOP_CUDA_IDS_BY_SM=1 or 0
  /// turns it on or off for every job. Ignored by the CPU backend.
  bool ids_by_sm = false;
};

/// Throws std::invalid_argument unless `carveout` is a valid LaunchConfig::shared_carveout
/// (every backend checks, so that a launch the CPU accepts does not fail on a GPU).
inline void check_shared_carveout(int carveout) {
  if (carveout < -1 || carveout > 100)
    throw std::invalid_argument(
        "shared_carveout must be -1 (the driver's choice) or a "
        "percentage in [0, 100], got " +
        std::to_string(carveout));
}

}  // namespace coop
