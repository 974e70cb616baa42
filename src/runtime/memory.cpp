#include "coop/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef COOP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace coop::detail {

namespace {
#ifdef COOP_HAVE_CUDA
bool have_device() {
  static const bool have = [] {
    int n = 0;
    bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    cudaGetLastError();
    return ok;
  }();
  return have;
}
#endif
}  // namespace

void* managed_alloc(std::size_t bytes) {
#ifdef COOP_HAVE_CUDA
  if (have_device()) {
    void* p = nullptr;
    cudaError_t rc = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    if (rc != cudaSuccess)
      throw std::runtime_error("cudaMallocManaged(" + std::to_string(bytes) +
                               " bytes): " + cudaGetErrorString(rc));
    std::memset(p, 0, bytes);
    return p;
  }
#endif
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return p;
}

namespace {
// Runs of coop jobs on the device now, and the frees waiting for them to end. The lock is held
// across cudaFree, so that no run starts between the count's check and the free.
std::mutex runs_mu;
int runs_on_device = 0;
std::vector<void*> deferred_frees;
}  // namespace

void device_run_started() noexcept {
  std::lock_guard lock(runs_mu);
  ++runs_on_device;
}

void device_run_ended() noexcept {
#ifdef COOP_HAVE_CUDA
  std::lock_guard lock(runs_mu);
  if (--runs_on_device > 0) return;
  for (void* p : deferred_frees) cudaFree(p);
  deferred_frees.clear();
#endif
}

void managed_free(void* p) noexcept {
  if (!p) return;
#ifdef COOP_HAVE_CUDA
  if (have_device()) {
    std::lock_guard lock(runs_mu);
    if (runs_on_device > 0) {
      try {
        deferred_frees.push_back(p);
      } catch (const std::bad_alloc&) {  // not even that: keep the memory rather than hang
      }
      return;
    }
    cudaFree(p);
    return;
  }
#endif
  std::free(p);
}

void managed_to_device(const void* p, std::size_t bytes) {
#ifdef COOP_HAVE_CUDA
  if (p && bytes && have_device()) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaMemLocation where{};
    where.type = cudaMemLocationTypeDevice;
    where.id = dev;
    // A stream of its own: the legacy default stream would also wait for running jobs.
    cudaStream_t s = nullptr;
    cudaError_t rc = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (rc == cudaSuccess) rc = cudaMemPrefetchAsync(p, bytes, where, 0, s);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(s);
    if (s) cudaStreamDestroy(s);
    if (rc != cudaSuccess)
      throw std::runtime_error(std::string("moving managed memory to the GPU: ") +
                               cudaGetErrorString(rc));
  }
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace coop::detail
