// Memory that the host and every backend's workgroups can read and write: ordinary memory on
// the CPU backend, CUDA managed memory when a GPU is present. Kernel parameters point into it.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace coop {

namespace detail {
/// Zeroed memory visible to the host and the device (managed memory when a CUDA device is
/// present); throws std::bad_alloc or std::runtime_error with the CUDA reason.
void* managed_alloc(std::size_t bytes);
void managed_free(void* p) noexcept;
/// Moves managed pages to the GPU ahead of a kernel that uses them (waits until they are
/// there), so that timings do not include page faults. Nothing to do without a GPU.
void managed_to_device(const void* p, std::size_t bytes);
}  // namespace detail

/// A fixed-size array of trivially copyable T in host- and device-visible memory.
template <class T>
class ManagedArray {
  static_assert(std::is_trivially_copyable_v<T>, "ManagedArray holds trivially copyable types");

 public:
  ManagedArray() = default;
  explicit ManagedArray(std::size_t n) : size_(n) {
    if (n) data_ = static_cast<T*>(detail::managed_alloc(n * sizeof(T)));
    for (std::size_t i = 0; i < n; ++i) new (data_ + i) T{};
  }
  ManagedArray(std::size_t n, const T& value) : ManagedArray(n) {
    for (std::size_t i = 0; i < n; ++i) data_[i] = value;
  }
  explicit ManagedArray(const std::vector<T>& v) : ManagedArray(v.size()) {
    if (!v.empty()) std::memcpy(static_cast<void*>(data_), v.data(), v.size() * sizeof(T));
  }
  ManagedArray(ManagedArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  ManagedArray& operator=(ManagedArray&& o) noexcept {
    if (this != &o) {
      detail::managed_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ManagedArray(const ManagedArray&) = delete;
  ManagedArray& operator=(const ManagedArray&) = delete;
  ~ManagedArray() { detail::managed_free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }
  /// Migrates the array to the GPU now (no-op on the CPU backend); see detail::managed_to_device.
  void to_device() const { detail::managed_to_device(data_, size_ * sizeof(T)); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// One T in host- and device-visible memory.
template <class T>
class Managed {
 public:
  Managed() : a_(1) {}
  explicit Managed(const T& v) : a_(1, v) {}
  T* get() { return a_.data(); }
  T& operator*() { return a_[0]; }
  T* operator->() { return a_.data(); }
  const T& operator*() const { return a_[0]; }

 private:
  ManagedArray<T> a_;
};

/// The names before 0.2 (renamed: "shared" also names workgroup-shared memory).
template <class T>
using SharedArray [[deprecated("renamed coop::ManagedArray")]] = ManagedArray<T>;
template <class T>
using Shared [[deprecated("renamed coop::Managed")]] = Managed<T>;

}  // namespace coop
