#include "coop/cuda/buffers.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace coop::cuda {

std::size_t BufferCache::size_class(std::size_t bytes) {
  return std::bit_ceil(std::max<std::size_t>(bytes, 256));
}

void* BufferCache::take(Kind kind, std::size_t bytes, const char* what) {
  const std::size_t size = size_class(bytes);
  {
    std::lock_guard lock(mu_);
    auto it = free_.find({kind, size});
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      return p;
    }
  }
  void* p = nullptr;
  auto allocate = [&] {
    cudaError_t rc = cudaSetDevice(device_);
    if (rc != cudaSuccess) return rc;
    switch (kind) {
      case Kind::device:
        return cudaMalloc(&p, size);
      case Kind::mapped_host:
        return cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable);
      case Kind::pinned_host:
        return cudaHostAlloc(&p, size, cudaHostAllocPortable);
    }
    return cudaErrorInvalidValue;
  };
  cudaError_t rc = allocate();
  if (rc == cudaErrorMemoryAllocation && release_all() > 0) {
    cudaGetLastError();  // clear the failed allocation's error
    rc = allocate();
  }
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error while ") + what + " (" + std::to_string(size) +
                             " bytes): " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) +
                             ")");
  return p;
}

void BufferCache::give(Kind kind, void* p, std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (fence_) cudaStreamSynchronize(fence_);
  free_[{kind, size_class(bytes)}].push_back(p);
}

void BufferCache::set_fence(CUstream_st* stream) {
  std::lock_guard lock(mu_);
  fence_ = stream;
}

std::size_t BufferCache::release_all() {
  std::map<std::pair<Kind, std::size_t>, std::vector<void*>> held;
  {
    std::lock_guard lock(mu_);
    held.swap(free_);
  }
  std::size_t n = 0;
  cudaSetDevice(device_);
  for (auto& [key, buffers] : held)
    for (void* p : buffers) {
      if (key.first == Kind::device)
        cudaFree(p);
      else
        cudaFreeHost(p);
      ++n;
    }
  return n;
}

BufferCache::~BufferCache() {
  // The last owner is the device service after its jobs ended, or a job handle that outlived
  // the runtime: no kernel of this runtime uses these any more.
  release_all();
}

}  // namespace coop::cuda
