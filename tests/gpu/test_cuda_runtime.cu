// The CUDA runtime with real GPU work: tasks on the high-priority stream gather blocks from a
// cooperative kernel and give them back; a cuBLAS GEMM as a task while a cooperative kernel
// runs (both results checked); launch validation and device-side misuse reports. Runs under
// the default lazy module loading (ctest also runs it with CUDA_MODULE_LOADING=LAZY set).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#define COOP_TEST_CUDA 1
#include "backend.hpp"
#include "coop/cuda/green.hpp"
#include "kernels/task_queue.hpp"

using namespace coop;
using coop::test::Spinner;

namespace {

__device__ std::uint32_t sm_id() {
  std::uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

/// Marks the SM a block runs on in a bitmap (thread 0), then spins until *stop.
__global__ void mark_sms(std::uint32_t* sms, const std::uint32_t* stop) {
  if (threadIdx.x == 0) {
    atomicOr(&sms[sm_id() / 32], 1u << (sm_id() % 32));
    while (atomic_ref<const std::uint32_t>(*stop).load() == 0) __nanosleep(1000);
  }
}

__global__ void fill(float* out, std::uint32_t n, float v) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = v + float(i % 7);
}

bool wait_until(const std::function<bool()>& pred, double seconds = 10) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

}  // namespace

// Tasks of 1, N/4, N/2 and N-1 blocks (of another shape than the job's) run beside a job of
// `threads`-thread blocks, and the job forks back to N after each. At 64 threads a full grid
// would fill both an SM's block and warp slots, where a returned block's slot takes no other
// block until the grid ends (measured on the H200): the runtime leaves one block per SM free,
// and that room stays the job's (a task still takes its workgroups from the job).
void tasks_gather_blocks_and_the_job_regrows(std::uint32_t threads,
                                             TaskLaunch launch = TaskLaunch::after_gather) {
  auto rt = test::make_runtime(0);
  ASSERT_EQ(rt->backend(), Backend::cuda);
  rt->set_task_launch(launch);
  // The task kernel is loaded before the persistent kernel runs.
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, fill), cudaSuccess);
  Managed<std::uint32_t> stop;
  auto job = rt->launch<Spinner>({.max_groups = 0, .threads = threads}, {stop.get()});
  const std::uint32_t n = job.max_groups();
  ASSERT_GT(n, 4u);
  EXPECT_EQ(job.active_groups(), n);
  ManagedArray<float> out(1 << 20);
  std::uint32_t expected_kills = 0;
  for (std::uint32_t k : {1u, n / 4, n / 2, n - 1}) {
    TaskRecord r = rt->run(k, [&](Task& t) {
      // At the request the work is enqueued before the job has given anything.
      if (launch == TaskLaunch::after_gather) EXPECT_LE(job.active_groups(), n - k);
      fill<<<k, 128, 0, t.stream()>>>(out.data(), std::uint32_t(out.size()), float(k));
    });
    expected_kills += k;
    EXPECT_EQ(r.groups, k);
    EXPECT_LE(r.request_ms, r.gathered_ms);
    EXPECT_EQ(out[5], float(k) + 5) << "the task's kernel did not run";
    EXPECT_TRUE(wait_until([&] { return job.active_groups() == n; }))
        << "the job did not regrow after a task of " << k << " (M=" << job.active_groups() << ")";
  }
  atomic_ref<std::uint32_t>(*stop).store(1);
  job.wait();
  JobStats s = job.stats();
  EXPECT_EQ(s.kills, expected_kills);
  EXPECT_EQ(s.forked_groups, expected_kills);
}

TEST(CudaRuntime, TasksGatherBlocksAndTheJobRegrows) {
  COOP_SKIP_UNDER_SANITIZER();
  tasks_gather_blocks_and_the_job_regrows(128);
}
TEST(CudaRuntime, TasksBesideAJobOf64ThreadBlocks) {
  COOP_SKIP_UNDER_SANITIZER();
  tasks_gather_blocks_and_the_job_regrows(64);
}
TEST(CudaRuntime, TasksBesideAJobOf32ThreadBlocks) {
  COOP_SKIP_UNDER_SANITIZER();
  tasks_gather_blocks_and_the_job_regrows(32);
}
TEST(CudaRuntime, TasksBesideAJobOf1024ThreadBlocks) {
  COOP_SKIP_UNDER_SANITIZER();
  tasks_gather_blocks_and_the_job_regrows(1024);
}
TEST(CudaRuntime, TasksLaunchedAtTheRequestGatherBlocksAndTheJobRegrows) {
  COOP_SKIP_UNDER_SANITIZER();
  tasks_gather_blocks_and_the_job_regrows(128, TaskLaunch::at_request);
  tasks_gather_blocks_and_the_job_regrows(1024, TaskLaunch::at_request);
}

namespace {
// Spins for about `ns` nanoseconds of the GPU's clock.
__device__ void spin_ns(std::uint64_t ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < ns);
}

// spin_ns, then writes `v` to out[0 .. n).
__global__ void fill_after(float* out, std::uint32_t n, float v, std::uint64_t ns) {
  spin_ns(ns);
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = v;
}
}  // namespace

// Requests that race the job's regrowth: from three threads at once, of every size, launched
// at the request and after the gather, each the next one's competitor. A job grown back in
// stream order behind one task while another request arrives must be withdrawn (and the write
// racing its copy sent again), never left growing into a task's capacity or waiting for kills
// nobody asked: every task's kernel runs and writes its value, nothing hangs (ctest TIMEOUT),
// and the job is back at N at the end with as many forks as kills.
TEST(CudaRuntime, RequestsRacingTheJobsRegrowthAllRunAndTheJobEndsAtN) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(0);
  ASSERT_EQ(rt->backend(), Backend::cuda);
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, fill_after), cudaSuccess);
  Managed<std::uint32_t> stop;
  auto job = rt->launch<Spinner>({.threads = 128}, {stop.get()});
  const std::uint32_t n = job.max_groups();
  ASSERT_GT(n, 8u);
  constexpr int kThreads = 3, kTasks = 150;
  constexpr std::uint32_t kCells = 4096;
  ManagedArray<float> out(std::size_t(kThreads) * kCells);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      std::uint64_t x = 0x9e3779b97f4a7c15ull * std::uint64_t(th + 1);
      float* mine = out.data() + std::size_t(th) * kCells;
      for (int i = 0; i < kTasks; ++i) {
        x = detail::mix64(x);
        const std::uint32_t sizes[] = {1u, n / 4, n / 2, n - 1};
        const std::uint32_t k = sizes[x % 4];
        const TaskLaunch launch = (x >> 8) % 2 ? TaskLaunch::at_request : TaskLaunch::after_gather;
        const std::uint64_t ns = 20000 + (x >> 16) % 200000;  // 20-220 us
        const float v = float(th * 1000 + i);
        TaskHandle h = rt->submit(
            k, [&](Task& t) { fill_after<<<k, 128, 0, t.stream()>>>(mine, kCells, v, ns); }, 0,
            launch);
        h.wait();
        if (mine[0] != v || mine[kCells - 1] != v) ++wrong;
        if (x % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(x % 300));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0) << "a task's kernel did not run or ran before its work was enqueued";
  EXPECT_TRUE(wait_until([&] { return job.active_groups() == n; }))
      << "the job did not regrow (M=" << job.active_groups() << " of " << n << ")\n"
      << rt->describe();
  atomic_ref<std::uint32_t>(*stop).store(1);
  job.wait();
  const JobStats s = job.stats();
  EXPECT_EQ(s.kills, s.forked_groups);
  EXPECT_EQ(rt->task_records().size(), std::size_t(kThreads * kTasks));
}

namespace {
// Carries its forker's id in the transmitted state. A workgroup that starts at the fork point
// (one whose state is not its own) counts itself and checks what it carries.
struct CarriesItsForker {
  struct Params {
    std::uint32_t* stop;
    std::uint32_t* joined;
    std::uint32_t* bad;
  };
  struct Transmit {
    std::uint32_t forker;
    std::uint32_t check;
  };
  static COOP_HD std::uint32_t check_of(std::uint32_t id) { return ~id * 2654435761u; }
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Transmit& t) const {
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) == 0) {
      COOP_OFFER_KILL(ctx);
      t.forker = ctx.group_id();
      t.check = check_of(ctx.group_id());
      COOP_REQUEST_FORK(ctx);
      if (ctx.local_id() == 0 && t.forker != ctx.group_id()) {
        atomic_ref<std::uint32_t>(*p.joined).fetch_add(1);
        if (t.check != check_of(t.forker) || t.forker > ctx.group_id())
          atomic_ref<std::uint32_t>(*p.bad).fetch_add(1);
      }
      ctx.pause();
    }
    COOP_END(ctx);
  }
};
}  // namespace

// After each task the job grows back (in stream order behind the task, or by the host: ctest
// runs this binary both ways), and every workgroup its fork adds starts once, at the fork
// point, with its forker's transmitted state, whatever the task's size and launch; the job
// ends at N with as many forks as kills.
TEST(CudaRuntime, EachWorkgroupTheRegrowthForksStartsOnceWithItsForkersState) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(0);
  ASSERT_EQ(rt->backend(), Backend::cuda);
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, fill_after), cudaSuccess);
  Managed<std::uint32_t> stop, joined, bad;
  auto job = rt->launch<CarriesItsForker>({.threads = 128}, {stop.get(), joined.get(), bad.get()});
  const std::uint32_t n = job.max_groups();
  ASSERT_GT(n, 8u);
  ManagedArray<float> out(4096);
  for (std::uint32_t i = 0; i < 64; ++i) {
    const std::uint32_t sizes[] = {n - 1, 1u, n / 2, n / 4};
    const std::uint32_t k = sizes[i % 4];
    const TaskLaunch launch = (i / 4) % 2 ? TaskLaunch::at_request : TaskLaunch::after_gather;
    const float v = float(i + 1);
    TaskHandle h = rt->submit(
        k,
        [&](Task& t) {
          fill_after<<<k, 128, 0, t.stream()>>>(out.data(), std::uint32_t(out.size()), v, 30000);
        },
        0, launch);
    h.wait();
    ASSERT_EQ(out[0], v) << "the task's kernel did not run";
    ASSERT_TRUE(wait_until([&] { return job.active_groups() == n; }))
        << "the job did not regrow after a task of " << k << " (M=" << job.active_groups() << ")\n"
        << rt->describe();
  }
  atomic_ref<std::uint32_t>(*stop).store(1);
  job.wait();
  const JobStats s = job.stats();
  EXPECT_EQ(*bad, 0u) << "a joining workgroup did not carry its forker's state";
  EXPECT_EQ(*joined, s.forked_groups) << "a forked workgroup did not start at the fork point once";
  EXPECT_EQ(s.kills, s.forked_groups);
  EXPECT_GT(s.forked_groups, 0u);
}

namespace {
// spin_ns, then block 0 appends `v` to the log: the order in which tasks ran.
__global__ void log_after(std::uint32_t* log, std::uint32_t* count, std::uint32_t v,
                          std::uint64_t ns) {
  spin_ns(ns);
  if (blockIdx.x == 0 && threadIdx.x == 0) log[atomicAdd(count, 1u)] = v;
}
}  // namespace

// A serving system's queue: whole-device requests submitted faster than they run, beside a job,
// enqueued at their request (one at a time per process; the others after their gather) or
// after their gather. Every task runs once, the device runs them in submission order, nothing
// hangs (ctest TIMEOUT; a queue of tasks each enqueued at its request once stopped an H200's
// work), and the job is back at N at the end with as many forks as kills.
TEST(CudaRuntime, AQueueOfRequestsBesideAJobRunsOnceEachInSubmissionOrder) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(0);
  ASSERT_EQ(rt->backend(), Backend::cuda);
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, log_after), cudaSuccess);
  constexpr std::uint32_t kTasks = 48;
  for (TaskLaunch launch : {TaskLaunch::after_gather, TaskLaunch::at_request}) {
    SCOPED_TRACE(task_launch_name(launch));
    Managed<std::uint32_t> stop, count;
    ManagedArray<std::uint32_t> log(kTasks);
    auto job = rt->launch<Spinner>({.threads = 128}, {stop.get()});
    const std::uint32_t n = job.max_groups();
    ASSERT_GT(n, 2u);
    std::vector<TaskHandle> handles;
    for (std::uint32_t i = 0; i < kTasks; ++i) {
      const std::uint64_t ns = 30000 + 5000 * (i % 7);  // 30-60 us
      handles.push_back(rt->submit_fraction(
          1.0,
          [&, i, ns](Task& t) {
            log_after<<<n - 1, 128, 0, t.stream()>>>(log.data(), count.get(), i, ns);
          },
          0, launch));
    }
    for (auto& h : handles) h.wait();
    ASSERT_EQ(*count, kTasks) << "a task did not run, or ran twice";
    for (std::uint32_t i = 0; i < kTasks; ++i)
      EXPECT_EQ(log[i], i) << "the device ran the tasks out of submission order";
    EXPECT_TRUE(wait_until([&] { return job.active_groups() == n; }))
        << "the job did not regrow (M=" << job.active_groups() << " of " << n << ")\n"
        << rt->describe();
    atomic_ref<std::uint32_t>(*stop).store(1);
    job.wait();
    const JobStats s = job.stats();
    EXPECT_EQ(s.kills, s.forked_groups);
  }
}

namespace {
// Offers only once the host allows it, with 40 KB of shared memory per workgroup: the job fills
// the scheduler's capacity while its SMs keep warp slots free, where a small task kernel would
// run at once if nothing held it back.
struct OffersWhenAllowed {
  struct Params {
    std::uint32_t* allow;
    std::uint32_t* stop;
  };
  struct Shared {
    unsigned char room[40 << 10];
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) == 0) {
      if (ctx.broadcast(atomic_ref<std::uint32_t>(*p.allow).load()) != 0) {
        COOP_OFFER_KILL(ctx);
        COOP_REQUEST_FORK(ctx);
      }
      ctx.pause();
    }
    COOP_END(ctx);
  }
};

// Block 0's thread 0 marks that the task ran (mapped host memory, a plain store).
__global__ void mark_ran(volatile std::uint32_t* ran, std::uint32_t value) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *ran = value;
}
}  // namespace

// TaskLaunch::at_request: the task's kernel is enqueued at once, yet does not run until the job
// has given the workgroups (released from the device by the leaving block), or, when the job
// ends without giving any, until the host grants the task.
TEST(CudaRuntime, ATaskLaunchedAtTheRequestWaitsForTheJobToGiveWay) {
  COOP_SKIP_UNDER_SANITIZER();
  RuntimeOptions o;
  o.backend = RuntimeOptions::Select::cuda;
  o.task_launch = TaskLaunch::at_request;
  Runtime rt(o);
  ASSERT_EQ(rt.task_launch(), TaskLaunch::at_request);
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, mark_ran), cudaSuccess);
  std::uint32_t* ran = nullptr;
  ASSERT_EQ(cudaHostAlloc(&ran, sizeof(std::uint32_t), cudaHostAllocMapped), cudaSuccess);
  auto ran_value = [&] { return atomic_ref<std::uint32_t>(*ran).load(); };
  for (bool job_gives_way : {true, false}) {
    *ran = 0;
    Managed<std::uint32_t> allow, stop;
    auto job = rt.launch<OffersWhenAllowed>({.threads = 128}, {allow.get(), stop.get()});
    const std::uint32_t n = job.max_groups();
    ASSERT_GT(n, 4u);
    TaskHandle h = rt.submit(n / 4, [&](Task& t) { mark_ran<<<1, 64, 0, t.stream()>>>(ran, 1); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(ran_value(), 0u) << "the task ran before the job gave its workgroups";
    EXPECT_FALSE(h.done());
    if (job_gives_way)
      atomic_ref<std::uint32_t>(*allow).store(1);  // the leaving blocks release the task
    else
      atomic_ref<std::uint32_t>(*stop).store(1);  // the job ends: the host grants the task
    const TaskRecord r = h.record();
    EXPECT_EQ(ran_value(), 1u);
    EXPECT_EQ(r.groups, n / 4);
    EXPECT_LE(r.request_ms, r.gathered_ms);
    atomic_ref<std::uint32_t>(*stop).store(1);
    job.wait();
    if (job_gives_way) EXPECT_GE(job.stats().kills, n / 4);
  }
  // Work that waits for its own stream, under a blocking run(): the grant must not wait for the
  // work to return. Released from the device (the job shrinks), then by the host (the job ends
  // while the work waits), then a whole-device task.
  for (bool job_gives_way : {true, false}) {
    Managed<std::uint32_t> allow, stop;
    atomic_ref<std::uint32_t>(*allow).store(job_gives_way ? 1 : 0);
    auto job = rt.launch<OffersWhenAllowed>({.threads = 128}, {allow.get(), stop.get()});
    std::thread ender([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!job_gives_way) atomic_ref<std::uint32_t>(*stop).store(1);
    });
    const TaskRecord r = rt.run(2, [&](Task& t) {
      mark_ran<<<2, 64, 0, t.stream()>>>(ran, 10);
      ASSERT_EQ(cudaStreamSynchronize(t.stream()), cudaSuccess);
      EXPECT_EQ(ran_value(), 10u) << "the stream went on before its kernel ran";
    });
    EXPECT_EQ(r.groups, 2u);
    ender.join();
    if (job_gives_way) {
      rt.run_fraction(1.0, [&](Task& t) { mark_ran<<<4, 64, 0, t.stream()>>>(ran, 11); });
      EXPECT_EQ(ran_value(), 11u);
      atomic_ref<std::uint32_t>(*stop).store(1);
    }
    job.wait();
    *ran = 0;
  }
  // What the work throws reaches run's caller once what it enqueued has run; the job goes on.
  {
    Managed<std::uint32_t> allow, stop;
    atomic_ref<std::uint32_t>(*allow).store(1);
    auto job = rt.launch<OffersWhenAllowed>({.threads = 128}, {allow.get(), stop.get()});
    EXPECT_THROW(rt.run(1,
                        [&](Task& t) {
                          mark_ran<<<1, 64, 0, t.stream()>>>(ran, 20);
                          throw std::runtime_error("the work failed");
                        }),
                 std::runtime_error);
    EXPECT_EQ(ran_value(), 20u);
    atomic_ref<std::uint32_t>(*stop).store(1);
    job.wait();
  }
  cudaFreeHost(ran);
}

// Work stealing from a shared counter until told to stop: every claimed chunk is summed before
// the next offer, so the result is checkable whenever the host stops it.
struct ChunkSum {
  struct Params {
    std::uint64_t* next;  // chunks claimed
    std::uint64_t* sum;
    std::uint32_t* stop;
    std::uint64_t chunk, limit;  // chunks past `limit` are not summed (bounds the reference)
  };
  COOP_HD static std::uint64_t f(std::uint64_t i) { return (i * 2654435761u) % 1000u; }
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    for (;;) {
      COOP_OFFER_KILL(ctx);
      COOP_REQUEST_FORK(ctx);
      std::uint64_t c = ~0ull;
      if (ctx.local_id() == 0 && atomic_ref<std::uint32_t>(*p.stop).load() == 0)
        c = atomic_ref<std::uint64_t>(*p.next).fetch_add(1);
      c = ctx.broadcast(c);
      if (c == ~0ull) break;
      if (c >= p.limit) {  // all work done: keep offering until the host stops the job
        ctx.pause();
        continue;
      }
      std::uint64_t local = 0;
      for (std::uint64_t i = c * p.chunk + ctx.local_id(); i < (c + 1) * p.chunk;
           i += ctx.local_size())
        local += f(i);
      atomic_ref<std::uint64_t>(*p.sum).fetch_add(local, memory_order::relaxed);
    }
    COOP_END(ctx);
  }
};

TEST(CudaRuntime, CublasGemmTaskWhileCooperativeKernelRuns) {
  COOP_SKIP_UNDER_SANITIZER();
  auto rt = test::make_runtime(0);
  const int m = 1024;
  std::vector<float> a(m * m), b(m * m), c(m * m);
  for (int i = 0; i < m * m; ++i) {
    a[i] = float((i * 7) % 13) - 6;
    b[i] = float((i * 5) % 11) - 5;
  }
  float *da, *db, *dc;
  ASSERT_EQ(cudaMalloc(&da, sizeof(float) * m * m), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, sizeof(float) * m * m), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dc, sizeof(float) * m * m), cudaSuccess);
  cudaMemcpy(da, a.data(), sizeof(float) * m * m, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), sizeof(float) * m * m, cudaMemcpyHostToDevice);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const float one = 1, zero = 0;
  auto gemm = [&](cudaStream_t s) {
    cublasSetStream(h, s);
    ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, db, m, da, m, &zero, dc, m),
              CUBLAS_STATUS_SUCCESS);
  };
  // Warm-up on the task stream: cuBLAS loads its kernels now, not while the persistent kernel
  // holds the GPU (lazy loading would wait for it).
  rt->run_fraction(1.0, [&](Task& t) { gemm(t.stream()); });
  cudaMemset(dc, 0, sizeof(float) * m * m);

  // The kernel's counters live in device memory: managed pages hammered by device atomics
  // while the host touches them can stall (page migration thrashing), and the host only needs
  // to write one flag (by copy) and read the results at the end.
  std::uint64_t* counters = nullptr;  // next, sum
  std::uint32_t* stop = nullptr;
  ASSERT_EQ(cudaMalloc(&counters, 2 * sizeof(std::uint64_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&stop, sizeof(std::uint32_t)), cudaSuccess);
  cudaMemset(counters, 0, 2 * sizeof(std::uint64_t));
  cudaMemset(stop, 0, sizeof(std::uint32_t));
  const std::uint64_t chunk = 256, limit = 400'000;
  auto job = rt->launch<ChunkSum>({.max_groups = 0, .threads = 256},
                                  {counters, counters + 1, stop, chunk, limit});
  // A library kernel's blocks may need a whole SM: the task asks for the whole device (every
  // workgroup but workgroup 0 leaves).
  for (int i = 0; i < 5; ++i) {
    TaskRecord r = rt->run_fraction(
        1.0, [&](Task& t) { gemm(t.stream()); }, /*priority=*/1);
    EXPECT_GT(r.run_ms(), 0.0);
    EXPECT_FALSE(job.done());
  }
  const std::uint32_t one_flag = 1;
  cudaStream_t side;
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaMemcpyAsync(stop, &one_flag, sizeof one_flag, cudaMemcpyHostToDevice, side);
  cudaStreamSynchronize(side);
  cudaStreamDestroy(side);
  job.wait();
  EXPECT_GT(job.stats().kills, 0u);
  EXPECT_GT(job.stats().forked_groups, 0u);
  std::uint64_t got[2];
  cudaMemcpy(got, counters, sizeof got, cudaMemcpyDeviceToHost);
  std::uint64_t expect = 0;
  for (std::uint64_t i = 0; i < std::min(got[0], limit) * chunk; ++i) expect += ChunkSum::f(i);
  EXPECT_EQ(got[1], expect) << "the cooperative kernel's sum over " << got[0] << " chunks is wrong";
  cudaFree(counters);
  cudaFree(stop);
  cudaMemcpy(c.data(), dc, sizeof(float) * m * m, cudaMemcpyDeviceToHost);
  for (int i = 0; i < m; i += 37)
    for (int j = 0; j < m; j += 11) {
      float s = 0;
      for (int k = 0; k < m; ++k) s += a[i * m + k] * b[k * m + j];
      ASSERT_EQ(c[i * m + j], s) << "C[" << i << "," << j << "]";
    }
  cublasDestroy(h);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}
// A global barrier that one workgroup never reaches is reported, not hung on.
struct SkipsBarrier {
  struct Params {
    int unused;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params&, Empty&) const {
    if (ctx.group_id() == 1) return;
    ctx.global_barrier();
  }
};

TEST(CudaRuntime, UnreachableBarrierIsReported) {
  auto rt = test::make_runtime(0);
  auto job =
      rt->launch<SkipsBarrier>({.max_groups = 8, .threads = 64, .policy = Policy::fixed()}, {0});
  try {
    job.wait();
    FAIL() << "expected a misuse_error";
  } catch (const misuse_error& e) {
    EXPECT_NE(std::string(e.what()).find("can never complete"), std::string::npos) << e.what();
  }
}

TEST(CudaRuntime, RejectsLaunchesThatCannotBeCoResident) {
  auto rt = test::make_runtime(0);
  Managed<std::uint32_t> stop(1);
  try {
    rt->launch<Spinner>({.max_groups = 65535, .threads = 1024}, {stop.get()});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("co-resident"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt->launch<Spinner>({.max_groups = 2, .threads = 2048}, {stop.get()}),
               std::invalid_argument);
  EXPECT_THROW(rt->run(0, [](Task&) {}), std::invalid_argument);
}

// A join grid's wait for ids by SM that is not a number of ns stops the launch with the
// variable's name, and a runtime that refused it still runs jobs.
TEST(CudaRuntime, RejectsAJoinPackWaitThatIsNotANumber) {
  auto rt = test::make_runtime(0);
  Managed<std::uint32_t> stop(1);
  for (const char* bad : {"fast", "-5", "20us", "99999999999"}) {
    ASSERT_EQ(setenv("COOP_CUDA_JOIN_PACK_WAIT_NS", bad, 1), 0);
    try {
      rt->launch<Spinner>({.max_groups = 2}, {stop.get()});
      ADD_FAILURE() << "COOP_CUDA_JOIN_PACK_WAIT_NS=" << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("COOP_CUDA_JOIN_PACK_WAIT_NS"), std::string::npos)
          << e.what();
    }
  }
  unsetenv("COOP_CUDA_JOIN_PACK_WAIT_NS");
  rt->launch<Spinner>({.max_groups = 2}, {stop.get()}).wait();
}

// A cooperative job that marks the SMs its workgroups run on, giving workgroups to tasks and
// forking back as the scheduler asks.
struct MarkSms {
  struct Params {
    std::uint32_t* sms;
    std::uint32_t* stop;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty&) const {
    COOP_BEGIN(ctx);
    while (ctx.broadcast(atomic_ref<std::uint32_t>(*p.stop).load()) == 0) {
#if COOP_DEVICE_CODE
      if (ctx.local_id() == 0) atomicOr(&p.sms[sm_id() / 32], 1u << (sm_id() % 32));
#endif
      COOP_OFFER_KILL(ctx);
      COOP_REQUEST_FORK(ctx);
      ctx.pause();
    }
    COOP_END(ctx);
  }
};

std::vector<std::uint32_t> sms_of(const std::uint32_t* bits, std::uint32_t words) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < words * 32; ++i)
    if (bits[i / 32] >> (i % 32) & 1) out.push_back(i);
  return out;
}

// A runtime on one green context of a split device: its jobs are sized to that context's SMs,
// its job and its tasks run only there, and a kernel on the other context's SMs runs beside
// them on SMs of its own.
TEST(CudaRuntime, ARuntimeInAGreenContextStaysOnItsSMs) {
  COOP_SKIP_UNDER_SANITIZER();
  std::string why;
  if (!coop::cuda::green_contexts_available(&why)) GTEST_SKIP() << why;
  coop::cuda::GreenSplit split(0, 16);
  ASSERT_GE(split.part_sms(), 16u);
  RuntimeOptions o;
  o.backend = RuntimeOptions::Select::cuda;
  o.green_context = split.rest();
  o.preemption = PreemptionPolicy{PreemptionPolicy::Mode::shrink};  // tasks take workgroups
  o.gather_deadline_s = 10;  // a task that cannot gather fails the test rather than hanging it
  o.gather_deadline_fails = true;
  Runtime rt(o);
  EXPECT_NE(rt.device_name().find(std::to_string(split.rest_sms()) + " SMs of a green context"),
            std::string::npos)
      << rt.device_name();
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, mark_sms), cudaSuccess);  // loaded before the job runs
  constexpr std::uint32_t kWords = 8;                              // 256 SMs
  ManagedArray<std::uint32_t> job_sms(kWords), task_sms(kWords), part_sms(kWords);
  Managed<std::uint32_t> stop, part_stop, go(1);
  auto job = rt.launch<MarkSms>({.threads = 256}, {job_sms.data(), stop.get()});
  const std::uint32_t n = job.max_groups();
  // Sized to the context: the runtime's blocks per SM times its SMs.
  EXPECT_EQ(n % split.rest_sms(), 0u) << n << " workgroups on " << split.rest_sms() << " SMs";
  // A kernel on the other context, one block per SM of it, resident beside the job. It is
  // stopped however the test ends: memory is not freed while a kernel spins on the device.
  struct OtherPart {
    std::uint32_t* stop;
    cudaStream_t stream;
    ~OtherPart() {
      *stop = 1;
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  } other{part_stop.get(), coop::cuda::green_stream(split.part(), 0, "a stream on the other part")};
  mark_sms<<<split.part_sms(), 32, 0, other.stream>>>(part_sms.data(), part_stop.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (std::uint32_t k : {1u, n / 2, n - 1}) {
    TaskRecord r = rt.run(k, [&](Task& t) {
      mark_sms<<<k, 32, 0, t.stream()>>>(task_sms.data(), go.get());
      coop::cuda::check(cudaStreamSynchronize(t.stream()), "the task's kernel");
    });
    EXPECT_EQ(r.groups, k);
  }
  *part_stop = 1;
  ASSERT_EQ(cudaStreamSynchronize(other.stream), cudaSuccess);
  *stop = 1;
  job.wait();
  const auto on_job = sms_of(job_sms.data(), kWords), on_task = sms_of(task_sms.data(), kWords),
             on_part = sms_of(part_sms.data(), kWords);
  EXPECT_LE(on_job.size(), split.rest_sms());
  EXPECT_GE(on_job.size(), split.rest_sms() / 2) << "the job used few of its SMs";
  std::vector<std::uint32_t> runtime_sms = on_job;
  runtime_sms.insert(runtime_sms.end(), on_task.begin(), on_task.end());
  std::sort(runtime_sms.begin(), runtime_sms.end());
  runtime_sms.erase(std::unique(runtime_sms.begin(), runtime_sms.end()), runtime_sms.end());
  EXPECT_LE(runtime_sms.size(), split.rest_sms()) << "the runtime's kernels left its SMs";
  EXPECT_GE(on_part.size(), 1u);
  EXPECT_LE(on_part.size(), split.part_sms());
  for (std::uint32_t sm : on_part)
    EXPECT_FALSE(std::binary_search(runtime_sms.begin(), runtime_sms.end(), sm))
        << "SM " << sm << " ran both sides";
}

// A cooperative job that records, by id, the SM each of its blocks (start and join grids) runs
// on (SM + 1), and gives workgroups to tasks and forks back as the scheduler asks. Its blocks
// hold 40 KB of shared memory, so that a task block asking for more than an SM has left beside
// all but one of them can run only on an SM the job has left.
struct SmOfId {
  struct Shared {
    unsigned char pad[40 * 1024];
  };
  struct Params {
    std::uint32_t* sm_of_id;
    std::uint32_t* stop;
  };
  template <class Ctx>
  COOP_HD void operator()(Ctx& ctx, const Params& p, Empty& e) const {
#if COOP_DEVICE_CODE
    if (ctx.local_id() == 0)
      atomic_ref<std::uint32_t>(p.sm_of_id[ctx.group_id()]).store(sm_id() + 1);
#endif
    Spinner{}(ctx, {p.stop}, e);
  }
};

/// Marks the SM a block runs on (thread 0); the block asks for dynamic shared memory.
__global__ void mark_sm_with_shared(std::uint32_t* sms) {
  extern __shared__ unsigned char scratch[];
  if (threadIdx.x == 0) {
    scratch[0] = 1;
    atomicOr(&sms[sm_id() / 32], 1u << (sm_id() % 32));
  }
}

/// A job of SmOfId with ids by SM that fills the device, and a task kernel whose blocks fit
/// only on an SM the job has left.
class IdsBySm : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kWords = 8;

  void SetUp() override {
    COOP_SKIP_UNDER_SANITIZER();
    rt = test::make_runtime(0);
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    sms = std::uint32_t(prop.multiProcessorCount);
    // The task's kernel is loaded before the job runs: under CUDA_MODULE_LOADING=LAZY its first
    // use beside the job (the attribute below) loads it then, and the scheduler's request to
    // the job never reached the device (an H200 run of this suite hung here).
    cudaFuncAttributes task_attr{};
    ASSERT_EQ(cudaFuncGetAttributes(&task_attr, mark_sm_with_shared), cudaSuccess);
    job = rt->launch<SmOfId>({.threads = 256, .ids_by_sm = true}, {sm_of_id.data(), stop.get()});
    n = job.max_groups();
    ASSERT_LE(n, 8192u);
    per_sm = n / sms;
    ASSERT_EQ(n, per_sm * sms) << "the job does not hold the same number of blocks on every SM";
    ASSERT_GE(per_sm, 2u);
    // A task block's shared memory: more than an SM has beside per_sm - 1 of the job's blocks,
    // no more than an empty SM has.
    cudaFuncAttributes job_attr{};
    ASSERT_EQ(cudaFuncGetAttributes(&job_attr, coop::cuda::detail::kernel_function<SmOfId>(
                                                   Mode::cooperative, /*by_place=*/true)),
              cudaSuccess);
    const std::size_t reserved = prop.reservedSharedMemPerBlock;
    const std::size_t per_block = job_attr.sharedSizeBytes + reserved;
    const std::size_t beside = prop.sharedMemPerMultiprocessor - (per_sm - 1) * per_block;
    task_shared = beside - reserved + 1024;
    ASSERT_LE(task_shared + reserved, prop.sharedMemPerMultiprocessor);
    ASSERT_LE(task_shared, prop.sharedMemPerBlockOptin);
    ASSERT_EQ(cudaFuncSetAttribute(mark_sm_with_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(task_shared)),
              cudaSuccess);
  }
  void TearDown() override {
    *stop = 1;
    if (job) job.wait();
  }

  /// The SM of each id in [first, n), once every one of them has recorded it (a duplicated id
  /// leaves another unrecorded).
  std::vector<std::uint32_t> sms_of_ids(std::uint32_t first) {
    EXPECT_TRUE(wait_until([&] {
      for (std::uint32_t i = first; i < n; ++i)
        if (atomic_ref<std::uint32_t>(sm_of_id[i]).load() == 0) return false;
      return true;
    })) << "not every id in ["
        << first << ", " << n << ") recorded its SM";
    std::vector<std::uint32_t> sm(n);
    for (std::uint32_t i = first; i < n; ++i) sm[i] = sm_of_id[i] - 1;
    return sm;
  }
  /// Runs a task of two SMs' worth of workgroups, whose blocks need an SM the job has left;
  /// false if they found none within 5 s. The SMs they ran on are in task_sms.
  bool two_sm_task_ran() {
    const std::uint32_t k = 2 * per_sm;
    // The ids the task takes are recorded again by the grid the job grows back by: the test
    // goes on once they are, so that no block of that grid records its SM after a later reset.
    for (std::uint32_t i = n - k; i < n; ++i) atomic_ref<std::uint32_t>(sm_of_id[i]).store(0);
    bool ran = false;
    TaskRecord r = rt->run(k, [&](Task& t) {
      mark_sm_with_shared<<<2, 32, task_shared, t.stream()>>>(task_sms.data());
      coop::cuda::check(cudaGetLastError(), "launching the task's kernel");
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!(ran = cudaStreamQuery(t.stream()) == cudaSuccess) &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      // The runtime waits for the task's kernel: end the job, so that it can run, and the test
      // fails rather than hangs.
      if (!ran) atomic_ref<std::uint32_t>(*stop).store(1);
    });
    EXPECT_EQ(r.groups, k);
    if (ran) sms_of_ids(n - k);
    return ran;
  }
  /// The task's blocks ran on SMs that the top two SMs' worth of ids left.
  void expect_task_on_top(const std::vector<std::uint32_t>& sm) {
    const std::vector<std::uint32_t> top(sm.end() - 2 * per_sm, sm.end());
    for (std::uint32_t s : sms_of(task_sms.data(), kWords))
      EXPECT_TRUE(std::find(top.begin(), top.end(), s) != top.end())
          << "a task block ran on SM " << s << ", not one the top " << 2 * per_sm << " ids left";
  }
  /// Takes the job down to workgroup 0 for a whole-device task, then waits until it has grown
  /// back (join grids) and every id above 0 has recorded its SM again.
  std::vector<std::uint32_t> regrow_after_whole_device_task() {
    for (std::uint32_t i = 1; i < n; ++i) atomic_ref<std::uint32_t>(sm_of_id[i]).store(0);
    TaskRecord r = rt->run_fraction(1.0, [](Task&) {});
    EXPECT_EQ(r.groups, n - 1);
    return sms_of_ids(1);
  }
  static void expect_ids_by_sm(const std::vector<std::uint32_t>& sm, std::uint32_t first) {
    for (std::uint32_t i = first + 1; i < sm.size(); ++i)
      ASSERT_LE(sm[i - 1], sm[i]) << "ids " << i - 1 << " and " << i << " are on SMs " << sm[i - 1]
                                  << " and " << sm[i] << ": ids do not go by SM";
  }

  std::unique_ptr<Runtime> rt;
  cudaDeviceProp prop{};
  std::uint32_t sms = 0, n = 0, per_sm = 0;
  std::size_t task_shared = 0;
  ManagedArray<std::uint32_t> sm_of_id{8192}, task_sms{kWords};
  Managed<std::uint32_t> stop;
  Job job;
};

// With LaunchConfig::ids_by_sm the start grid's ids go by SM (SM order, then arrival), so the
// top ids fill whole SMs: a task that takes the top workgroups of a job that fills every SM
// runs on SMs of its own, not beside the job's blocks (whose compute-bound warps would starve
// its warps). With ids in launch order the top ids are one per SM, and the task's blocks below
// would find no SM with room (the test then fails on the deadline rather than hanging).
TEST_F(IdsBySm, FillWholeSmsFromTheTop) {
  const std::vector<std::uint32_t> sm = sms_of_ids(0);
  expect_ids_by_sm(sm, 0);
  EXPECT_TRUE(two_sm_task_ran()) << "the task's blocks found no SM with room while the job ran: "
                                    "the top ids did not leave whole SMs";
  expect_task_on_top(sm);
}

// A whole-device task takes the job down to workgroup 0; the job grows back by a join grid,
// which numbers its blocks by SM too, so that a later task for a share of the job still gets
// whole SMs. With join grids in launch order (before, or COOP_CUDA_JOIN_PACK_WAIT_NS=0) the
// top ids landed on every SM and the task's blocks waited for the job's end.
TEST_F(IdsBySm, JoinGridsKeepWholeSmsAfterAWholeDeviceTask) {
  sms_of_ids(0);
  for (int round = 0; round < 3; ++round) {
    const std::vector<std::uint32_t> sm = regrow_after_whole_device_task();
    expect_ids_by_sm(sm, 1);
    ASSERT_TRUE(two_sm_task_ran()) << "round " << round
                                   << ": the task's blocks found no SM with room after the "
                                      "job grew back";
    expect_task_on_top(sm);
  }
}

// The same with a wait of 1 ns: the first block of each join grid closes the count at once, and
// most of the grid arrives late and takes the ids above the counted blocks' in arrival order.
// Every id must still be taken exactly once (a duplicate leaves another id unrecorded).
class IdsBySmClosingAtOnce : public IdsBySm {
 protected:
  void SetUp() override {
    ASSERT_EQ(setenv("COOP_CUDA_JOIN_PACK_WAIT_NS", "1", 1), 0);
    IdsBySm::SetUp();
  }
  void TearDown() override {
    IdsBySm::TearDown();
    unsetenv("COOP_CUDA_JOIN_PACK_WAIT_NS");
  }
};

TEST_F(IdsBySmClosingAtOnce, JoinGridsTakeEveryIdOnce) {
  sms_of_ids(0);
  for (int round = 0; round < 5; ++round) regrow_after_whole_device_task();
}
