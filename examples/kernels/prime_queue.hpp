// Recipe (docs/guide.md, "A work queue"): counting primes below a limit by chunks taken from a
// shared counter. There are no global barriers: a workgroup claims a chunk, tests its numbers
// with all its threads, adds up its count in workgroup-shared memory and claims the next. It
// offers a kill and requests a fork only between chunks, so a workgroup the scheduler takes
// away never holds unfinished work.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "coop/atomic.hpp"
#include "coop/kernel.hpp"
#include "coop/memory.hpp"

namespace coop::examples {

struct PrimeQueue {
  static constexpr std::uint32_t kMaxThreads = 256;  ///< launch with at most this many threads

  struct Params {
    std::uint64_t limit;       ///< count the primes in [0, limit)
    std::uint64_t chunk;       ///< numbers per chunk
    std::uint64_t chunks;      ///< ceil(limit / chunk)
    std::uint64_t* next;       ///< the queue: the next unclaimed chunk
    std::uint32_t* per_chunk;  ///< out: primes in each chunk
  };
  /// Workgroup-shared memory: each thread's count, summed by thread 0.
  struct Shared {
    std::uint32_t count[kMaxThreads];
  };

  COOP_HD static bool is_prime(std::uint64_t v) {
    if (v < 2) return false;
    if (v % 2 == 0) return v == 2;
    for (std::uint64_t d = 3; d * d <= v; d += 2)
      if (v % d == 0) return false;
    return true;
  }

  // No Transmit: the third parameter is coop::Empty, and a forked workgroup needs nothing but
  // the queue in Params.
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    auto& sh = ctx.shared();  // before COOP_BEGIN: every resume point may use it
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);    // between chunks: leaving here loses nothing
      COOP_REQUEST_FORK(ctx);  // new workgroups start right here, and claim chunks too
      {
        // Thread 0 claims, every thread gets its answer (a workgroup-level call).
        const std::uint64_t c = ctx.broadcast(
            ctx.local_id() == 0 ? atomic_ref<std::uint64_t>(*p.next).fetch_add(1) : 0);
        if (c >= p.chunks) break;  // the queue is empty: this workgroup is done
        const std::uint64_t lo = c * p.chunk, hi = lo + p.chunk < p.limit ? lo + p.chunk : p.limit;
        std::uint32_t found = 0;
        for (std::uint64_t v = lo + ctx.local_id(); v < hi; v += ctx.local_size())
          found += is_prime(v) ? 1 : 0;
        sh.count[ctx.local_id()] = found;
        ctx.barrier();  // every thread's count is in shared memory
        if (ctx.local_id() == 0) {
          std::uint32_t sum = 0;
          for (std::uint32_t i = 0; i < ctx.local_size(); ++i) sum += sh.count[i];
          p.per_chunk[c] = sum;  // one writer per chunk; job.wait() publishes it to the host
        }
        ctx.barrier();  // thread 0 has read shared memory before the next chunk overwrites it
      }
    }
    COOP_END(ctx);
  }
};

/// The queue and the results in managed memory.
struct PrimeQueueBuffers {
  PrimeQueueBuffers(std::uint64_t limit, std::uint64_t chunk)
      : per_chunk((limit + chunk - 1) / chunk, 0), limit_(limit), chunk_(chunk) {}
  PrimeQueue::Params params() {
    return {limit_, chunk_, per_chunk.size(), next.get(), per_chunk.data()};
  }
  /// Throws std::invalid_argument when a launch's threads exceed the kernel's shared array.
  static void check_threads(std::uint32_t threads) {
    if (threads == 0 || threads > PrimeQueue::kMaxThreads)
      throw std::invalid_argument("PrimeQueue runs with 1 to 256 threads per workgroup");
  }
  /// Primes per chunk by the sieve of Eratosthenes (independent of the kernel's trial division).
  static std::vector<std::uint32_t> reference(std::uint64_t limit, std::uint64_t chunk) {
    std::vector<bool> composite(limit, false);
    std::vector<std::uint32_t> counts((limit + chunk - 1) / chunk, 0);
    for (std::uint64_t v = 2; v < limit; ++v) {
      if (composite[v]) continue;
      ++counts[v / chunk];
      for (std::uint64_t m = v * v; m < limit; m += v) composite[m] = true;
    }
    return counts;
  }
  Managed<std::uint64_t> next;
  ManagedArray<std::uint32_t> per_chunk;
  std::uint64_t limit_, chunk_;
};

}  // namespace coop::examples
