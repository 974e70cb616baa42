// The cooperative-kernel protocol: offer_kill, request_fork, query and the (resizing) global
// barrier, written once over coop::detail::atomic and run by thread 0 of a workgroup on every
// backend. The backend supplies an Env (see the concept below) for spinning, spawning new
// workgroups and recording events.
//
// State lives in a Channel in memory shared by the workgroups and the host scheduler (host memory
// on the CPU backend, device memory on the GPU). Membership is one 64-bit word holding
//   M (active workgroups), W (kills the scheduler wants), R (wanted workgroups ready to leave),
//   G (workgroups the scheduler grants to the next fork),
// so every change of membership is one compare-and-swap and kills and forks can never interleave
// into a state with duplicate or missing ids.
#pragma once

#include <cstdint>

#include "coop/atomic.hpp"
#include "coop/config.hpp"

namespace coop::detail {

struct Membership {
  std::uint32_t active = 0;        ///< M
  std::uint32_t kill_wanted = 0;   ///< W: workgroups the scheduler asks back
  std::uint32_t kill_ready = 0;    ///< R: wanted workgroups waiting at offer_kill (batch exit)
  std::uint32_t fork_granted = 0;  ///< G: capacity granted to the next request_fork / barrier
};

COOP_HD constexpr std::uint64_t pack(Membership m) {
  return std::uint64_t(m.active & 0xffffu) | std::uint64_t(m.kill_wanted & 0xffffu) << 16 |
         std::uint64_t(m.kill_ready & 0xffffu) << 32 |
         std::uint64_t(m.fork_granted & 0xffffu) << 48;
}
COOP_HD constexpr Membership unpack(std::uint64_t w) {
  return {std::uint32_t(w & 0xffffu), std::uint32_t(w >> 16 & 0xffffu),
          std::uint32_t(w >> 32 & 0xffffu), std::uint32_t(w >> 48 & 0xffffu)};
}

/// Per-job protocol flags, fixed at launch.
enum ChannelFlags : std::uint32_t {
  flag_adversarial = 1u << 0,    ///< decisions come from the seeded generator, not W/G
  flag_any_order = 1u << 1,      ///< App. B: any workgroup may be killed (ids not contiguous)
  flag_kill_zero = 1u << 2,      ///< App. B: workgroup 0 may be killed when it is the last
  flag_plain_barrier = 1u << 3,  ///< resizing barrier without query (one offer per arrival)
  flag_no_resize = 1u << 4,      ///< fixed policy / persistent mode: never kill or fork
};

inline constexpr std::uint32_t kIdWords = (kMaxGroupsLimit + 64) / 64;

/// Scheduler channel of one job. Hot fields sit on their own cache lines.
struct Channel {
  alignas(128) std::uint64_t membership = 0;
  std::uint32_t max_groups = 0;  ///< N
  std::uint32_t flags = 0;
  std::uint64_t seed = 0;
  std::uint32_t finished = 0;  ///< workgroups that returned from the kernel normally
  std::uint32_t abort = 0;     ///< set when the job must stop (error elsewhere)

  alignas(128) std::uint32_t arrived = 0;  ///< barrier arrivals in the current generation
  std::uint32_t generation = 0;
  std::uint32_t kill_threshold = 0;  ///< after a resizing barrier, ids >= this leave
  /// Removed workgroups that have not yet seen that they were removed. No workgroup is added
  /// while this is non-zero, so an id is never reused before its previous owner has left.
  std::uint32_t leaving = 0;

  alignas(128) std::uint32_t kills = 0;
  std::uint32_t forks = 0;
  std::uint32_t forked_groups = 0;
  std::uint32_t resizes = 0;
  std::uint32_t barriers = 0;

  /// Present ids, used only with kill_any_order (ids are then not a contiguous range).
  alignas(128) std::uint64_t present[kIdWords] = {};
};

/// What a protocol step waits for, reported to the backend (watchdog, diagnostics).
enum class WaitKind : std::uint8_t { none, barrier_master, barrier_slave, batch_kill, id_claim };

/// splitmix64: the adversarial policy's decisions are a pure function of their inputs.
COOP_HD constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Env concept (provided by each backend, used by thread 0 of a workgroup):
//   void relax(WaitKind, int site);                 one spin-wait step (may yield / back off)
//   void spawn(uint32_t id, uint32_t count, int site); start workgroups id..id+count-1 resuming
//                                                     at `site` with the caller's transmit
//   uint64_t random();                              next adversarial decision of this workgroup
//   void on_membership(uint32_t before, uint32_t after);   M changed (timeline)
//   void barrier_unreachable(int site, uint32_t arrived, uint32_t active, uint32_t finished);
//   void invariant_failed(const char* what);       protocol/scheduler bug or misuse

template <class Env>
class Protocol {
 public:
  COOP_HD Protocol(Channel& ch, Env& env) : ch_(ch), env_(env), flags_(ch.flags) {}

  COOP_HD Membership membership(order o = order::acquire) const {
    return unpack(atomic<std::uint64_t>(ch_.membership).load(o));
  }
  COOP_HD std::uint32_t active() const { return membership().active; }
  COOP_HD std::uint32_t max_groups() const { return ch_.max_groups; }

  /// query(): how many workgroups the scheduler wants back now.
  COOP_HD std::uint32_t query() const { return membership().kill_wanted; }

  /// offer_kill by workgroup `id`; true if the workgroup must leave the kernel now.
  COOP_HD bool offer_kill(std::uint32_t id, int site) {
    if (flags_ & flag_no_resize) return false;
    std::uint64_t raw = atomic<std::uint64_t>(ch_.membership).load();
    Membership s = unpack(raw);
    if (flags_ & flag_adversarial) return adversarial_kill(id, raw);
    if (s.kill_wanted == 0) return false;  // the hot path: one load
    if (flags_ & flag_any_order) return kill_any(id, raw);
    return batch_kill(id, raw, site);
  }

  /// request_fork by workgroup `id` at resume point `site`; returns the number of new workgroups.
  COOP_HD std::uint32_t request_fork(std::uint32_t id, int site) {
    (void)id;
    if (flags_ & flag_no_resize) return 0;
    atomic<std::uint64_t> word(ch_.membership);
    std::uint64_t raw = word.load();
    for (;;) {
      Membership s = unpack(raw);
      std::uint32_t room = ch_.max_groups - s.active;
      std::uint32_t k;
      if (flags_ & flag_adversarial) {
        k = room == 0 ? 0 : std::uint32_t(env_.random() % (room + 1));
      } else {
        if (s.fork_granted == 0 || s.kill_wanted != 0) return 0;  // hot path: one load
        k = s.fork_granted < room ? s.fork_granted : room;
      }
      if (k == 0) return 0;
      // k = 0 is always legal: never add while removed workgroups are still on their way out.
      if (atomic<std::uint32_t>(ch_.leaving).load() != 0) return 0;
      Membership next = s;
      next.active += k;
      if (!(flags_ & flag_adversarial)) next.fork_granted -= k;
      if (next.active > ch_.max_groups) env_.invariant_failed("fork beyond max_groups (N)");
      if (word.cas(raw, pack(next))) {
        start_groups(s.active, k, site);
        atomic<std::uint32_t>(ch_.forks).fetch_add(1, order::relaxed);
        env_.on_membership(s.active, next.active);
        return k;
      }
      if (flags_ & flag_adversarial) return 0;  // state moved: a fresh decision next time
    }
  }

  /// A global barrier (resizing or not) reached by thread 0 of workgroup `id`, after its
  /// workgroup barrier. Returns true if the workgroup was removed by a resizing barrier.
  COOP_HD bool barrier(std::uint32_t id, bool resizing, int site) {
    bool may_resize = resizing && !(flags_ & flag_no_resize);
    atomic<std::uint32_t> arrived(ch_.arrived), generation(ch_.generation);
    std::uint32_t gen = generation.load();
    arrived.fetch_add(1);
    if (id == 0) {
      master_wait(site);
      arrived.store(0, order::relaxed);
      Resize r = may_resize ? resize() : Resize{ch_.max_groups, 0, 0, 0};
      atomic<std::uint32_t>(ch_.kill_threshold).store(r.threshold, order::relaxed);
      if (r.removed) atomic<std::uint32_t>(ch_.leaving).fetch_add(r.removed, order::relaxed);
      atomic<std::uint32_t>(ch_.barriers).fetch_add(1, order::relaxed);
      generation.store(gen + 1);
      // New workgroups start only now: had they started before the release they could read the
      // old generation at the next barrier and pass it early.
      if (r.grow > 0) start_groups(r.first_new, r.grow, site);
      return false;
    }
    while (generation.load() == gen) env_.relax(WaitKind::barrier_slave, site);
    if (!may_resize) return false;
    if (id < atomic<std::uint32_t>(ch_.kill_threshold).load(order::relaxed)) return false;
    atomic<std::uint32_t>(ch_.leaving).fetch_sub(1);  // the master may now reuse our id
    return true;
  }

  /// A workgroup returned from the kernel normally.
  COOP_HD void finished(std::uint32_t id) {
    (void)id;
    atomic<std::uint32_t>(ch_.finished).fetch_add(1);
  }

  /// Marks ids [0, m) present (any-order mode bookkeeping) at launch.
  COOP_HD static void init_present(Channel& ch, std::uint32_t m) {
    for (std::uint32_t i = 0; i < m; ++i) ch.present[i / 64] |= 1ull << (i % 64);
  }

 private:
  COOP_HD bool removable(std::uint32_t id, const Membership& s) const {
    if (s.active == 0) return false;
    if (id == 0 || s.active == 1) return s.active == 1 && id == 0 && (flags_ & flag_kill_zero);
    return true;
  }

  // Default semantics: the W top workgroups leave together. Each wanted workgroup announces
  // itself (R += 1); the one that makes R == W commits M -= W for all of them at once, so the
  // ids stay contiguous and the scheduler gets all W slots after one round instead of a chain
  // of one kill per loop iteration. A waiting workgroup gives up (offer is a no-op) if a barrier
  // is in progress or the kernel is finishing, so that it can never wait on a workgroup that
  // will not come.
  COOP_HD bool batch_kill(std::uint32_t id, std::uint64_t raw, int site) {
    atomic<std::uint64_t> word(ch_.membership);
    bool announced = false;
    for (;;) {
      Membership s = unpack(raw);
      if (announced && id >= s.active) {  // our batch was committed
        atomic<std::uint32_t>(ch_.leaving).fetch_sub(1);
        return true;
      }
      // Workgroup 0 is never part of a batch unless the kernel allows killing it.
      std::uint32_t keep = (flags_ & flag_kill_zero) ? 0 : 1;
      std::uint32_t batch = s.active > keep ? s.active - keep : 0;
      if (s.kill_wanted < batch) batch = s.kill_wanted;
      bool wanted = batch > 0 && id + batch >= s.active && id < s.active;
      bool give_up = atomic<std::uint32_t>(ch_.arrived).load(order::relaxed) != 0 ||
                     atomic<std::uint32_t>(ch_.finished).load(order::relaxed) != 0;
      if (!announced) {
        if (!wanted || give_up) return false;
        Membership next = s;
        bool commit = s.kill_ready + 1 >= batch;
        if (commit) {
          next.active -= batch;
          next.kill_wanted -= batch;
          next.kill_ready = 0;
          // Counted before the commit is visible, so that no fork slips in between.
          if (batch > 1) atomic<std::uint32_t>(ch_.leaving).fetch_add(batch - 1);
        } else {
          next.kill_ready += 1;
        }
        if (!word.cas(raw, pack(next))) {
          if (commit && batch > 1) atomic<std::uint32_t>(ch_.leaving).fetch_sub(batch - 1);
          continue;
        }
        if (commit) {
          atomic<std::uint32_t>(ch_.kills).fetch_add(batch, order::relaxed);
          env_.on_membership(s.active, next.active);
          return true;
        }
        announced = true;
        raw = pack(next);
        continue;
      }
      if (give_up) {
        Membership next = s;
        next.kill_ready -= 1;
        if (word.cas(raw, pack(next))) return false;
        continue;
      }
      env_.relax(WaitKind::batch_kill, site);
      raw = word.load();
    }
  }

  COOP_HD bool adversarial_kill(std::uint32_t id, std::uint64_t raw) {
    Membership s = unpack(raw);
    bool eligible =
        (flags_ & flag_any_order) ? removable(id, s) : (id + 1 == s.active && removable(id, s));
    if (!eligible || (env_.random() & 1u) == 0) return false;
    Membership next = s;
    next.active -= 1;
    if (!atomic<std::uint64_t>(ch_.membership).cas(raw, pack(next))) return false;
    leave_id(id);
    atomic<std::uint32_t>(ch_.kills).fetch_add(1, order::relaxed);
    env_.on_membership(s.active, next.active);
    return true;
  }

  COOP_HD bool kill_any(std::uint32_t id, std::uint64_t raw) {
    atomic<std::uint64_t> word(ch_.membership);
    for (;;) {
      Membership s = unpack(raw);
      if (s.kill_wanted == 0 || !removable(id, s)) return false;
      Membership next = s;
      next.active -= 1;
      next.kill_wanted -= 1;
      if (word.cas(raw, pack(next))) {
        leave_id(id);
        atomic<std::uint32_t>(ch_.kills).fetch_add(1, order::relaxed);
        env_.on_membership(s.active, next.active);
        return true;
      }
    }
  }

  COOP_HD void master_wait(int site) {
    atomic<std::uint32_t> arrived(ch_.arrived);
    for (;;) {
      std::uint32_t a = arrived.load();
      Membership s = membership();
      if (a == s.active && atomic<std::uint32_t>(ch_.leaving).load() == 0) return;
      std::uint32_t done = atomic<std::uint32_t>(ch_.finished).load(order::relaxed);
      if (done != 0 && a + done >= s.active) env_.barrier_unreachable(site, a, s.active, done);
      env_.relax(WaitKind::barrier_master, site);
    }
  }

  struct Resize {
    std::uint32_t threshold;  ///< slaves with id >= threshold leave
    std::uint32_t first_new;  ///< first id of the workgroups to start after the release
    std::uint32_t grow;       ///< how many to start
    std::uint32_t removed;    ///< how many slaves leave
  };

  // The master's decision at a resizing barrier, with every member present.
  COOP_HD Resize resize() {
    atomic<std::uint64_t> word(ch_.membership);
    std::uint64_t raw = word.load();
    for (;;) {
      Membership s = unpack(raw);
      Membership next = s;
      std::uint32_t target = s.active;
      if (flags_ & flag_adversarial) {
        target = 1 + std::uint32_t(env_.random() % ch_.max_groups);
      } else if (s.kill_wanted > 0) {
        // Query barrier: all W leave at once. Plain barrier (paper §4.2 without query): one
        // offer per barrier succeeds. The paper's slaves offered on arrival, which lets M
        // change while late workgroups are still in the interval; deciding here, with every
        // workgroup present, keeps M stable between resizing barriers.
        std::uint32_t want = (flags_ & flag_plain_barrier) ? 1 : s.kill_wanted;
        std::uint32_t k = want < s.active - 1 ? want : s.active - 1;
        target = s.active - k;
        next.kill_wanted -= k;
      } else if (s.fork_granted > 0 && s.kill_wanted == 0) {
        std::uint32_t room = ch_.max_groups - s.active;
        std::uint32_t k = s.fork_granted < room ? s.fork_granted : room;
        target = s.active + k;
        next.fork_granted -= k;
      }
      if (target == s.active) return {ch_.max_groups, 0, 0, 0};
      next.active = target;
      next.kill_ready = 0;
      if (!word.cas(raw, pack(next))) continue;
      atomic<std::uint32_t>(ch_.resizes).fetch_add(1, order::relaxed);
      env_.on_membership(s.active, target);
      if (target > s.active) return {ch_.max_groups, s.active, target - s.active, 0};
      atomic<std::uint32_t>(ch_.kills).fetch_add(s.active - target, order::relaxed);
      std::uint32_t threshold =
          (flags_ & flag_any_order) ? drop_top_ids(s.active - target) : target;
      return {threshold, 0, 0, s.active - target};
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
