// Experiment: for_each's fixed cost per loop and per chunk, variants side by side.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "coop/coop.hpp"
#include "coop/memory.hpp"

using namespace coop;

namespace {

COOP_HD std::uint64_t tnow() { return coop::detail::now_ns(); }

struct Cursor2 {
  std::uint64_t word[2];
};

// Resolve a fetch_add's result (seen, for an add of `size`) as claim_chunk does.
COOP_HD inline detail::ClaimResult resolve(std::uint64_t* w, std::uint32_t tag, std::uint64_t begin,
                                           std::uint64_t end, std::uint64_t size,
                                           std::uint64_t seen, std::uint64_t& chunk) {
  using namespace coop::detail;
  atomic<std::uint64_t> word(*w);
  for (;;) {
    const std::uint32_t t = std::uint32_t(seen >> kIndexBits);
    if (t == tag) {
      const std::uint64_t next = seen & kIndexMask;
      if (next >= end) return ClaimResult::exhausted;
      if (next < begin) return ClaimResult::misuse;
      chunk = pack_chunk(next, end - next < size ? end - next : size);
      return ClaimResult::chunk;
    }
    if (later_tag(t, tag)) return ClaimResult::misuse;
    std::uint64_t current = seen + size;
    const std::uint64_t first = begin < end ? begin : end;
    const std::uint64_t take = end - first < size ? end - first : size;
    for (;;) {
      if (word.cas(current, std::uint64_t(tag) << kIndexBits | (first + size), order::relaxed)) {
        if (take == 0) return ClaimResult::exhausted;
        chunk = pack_chunk(first, take);
        return ClaimResult::chunk;
      }
      const std::uint32_t now_tag = std::uint32_t(current >> kIndexBits);
      if (now_tag == tag) {
        seen = word.fetch_add(size, order::relaxed);
        break;
      }
      if (later_tag(now_tag, tag)) return ClaimResult::misuse;
    }
  }
}

// V1: the claim ahead resolved at the next chunk; V2: + the next epoch's word reset ahead; V3:
// + the first claim sized to the range (n / (M * Div)).
template <int V, int Div, class Ctx, class Chunk>
COOP_HD bool loop_v(Ctx& ctx, Cursor2& c, std::uint32_t epoch, std::uint64_t end,
                    std::uint32_t grain, std::uint32_t interval_ns, Chunk&& chunk) {
  using namespace coop::detail;
  const std::uint32_t tag = loop_tag(epoch);
  std::uint64_t* w = V >= 2 ? &c.word[epoch & 1] : &c.word[0];
  const std::uint64_t min_size = grain;
  std::uint64_t size = min_size;
  std::uint64_t last_offer = 0, work_start = 0, pending_seen = 0, pending_size = 0;
  bool pending = false;
  int parity = 0;
  (void)parity;
  const auto issue = [&](std::uint64_t s) {
    return atomic<std::uint64_t>(*w).fetch_add(s, order::relaxed);
  };
  const auto finish = [&](std::uint64_t seen, std::uint64_t s) -> std::uint64_t {
    std::uint64_t packed = 0;
    if (resolve(w, tag, 0, end, s, seen, packed) != ClaimResult::chunk) return 0;
    if (V >= 2 && (packed & kIndexMask) == 0)
      atomic<std::uint64_t>(c.word[(epoch + 1) & 1])
          .store(std::uint64_t(loop_tag(epoch + 1)) << kIndexBits, order::relaxed);
    return packed;
  };
  std::uint64_t seen_next = 0;   // V4+: the last claim's end (guided sizing)
  const std::uint64_t M = ctx.num_groups();
  std::uint64_t static_next = std::uint64_t(ctx.group_id()) * (end / M + 1), static_end = static_next + end / M + 1;
  if (static_end > end) static_end = end;
  if (ctx.local_id() == 0) {
    last_offer = tnow();
    if (V >= 3) {
      const std::uint64_t s = V >= 4 ? kMaxClaim / 2 : end / (std::uint64_t(ctx.num_groups()) * Div);
      if (s > size) size = s < kMaxClaim ? s : kMaxClaim;
    }
  }
  for (;;) {
    std::uint64_t packed = 0;
    if (ctx.local_id() == 0) {
      const std::uint64_t now = tnow();
      if (work_start != 0) {
        const std::uint64_t took = now - work_start;
        if (took < interval_ns && size * 2 <= kMaxClaim)
          size *= 2;
        else if (took > 4 * std::uint64_t(interval_ns) && size / 2 >= min_size)
          size /= 2;
      }
      std::uint64_t want = size;
      if (V >= 4) {
        const std::uint64_t rem = end > seen_next ? end - seen_next : 0;
        const std::uint64_t g = rem / (2 * M);
        want = g < min_size ? min_size : g < size ? g : size;
      }
      if (V == 5) {
        packed = static_next < static_end ? pack_chunk(static_next, static_end - static_next < want ? static_end - static_next : want) : 0;
        static_next += (packed >> kIndexBits) & kMaxClaim;
      } else if (pending) {
        packed = finish(pending_seen, pending_size);
        pending = false;
      } else {
        packed = finish(issue(want), want);
      }
      if (packed != 0) seen_next = (packed & kIndexMask) + ((packed >> kIndexBits) & kMaxClaim);
      if (packed != 0) {
        if (interval_ns == 0 || now - last_offer >= interval_ns) {
          packed |= kOfferBit;
          last_offer = now;
        } else if (V != 5) {
          std::uint64_t w2 = want;
          if (V >= 4) {
            const std::uint64_t rem = end > seen_next ? end - seen_next : 0;
            const std::uint64_t g = rem / (2 * M);
            w2 = g < min_size ? min_size : g < size ? g : size;
          }
          pending_seen = issue(w2);
          pending_size = w2;
          pending = true;
        }
      }
      work_start = tnow();
    }
#if COOP_DEVICE_CODE
    if constexpr (V == 6) {
      __shared__ std::uint64_t slot[2];
      if (threadIdx.x == 0) slot[parity] = packed;
      __syncthreads();
      packed = slot[parity];
      parity ^= 1;
    } else
#endif
      packed = ctx.broadcast(packed);
    const std::uint64_t count = (packed >> kIndexBits) & kMaxClaim;
    if (count == 0) return false;
    const std::uint64_t first = packed & kIndexMask;
    if (first + ctx.local_id() < first + count)
      chunk(first + ctx.local_id(), first + count, std::uint64_t(ctx.local_size()));
    if (packed & kOfferBit) {
      if (ctx.offer_kill()) return true;
    }
  }
}

// Variants: 0 grid-stride, 1 coop::for_each_strided (today's), 2 V1, 3 V2, 4 V3 (Div 4), 5 V3
// (Div 8), 6 V3 (Div 2)
template <int Variant>
struct LoopBench {
  struct Params {
    std::uint32_t phases;
    std::uint64_t n;
    std::uint32_t* data;
    std::uint64_t* ns;
    LoopCursor* lc;
    Cursor2* c2;
    std::uint32_t interval;
    std::uint32_t work;
  };
  struct Transmit {
    std::uint32_t phase = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    if (t.phase == 0 && ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[0] = tnow();
    for (; t.phase < p.phases;) {
      {
        const auto visit = [&](std::uint64_t first, std::uint64_t end, std::uint64_t stride) {
          for (std::uint64_t i = first; i < end; i += stride) {
            std::uint32_t x = p.data[i];
            for (std::uint32_t k = 0; k < p.work; ++k) x = x * 1664525u + 1013904223u;
            p.data[i] = p.work ? x : x + 1;
          }
        };
        bool leave = false;
        if constexpr (Variant == 0) {
          visit(ctx.global_id(), p.n, ctx.global_size());
        } else if constexpr (Variant == 1) {
          leave = coop::for_each_strided(ctx, *p.lc, t.phase + 1, 0, p.n, ctx.local_size(), visit,
                                         p.interval);
        } else if constexpr (Variant == 2) {
          leave = loop_v<1, 1>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else if constexpr (Variant == 3) {
          leave = loop_v<2, 1>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else if constexpr (Variant == 4) {
          leave = loop_v<3, 4>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else if constexpr (Variant == 5) {
          leave = loop_v<3, 8>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else if constexpr (Variant == 6) {
          leave = loop_v<3, 2>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else if constexpr (Variant == 7) {
          leave = loop_v<4, 2>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else if constexpr (Variant == 8) {
          leave = loop_v<5, 2>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        } else {
          leave = loop_v<6, 2>(ctx, *p.c2, t.phase + 1, p.n, ctx.local_size(), p.interval, visit);
        }
        if (leave) return;
      }
      ++t.phase;
      COOP_RESIZING_BARRIER(ctx);
    }
    if (ctx.group_id() == 0 && ctx.local_id() == 0) p.ns[1] = tnow();
    COOP_END(ctx);
  }
};

const char* const kNames[] = {"grid-stride", "for_each now", "deferred claim", "+pre-reset",
                              "+first n/4M",  "+first n/8M",  "+first n/2M", "guided", "static chunks", "guided 1-bar"};

template <int V>
double run_one(Runtime& rt, Mode mode, std::uint32_t groups, std::uint32_t phases, std::uint64_t n,
               std::uint32_t interval, std::uint32_t work, ManagedArray<std::uint32_t>& data,
               bool& ok) {
  ManagedArray<std::uint64_t> ns(2);
  Managed<LoopCursor> lc;
  Managed<Cursor2> c2;
  for (std::uint64_t i = 0; i < n; ++i) data[i] = 0;
  auto job = rt.launch<LoopBench<V>>(
      {.max_groups = groups, .threads = 256, .policy = Policy::fixed(), .mode = mode},
      {phases, n, data.data(), ns.data(), lc.get(), c2.get(), interval, work});
  job.wait();
  if (work == 0)
    for (std::uint64_t i = 0; i < n; ++i)
      if (data[i] != phases) {
        ok = false;
        std::printf("  WRONG: variant %d item %llu = %u\n", V, (unsigned long long)i, data[i]);
        break;
      }
  return double(ns[1] - ns[0]) / phases / 1e3;
}

template <int V>
void row(Runtime& rt, Mode mode, std::uint32_t groups, std::uint64_t n, std::uint32_t interval,
         std::uint32_t work, int reps, ManagedArray<std::uint32_t>& data) {
  const std::uint32_t phases = n >= (8u << 20) ? 200 : n >= (1u << 20) ? 500 : 2000;
  std::vector<double> us;
  bool ok = true;
  for (int r = 0; r < reps; ++r)
    us.push_back(run_one<V>(rt, mode, groups, phases, n, interval, work, data, ok));
  std::sort(us.begin(), us.end());
  std::printf("n %9llu work %3u interval %10u %-11s %-15s: %8.2f us/phase (min %.2f max %.2f)%s\n",
              (unsigned long long)n, work, interval,
              mode == Mode::persistent ? "persistent" : "cooperative", kNames[V], us[us.size() / 2],
              us.front(), us.back(), ok ? "" : " WRONG");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  RuntimeOptions o;
  o.backend = RuntimeOptions::Select::cuda;
  Runtime rt(o);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const int per_sm = argc > 1 ? std::atoi(argv[1]) : 4;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::uint32_t groups = std::uint32_t(prop.multiProcessorCount * per_sm);
  std::printf("%s, %u groups of 256\n", prop.name, groups);
  ManagedArray<std::uint32_t> data(8u << 20);
  for (std::uint32_t work : {0u, 64u})
    for (std::uint64_t n : {0ull, 4096ull, 65536ull, 262144ull, 1ull << 20, 8ull << 20}) {
      if (work && n != (1ull << 20) && n != 262144ull) continue;
      row<0>(rt, Mode::persistent, groups, n, 4000, work, reps, data);
      row<0>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<1>(rt, Mode::persistent, groups, n, 4000, work, reps, data);
      row<1>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<2>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<3>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<4>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<5>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<6>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<7>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<8>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      row<9>(rt, Mode::cooperative, groups, n, 4000, work, reps, data);
      if (n == (1ull << 20)) {
        row<1>(rt, Mode::cooperative, groups, n, 0xffffffffu, work, reps, data);
        row<3>(rt, Mode::cooperative, groups, n, 0xffffffffu, work, reps, data);
        row<4>(rt, Mode::cooperative, groups, n, 0xffffffffu, work, reps, data);
        row<7>(rt, Mode::cooperative, groups, n, 0xffffffffu, work, reps, data);
      }
    }
  return 0;
}
