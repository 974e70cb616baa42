// Device and pinned host memory that jobs and interruptible kernels give back for reuse
// instead of freeing it (compiled only with the CUDA backend).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace coop::cuda {

/// Buffers that finished jobs give back for the next ones to take. Why not free them:
/// cudaFree and cudaFreeHost wait for every kernel on the device, and a persistent job beside
/// may run until the thread that frees lets it end: a user thread dropping a finished job's
/// handle, or the service thread (which destroys a job whose handle was dropped while it ran)
/// that the other job needs for its forks and kill reports. Buffers come in power-of-two size
/// classes; the cache holds at most what the jobs running at once used, and frees everything
/// when its last owner lets go (the runtime's device service, or a job handle outliving it).
class BufferCache {
 public:
  enum class Kind { device, mapped_host, pinned_host };

  explicit BufferCache(int device) : device_(device) {}
  ~BufferCache();
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  /// A buffer of at least `bytes` (its contents undefined); throws std::runtime_error naming
  /// `what` when CUDA cannot allocate it, even after freeing what the cache holds.
  void* take(Kind kind, std::size_t bytes, const char* what);
  /// Gives back a buffer that take(kind, bytes) returned. Waits first for the copies queued on
  /// the fence stream (tiny host -> device control copies, which never wait for a kernel): a
  /// new owner must not see an old job's copy land in its buffer.
  void give(Kind kind, void* p, std::size_t bytes);
  /// The stream whose queued copies may still write into given buffers (the device service's
  /// control stream); nullptr once it is destroyed.
  void set_fence(CUstream_st* stream);
  /// Frees every buffer held for reuse and returns how many; this waits for the kernels running
  /// on the device, so it happens only when an allocation found the device out of memory, and
  /// when the cache is destroyed.
  std::size_t release_all();

  /// The class a request of `bytes` is served from: the next power of two, at least 256.
  static std::size_t size_class(std::size_t bytes);

 private:
  int device_;
  std::mutex mu_;
  CUstream_st* fence_ = nullptr;
  std::map<std::pair<Kind, std::size_t>, std::vector<void*>> free_;
};

/// One buffer of a BufferCache, given back when destroyed or reset (move-only).
class CachedBuffer {
 public:
  CachedBuffer() = default;
  CachedBuffer(std::shared_ptr<BufferCache> cache, BufferCache::Kind kind, std::size_t bytes,
               const char* what)
      : cache_(std::move(cache)), kind_(kind), bytes_(bytes), p_(cache_->take(kind, bytes, what)) {}
  ~CachedBuffer() { reset(); }
  CachedBuffer(CachedBuffer&& o) noexcept { swap(o); }
  CachedBuffer& operator=(CachedBuffer&& o) noexcept {
    CachedBuffer(std::move(o)).swap(*this);
    return *this;
  }

  void reset() {
    if (p_) cache_->give(kind_, p_, bytes_);
    p_ = nullptr;
    bytes_ = 0;
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void swap(CachedBuffer& o) noexcept {
    std::swap(cache_, o.cache_);
    std::swap(kind_, o.kind_);
    std::swap(bytes_, o.bytes_);
    std::swap(p_, o.p_);
  }
  std::shared_ptr<BufferCache> cache_;
  BufferCache::Kind kind_ = BufferCache::Kind::device;
  std::size_t bytes_ = 0;
  void* p_ = nullptr;
};

}  // namespace coop::cuda
