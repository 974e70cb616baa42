// The high-priority tasks: the matmul kernel, the cuBLAS calls and the calibration. Compiled by
// nvcc when the CUDA backend is built (the task kernels run on the GPU then), by the host
// compiler otherwise (tasks run on the CPU backend's workgroup threads).
#include "tasks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "coop/bench/percentiles.hpp"

#if COOP_CUDA_COMPILER && defined(COOP_HAVE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "coop/cuda/check.hpp"
#define COOP_BENCH_GPU 1
#else
#define COOP_BENCH_GPU 0
#endif

namespace coop::bench {

#if COOP_BENCH_GPU
namespace {

// The graphics stand-in: a tiled single-precision matmul over a grid of any size (tiles
// strided over the blocks), repeated `products` times so that one task takes E.
constexpr std::uint32_t kTile = 16;
__global__ void __launch_bounds__(256)
    task_matmul(const float* a, const float* b, float* c, std::uint32_t n, std::uint32_t products) {
  __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];
  const std::uint32_t tiles = n / kTile, tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (std::uint32_t p = 0; p < products; ++p)
    for (std::uint32_t t = blockIdx.x; t < tiles * tiles; t += gridDim.x) {
      const std::uint32_t row = (t / tiles) * kTile + ty, col = (t % tiles) * kTile + tx;
      float s = 0;
      for (std::uint32_t k0 = 0; k0 < n; k0 += kTile) {
        as[ty][tx] = a[row * n + k0 + tx];
        bs[ty][tx] = b[(k0 + ty) * n + col];
        __syncthreads();
        for (std::uint32_t k = 0; k < kTile; ++k) s += as[ty][k] * bs[k][tx];
        __syncthreads();
      }
      c[row * n + col] = s;
    }
}

}  // namespace

struct TaskWork::Gpu {
  Gpu(const examples::HostMatmul& m, bool cublas) {
    const std::size_t bytes = m.a.size() * sizeof(float);
    cuda::check(cudaMalloc(&a, bytes), "allocating the task's matrices");
    cuda::check(cudaMalloc(&b, bytes), "allocating the task's matrices");
    cuda::check(cudaMalloc(&c, bytes), "allocating the task's matrices");
    cuda::check(cudaMemcpy(a, m.a.data(), bytes, cudaMemcpyHostToDevice), "copying A");
    cuda::check(cudaMemcpy(b, m.b.data(), bytes, cudaMemcpyHostToDevice), "copying B");
    int least = 0, greatest = 0;
    cuda::check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "stream priorities");
    cuda::check(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest),
                "creating the high-priority stream");
    if (cublas && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasCreate failed");
  }
  ~Gpu() {
    if (handle) cublasDestroy(handle);
    if (high) cudaStreamDestroy(high);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  /// Blocks of the matmul kernel that fit on the device at once.
  static std::uint32_t full_grid() {
    int occ = 0, dev = 0;
    cuda::check(cudaGetDevice(&dev), "reading the device");
    cudaDeviceProp prop{};
    cuda::check(cudaGetDeviceProperties(&prop, dev), "reading the device");
    cuda::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, task_matmul, 256, 0),
                "task occupancy");
    return std::uint32_t(occ * prop.multiProcessorCount);
  }

  /// Enqueues `products` products on stream s and waits for them.
  void run(cudaStream_t s, std::uint32_t groups, std::uint32_t n, std::uint32_t products) {
    enqueue(s, groups, n, products);
    cuda::check(cudaStreamSynchronize(s), "running the task");
  }
  /// Enqueues `products` products on stream s.
  void enqueue(cudaStream_t s, std::uint32_t groups, std::uint32_t n, std::uint32_t products) {
    if (handle) {
      // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first.
      cublasSetStream(handle, s);
      const float one = 1, zero = 0;
      const int m = int(n);
      for (std::uint32_t p = 0; p < products; ++p)
        if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, b, m, a, m, &zero, c, m) !=
            CUBLAS_STATUS_SUCCESS)
          throw std::runtime_error("cublasSgemm failed");
    } else {
      task_matmul<<<std::max(1u, groups), 256, 0, s>>>(a, b, c, n, products);
      cuda::check(cudaGetLastError(), "launching the task");
    }
  }

  float *a = nullptr, *b = nullptr, *c = nullptr;
  cudaStream_t high = nullptr;
  cublasHandle_t handle = nullptr;
};
#else
struct TaskWork::Gpu {};
#endif

TaskWork::TaskWork(Runtime& rt, std::string kind, double gpu_ms, std::uint32_t products)
    : kind_(std::move(kind)),
      on_gpu_(rt.backend() == Backend::cuda),
      m_(on_gpu_ ? (kind_ == "cublas" ? 2048 : 1024) : 64) {
  if (kind_ == "cublas" && !on_gpu_)
    throw std::invalid_argument("cublas tasks need the CUDA backend");
  full_ = on_gpu_ ? 0 : std::max(1u, std::thread::hardware_concurrency());
#if COOP_BENCH_GPU
  if (on_gpu_) {
    gpu_ = std::make_unique<Gpu>(m_, kind_ == "cublas");
    full_ = Gpu::full_grid();
  }
#endif
  calibrate(gpu_ms, products);
}

TaskWork::~TaskWork() {
  if (direct_started_) try {
      finish_direct();
    } catch (...) {  // a destructor reports nothing; the unit already failed
    }
}

// Products per task so that one task on the whole (idle) device takes E. The first call pays
// for loading (cuBLAS picks and loads its kernels then), so it is not timed, and the estimate
// is refined from the median of a few timed tasks.
void TaskWork::calibrate(double gpu_ms, std::uint32_t products) {
  auto timed_median = [this] {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) t.push_back(time_direct(full_));
    return median(std::move(t));
  };
  products_ = std::max(1u, products);
  time_direct(full_);
  for (int round = 0; round < (products ? 0 : 3); ++round) {
    alone_ms_ = timed_median();
    const double per_product = std::max(alone_ms_ / products_, 1e-4);
    products_ = std::max(1u, std::uint32_t(std::lround(gpu_ms / per_product)));
  }
  alone_ms_ = timed_median();
  if (!check()) throw std::runtime_error(kind_ + " task: wrong product in calibration");
}

void TaskWork::run([[maybe_unused]] Task& t, std::uint32_t groups) {
#if COOP_BENCH_GPU
  if (gpu_) return gpu_->run(t.stream(), groups, m_.n, products_);
#endif
  m_.run_threads(groups, products_);
}

void TaskWork::run_direct(std::uint32_t groups) {
#if COOP_BENCH_GPU
  if (gpu_) return gpu_->run(gpu_->high, groups, m_.n, products_);
#endif
  m_.run_threads(groups, products_);
}

void TaskWork::run_on(CUstream_st* stream, std::uint32_t groups) {
#if COOP_BENCH_GPU
  if (gpu_) return gpu_->run(stream, groups, m_.n, products_);
#endif
  (void)stream;
  (void)groups;
  throw std::invalid_argument("a task on a given stream needs the CUDA backend");
}

void TaskWork::start_direct() {
  if (direct_started_) throw std::logic_error("start_direct: the previous task was not finished");
  direct_started_ = true;
#if COOP_BENCH_GPU
  if (gpu_) return gpu_->enqueue(gpu_->high, full_, m_.n, products_);
#endif
  direct_ = std::thread([this] { m_.run_threads(full_, products_); });
}

void TaskWork::finish_direct() {
  if (!direct_started_) throw std::logic_error("finish_direct: no task was started");
  direct_started_ = false;
#if COOP_BENCH_GPU
  if (gpu_) return cuda::check(cudaStreamSynchronize(gpu_->high), "running the task");
#endif
  direct_.join();
}

bool TaskWork::check() {
#if COOP_BENCH_GPU
  if (gpu_)
    cuda::check(
        cudaMemcpy(m_.c.data(), gpu_->c, m_.c.size() * sizeof(float), cudaMemcpyDeviceToHost),
        "reading the task's product");
#endif
  return m_.check();
}

json TaskWork::describe() const {
  return {{"kind", kind_},
          {"n", m_.n},
          {"products", products_},
          {"full_grid", full_},
          {"alone_ms", alone_ms_}};
}

double TaskWork::time_direct(std::uint32_t groups) {
  const auto t0 = std::chrono::steady_clock::now();
  run_direct(groups);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace coop::bench
