// The cooperative-kernel protocol: offer_kill, request_fork, query and the (resizing) global
// barrier, written once over coop::detail::atomic and run by thread 0 of a workgroup on every
// backend. The backend supplies an Env (see the concept below) for spinning, spawning new
// workgroups and recording events.
//
// State lives in a Channel in memory shared by the workgroups and the host scheduler (host memory
// on the CPU backend, device memory on the GPU). The scheduler says what it wants with one
// number, the target M: M above the target is a kill request, below it a fork grant. Only the
// workgroups change M, each time with one compare-and-swap of the membership word, so kills
// and forks can never interleave into a state with duplicate or missing ids, and the scheduler
// (on the GPU: the host, which cannot take part in a device CAS) never races them.
#pragma once

#include <cstdint>

#include "coop/atomic.hpp"
#include "coop/config.hpp"
#include "coop/kernel.hpp"

namespace coop::detail {

/// The scheduler's view of a job's membership (computed from the channel, for reports).
struct Membership {
  std::uint32_t active = 0;        ///< M
  std::uint32_t kill_wanted = 0;   ///< W: workgroups the scheduler asks back (M above target)
  std::uint32_t kill_ready = 0;    ///< R: wanted workgroups waiting at offer_kill (batch exit)
  std::uint32_t fork_granted = 0;  ///< G: capacity granted to the next fork (target above M)
};

// The membership word: M (bits 0-13); a count of workgroup 0's barrier decisions (14-15);
// the removed workgroups that have not yet seen their removal ("leaving", 16-29: no id is
// reused and no resize is decided until they are gone); a hold bit per barrier parity (30, 31);
// a version (32-47); the barrier's arrival count (48-62) and its parity (63). Every change of M
// is one CAS of this word and arriving at a barrier one atomic add, so whoever sees a barrier
// complete sees all of it in one consistent value. A workgroup that withdraws from a batch exit
// bumps the version so that a commit decided on the old state fails.
//
// The barrier folds its release into the arrivals, like CUDA's grid barrier. Between barriers
// the arrival field is armed with 2^15 - M; every member adds 1, so the count carries into the
// parity bit exactly when the last member arrives and leaves 0. Nobody has to learn that they
// were last and then publish a release: every member waits for the parity to flip, polling this
// one word, and no member reads anything before its add. Workgroup 0 arms the field again once
// it has passed (a fire-and-forget add; M is M at the barrier). Every change of M between
// barriers is a CAS that requires the field armed and nobody arrived ("not filling") and moves
// the arming with M; until workgroup 0 re-arms, kills and forks refuse. When the scheduler wants
// something at a resizing barrier, workgroup 0 sets the hold bit of the barrier's parity before
// arriving; a held barrier, once complete, waits for workgroup 0's decision, which it publishes
// in the release word and then announces by clearing the hold, counting the decision and
// arming the field in one step.
inline constexpr std::uint64_t kDecisionOne = 1ull << 14;
inline constexpr std::uint64_t kLeavingOne = 1ull << 16;
inline constexpr std::uint64_t kHoldBit = 1ull << 30;  ///< parity 0; parity 1 is the next bit
inline constexpr std::uint64_t kVersionOne = 1ull << 32;
inline constexpr std::uint64_t kArrivedOne = 1ull << 48;
inline constexpr std::uint32_t kArrivalSpan = 0x8000u;  ///< a barrier's arrivals add up to this
COOP_HD constexpr std::uint32_t active_of(std::uint64_t word) {
  return std::uint32_t(word & 0x3fffu);
}
/// Held barriers workgroup 0 has decided, modulo 4.
COOP_HD constexpr std::uint32_t decisions_of(std::uint64_t word) {
  return std::uint32_t((word >> 14) & 3u);
}
/// The barrier's raw arrival field (see barrier_arrivals for the count).
COOP_HD constexpr std::uint32_t arrived_of(std::uint64_t word) {
  return std::uint32_t((word >> 48) & (kArrivalSpan - 1));
}
COOP_HD constexpr std::uint32_t parity_of(std::uint64_t word) { return std::uint32_t(word >> 63); }
COOP_HD constexpr std::uint64_t hold_bit(std::uint32_t parity) { return kHoldBit << parity; }
COOP_HD constexpr std::uint32_t leaving_of(std::uint64_t word) {
  return std::uint32_t((word >> 16) & 0x3fffu);
}
/// The word with M = m and the barrier's arrival field armed for m members (the parity bit
/// kept): only while no barrier fills.
COOP_HD constexpr std::uint64_t with_active(std::uint64_t word, std::uint32_t m) {
  constexpr std::uint64_t arrivals = std::uint64_t(kArrivalSpan - 1) << 48;
  const std::uint64_t armed = m == 0 ? 0 : kArrivalSpan - m;  // M = 0: suspended, none come
  return (word & ~(0x3fffull | arrivals)) | m | armed << 48;
}
/// The word with its version moved on (the version wraps without touching the arrivals).
COOP_HD constexpr std::uint64_t bump_version(std::uint64_t word) {
  constexpr std::uint64_t mask = 0xffffull << 32;
  return (word & ~mask) | ((word + kVersionOne) & mask);
}
/// Members that have arrived at the barrier now filling (for diagnostics). Armed, the field
/// is 2^15 - M plus the count (at least 2^14, as M is below it); before workgroup 0 re-arms it
/// after a barrier, it is the count itself.
COOP_HD constexpr std::uint32_t barrier_arrivals(std::uint64_t word) {
  const std::uint32_t v = arrived_of(word), m = active_of(word);
  return v < (kArrivalSpan >> 1) ? v : (v + m) & (kArrivalSpan - 1);
}
/// Whether a barrier fills (or workgroup 0 has not yet re-armed the field after one): M must
/// not change then.
COOP_HD constexpr bool barrier_busy(std::uint64_t word) {
  return arrived_of(word) != kArrivalSpan - active_of(word);
}

/// Per-job protocol flags, fixed at launch.
enum ChannelFlags : std::uint32_t {
  flag_adversarial = 1u << 0,    ///< decisions come from the seeded generator, not the target
  flag_any_order = 1u << 1,      ///< App. B: any workgroup may be killed (ids not contiguous)
  flag_kill_zero = 1u << 2,      ///< App. B: workgroup 0 may be killed when it is the last
  flag_plain_barrier = 1u << 3,  ///< resizing barrier without query (one leaves per barrier)
  flag_no_resize = 1u << 4,      ///< fixed policy / persistent mode: never kill or fork
  flag_no_grow = 1u << 5,        ///< adversarial-shrink: never fork or grow at a barrier
  flag_restartable = 1u << 6,    ///< KernelTraits::restartable: suspends at offers too
};

/// query() on a membership word and a target: how many workgroups the scheduler wants back.
COOP_HD constexpr std::uint32_t wanted_back(std::uint64_t word, std::uint32_t target,
                                            std::uint32_t flags) {
  const std::uint32_t m = active_of(word), keep = (flags & flag_kill_zero) ? 0u : 1u;
  const std::uint32_t t = target > keep ? target : keep;  // target 0: a pause, not a kill
  return m > t ? m - t : 0;
}

/// Whether offer_kill by workgroup `id` could accept, judged from a membership word and a target
/// read earlier: what a kernel checks before it saves half-done work to leave (Ctx's
/// kill_requested). A false "yes" costs only the save; a false "no" delays the leave by one
/// check. Adversarial schedules say yes, so that the save path runs under test.
COOP_HD constexpr bool kill_wanted(std::uint32_t id, std::uint64_t word, std::uint32_t target,
                                   std::uint32_t flags) {
  if (flags & flag_no_resize) return false;
  if (flags & flag_adversarial) return true;
  const std::uint32_t m = active_of(word);
  if (target >= m) return false;
  if (flags & flag_any_order) return true;
  const std::uint32_t keep = (flags & flag_kill_zero) ? 0u : 1u;
  // batch_kill takes the top ids [floor, M). Target 0 with workgroup 0 alone: the scheduler
  // paused it (device_target) or, for a restartable kernel, suspends the job, and the offer
  // waits or leaves: a kernel that saves half-done work should do it here, not one tile later.
  return id >= (target > keep ? target : keep) || (target == 0 && m == 1);
}

/// Whether request_fork could add workgroups, judged from a membership word and a target read
/// earlier (Ctx's poll_barrier). Adversarial schedules say yes (but adversarial-shrink, which
/// never grows), so that forks happen under test.
COOP_HD constexpr bool fork_wanted(std::uint64_t word, std::uint32_t target, std::uint32_t flags) {
  if (flags & (flag_no_resize | flag_no_grow)) return false;
  return (flags & flag_adversarial) != 0 || target > active_of(word);
}
/// poll_barrier's answer packed in one word (bit 0 kill, bit 1 fork), for a broadcast.
COOP_HD constexpr std::uint32_t polled_bits(bool kill, bool fork) {
  return (kill ? 1u : 0u) | (fork ? 2u : 0u);
}
COOP_HD constexpr Polled polled_of(std::uint32_t bits) {
  return Polled{(bits & 1u) != 0, (bits & 2u) != 0};
}

inline constexpr std::uint32_t kIdWords = (kMaxGroupsLimit + 64) / 64;

/// The scheduler's request word: the target M (bits 0-30) and the suspend bit (31). One word,
/// so that one load (or one value a backend keeps from its last load) tells thread 0 all the
/// scheduler wants, and one write from the host changes it.
inline constexpr std::uint32_t kSuspendBit = 1u << 31;
COOP_HD constexpr std::uint32_t target_of(std::uint32_t request) { return request & ~kSuspendBit; }
COOP_HD constexpr bool suspend_of(std::uint32_t request) { return (request & kSuspendBit) != 0; }
COOP_HD constexpr std::uint32_t request_word(std::uint32_t target, bool suspend) {
  return (target & ~kSuspendBit) | (suspend ? kSuspendBit : 0u);
}

/// Scheduler channel of one job. The scheduler writes only `request` (a plain store: on the GPU
/// it arrives by a stream write or a copy from the host, so it cannot take part in a CAS) and
/// `abort`; everything else is written by the workgroups. The membership word, which every
/// barrier arrival updates atomically and every waiter polls, has a line of its own; the
/// request and the release word share another.
struct Channel {
  alignas(128) std::uint64_t membership = 0;  ///< the membership word (layout above)
  std::uint32_t kill_ready = 0;               ///< workgroups announced for a batch exit (a hint)
  std::uint32_t finished = 0;                 ///< workgroups that returned from the kernel normally
  std::uint32_t abort = 0;                    ///< set when the job must stop (error elsewhere)
  std::uint32_t suspended = 0;                ///< set by workgroup 0 when a suspension took effect

  /// Written by workgroup 0 to end a held barrier (one whose hold bit was set): the threshold at
  /// and above which ids leave (bits 32-47; kKeepAll: none) and M after the barrier (48-63).
  /// One word, so a waiting workgroup learns both with one load. Barriers that nothing held end
  /// by the arrivals alone and leave it as it is.
  alignas(128) std::uint64_t release = 0;
  /// What the scheduler wants (request_word). The target: the M it wants, never above N: M
  /// above it is a kill request (W = M - target), M below it a grant of capacity that is free
  /// now (G = target - M). The suspend bit: the next resizing barrier suspends the job (M -> 0,
  /// workgroup 0's transmitted state and the resume point are kept for resume()).
  std::uint32_t request = 0;
  std::uint32_t max_groups = 0;  ///< N
  std::uint32_t flags = 0;
  std::uint64_t seed = 0;

  alignas(128) std::uint32_t kills = 0;
  std::uint32_t forks = 0;
  std::uint32_t forked_groups = 0;
  std::uint32_t resizes = 0;
  std::uint32_t barriers = 0;  ///< reached by workgroup 0 (GPU: added every 32 and at its exit)
  std::uint32_t suspends = 0;

  /// Workgroups waiting at offer_kill to leave in a batch (bit per id).
  alignas(128) std::uint64_t announced[kIdWords] = {};
  /// Present ids, used only with kill_any_order (ids are then not a contiguous range).
  alignas(128) std::uint64_t present[kIdWords] = {};
};

/// What thread 0 of a workgroup read of its channel: the membership word and the request word.
/// A backend that keeps one between primitives (the GPU's, for the offer vote) takes those
/// loads off the critical path; a stale view errs safely (an offer that declines once more, or
/// runs the protocol for nothing).
struct ChannelView {
  std::uint64_t membership = 0;
  std::uint32_t request = 0;
};
/// Workgroup 0 adds its count of barriers to the channel's every this many (and when it leaves).
inline constexpr std::uint32_t kBarrierCountBatch = 32;

/// What a protocol step waits for, reported to the backend (watchdog, diagnostics).
enum class WaitKind : std::uint8_t {
  none,
  barrier_master,
  barrier_slave,
  batch_kill,
  id_claim,
  paused,  ///< workgroup 0 alone, paused while a task holds the rest (not a stall)
};

/// The target the workgroups read for the scheduler's target `t` in a job of N = `n`: at most
/// N (so that a resizing barrier tells whether it must resize from the target and M alone).
/// `pause`: a job the scheduler shrank to workgroup 0 for a task (t = 1) should pause that
/// workgroup until the task ends; it reads target 0, which its offers and resizing barriers
/// take as "wait here" once it is alone (M = 1). Not for jobs that may kill workgroup 0 (target
/// 0 removes it) or never resize.
COOP_HD constexpr std::uint32_t device_target(std::uint32_t t, std::uint32_t n, bool pause,
                                              std::uint32_t flags) {
  if (t > n) t = n;
  return pause && t == 1 && !(flags & (flag_kill_zero | flag_no_resize)) ? 0u : t;
}

/// splitmix64: the adversarial policy's decisions are a pure function of their inputs.
COOP_HD constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Sets up a channel for a (re)start with workgroups [0, m), keeping the scheduler's target.
/// Only while no workgroup of the job runs.
COOP_HD inline void reset_channel(Channel& ch, std::uint32_t m) {
  // None arriving, leaving or held, the barrier armed; the version goes on.
  ch.membership = with_active(bump_version(ch.membership) & (0xffffull << 32), m);
  ch.release = 0;
  ch.request = request_word(target_of(ch.request), false);
  ch.suspended = 0;
  ch.finished = 0;
  ch.kill_ready = 0;
  for (auto& w : ch.announced) w = 0;
  for (auto& w : ch.present) w = 0;
  for (std::uint32_t i = 0; i < m; ++i) ch.present[i / 64] |= 1ull << (i % 64);
}

/// Membership as the scheduler sees it, computed from a channel.
COOP_HD inline Membership view_membership(Channel& ch) {
  Membership v;
  const std::uint64_t word = atomic<std::uint64_t>(ch.membership).load();
  const std::uint32_t t = target_of(atomic<std::uint32_t>(ch.request).load(order::relaxed));
  v.active = active_of(word);
  v.kill_wanted = wanted_back(word, t, ch.flags);
  v.kill_ready = atomic<std::uint32_t>(ch.kill_ready).load(order::relaxed);
  std::uint32_t top = t < ch.max_groups ? t : ch.max_groups;
  v.fork_granted = top > v.active ? top - v.active : 0;
  return v;
}

// Env concept (provided by each backend, used by thread 0 of a workgroup):
//   void relax(WaitKind, int site);                 one spin-wait step (may yield / back off)
//   void spawn(uint32_t id, uint32_t count, int site); start workgroups id..id+count-1 resuming
//                                                     at `site` with the caller's transmit
//   void suspend(int site);                         workgroup 0 keeps its transmit for resume
//   uint64_t random();                              next adversarial decision of this workgroup
//   void on_membership(uint32_t before, uint32_t after);   M changed (timeline, scheduler)
//   void barrier_unreachable(int site, uint32_t arrived, uint32_t active, uint32_t finished);
//   void invariant_failed(const char* what);       protocol/scheduler bug or misuse
//   void abort();                                   the job is stopping (cancelled or failed):
//                                                   leave the kernel now, not returning

/// A barrier's answer as a workgroup-level primitive passes it on: bit 0 = removed, M above.
COOP_HD constexpr std::uint64_t barrier_result(std::uint32_t m_after) {
  return m_after == 0 ? 1u : std::uint64_t(m_after) << 1;
}

template <class Env>
class Protocol {
 public:
  COOP_HD Protocol(Channel& ch, Env& env) : ch_(ch), env_(env), flags_(ch.flags) {}
  /// With the job's flags already at hand (a GPU kernel has them in its parameters).
  COOP_HD Protocol(Channel& ch, Env& env, std::uint32_t flags)
      : ch_(ch), env_(env), flags_(flags) {}

  COOP_HD std::uint32_t active() const { return active_of(word().load()); }
  COOP_HD std::uint32_t max_groups() const { return ch_.max_groups; }

  /// query(): how many workgroups the scheduler wants back now.
  COOP_HD std::uint32_t query() const { return wanted_back(word().load(), target(), flags_); }

  /// kill_wanted on fresh values.
  COOP_HD bool kill_wanted(std::uint32_t id) const {
    return detail::kill_wanted(id, word().load(), target(), flags_);
  }

  /// fork_wanted on fresh values.
  COOP_HD bool fork_wanted() const { return detail::fork_wanted(word().load(), target(), flags_); }

  /// offer_kill by workgroup `id`; true if the workgroup must leave the kernel now.
  COOP_HD bool offer_kill(std::uint32_t id, int site) {
    if (flags_ & flag_no_resize) return false;
    // Relaxed loads, issued together before any branch on them: on the GPU each load a branch
    // waits for, or an acquire load, would add an L2 round trip to a leaving workgroup's path
    // (the commit's CAS orders what matters).
    const std::uint64_t raw = word().load(order::relaxed);
    if (flags_ & flag_adversarial) return adversarial_kill(id, raw);
    const std::uint32_t r = request();
    const std::uint32_t aborted = atomic<std::uint32_t>(ch_.abort).load(order::relaxed);
    const std::uint32_t finished = atomic<std::uint32_t>(ch_.finished).load(order::relaxed);
    const std::uint32_t t = target_of(r);
    if (t >= active_of(raw)) return false;  // declined: nothing asked (a stale vote)
    // A cancelled job (target 0) stops here; the abort word shares the membership word's line.
    if (aborted != 0) env_.abort();
    if (active_of(raw) == 1 && (flags_ & flag_restartable)) return vacate(id, raw, r, finished);
    if (flags_ & flag_any_order) return kill_any(id, raw);
    return batch_kill(id, raw, t, finished, site);
  }

  /// After offer_kill declined (the backend calls it, on the same thread): a paused workgroup 0
  /// waits here (wait_while_paused). Apart from offer_kill because on the GPU even a small wait
  /// inside it took the kernels that offer up a register step (game 32 -> 38: 8 -> 6 blocks
  /// per SM), and after it returns none. Returns true when the workgroup must leave after all:
  /// a restartable kernel's suspension came while it waited (vacate).
  COOP_HD bool pause_at_offer(int site) {
    if ((flags_ & (flag_kill_zero | flag_no_resize)) || active() != 1) return false;
    for (;;) {
      wait_while_paused(site, false);
      if (!(flags_ & flag_restartable)) return false;
      // The wait ended: the target rose (go on), or a suspension came (leave). vacate may
      // decline for a moment (workgroups just killed still count as leaving): wait for it
      // rather than compute beside the task.
      const std::uint32_t r = request();
      if (target_of(r) != 0) return false;
      const std::uint32_t finished = atomic<std::uint32_t>(ch_.finished).load();
      if (vacate(0, word().load(), r, finished)) return true;
      if (finished != 0) return false;  // the kernel is ending: workgroup 0 ends it
      if (atomic<std::uint32_t>(ch_.abort).load(order::relaxed) != 0) env_.abort();
      env_.relax(WaitKind::paused, site);
    }
  }

  /// request_fork by workgroup `id` at resume point `site`; returns the number of new workgroups.
  COOP_HD std::uint32_t request_fork(std::uint32_t id, int site) {
    (void)id;
    if (flags_ & (flag_no_resize | flag_no_grow)) return 0;
    std::uint64_t raw = word().load();
    for (;;) {
      std::uint32_t m = active_of(raw);
      std::uint32_t room = ch_.max_groups - m;
      std::uint32_t k;
      if (flags_ & flag_adversarial) {
        k = room == 0 ? 0 : std::uint32_t(env_.random() % (room + 1));
      } else {
        std::uint32_t t = target();
        if (t <= m) return 0;  // the hot path: two loads
        k = t - m < room ? t - m : room;
      }
      if (k == 0) return 0;
      // k = 0 is always legal: never add while removed workgroups are still on their way out,
      // nor while a barrier fills (its arrivals are counted against M).
      if (leaving_of(raw) != 0 || filling(raw) != 0) return 0;
      if (m + k > ch_.max_groups) env_.invariant_failed("fork beyond max_groups (N)");
      if (word().cas(raw, with_active(raw, m + k))) {
        start_groups(m, k, site);
        atomic<std::uint32_t>(ch_.forks).fetch_add(1, order::relaxed);
        env_.on_membership(m, m + k);
        return k;
      }
      if (flags_ & flag_adversarial) return 0;  // state moved: a fresh decision next time
    }
  }

  /// A global barrier (resizing or not) reached by thread 0 of workgroup `id`, after its
  /// workgroup barrier. Returns M after the barrier, or 0 if the workgroup was removed by a
  /// resizing barrier (workgroup 0 only when the job was suspended).
  ///
  /// When nothing is asked the barrier is one atomic add per member and a wait for the parity
  /// to flip, like a plain grid barrier. When the scheduler wants a resize or a suspension, or
  /// the policy is adversarial, the barrier is held: workgroup 0 (which owns the transmitted
  /// state new workgroups inherit) decides once every member is there and publishes the
  /// outcome in the release word, and the others wait for that.
  ///
  /// `view` (GPU): at a resizing barrier, workgroup 0's view of the request word read as it
  /// reached the barrier (the backend issues the load before its workgroup barrier, to hide
  /// it); every member refreshes the membership and request words in it while the barrier
  /// fills, for its next offer. `count` (GPU): workgroup 0's barriers not yet added to the
  /// channel's count. Without them (CPU backend) workgroup 0 reads the request here and counts
  /// each barrier in the channel at once.
  COOP_HD std::uint32_t barrier(std::uint32_t id, bool resizing, int site,
                                ChannelView* view = nullptr, std::uint32_t* count = nullptr) {
    // Workgroup 0 holds a resizing barrier for its decision when the scheduler wants something
    // (always under the adversarial policy); the others read nothing first. It reads the request
    // before arriving, so that a request made before the barrier is honoured at it. Target 0
    // (a pause, device_target) decides as target 1 would.
    bool pause = false;
    if (resizing && id == 0) {
      ChannelView now;
      if (view) {
        now = *view;
      } else {
        now.membership = word().load(order::relaxed);
        now.request = request();
      }
      pause = target_of(now.request) == 0 && !(flags_ & flag_adversarial);
      const bool hold =
          (flags_ & flag_adversarial) || wants_decision(now.request, active_of(now.membership));
      if (hold) word().fetch_or(hold_bit(parity_of(now.membership)), order::relaxed);
    }
    // Release: what this workgroup wrote is visible to whoever sees the barrier end (one
    // release add, as CUDA's grid barrier, rather than a fence and a relaxed add). Acquire too,
    // for the last arrival, which sees the others' adds in it: an acquire fence after the add
    // held the last arrival, and so the next barrier, for a memory round trip (on an H200 the
    // barrier without a resize took 1.20x grid.sync at 6 workgroups per SM with the fence,
    // 1.17-1.18x without).
    const std::uint64_t before = word().fetch_add(kArrivedOne, order::acq_rel);
    if (id == 0) count_barrier(count);
    if (view) {
      // The next offer's view, read while this barrier fills (the wait hides the load).
      view->membership = before ^ (1ull << 63);  // the parity the next barrier has
      view->request = request();
    }
    const std::uint32_t m = active_of(before), parity = parity_of(before);
    const std::uint32_t decisions = decisions_of(before);
    if (parity_of(before + kArrivedOne) != parity) {  // the last arrival: the barrier is complete
      if (!((before + kArrivedOne) & hold_bit(parity))) {
        passed(id, m);
        // Alone and paused (the barrier completed with its arrival).
        return pause ? alone_at_barrier(m, site, view) : m;
      }
      if (id == 0) return decided(parity, resizing, site, view);
    }
    for (std::uint32_t spins = 1;; ++spins) {
      // Acquire polls, as CUDA's grid barrier: no fence once the barrier ends.
      const std::uint64_t w = word().load(order::acquire);
      if (decisions_of(w) != decisions) {
        // Workgroup 0 decided this (held) barrier. No later decision can come before we have
        // seen this one: the next held barrier needs us, or, if we were removed here, waits
        // until we no longer count as leaving.
        const std::uint64_t r = atomic<std::uint64_t>(ch_.release).load(order::relaxed);
        if (!(resizing && id >= threshold_of(r))) return std::uint32_t(r >> 48);
        word().fetch_sub(kLeavingOne);  // removed: our id may be reused now
        return 0;
      }
      if (parity_of(w) != parity) {
        if (!(w & hold_bit(parity))) return passed(id, m);  // complete, and nothing held it
        if (id == 0) return decided(parity, resizing, site, view);
      }
      if ((spins & 1023) == 0) check_reachable(parity, site);
      env_.relax(WaitKind::barrier_slave, site);
    }
  }

  /// The request word as it is now (target and suspend bit).
  COOP_HD std::uint32_t request() const {
    return atomic<std::uint32_t>(ch_.request).load(order::relaxed);
  }

  /// Adds the barriers workgroup 0 counted in `count` to the channel's count (when it leaves).
  /// The count is read as volatile: its caller tests for thread 0, and a plain read the
  /// compiler made in every thread of the block ahead of that test (a shared-memory load cannot
  /// fault), which racecheck reported against thread 0's write below.
  COOP_HD void flush_barrier_count(std::uint32_t& count) {
    const std::uint32_t n = static_cast<volatile std::uint32_t&>(count);
    if (n == 0) return;
    atomic<std::uint32_t>(ch_.barriers).fetch_add(n, order::relaxed);
    count = 0;
  }

  /// A workgroup returned from the kernel normally.
  COOP_HD void finished(std::uint32_t id) {
    (void)id;
    atomic<std::uint32_t>(ch_.finished).fetch_add(1);
  }

 private:
  COOP_HD atomic<std::uint64_t> word() const { return atomic<std::uint64_t>(ch_.membership); }
  COOP_HD std::uint32_t target() const { return target_of(request()); }
  COOP_HD std::uint32_t keep() const { return (flags_ & flag_kill_zero) ? 0 : 1; }

  // The last member (M = 1) while the target reads 0: the scheduler paused it (device_target)
  // because a task holds every other workgroup of the job. It waits doing nothing, so that the
  // task's blocks beside it on its SM get the issue slots, until the target rises (no task
  // runs), the job stops or, after a resizing barrier (`at_barrier`), a suspension is asked,
  // which its next resizing barrier performs. M cannot change meanwhile (only workgroups
  // change it, and the others are gone). Never while another member runs: one waiting could
  // hold the others at a barrier, and they would never reach the offer that gives the task
  // their slots. Inlined and small, and only after the offer or the barrier: on the GPU, as a
  // member function not inlined it took the protocol's environment out of registers into local
  // memory, which cost the paper's phased apps ~9 % (Table 2 on an H200: 1.10 against 1.01), and
  // as a free function not inlined it raised the kernels' register counts.
  COOP_HD void wait_while_paused(int site, bool at_barrier) {
    atomic<std::uint32_t> abort(ch_.abort);
    const bool leaves_here = at_barrier || (flags_ & flag_restartable);
    for (std::uint32_t r = request(); target_of(r) == 0 && !(leaves_here && suspend_of(r));
         r = request()) {
      if (abort.load(order::relaxed) != 0) env_.abort();
      env_.relax(WaitKind::paused, site);
    }
  }

  // Workgroup 0 after deciding a held barrier: a resizing barrier that took the job down to it
  // for a task (target 0: paused) waits there for the task's end.
  COOP_HD std::uint32_t decided(std::uint32_t parity, bool resizing, int site, ChannelView* view) {
    const std::uint32_t m = decide(parity, resizing, site);
    return resizing && target_of(request()) == 0 ? alone_at_barrier(m, site, view) : m;
  }

  // Workgroup 0 alone after a resizing barrier while the target reads 0 (a task holds the rest of
  // the job): it waits there, doing nothing, and when the task ends the job grows at this
  // barrier, so that the next phase runs on the workgroups the target gives back rather than on
  // workgroup 0 alone until its next barrier (on R-MAT a phase alone is about the whole run).
  // A suspension asked meanwhile happens at the next resizing barrier. Returns M.
  COOP_HD std::uint32_t alone_at_barrier(std::uint32_t m, int site, ChannelView* view) {
    if (m != 1 || (flags_ & (flag_kill_zero | flag_no_resize | flag_adversarial))) return m;
    wait_while_paused(site, true);
    const std::uint32_t r = request();
    if (view) view->request = r;  // the next offer's vote sees the task end
    std::uint64_t raw = word().load();
    const std::uint32_t to = resize_target(target_of(r), m);
    // As a growing barrier decides; not while workgroups removed here are still leaving.
    if (suspend_of(r) || (flags_ & flag_no_grow) || to <= m || leaving_of(raw) != 0 ||
        filling(raw) != 0 || !word().cas(raw, with_active(raw, to)))
      return m;
    atomic<std::uint32_t>(ch_.resizes).fetch_add(1, order::relaxed);
    env_.on_membership(m, to);
    start_groups(m, to - m, site);
    return to;
  }

  // A restartable kernel (KernelTraits::restartable) that the scheduler suspends whole (the
  // suspend bit, the target at 0): its last member leaves at an offer, as every member leaves
  // at a resizing barrier that suspends, keeping workgroup 0's transmitted state, and the job
  // restarts at resume point 0 (what request_fork(0) starts). Not while workgroups that
  // returned say the kernel is ending (it ends), nor while workgroups just removed are still
  // leaving (a restart rewrites the channel): pause_at_offer waits for them.
  COOP_HD bool vacate(std::uint32_t id, std::uint64_t raw, std::uint32_t request,
                      std::uint32_t finished) {
    if (id != 0 || !suspend_of(request) || target_of(request) != 0 || finished != 0 ||
        active_of(raw) != 1 || filling(raw) != 0 || leaving_of(raw) != 0)
      return false;
    if (!word().cas(raw, with_active(raw, 0))) return false;
    leave_id(id);
    env_.suspend(0);
    atomic<std::uint32_t>(ch_.suspends).fetch_add(1, order::relaxed);
    atomic<std::uint32_t>(ch_.suspended).store(1);
    env_.on_membership(1, 0);
    return true;
  }

  COOP_HD bool removable(std::uint32_t id, std::uint32_t m) const {
    if (m == 0) return false;
    if (id == 0 || m == 1) return m == 1 && id == 0 && (flags_ & flag_kill_zero);
    return true;
  }

  // Default semantics: the top workgroups [floor, M) leave together, floor = max(target, 1).
  // Each wanted workgroup announces itself (a bit per id) and waits; one that finds the whole
  // window announced commits M = floor for all of them with one CAS, so ids stay contiguous and
  // the scheduler gets all its slots after one round instead of a chain of one kill per loop
  // iteration. A waiting workgroup withdraws (its offer is a no-op) if it is no longer wanted,
  // a barrier is in progress or the kernel is finishing, so that it never waits on a workgroup
  // that will not come. Withdrawing clears the bit and then bumps the version, so a commit
  // decided on a stale scan fails.
  // `raw`, `t`, `finished`: the membership word, the target and the finished count as
  // offer_kill loaded them (its first round; later rounds load them again).
  COOP_HD bool batch_kill(std::uint32_t id, std::uint64_t raw, std::uint32_t t,
                          std::uint32_t finished, int site) {
    atomic<std::uint64_t> announced(ch_.announced[id / 64]);
    atomic<std::uint32_t> ready(ch_.kill_ready);
    const std::uint64_t bit = 1ull << (id % 64);
    bool waiting = false;
    for (;;) {
      std::uint32_t m = active_of(raw);
      if (waiting && id >= m) {  // another member of our batch committed it
        announced.fetch_and(~bit);
        ready.fetch_sub(1, order::relaxed);
        word().fetch_sub(kLeavingOne);
        return true;
      }
      std::uint32_t floor = t > keep() ? t : keep();
      bool wanted = id >= floor && id < m;
      bool give_up = filling(raw) != 0 || finished != 0;
      if (!wanted || give_up) {
        if (!waiting) return false;
        announced.fetch_and(~bit);
        for (;;) {
          raw = word().load();
          if (id >= active_of(raw)) {  // committed before we withdrew: we leave after all
            ready.fetch_sub(1, order::relaxed);
            word().fetch_sub(kLeavingOne);
            return true;
          }
          if (word().cas(raw, bump_version(raw))) {
            ready.fetch_sub(1, order::relaxed);
            return false;
          }
        }
      }
      std::uint32_t batch = m - floor;
      // Alone in the batch: nobody to wait for, so no announcement (five fewer round trips on
      // the path of a one-workgroup task); the version bump still fails a commit that a
      // workgroup below floor decided on an older state.
      const bool alone = !waiting && batch == 1;
      if (!waiting && !alone) {
        announced.fetch_or(bit);
        ready.fetch_add(1, order::relaxed);
        waiting = true;
      }
      if (alone || (ready.load(order::relaxed) >= batch && all_announced(floor, m))) {
        // The other members of the batch are counted as leaving in the same CAS.
        if (word().cas(raw, bump_version(with_active(raw, floor) + (batch - 1) * kLeavingOne))) {
          if (waiting) {
            announced.fetch_and(~bit);
            ready.fetch_sub(1, order::relaxed);
          }
          atomic<std::uint32_t>(ch_.kills).fetch_add(batch, order::relaxed);
          env_.on_membership(m, floor);
          return true;
        }
        t = target();  // raw holds the new state
        finished = atomic<std::uint32_t>(ch_.finished).load(order::relaxed);
        continue;
      }
      env_.relax(WaitKind::batch_kill, site);
      raw = word().load();
      t = target();
      finished = atomic<std::uint32_t>(ch_.finished).load(order::relaxed);
    }
  }

  COOP_HD bool all_announced(std::uint32_t from, std::uint32_t to) const {
    for (std::uint32_t i = from; i < to;) {
      std::uint32_t w = i / 64, lo = i % 64;
      std::uint32_t hi = (to - w * 64) < 64 ? (to - w * 64) : 64;
      std::uint64_t mask = (hi == 64 ? ~0ull : ((1ull << hi) - 1)) & ~((1ull << lo) - 1);
      if ((atomic<std::uint64_t>(ch_.announced[w]).load() & mask) != mask) return false;
      i = w * 64 + hi;
    }
    return true;
  }

  COOP_HD bool adversarial_kill(std::uint32_t id, std::uint64_t raw) {
    std::uint32_t m = active_of(raw);
    bool eligible =
        (flags_ & flag_any_order) ? removable(id, m) : (id + 1 == m && removable(id, m));
    // Never while a barrier fills: the arrivals are counted against M.
    if (!eligible || filling(raw) != 0 || (env_.random() & 1u) == 0) return false;
    if (!word().cas(raw, with_active(raw, m - 1))) return false;
    leave_id(id);
    atomic<std::uint32_t>(ch_.kills).fetch_add(1, order::relaxed);
    env_.on_membership(m, m - 1);
    return true;
  }

  COOP_HD bool kill_any(std::uint32_t id, std::uint64_t raw) {
    for (;;) {
      std::uint32_t m = active_of(raw);
      if (target() >= m || !removable(id, m) || filling(raw) != 0) return false;
      if (word().cas(raw, with_active(raw, m - 1))) {
        leave_id(id);
        atomic<std::uint32_t>(ch_.kills).fetch_add(1, order::relaxed);
        env_.on_membership(m, m - 1);
        return true;
      }
    }
  }

  static constexpr std::uint32_t kKeepAll = 0xffffu;  // above any id
  COOP_HD static std::uint64_t release_word(std::uint32_t threshold, std::uint32_t m) {
    return std::uint64_t(m) << 48 | std::uint64_t(threshold & 0xffffu) << 32;
  }
  COOP_HD static std::uint32_t threshold_of(std::uint64_t w) {
    return std::uint32_t((w >> 32) & 0xffffu);
  }
  // The M a resizing barrier moves to for target t (the scheduler-driven rule).
  COOP_HD std::uint32_t resize_target(std::uint32_t t, std::uint32_t m) const {
    if (t < m) {
      const std::uint32_t to = (flags_ & flag_plain_barrier) ? m - 1 : t;
      return to > 1 ? to : 1;
    }
    return t < ch_.max_groups ? t : ch_.max_groups;
  }
  // Whether a resizing barrier must wait for workgroup 0's decision: the scheduler wants a
  // resize or a suspension (resize_target(t, m) != m, read without N: the target is at most N,
  // device_target, and M at least 1).
  COOP_HD bool wants_decision(std::uint32_t request, std::uint32_t m) const {
    const std::uint32_t t = target_of(request);
    return suspend_of(request) || (!(flags_ & flag_no_resize) && (t > m || (t < m && m > 1)));
  }
  // A barrier that nothing held has ended for member `id`: workgroup 0 arms the arrival field
  // for the next one (M is still the barrier's: kills and forks wait for this), by a reduction
  // it does not wait for: the next barrier waits for workgroup 0's arrival.
  COOP_HD std::uint32_t passed(std::uint32_t id, std::uint32_t m) {
    if (id == 0) add_to_global(ch_.membership, std::uint64_t(kArrivalSpan - m) * kArrivedOne);
    return m;
  }
  // Workgroup 0 counts the barriers it arrives at (every barrier of the job: it is a member as
  // long as the job runs). On the GPU into `count`, added to the channel in batches: an add
  // right before the next barrier's (release) arrival would make that arrival wait for it.
  COOP_HD void count_barrier(std::uint32_t* count) {
    if (!count) {
      atomic<std::uint32_t>(ch_.barriers).fetch_add(1, order::relaxed);
      return;
    }
    if (++*count == kBarrierCountBatch) flush_barrier_count(*count);
  }

  // Nonzero while a barrier fills or is not armed yet: M must not change.
  COOP_HD static std::uint32_t filling(std::uint64_t raw) { return barrier_busy(raw) ? 1u : 0u; }

  // What workgroup 0 decides from, with every member waiting at the barrier.
  struct Snapshot {
    std::uint64_t membership = 0;
    std::uint32_t request = 0;
  };

  // Workgroup 0 at a held barrier, every member there: waits until workgroups removed earlier
  // are gone (a slow one must see its own removal before the release word changes, and its id
  // may be reused), decides a resize, releases, then starts new workgroups.
  COOP_HD std::uint32_t decide(std::uint32_t parity, bool resizing, int site) {
    Snapshot snap;
    while (leaving_of(snap.membership = word().load()) != 0)
      env_.relax(WaitKind::barrier_master, site);
    snap.request = request();
    const Resize r = resizing ? resize(site, snap) : Resize{kKeepAll, 0, 0};
    std::uint64_t w = word().load(order::relaxed);
    atomic<std::uint64_t>(ch_.release)
        .store(release_word(r.threshold, active_of(w)), order::relaxed);
    // The hold goes and the decision is counted in one step, after the release word (the
    // CAS's release order): a waiter that sees the count move reads the word this wrote.
    // Only leavers of earlier barriers change the word meanwhile.
    for (;;) {
      const std::uint64_t next =
          with_active((w & ~(hold_bit(parity) | 3 * kDecisionOne)) |
                          std::uint64_t((decisions_of(w) + 1) & 3u) * kDecisionOne,
                      active_of(w));
      if (word().cas(w, next, order::acq_rel)) break;
    }
    // New workgroups start only now: had they started before, they could count this barrier's
    // decision as one of their own.
    if (r.grow > 0) start_groups(r.first_new, r.grow, site);
    return r.threshold == 0 ? 0 : active_of(w);  // suspended: workgroup 0 leaves too
  }

  // A barrier can never complete once a member has returned from the kernel (M counts it).
  // Only while this barrier is still open: a workgroup that has not yet looked at a completion
  // must not blame the kernel for what others did after it.
  COOP_HD void check_reachable(std::uint32_t parity, int site) {
    const std::uint32_t done = atomic<std::uint32_t>(ch_.finished).load();
    if (done == 0) return;
    const std::uint64_t raw = word().load();
    const std::uint32_t arrived = barrier_arrivals(raw);
    if (parity_of(raw) != parity || arrived + done < active_of(raw)) return;
    env_.barrier_unreachable(site, arrived, active_of(raw), done);
  }

  struct Resize {
    std::uint32_t threshold;  ///< slaves with id >= threshold leave (0: suspended, all leave)
    std::uint32_t first_new;  ///< first id of the workgroups to start after the release
    std::uint32_t grow;       ///< how many to start
  };

  // The master's decision at a resizing barrier, with every member present.
  COOP_HD Resize resize(int site, const Snapshot& snap) {
    const Resize none{kKeepAll, 0, 0};
    // Fast path: nothing asked when the last workgroup arrived. (A request that lands during
    // the barrier is honoured at the next one.)
    if (!(flags_ & flag_adversarial) && !suspend_of(snap.request) &&
        ((flags_ & flag_no_resize) || target_of(snap.request) == active_of(snap.membership)))
      return none;
    std::uint64_t raw = snap.membership;
    for (;;) {
      std::uint32_t m = active_of(raw);
      std::uint32_t to = m;
      const bool suspend = suspend_of(atomic<std::uint32_t>(ch_.request).load());
      if (suspend) {
        to = 0;
      } else if (flags_ & flag_no_resize) {
        return none;
      } else if (flags_ & flag_adversarial) {
        to = 1 + std::uint32_t(env_.random() % (flags_ & flag_no_grow ? m : ch_.max_groups));
      } else {
        // Query barrier: everything above the target leaves at once. Plain barrier (paper
        // §4.2 without query): one workgroup per barrier. The paper's slaves offered on
        // arrival, which lets M change while late workgroups are still in the interval;
        // deciding here, with every workgroup present, keeps M stable between barriers.
        to = resize_target(target(), m);
      }
      if (to == m) return none;
      // The removed workgroups (all but this one when suspending) count as leaving until
      // they have seen the release.
      const std::uint32_t removed = to >= m ? 0 : to == 0 ? m - 1 : m - to;
      if (!word().cas(raw, with_active(raw, to) + removed * kLeavingOne)) continue;
      if (to == 0) {
        env_.suspend(site);
        atomic<std::uint32_t>(ch_.suspends).fetch_add(1, order::relaxed);
        atomic<std::uint32_t>(ch_.suspended).store(1);
      } else {
        atomic<std::uint32_t>(ch_.resizes).fetch_add(1, order::relaxed);
      }
      env_.on_membership(m, to);
      if (to > m) return {kKeepAll, m, to - m};
      if (to > 0) atomic<std::uint32_t>(ch_.kills).fetch_add(m - to, order::relaxed);
      std::uint32_t threshold = (flags_ & flag_any_order) && to > 0 ? drop_top_ids(m - to) : to;
      if (to == 0)
        for (std::uint32_t i = 0; i < m; ++i) leave_id(i);
      return {threshold, 0, 0};
    }
  }

  // Starts `k` workgroups; in any-order mode they take the lowest free ids.
  COOP_HD void start_groups(std::uint32_t first, std::uint32_t k, int site) {
    atomic<std::uint32_t>(ch_.forked_groups).fetch_add(k, order::relaxed);
    if (!(flags_ & flag_any_order)) {
      env_.spawn(first, k, site);
      return;
    }
    std::uint32_t started = 0;
    while (started < k) {
      for (std::uint32_t id = 0; id < ch_.max_groups && started < k; ++id) {
        std::uint64_t bit = 1ull << (id % 64);
        if (atomic<std::uint64_t>(ch_.present[id / 64]).fetch_or(bit) & bit) continue;
        env_.spawn(id, 1, site);
        ++started;
      }
      if (started < k) env_.relax(WaitKind::id_claim, site);  // a killed id not yet released
    }
  }

  COOP_HD void leave_id(std::uint32_t id) {
    if (flags_ & flag_any_order)
      atomic<std::uint64_t>(ch_.present[id / 64]).fetch_and(~(1ull << (id % 64)));
  }

  // Any-order shrink at a barrier: the `count` highest present ids leave; returns the lowest.
  COOP_HD std::uint32_t drop_top_ids(std::uint32_t count) {
    std::uint32_t id = ch_.max_groups;
    while (count > 0 && id > 0) {
      --id;
      std::uint64_t bit = 1ull << (id % 64);
      if (atomic<std::uint64_t>(ch_.present[id / 64]).load(order::relaxed) & bit) {
        leave_id(id);
        --count;
      }
    }
    return id;
  }

  Channel& ch_;
  Env& env_;
  std::uint32_t flags_;
};

}  // namespace coop::detail
