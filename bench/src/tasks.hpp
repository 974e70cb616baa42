// The high-priority tasks of the multitasking experiment: a matmul (our tiled kernel on the
// GPU, the CPU backend's workgroup threads otherwise) or cuBLAS, sized by calibration to take
// E ms on the whole device. Internal to coop::bench; tasks.cpp is compiled by nvcc when the
// CUDA backend is built, and the CUDA objects stay behind TaskWork::Gpu so that this header
// reads the same to every compiler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "coop/bench/harness.hpp"
#include "coop/bench/host_matmul.hpp"
#include "coop/runtime.hpp"

namespace coop::bench {

/// One kind of high-priority task ("matmul" or "cublas"), calibrated on construction.
class TaskWork {
 public:
  /// Throws std::invalid_argument for cuBLAS without the CUDA backend, std::runtime_error when
  /// the device work fails or calibration computes a wrong product. `products` > 0 skips the
  /// calibration (another process's: the same task there, describe()["products"]).
  TaskWork(Runtime& rt, std::string kind, double gpu_ms, std::uint32_t products = 0);
  ~TaskWork();
  TaskWork(const TaskWork&) = delete;
  TaskWork& operator=(const TaskWork&) = delete;

  /// Runs one task inside a scheduler task (on its stream or its workgroup threads).
  void run(Task& t, std::uint32_t groups);
  /// Runs one task outside the scheduler on a high-priority stream (the no-cooperation
  /// baselines): it starts when the device has room.
  void run_direct(std::uint32_t groups);
  /// Runs one task on `stream` (a green context's, say) and waits for it. GPU only.
  void run_on(CUstream_st* stream, std::uint32_t groups);
  /// run_direct() on the whole device without waiting: the task is enqueued at once on the
  /// high-priority stream (CPU backend: started on its own threads); finish_direct() waits for
  /// it. One at a time.
  void start_direct();
  void finish_direct();
  /// Compares sampled entries of the last product with a serial one.
  bool check();
  /// {"kind", "n", "products", "full_grid", "alone_ms"}
  json describe() const;
  /// Workgroups of one task on the whole device.
  std::uint32_t full_grid() const { return full_; }

 private:
  struct Gpu;  // device matrices, stream and cuBLAS handle (defined where nvcc compiles)
  void calibrate(double gpu_ms, std::uint32_t products);
  double time_direct(std::uint32_t groups);

  std::string kind_;
  bool on_gpu_ = false;
  examples::HostMatmul m_;  ///< the matrices (and the product, on the CPU backend)
  std::unique_ptr<Gpu> gpu_;
  std::uint32_t products_ = 1, full_ = 1;
  double alone_ms_ = 0;
  bool direct_started_ = false;
  std::thread direct_;  ///< CPU backend: the task started by start_direct()
};

}  // namespace coop::bench
