/// \file
/// coop::for_each: a loop over an index range shared by all workgroups, whose items the
/// workgroups claim in chunks, with an offer to leave between chunks. Inside a long phase (a BFS
/// level, a sweep over every vertex) a workgroup can then be handed to a task within
/// microseconds instead of at the phase's closing barrier.
///
/// \code
///   struct Params { coop::LoopCursor* cursor; ... };   // device memory, one per loop site
///   struct Transmit { std::uint32_t step = 0; };
///   ...
///   COOP_BEGIN(ctx);
///   for (; t.step < steps; ++t.step) {
///     {
///       const auto visit = [&](std::uint64_t i) { ... item i ... };
///       COOP_FOR_EACH(ctx, *p.cursor, t.step, 0, items, ctx.local_size(), visit);
///     }
///     COOP_RESIZING_BARRIER(ctx);   // loops sharing a cursor are separated by a barrier
///   }
///   COOP_END(ctx);
/// \endcode
///
/// Rules (docs/guide.md explains them): every thread of every workgroup calls the loop with the
/// same arguments; the epoch differs between consecutive loops on one cursor (an increasing
/// counter: a round, a step); two loops on one cursor are separated by a global or resizing
/// barrier.
#pragma once

#include <cstdint>
#include <utility>

#include "coop/atomic.hpp"
#include "coop/config.hpp"

namespace coop {

/// The claim state of one for_each loop site, in memory every workgroup reaches (managed or
/// device memory, e.g. a `ManagedArray<LoopCursor>` in the kernel's Params). Zero-initialised
/// (a fresh cursor) it suits any first epoch; after that the loops reset it themselves.
struct LoopCursor {
  /// Two claim words, one per epoch parity: a loop's tag (high 24 bits: a valid bit and the
  /// epoch's low 23 bits) and the next unclaimed index counted from the loop's begin (low 40
  /// bits). A loop resets the other word for the next epoch (the workgroup that claims its
  /// first chunk, or workgroup 0 when the range is empty), so that the next loop's first claims
  /// find it ready instead of racing to reset it.
  std::uint64_t word[2] = {0, 0};
};

/// The default most time, in nanoseconds, between a workgroup's offers to leave inside a
/// for_each loop (the offer comes after the chunk that crosses it).
inline constexpr std::uint32_t kOfferIntervalNs = 4000;

/// The largest `end` a for_each loop accepts: the cursor's index field is 40 bits wide and
/// claims past the end must not carry into the epoch.
inline constexpr std::uint64_t kLoopEndLimit = 1ull << 39;

namespace detail {

inline constexpr unsigned kIndexBits = 40;
inline constexpr std::uint64_t kIndexMask = (1ull << kIndexBits) - 1;
/// A loop's tag: this bit and the epoch's low 23 bits (a ring that 2^32 wraps evenly). A fresh
/// cursor's tag, 0, lacks the bit: it is older than every loop.
inline constexpr std::uint32_t kTagValid = 1u << 23;
/// Claims are at most this many items (the count field of the broadcast value is 23 bits).
inline constexpr std::uint64_t kMaxClaim = (1ull << 23) - 1;
inline constexpr std::uint64_t kOfferBit = 1ull << 63;

/// The cursor tag of `epoch`.
COOP_HD inline std::uint32_t loop_tag(std::uint32_t epoch) {
  return kTagValid | (epoch & (kTagValid - 1));
}

/// Whether tag `seen` belongs to a later loop than `mine`: within half the ring ahead.
COOP_HD inline bool later_tag(std::uint32_t seen, std::uint32_t mine) {
  if (!(seen & kTagValid)) return false;
  const std::uint32_t ahead = (seen - mine) & (kTagValid - 1);
  return ahead != 0 && ahead <= kTagValid / 2;
}

/// What thread 0 claimed: the chunk [first, first + count), count 0 when the range is over.
/// Packed as first (40 bits) | count << 40 (23 bits) | offer-after-it << 63.
COOP_HD inline std::uint64_t pack_chunk(std::uint64_t first, std::uint64_t count) {
  return first | count << kIndexBits;
}

enum class ClaimResult { chunk, exhausted, misuse };

}  // namespace detail

/// A grain for a loop over many cheap items of even cost (a sweep over every vertex of a mesh):
/// half an even share of `items` over `groups` workgroups, at least `least` (one item a thread,
/// `ctx.local_size()`) and at most four times it (and never above the largest claim). Such a loop
/// is often a few items a thread (a million vertices on 528 workgroups of 256 threads: seven), and
/// from one item a thread the claims double chunk by chunk, each a broadcast and an atomic: colour
/// and mis ran 2.0-2.3x their grid-stride kernels, 1.6-1.9x with this grain (H200). Not for uneven
/// items (a worklist on a skewed graph): a chunk of four long items delays the next offer (bfs on
/// R-MAT gathered up to 3x slower).
COOP_HD inline std::uint32_t share_grain(std::uint64_t items, std::uint32_t groups,
                                         std::uint32_t least) {
  const std::uint64_t share = items / (2 * std::uint64_t(groups == 0 ? 1 : groups));
  const std::uint64_t low = least == 0 ? 1 : least;
  const std::uint64_t most = low > detail::kMaxClaim / 4 ? detail::kMaxClaim : 4 * low;
  return std::uint32_t(share < low ? low : share > most ? most : share);
}

namespace detail {

/// A claim in flight: the add's result, read only when the claim is resolved, so that its round
/// trip (to a line every workgroup uses) overlaps what thread 0 does meanwhile.
struct PendingClaim {
  std::uint64_t seen;  ///< the claim word before the add
  std::uint64_t size;  ///< the add
};

/// Thread 0: asks for `size` more items of the loop of `epoch`.
COOP_HD inline PendingClaim issue_claim(LoopCursor& cursor, std::uint32_t epoch,
                                        std::uint64_t size) {
  // Relaxed: the items are data the caller orders with its barriers; the cursor only hands out
  // indices.
  return {atomic<std::uint64_t>(cursor.word[epoch & 1]).fetch_add(size, order::relaxed), size};
}

/// Resets the word of the epoch after `epoch` for its loop. No loop uses that word now: the
/// loop before `epoch`'s, which used it, ended at the barrier before this one began.
COOP_HD inline void reset_next_word(LoopCursor& cursor, std::uint32_t epoch) {
  atomic<std::uint64_t>(cursor.word[(epoch + 1) & 1])
      .store(std::uint64_t(loop_tag(epoch + 1)) << kIndexBits, order::relaxed);
}

/// claim_on_stale_word's answer when the word holds a later loop's tag (indices are below 2^40).
inline constexpr std::uint64_t kClaimMisuse = ~0ull;

/// resolve_claim's rare path, out of line: the claim landed on a stale word (an older loop's,
/// not reset for this epoch by an earlier loop; the add is void). The first workgroup of the
/// loop resets it, taking the first chunk. Returns the claim's index (counted from the loop's
/// begin), or kClaimMisuse when the word holds a later loop's tag.
COOP_HD COOP_NOINLINE inline std::uint64_t claim_on_stale_word(LoopCursor& cursor,
                                                               std::uint32_t epoch,
                                                               std::uint64_t seen,
                                                               std::uint64_t size) {
  const std::uint32_t tag = loop_tag(epoch);
  atomic<std::uint64_t> word(cursor.word[epoch & 1]);
  for (;;) {
    const std::uint32_t t = std::uint32_t(seen >> kIndexBits);
    if (t == tag) return seen & kIndexMask;
    if (later_tag(t, tag)) return kClaimMisuse;
    std::uint64_t current = seen + size;
    for (;;) {
      if (word.cas(current, std::uint64_t(tag) << kIndexBits | size, order::relaxed)) return 0;
      const std::uint32_t now_tag = std::uint32_t(current >> kIndexBits);
      if (now_tag == tag) break;  // another workgroup reset it first: claim as usual
      if (later_tag(now_tag, tag)) return kClaimMisuse;
    }
    seen = word.fetch_add(size, order::relaxed);
  }
}

/// Thread 0: what an issued claim got of [begin, end): sets `chunk` (pack_chunk) and returns
/// ClaimResult::chunk, or the range is over, or the cursor shows misuse (a later loop's tag).
COOP_HD inline ClaimResult resolve_claim(LoopCursor& cursor, std::uint32_t epoch,
                                         std::uint64_t begin, std::uint64_t end, PendingClaim claim,
                                         std::uint64_t& chunk) {
  const std::uint64_t next = std::uint32_t(claim.seen >> kIndexBits) == loop_tag(epoch)
                                 ? claim.seen & kIndexMask
                                 : claim_on_stale_word(cursor, epoch, claim.seen, claim.size);
  if (next == kClaimMisuse) return ClaimResult::misuse;
  const std::uint64_t items = end - begin;
  if (next >= items) return ClaimResult::exhausted;
  if (next == 0) reset_next_word(cursor, epoch);  // the loop's first chunk
  chunk = pack_chunk(begin + next, items - next < claim.size ? items - next : claim.size);
  return ClaimResult::chunk;
}

/// The loop behind for_each and for_each_strided: `chunk(first, end)` runs on every thread for
/// each chunk the workgroup claims. Returns true when the workgroup must leave the kernel.
///
/// Thread 0 issues the next chunk's claim before the workgroup runs the current one and reads
/// its answer after it, so the claim's round trip (to a line every workgroup uses) overlaps the
/// work; except before a chunk after which the workgroup offers to leave: then it holds no
/// claim when it leaves, and the next chunk is claimed when it stays.
template <class Ctx, class Chunk>
COOP_HD bool run_loop(Ctx& ctx, LoopCursor& cursor, std::uint32_t epoch, std::uint64_t begin,
                      std::uint64_t end, std::uint32_t grain, std::uint32_t interval_ns, int site,
                      int join_site, Chunk&& chunk) {
  // Thread 0's claim size: at least `grain`, doubled while a chunk's work takes under the
  // interval (per chunk the workgroup pays a broadcast, and every claim is an atomic on one
  // line), halved when it takes over four intervals. (Starting at a share of the range gains
  // on short loops of even items, which share_grain serves, but lengthened the tasks' gathers
  // beside bfs and l-sssp on R-MAT graphs, whose items are uneven: the first claim at half a
  // share, up to 4 grains, took their p50 from 90-220 to 118-637 us on an H200.)
  const std::uint64_t min_size = grain == 0 ? 1 : grain > kMaxClaim ? kMaxClaim : grain;
  // A chunk longer than this is long: the claims halve, and the offer after it votes on a
  // request word loaded at its end (below).
  const std::uint64_t long_chunk_ns = 4 * std::uint64_t(interval_ns);
  std::uint64_t size = min_size;
  std::uint64_t last_offer = 0, work_start = 0;
  bool valid = end <= kLoopEndLimit && begin <= end;
  if (valid && begin == end) {
    // Nothing to claim: the loop ends here, and workgroup 0 resets the next epoch's word, as
    // the first chunk's claim does in a loop with items (a phase that alternates with empty
    // ones, like bfs's second, then still finds its word ready).
    if (ctx.group_id() == 0 && ctx.local_id() == 0) reset_next_word(cursor, epoch);
    return false;
  }
  // Thread 0: the chunk a claim got; 0 when the range is over (or misused: reported, then over).
  const auto resolve = [&](PendingClaim claim) -> std::uint64_t {
    std::uint64_t packed = 0;
    const ClaimResult r =
        valid ? resolve_claim(cursor, epoch, begin, end, claim, packed) : ClaimResult::misuse;
    if (r == ClaimResult::chunk) return packed;
    if (r == ClaimResult::misuse) {
      valid = false;
      // The CPU backend reports it in checking mode and the GPU always (the job fails and
      // stops); where nothing is reported the loop ends (it never hangs).
      if constexpr (requires { ctx.report_misuse(site, ""); })
        ctx.report_misuse(site,
                          "coop::for_each: the loop cursor belongs to a later loop (two loops "
                          "on one cursor without a global or resizing barrier between them, an "
                          "epoch that did not increase) or the range is invalid (end > 2^39 or "
                          "end < begin)");
    }
    return 0;
  };
  // Thread 0: the claim word that the claim issued ahead saw. It was issued for `size` items:
  // the size adapts only after a claim is resolved (a second word held across the chunk would
  // cost the kernels around the loop registers).
  std::uint64_t ahead = 0;
  bool have_ahead = false;
  if (ctx.local_id() == 0) {
    last_offer = now_ns();
    if (valid) {
      ahead = issue_claim(cursor, epoch, size).seen;
      have_ahead = true;
    }
  }
  for (;;) {
    std::uint64_t packed = 0;  // count 0: the range is over for this workgroup
    if (ctx.local_id() == 0) {
      const std::uint64_t now = now_ns();
      if (!have_ahead && valid) ahead = issue_claim(cursor, epoch, size).seen;
      packed = resolve(PendingClaim{ahead, size});
      have_ahead = false;
      if (work_start != 0) {
        const std::uint64_t took = now - work_start;  // the last chunk's work, not its claim
        if (took < interval_ns && size * 2 <= kMaxClaim)
          size *= 2;
        else if (took > long_chunk_ns && size / 2 >= min_size)
          size /= 2;
      }
      if (packed != 0) {
        if (interval_ns == 0 || now - last_offer >= interval_ns) {
          packed |= kOfferBit;  // no claim ahead: leaving after this chunk loses nothing
          last_offer = now;
        } else {
          ahead = issue_claim(cursor, epoch, size).seen;  // answered after this chunk
          have_ahead = true;
        }
      }
      work_start = now_ns();
    }
    packed = ctx.broadcast(packed, site);  // one workgroup barrier pair per chunk
    const std::uint64_t count = (packed >> kIndexBits) & kMaxClaim;
    if (count == 0) return false;
    const std::uint64_t first = packed & kIndexMask;
    chunk(first, first + count);
    // Between chunks the workgroup holds no claimed item here: leaving loses nothing, and
    // workgroups forked here (joinable loops) just claim chunks too.
    if (packed & kOfferBit) {
      // After a long chunk (over four intervals, where the claims halve: its items are long) thread
      // 0 votes on the request word loaded now, not on the one it loaded as the chunk began: that
      // one is as old as the chunk (tens of microseconds in a large BFS level on an R-MAT graph).
      // After shorter chunks the old word is recent, and the wait cost more than it saved (a
      // streaming loop's phase 1.16x -> 1.36x plain with the wait after two intervals).
      if constexpr (requires { ctx.offer_kill_fresh(site, true); }) {
        const bool fresh = ctx.local_id() == 0 && now_ns() - work_start > long_chunk_ns;
        if (ctx.offer_kill_fresh(site, fresh)) return true;
      } else {
        if (ctx.offer_kill(site)) return true;
      }
      if (join_site != 0) ctx.request_fork(join_site);
    }
  }
}

}  // namespace detail

/// A cooperative loop over [begin, end): the workgroups claim chunks of items from `cursor` and
/// every thread of a workgroup runs `f(i)` for the chunk's items (strided by the workgroup's
/// size, like a grid-stride loop). Between chunks the workgroup offers a kill, at most every
/// `interval_ns` (0: after every chunk). Workgroup-level: every thread of every workgroup that
/// runs the loop calls it with the same arguments; workgroups that join mid-loop (forked) just
/// claim chunks.
///
/// \param ctx          the kernel context.
/// \param cursor       the loop site's claim state, in memory every workgroup reaches.
/// \param epoch        differs between consecutive loops on `cursor` and increases (by 1 to
///                     2^22; it may wrap); the loops must also be separated by a global or
///                     resizing barrier.
/// \param begin        the first item.
/// \param end          one past the last item (at most kLoopEndLimit).
/// \param grain        the least items per claim (the claim grows while chunks are short; a
///                     good value is `ctx.local_size()`, one item per thread).
/// \param f            called as `f(i)` (std::uint64_t i) for every item, by some thread.
/// \param interval_ns  the most time between offers (kOfferIntervalNs; 0: after every chunk).
/// \param site         the offer's source line (for checking-mode reports).
/// \return true if the workgroup must leave the kernel now (use COOP_FOR_EACH, which returns);
///         false when the range is exhausted. Every item is run exactly once: a workgroup
///         leaves only between chunks.
template <class Ctx, class F>
COOP_HD bool for_each(Ctx& ctx, LoopCursor& cursor, std::uint32_t epoch, std::uint64_t begin,
                      std::uint64_t end, std::uint32_t grain, F&& f,
                      std::uint32_t interval_ns = kOfferIntervalNs, int site = __builtin_LINE()) {
  const std::uint64_t lid = ctx.local_id(), threads = ctx.local_size();
  return detail::run_loop(ctx, cursor, epoch, begin, end, grain, interval_ns, site, 0,
                          [&](std::uint64_t first, std::uint64_t last) {
                            for (std::uint64_t i = first + lid; i < last; i += threads) f(i);
                          });
}

/// for_each with one call per thread and chunk: `f(first, end, stride)` runs the items first,
/// first + stride, ... below end (this thread's share of the chunk), so per-thread work that
/// spans items (a local reduction, a flag raised once) stays in the caller's loop. Parameters
/// and result as for_each's, except:
/// \param f  called as `f(first, end, stride)` (three std::uint64_t) by each thread that has
///           items in the chunk.
/// \param ctx, cursor, epoch, begin, end, grain, interval_ns, site  as for for_each.
template <class Ctx, class F>
COOP_HD bool for_each_strided(Ctx& ctx, LoopCursor& cursor, std::uint32_t epoch,
                              std::uint64_t begin, std::uint64_t end, std::uint32_t grain, F&& f,
                              std::uint32_t interval_ns = kOfferIntervalNs,
                              int site = __builtin_LINE()) {
  const std::uint64_t lid = ctx.local_id(), threads = ctx.local_size();
  return detail::run_loop(ctx, cursor, epoch, begin, end, grain, interval_ns, site, 0,
                          [&](std::uint64_t first, std::uint64_t last) {
                            if (first + lid < last) f(first + lid, last, threads);
                          });
}

/// for_each_strided in a loop that new workgroups may join: where a workgroup offers to leave
/// it also asks for forks (ctx.request_fork(join_site)), so a job that gave workgroups to a
/// task regrows inside the loop instead of at its next resizing barrier (a long phase begun on
/// few workgroups would otherwise end on few). The forked workgroups start at the resume point
/// `join_site` with the transmitted state: a `COOP_JOIN_POINT(join_site)` label at the kernel
/// body's top level, before the loop, from where every workgroup computes the same arguments
/// and reaches the loop (and must not redo what only the loop's first workgroups may do).
/// \param join_site  the resume point's id: unique among the kernel's resume points (a
///                   constant such as a class-scope `static constexpr int kJoin = __LINE__;`).
/// \param ctx, cursor, epoch, begin, end, grain, f, interval_ns, site  as for_each_strided's.
template <class Ctx, class F>
COOP_HD bool for_each_strided_joinable(Ctx& ctx, int join_site, LoopCursor& cursor,
                                       std::uint32_t epoch, std::uint64_t begin, std::uint64_t end,
                                       std::uint32_t grain, F&& f,
                                       std::uint32_t interval_ns = kOfferIntervalNs,
                                       int site = __builtin_LINE()) {
  const std::uint64_t lid = ctx.local_id(), threads = ctx.local_size();
  return detail::run_loop(ctx, cursor, epoch, begin, end, grain, interval_ns, site, join_site,
                          [&](std::uint64_t first, std::uint64_t last) {
                            if (first + lid < last) f(first + lid, last, threads);
                          });
}

}  // namespace coop

/// coop::for_each in a kernel body: returns from the kernel when the workgroup is told to leave
/// between chunks. Arguments: `(ctx, cursor, epoch, begin, end, grain, f [, interval_ns])`; the
/// offer's site is the macro's line.
#define COOP_FOR_EACH(ctx, ...)                       \
  do {                                                \
    if (::coop::for_each((ctx), __VA_ARGS__)) return; \
  } while (0)

/// The resume point of a joinable loop (coop::for_each_strided_joinable): workgroups forked
/// inside the loop start here. Place it at the kernel body's top level (not inside a nested
/// switch or `if constexpr`), before the loop, with no initialised local between it and
/// COOP_BEGIN's scope that the code after it uses.
#define COOP_JOIN_POINT(join_site) \
  [[fallthrough]];                 \
  case (join_site):

/// coop::for_each_strided_joinable in a kernel body (see COOP_FOR_EACH). Arguments:
/// `(ctx, join_site, cursor, epoch, begin, end, grain, f [, interval_ns])`.
#define COOP_FOR_EACH_STRIDED_JOINABLE(ctx, ...)                       \
  do {                                                                 \
    if (::coop::for_each_strided_joinable((ctx), __VA_ARGS__)) return; \
  } while (0)

/// coop::for_each_strided in a kernel body (see COOP_FOR_EACH). Arguments:
/// `(ctx, cursor, epoch, begin, end, grain, f [, interval_ns])`.
#define COOP_FOR_EACH_STRIDED(ctx, ...)                       \
  do {                                                        \
    if (::coop::for_each_strided((ctx), __VA_ARGS__)) return; \
  } while (0)
