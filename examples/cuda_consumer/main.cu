// A cooperative kernel of this program's own — a dot product in rounds, resizable at every
// round's barrier — launched on the GPU when there is one (on the CPU backend otherwise), with a
// high-priority task beside it that runs a kernel of its own on the task's stream. Both results
// are checked against host references; exit 1 if either is wrong.
#include <coop/coop.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr std::uint32_t kRounds = 8;

// Round r adds x[i] * y[i] over its slice of [0, n) into sums[r].
struct RoundedDot {
  struct Params {
    const std::uint32_t* x;
    const std::uint32_t* y;
    std::uint64_t* sums;  // [kRounds]
    std::uint32_t n;
  };
  struct Transmit {  // a workgroup joining at the barrier continues at workgroup 0's round
    std::uint32_t step = 0;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    for (; t.step < kRounds; ++t.step) {
      {
        const std::uint64_t begin = std::uint64_t(t.step) * p.n / kRounds;
        const std::uint64_t end = std::uint64_t(t.step + 1) * p.n / kRounds;
        std::uint64_t mine = 0;
        for (std::uint64_t i = begin + ctx.global_id(); i < end; i += ctx.global_size())
          mine += std::uint64_t(p.x[i]) * p.y[i];
        if (mine)
          coop::atomic_ref<std::uint64_t>(p.sums[t.step])
              .fetch_add(mine, coop::memory_order::relaxed);
      }
      COOP_RESIZING_BARRIER(ctx);  // the scheduler may shrink or grow the job here
      COOP_OFFER_KILL(ctx);
    }
    COOP_END(ctx);
  }
};

// The task's own (ordinary CUDA) kernel.
__global__ void fill_squares(std::uint32_t* out, std::uint32_t n) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = i * i % 1000;
}

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  coop::Runtime rt;  // the GPU when there is one, else the CPU backend
  const bool gpu = rt.backend() == coop::Backend::cuda;
  std::printf("coop %s on %s (%s)\n", COOP_VERSION_STRING, coop::backend_name(rt.backend()),
              rt.device_name().c_str());
  // Load the task's kernel before a persistent job runs: CUDA's lazy loading would otherwise
  // make the task's first launch wait for the job to end.
  if (gpu) {
    cudaFuncAttributes attr{};
    if (!cuda_ok(cudaFuncGetAttributes(&attr, fill_squares), "loading the task kernel")) return 1;
  }

  const std::uint32_t n = 1u << 20, task_n = 1u << 16;
  coop::ManagedArray<std::uint32_t> x(n), y(n), task_out(task_n);
  coop::ManagedArray<std::uint64_t> sums(kRounds, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    x[i] = i % 1013;
    y[i] = (i * 7) % 101;
  }

  const std::uint32_t threads = 128;
  coop::Job job = rt.launch<RoundedDot>({.threads = threads}, {x.data(), y.data(), sums.data(), n});
  // A high-priority task beside the job: its workgroups are taken from the job and given back.
  coop::TaskRecord rec = rt.run(2, [&](coop::Task& t) {
    if (t.stream()) {  // CUDA: enqueue on the task's stream; the runtime waits for it
      fill_squares<<<t.groups(), threads, 0, t.stream()>>>(task_out.data(), task_n);
      cuda_ok(cudaGetLastError(), "launching the task kernel");
    } else {  // CPU backend: the task runs here, on this thread
      for (std::uint32_t i = 0; i < task_n; ++i) task_out[i] = i * i % 1000;
    }
  });
  job.wait();

  bool ok = true;
  for (std::uint32_t r = 0; r < kRounds; ++r) {
    std::uint64_t want = 0;
    for (std::uint64_t i = std::uint64_t(r) * n / kRounds; i < std::uint64_t(r + 1) * n / kRounds;
         ++i)
      want += std::uint64_t(x[i]) * y[i];
    if (sums[r] != want) {
      std::printf("round %u: %llu, expected %llu\n", r, (unsigned long long)sums[r],
                  (unsigned long long)want);
      ok = false;
    }
  }
  for (std::uint32_t i = 0; i < task_n && ok; ++i)
    if (task_out[i] != i * i % 1000) {
      std::printf("task result %u: %u, expected %u\n", i, task_out[i], i * i % 1000);
      ok = false;
    }
  const coop::JobStats s = job.stats();
  std::printf(
      "job: N=%u, M from %u to %u, %llu kills, %llu forked; task: gathered in %.3f ms, "
      "ran %.3f ms: %s\n",
      s.max_groups, s.initial_groups, s.final_groups, (unsigned long long)s.kills,
      (unsigned long long)s.forked_groups, rec.gather_ms(), rec.run_ms(), ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
