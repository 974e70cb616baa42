// Sums 0..n-1 with a cooperative kernel that may be resized at every barrier.
#include <coop/coop.hpp>
#include <cstdio>

struct Sum {
  struct Params {
    unsigned long long* total;
    unsigned n;
  };
  struct Transmit {
    unsigned round = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.round < 4; ++t.round) {
      {
        const unsigned begin = t.round * p.n / 4, end = (t.round + 1) * p.n / 4;
        const auto stride = ctx.global_size();
        for (auto i = begin + ctx.global_id(); i < end; i += stride)
          coop::atomic_ref<unsigned long long>(*p.total).fetch_add(i);
      }
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

int main() {
  coop::Runtime rt;
  unsigned long long total = 0;
  const unsigned n = 100000;
  auto job = rt.launch<Sum>({.max_groups = 4, .threads = 8, .policy = coop::Policy::adversarial(7)},
                            {&total, n});
  job.wait();
  const bool ok = total == 1ull * n * (n - 1) / 2;
  std::printf("sum %llu: %s\n", total, ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
