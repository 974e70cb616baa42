/// \file
/// Memory that the host and every backend's workgroups can read and write: ordinary memory on
/// the CPU backend, CUDA managed memory when a GPU is present. Kernel parameters point into it.
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
/// Frees managed_alloc's memory. On a GPU, while a job of coop's runs there the free is deferred
/// until the last run ends: cudaFree waits for every kernel on the device, a persistent job's
/// too, and would not return while the job runs (memory dropped beside a long-running job is
/// held until then).
void managed_free(void* p) noexcept;
/// The CUDA backend brackets each run of a job on the device with these (managed_free).
void device_run_started() noexcept;
void device_run_ended() noexcept;
/// Moves managed pages to the GPU ahead of a kernel that uses them (waits until they are
/// there), so that timings do not include page faults. Nothing to do without a GPU.
void managed_to_device(const void* p, std::size_t bytes);
}  // namespace detail

/// A fixed-size array of trivially copyable T in host- and device-visible memory: what kernel
/// parameters point into. Zero-initialised (value-initialised T). Move-only; the memory is freed
/// when the array is destroyed, so it must outlive every job that uses it.
template <class T>
class ManagedArray {
  static_assert(std::is_trivially_copyable_v<T>, "ManagedArray holds trivially copyable types");

 public:
  /// An empty array (no memory).
  ManagedArray() = default;
  /// n value-initialised elements.
  explicit ManagedArray(std::size_t n) : size_(n) {
    if (n) data_ = static_cast<T*>(detail::managed_alloc(n * sizeof(T)));
    for (std::size_t i = 0; i < n; ++i) new (data_ + i) T{};
  }
  /// n copies of `value`.
  ManagedArray(std::size_t n, const T& value) : ManagedArray(n) {
    for (std::size_t i = 0; i < n; ++i) data_[i] = value;
  }
  /// A copy of `v`.
  explicit ManagedArray(const std::vector<T>& v) : ManagedArray(v.size()) {
    if (!v.empty()) std::memcpy(static_cast<void*>(data_), v.data(), v.size() * sizeof(T));
  }
  /// Takes `o`'s memory; `o` becomes empty.
  ManagedArray(ManagedArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  /// Frees this array's memory and takes `o`'s; `o` becomes empty.
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

  /// The device-usable pointer to put in a kernel's Params (nullptr when empty).
  T* data() { return data_; }
  /// \copydoc data()
  const T* data() const { return data_; }
  /// Number of elements.
  std::size_t size() const { return size_; }
  /// Element i (host access; no bounds check).
  T& operator[](std::size_t i) { return data_[i]; }
  /// \copydoc operator[](std::size_t)
  const T& operator[](std::size_t i) const { return data_[i]; }
  /// Iteration over the elements (host access).
  T* begin() { return data_; }
  /// \copydoc begin()
  T* end() { return data_ + size_; }
  /// \copydoc begin()
  const T* begin() const { return data_; }
  /// \copydoc begin()
  const T* end() const { return data_ + size_; }
  /// A host copy of the elements (read them after the job that writes them has finished).
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }
  /// Migrates the array to the GPU now (no-op on the CPU backend); see detail::managed_to_device.
  void to_device() const { detail::managed_to_device(data_, size_ * sizeof(T)); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// One T in host- and device-visible memory (a ManagedArray of one element), for counters and
/// results that kernels write.
template <class T>
class Managed {
 public:
  /// A value-initialised T.
  Managed() : a_(1) {}
  /// A copy of `v`.
  explicit Managed(const T& v) : a_(1, v) {}
  /// The device-usable pointer to put in a kernel's Params.
  T* get() { return a_.data(); }
  /// The value (host access).
  T& operator*() { return a_[0]; }
  /// Member access to the value (host access).
  T* operator->() { return a_.data(); }
  /// \copydoc operator*()
  const T& operator*() const { return a_[0]; }
  /// Migrates the value to the GPU now (no-op on the CPU backend).
  void to_device() const { a_.to_device(); }

 private:
  ManagedArray<T> a_;
};

/// The names before 0.2 (renamed: "shared" also names workgroup-shared memory).
/// Deprecated name of ManagedArray.
template <class T>
using SharedArray [[deprecated("renamed coop::ManagedArray")]] = ManagedArray<T>;
/// Deprecated name of Managed.
template <class T>
using Shared [[deprecated("renamed coop::Managed")]] = Managed<T>;

}  // namespace coop
