// A program that uses an installed coop (find_package(coop)): sums 0..n-1 with a cooperative
// kernel that may be resized at every barrier, under an adversarial schedule. Its input and its
// result live in managed memory, so the same code runs on a GPU (docs/guide.md, "A first
// kernel").
#include <coop/coop.hpp>
#include <cstdint>
#include <cstdio>

struct Sum {
  struct Params {  // what every workgroup reads; copied into the job at launch
    const std::uint64_t* values;
    std::uint64_t* total;
    std::uint32_t n;
  };
  struct Transmit {  // what a workgroup joining at a resizing barrier inherits
    std::uint32_t step = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.step < 4; ++t.step) {
      {
        const std::uint64_t begin = std::uint64_t(t.step) * p.n / 4;
        const std::uint64_t end = std::uint64_t(t.step + 1) * p.n / 4;
        std::uint64_t mine = 0;
        for (std::uint64_t i = begin + ctx.global_id(); i < end; i += ctx.global_size())
          mine += p.values[i];
        coop::atomic_ref<std::uint64_t>(*p.total).fetch_add(mine, coop::memory_order::relaxed);
      }
      COOP_RESIZING_BARRIER(ctx);
    }
    COOP_END(ctx);
  }
};

int main() {
  coop::Runtime rt;                                  // the GPU's when there is one, else CPU
  coop::ManagedArray<std::uint64_t> values(100000);  // memory host and kernels share
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = i;
  coop::Managed<std::uint64_t> total;
  coop::Job job =
      rt.launch<Sum>({.max_groups = 4, .threads = 8, .policy = coop::Policy::adversarial(7)},
                     {values.data(), total.get(), std::uint32_t(values.size())});
  job.wait();  // throws if the kernel misused coop
  const bool ok = *total == 100000ull * 99999 / 2;
  std::printf("coop %s: sum %llu: %s\n", COOP_VERSION_STRING, (unsigned long long)*total,
              ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
